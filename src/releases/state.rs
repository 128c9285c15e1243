//! What the mirror keeps in memory about CLI releases. The mirror holds
//! this state; the read-through that uses it ([`super`]) is written as
//! methods of the mirror, above it.

use std::sync::Arc;

use super::config::{ReleasesConfig, Source};
use crate::address::{Product, ReleaseFile, Version};
use crate::store::{ReleaseIndexRecord, ReleaseRecord};

/// The log target of release fetches.
pub const RELEASES_LOG: &str = "tfmirror::releases";

/// What the mirror keeps in memory about releases.
pub struct ReleaseState {
    /// The enabled products' sources.
    pub(super) sources: Vec<Source>,
    /// Release lists, with when they stop being fresh (ms since the epoch).
    pub(super) lists: moka::future::Cache<Product, (Arc<ReleaseIndexRecord>, u64)>,
    /// Verified release records (a signed document never changes).
    pub(super) records: moka::future::Cache<(Product, Version), Arc<ReleaseRecord>>,
    /// Downloads under way: one per file, however many requests wait.
    pub(super) downloads: moka::future::Cache<ReleaseFile, ()>,
    /// Each release's advisory summary, with the database's SHA-256 and
    /// the files it was made from (another database or another file held
    /// makes it again).
    pub(super) summaries: moka::future::Cache<(Product, Version), Arc<KeptSummary>>,
}

/// A release's advisory summary as kept, with what it was made from.
pub(super) struct KeptSummary {
    /// The database's SHA-256.
    pub(super) database: String,
    /// The files matched.
    pub(super) files: Vec<ReleaseFile>,
    /// The summary.
    pub(super) summary: crate::advisories::Summary,
}

impl ReleaseState {
    /// The state for `[releases]`, its sources checked.
    pub fn new(config: &ReleasesConfig) -> anyhow::Result<ReleaseState> {
        Ok(ReleaseState {
            sources: config.sources()?,
            lists: moka::future::Cache::builder().max_capacity(8).build(),
            records: moka::future::Cache::builder().max_capacity(10_000).build(),
            downloads: moka::future::Cache::builder().max_capacity(1_000).build(),
            summaries: moka::future::Cache::builder().max_capacity(10_000).build(),
        })
    }

    /// The enabled products, in configuration order.
    pub fn products(&self) -> Vec<Product> {
        self.sources.iter().map(|s| s.product).collect()
    }

    /// The source of an enabled product.
    pub fn source(&self, product: Product) -> Option<&Source> {
        self.sources.iter().find(|s| s.product == product)
    }
}
