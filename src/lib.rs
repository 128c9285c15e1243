//! tfmirror: a read-through caching mirror for Terraform and OpenTofu
//! providers that speaks the Provider Network Mirror Protocol and verifies
//! the OpenPGP signature over every package's checksum before it caches or
//! serves the package; and a caching proxy for the module registry protocol
//! that packages module sources so they install offline.
//!
//! A request flows `http` (listener → dispatch → routes) → `mirror` (versions,
//! documents, archives, modules) → `upstream` (discovery, registry,
//! download), `modules` (module sources: git, archives, packaging) and
//! `verify` (signature, SHA256SUMS, hashes) → `store` (what the cache
//! keeps); the pages for people are `web`'s. `daemon` runs it all;
//! `commands` are the command line.

#![deny(missing_docs)]

pub mod address;
pub mod advisories;
pub mod auth;
pub mod bom;
pub mod clock;
pub mod commands;
pub mod config;
pub mod constraints;
pub mod daemon;
pub mod docs;
pub mod error;
pub mod gobuild;
pub mod http;
pub mod log_context;
pub mod metrics;
pub mod mirror;
pub mod module_source;
pub mod policy;
pub mod protocol;
pub mod releases;
pub mod site;
pub mod store;
pub mod upstream;
pub mod verify;
pub mod web;
