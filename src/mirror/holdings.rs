//! What the cache holds, as the residency index and the module pins know
//! it (no walk of the store): the counts, pages and names the pages for
//! people show.

use std::sync::Arc;

use super::{residency, Mirror};
use crate::address::Version;
use crate::store::ModuleRecord;

impl Mirror {
    /// Cached bytes and archives.
    pub fn usage(&self) -> (u64, u64) {
        self.residency.usage()
    }

    /// Page `wanted` of the archives the cache holds, as its index knows
    /// them (no walk of the store), grouped by provider and version,
    /// `per_page` providers to a page.
    pub fn held_page(&self, wanted: usize, per_page: usize) -> residency::HeldPage {
        self.residency.held_page(wanted, per_page)
    }

    /// The CLI release files held, as the index knows them.
    pub fn held_release_files(&self) -> Vec<crate::address::ReleaseFile> {
        self.residency.held_release_files()
    }

    /// The providers with an archive held, as the index knows them.
    pub fn held_providers(&self) -> Vec<String> {
        self.residency.held_providers()
    }

    /// A provider's versions held, newest first, with their platforms.
    pub fn held_versions(
        &self,
        provider: &crate::address::Provider,
    ) -> Vec<residency::HeldVersion> {
        self.residency.held_versions(provider)
    }

    /// The CLI releases whose files the cache holds, with how many files,
    /// as its index knows them.
    pub fn held_releases(
        &self,
    ) -> std::collections::BTreeMap<(crate::address::Product, Version), usize> {
        self.residency.held_releases()
    }

    /// The module packages the cache holds, by module and version.
    pub fn held_modules(&self) -> Vec<Arc<ModuleRecord>> {
        self.modules
            .held
            .read()
            .expect("held modules lock")
            .values()
            .cloned()
            .collect()
    }

    /// How many providers and versions have an archive held, as the index
    /// keeps count (no pass over it).
    pub fn held_counts(&self) -> (usize, usize) {
        self.residency.held_counts()
    }

    /// The names the held providers are found by, as they are now (taken
    /// without a pass over the index, and read after its lock is let go).
    pub fn provider_names(&self) -> residency::names::ProviderNames {
        self.residency.provider_names()
    }
}
