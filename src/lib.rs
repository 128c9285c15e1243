//! tfmirror: a read-through caching mirror for Terraform and OpenTofu
//! providers that speaks the Provider Network Mirror Protocol and verifies
//! the OpenPGP signature over every package's checksum before it caches or
//! serves the package.
//!
//! A request flows `server` → `service` → `routes` (path to typed request)
//! → `mirror` (cache or origin) → `upstream` (discovery, registry, download)
//! and `verify` (signature, SHA256SUMS, hashes) → `cache` (disk) →
//! `protocol` (the JSON answers).

#![forbid(unsafe_code)]
#![deny(missing_docs)]

pub mod address;
pub mod auth;
pub mod bundle;
pub mod cache;
pub mod cli;
pub mod config;
pub mod constraints;
pub mod error;
pub mod integrity;
pub mod lockfile;
pub mod metrics;
pub mod mirror;
pub mod protocol;
pub mod routes;
pub mod selection;
pub mod server;
pub mod service;
pub mod static_dir;
pub mod status;
pub mod sync;
pub mod tls;
pub mod upstream;
pub mod verify;
