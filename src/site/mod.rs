//! Keeping a site ready: what it needs ([`selection`]: manifests, the
//! `[watch]` list, configurations read as their client reads them
//! ([`crate::module_source::configuration`]) and lock files), filling the cache with
//! it ([`fill`]: `sync`, watch passes; [`module_providers`]: the
//! providers registry modules require themselves), watching the origins for new
//! versions ([`watch`]), answering whether configurations will install
//! offline ([`readiness`]: `tfmirror check`), and what a site holds
//! ([`inventory`]: `tfmirror inventory`, the delta a transfer carries).

mod choose;
pub mod fill;
pub mod inventory;
pub mod module_providers;
pub mod oci_push;
pub mod readiness;
pub mod selection;
pub mod watch;
