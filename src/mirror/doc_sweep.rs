//! Documentation goes with its versions: a sweep removes the list of
//! every version the store no longer holds an archive of (evicted under
//! `cache.max_size`, or removed), then every page no remaining list names
//! that was last written more than [`PAGE_GRACE`] ago, and counts what
//! documentation is left (lists and pages) toward `cache.max_size`. It also puts in the
//! daemon's search index the held versions' documentation that another
//! process kept (an import, a command, another instance on the bucket).
//!
//! Pages are written before the list that names them, and keeping a page
//! again writes it again; so a capture under way, here or on another
//! instance on the same bucket, whose pages no list names yet, has pages
//! younger than the grace, and they stay. A list this build cannot read (a
//! newer build's, on a shared bucket) stops the sweep from removing any
//! page, since it cannot say which it names. A list that names a page the
//! store no longer holds is removed and its version captured again where
//! its host has a source and the mirror is online; elsewhere it stays, and
//! the page says its content is no longer in the store.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::Mirror;
use crate::address::{Provider, Version};
use crate::store::docs as kept;
use crate::store::StoreError;

/// How long after it was last written a page no list names stays: longer
/// than any capture takes, so a capture's pages are never taken from
/// under it.
pub const PAGE_GRACE: Duration = Duration::from_secs(24 * 3600);

/// How often the daemon sweeps, the first time once its archive index is
/// built.
pub const SWEEP_EVERY: Duration = Duration::from_secs(6 * 3600);

/// What a sweep found and did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DocSwept {
    /// Version lists kept, before the sweep.
    pub lists: usize,
    /// Lists removed: their version is no longer held.
    pub lists_removed: usize,
    /// Lists removed because they name a page no longer kept; their
    /// versions are captured again.
    pub lists_broken: usize,
    /// Lists this build cannot read: while there are any, no page is
    /// removed.
    pub lists_unread: usize,
    /// Lists of held versions put in the daemon's search index, which
    /// lacked them: kept by another process.
    pub indexed: usize,
    /// Pages kept, before the sweep.
    pub pages: usize,
    /// Pages removed: no list names them, and they are older than the
    /// grace.
    pub pages_removed: usize,
    /// Pages no list names that are younger than the grace, left.
    pub pages_young: usize,
    /// Bytes of the lists and pages left: what documentation counts toward
    /// `cache.max_size`.
    pub bytes: u64,
}

impl Mirror {
    /// Sweeps the documentation the store keeps (see the module
    /// documentation), once the archive index is built.
    pub async fn sweep_docs(self: &Arc<Self>) -> Result<DocSwept, StoreError> {
        self.index_built().await;
        let mut swept = DocSwept::default();
        // The lists first, then the pages: a page written after the lists
        // were read is young, and stays.
        let mut named: HashMap<String, Vec<(Provider, Version)>> = HashMap::new();
        for (listed, size) in kept::listed_versions(self.store()).await? {
            swept.lists += 1;
            let Ok((provider, version)) = listed else {
                swept.lists_unread += 1;
                swept.bytes += size;
                continue;
            };
            if !self.holds_version(&provider, &version).await? {
                kept::remove_version(self.store(), &provider, &version).await?;
                tracing::info!(%provider, %version, "documentation of a version no longer held removed");
                swept.lists_removed += 1;
                continue;
            }
            swept.bytes += size;
            match kept::version(self.store(), &provider, &version).await {
                Ok(Some(docs)) => {
                    swept.indexed += usize::from(self.index_if_lacking(&provider, &version).await);
                    for page in docs.pages {
                        let at = named.entry(page.sha256).or_default();
                        at.push((provider.clone(), version.clone()));
                    }
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(%provider, %version, error = %e, "documentation kept that this build cannot read: no page is removed while it is kept");
                    swept.lists_unread += 1;
                }
            }
        }
        if swept.indexed > 0 {
            self.commit_search().await;
        }
        let pages = kept::kept_pages(self.store()).await?;
        swept.pages = pages.len();
        let now = self.clock.now();
        let mut present = HashSet::with_capacity(pages.len());
        for page in pages {
            present.insert(page.sha256.clone());
            let old = (now.duration_since(page.written)).is_ok_and(|age| age >= PAGE_GRACE);
            if named.contains_key(&page.sha256) || swept.lists_unread > 0 || !old {
                swept.pages_young += usize::from(!named.contains_key(&page.sha256) && !old);
                swept.bytes += page.size;
                continue;
            }
            kept::remove_page(self.store(), &page.sha256).await?;
            swept.pages_removed += 1;
        }
        let broken: HashSet<(Provider, Version)> = (named.into_iter())
            .filter(|(sha256, _)| !present.contains(sha256))
            .flat_map(|(_, versions)| versions)
            .collect();
        for (provider, version) in broken {
            swept.lists_broken += usize::from(self.capture_again(&provider, &version).await?);
        }
        let lists_removed = swept.lists_removed + swept.lists_broken;
        (self.metrics).docs_swept(lists_removed, swept.pages_removed);
        let evicted = self.residency.docs_counted(swept.bytes);
        self.evict(evicted).await;
        Ok(swept)
    }

    /// Puts a held version's documentation in the daemon's search index
    /// where the index, made in full, lacks it (kept by another process:
    /// an import, a command, another instance on the bucket); whether it
    /// did.
    async fn index_if_lacking(&self, provider: &Provider, version: &Version) -> bool {
        let Some(index) = self.docs.search.get().cloned() else {
            return false;
        };
        if !self.docs.search_complete.load(Ordering::Acquire) {
            // The index being made reads every held version.
            return false;
        }
        if index.holds(provider, version).unwrap_or(true) {
            return false;
        }
        self.add_to_index(&index, provider, version, false)
            .await
            .is_some()
    }

    /// Commits what the sweep put in the search index.
    async fn commit_search(&self) {
        let Some(index) = self.docs.search.get().cloned() else {
            return;
        };
        let committed = tokio::task::spawn_blocking(move || index.commit()).await;
        if let Ok(Err(e)) = committed {
            tracing::warn!(error = %e, "the documentation search index could not be written");
        }
    }

    /// Whether the store holds an archive of `version`: one the archive
    /// index knows, or, for a version it does not know (stored by another
    /// process since it was built), one the store itself holds.
    async fn holds_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<bool, StoreError> {
        if (self.held_versions(provider).iter()).any(|(v, _)| v == version) {
            return Ok(true);
        }
        let Some(record) = self.store.read_version(provider, version).await? else {
            return Ok(false);
        };
        Ok(!self.held_archives(&record).await.is_empty())
    }

    /// Removes the list of a version that names a page the store no longer
    /// keeps, and captures its documentation again, where its host has a
    /// source and the mirror is online; whether it did.
    async fn capture_again(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
    ) -> Result<bool, StoreError> {
        if self.offline() || self.docs_source(provider).is_none() {
            tracing::warn!(%provider, %version, "documentation names a page the store no longer keeps; it cannot be fetched again here, and the page says so");
            return Ok(false);
        }
        kept::remove_version(self.store(), provider, version).await?;
        tracing::warn!(%provider, %version, "documentation named a page the store no longer keeps: fetched again");
        self.capture_docs_later(provider, version);
        Ok(true)
    }

    /// The daemon's sweeps ([`Mirror::sweep_docs`]): once the archive index
    /// is built, then every [`SWEEP_EVERY`]. A failed sweep is logged and
    /// tried at the next.
    pub async fn keep_docs_swept(self: Arc<Self>) {
        loop {
            match self.sweep_docs().await {
                Ok(s) => tracing::info!(
                    lists = s.lists,
                    lists_removed = s.lists_removed,
                    lists_broken = s.lists_broken,
                    lists_unread = s.lists_unread,
                    indexed = s.indexed,
                    pages = s.pages,
                    pages_removed = s.pages_removed,
                    pages_young = s.pages_young,
                    bytes = s.bytes,
                    "documentation swept"
                ),
                Err(e) => {
                    tracing::warn!(error = %e, "documentation sweep failed; tried again at the next");
                }
            }
            self.clock.sleep_until(self.clock.now() + SWEEP_EVERY).await;
        }
    }
}
