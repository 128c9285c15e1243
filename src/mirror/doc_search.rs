//! Searching the documentation the mirror keeps ([`crate::docs::search`]).
//! The daemon makes the index anew when it starts, in a directory of its
//! own (`docs-index` in `server.data_dir`), from every held version whose
//! documentation the store keeps, once the archive index is reconciled;
//! then adds each version whose documentation it keeps. Searches are
//! answered from the start, saying while the index is still being made.
//! Each page is answered once, with the held versions that have it; a
//! version the mirror no longer holds is left out of the answers.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use super::Mirror;
use crate::address::{Provider, Version};
use crate::docs::capture::CapturedDocs;
use crate::docs::search::{DocHit, DocIndex, IndexError};
use crate::docs::DocKind;
use crate::store::docs::{self as kept, PageEntry, VersionDocs};

/// One page found, in every held version that has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundPage {
    /// The provider.
    pub provider: Provider,
    /// What the page describes.
    pub kind: DocKind,
    /// Its name.
    pub name: String,
    /// Its title, in the version that ranked best.
    pub title: String,
    /// The held versions whose documentation has it and matches, newest
    /// first.
    pub versions: Vec<Version>,
}

/// How many of the index's hits are read for each page shown: a page is
/// indexed once per content, and the versions held may have several.
const RAW_PER_PAGE: usize = 4;

/// How many new page contents the index is given between two commits
/// while it is made from the store: what it holds in memory before
/// writing, and what searches see while it is being made.
const COMMIT_EVERY: usize = 20_000;

/// The most hits read for one search.
const MAX_RAW: usize = 1_000;

/// A version's list, and the pages of it whose content the index lacks,
/// each with its content as text: what is put in the index.
type ToIndex = (VersionDocs, Vec<(PageEntry, String)>);

/// What a search of the documentation found.
#[derive(Debug)]
pub enum DocSearch {
    /// There is no index: documentation is off (`docs.enabled`), or this
    /// is not the daemon, or the index could not be made (in the log).
    NoIndex,
    /// The pages found, best first, each once with the versions that
    /// have it; `complete` is false while the index is still being made
    /// from the store.
    Found {
        /// The pages.
        pages: Vec<FoundPage>,
        /// Whether every held version's documentation is in the index.
        complete: bool,
    },
    /// The index could not be read: why.
    Failed(String),
}

impl Mirror {
    /// The daemon's index of documentation: made anew in `dir`, filled
    /// from the store, then kept as versions' documentation is kept.
    /// Nothing where documentation is off.
    pub async fn keep_docs_searchable(self: Arc<Self>, dir: PathBuf) {
        if !self.config.docs.enabled {
            return;
        }
        let began = Instant::now();
        let made = tokio::task::spawn_blocking(move || DocIndex::create(&dir)).await;
        let made = (made.map_err(|e| e.to_string())).and_then(|m| m.map_err(|e| e.to_string()));
        let index = match made {
            Ok(index) => Arc::new(index),
            Err(e) => {
                tracing::warn!(error = %e, "documentation search is off: its index could not be made");
                return;
            }
        };
        let _ = self.docs.search.set(index.clone());
        self.index_built().await;
        let (mut versions, mut pages, mut uncommitted) = (0usize, 0usize, 0usize);
        for name in self.held_providers() {
            let Ok(provider) = Provider::from_source(&name) else {
                continue;
            };
            for (version, _) in self.held_versions(&provider) {
                if let Some(added) = self.add_to_index(&index, &provider, &version, false).await {
                    versions += 1;
                    pages += added;
                    uncommitted += added;
                }
                if uncommitted >= COMMIT_EVERY {
                    commit(&index).await;
                    uncommitted = 0;
                }
            }
        }
        commit(&index).await;
        self.docs.search_complete.store(true, Ordering::Release);
        tracing::info!(
            versions,
            distinct_pages = pages,
            elapsed_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX),
            "documentation search index made"
        );
    }

    /// Puts a version's documentation, as just kept, in the search index,
    /// where there is one.
    pub(super) async fn index_docs(&self, kept: CapturedDocs) {
        let Some(index) = self.docs.search.get().cloned() else {
            return;
        };
        let (provider, version) = (kept.docs.provider.clone(), kept.docs.version.clone());
        let contents = (kept.docs.pages.iter().zip(&kept.contents))
            .map(|(page, c)| (page.clone(), String::from_utf8_lossy(c).into_owned()))
            .collect();
        self.put_in_index(
            &index,
            (&provider, &version),
            Ok(Some((kept.docs, contents))),
            true,
        )
        .await;
    }

    /// Puts the documentation the store keeps of `version` in `index`
    /// (see [`Mirror::put_in_index`]).
    pub(super) async fn add_to_index(
        &self,
        index: &Arc<DocIndex>,
        provider: &Provider,
        version: &Version,
        commit: bool,
    ) -> Option<usize> {
        let read = self.docs_to_index(index, provider, version).await;
        self.put_in_index(index, (provider, version), read, commit)
            .await
    }

    /// Puts `read`, a version's list and the contents of the pages the
    /// index lacks, in `index`, committed where `commit` says; how many
    /// page contents were new, where there was a list and it went in (a
    /// failure is logged).
    async fn put_in_index(
        &self,
        index: &Arc<DocIndex>,
        (provider, version): (&Provider, &Version),
        read: Result<Option<ToIndex>, String>,
        commit: bool,
    ) -> Option<usize> {
        let added = match read {
            Ok(None) => return None,
            Ok(Some((docs, contents))) => {
                let index = index.clone();
                tokio::task::spawn_blocking(move || {
                    let added =
                        index.add_version(&docs, contents.iter().map(|(p, c)| (p, c.as_str())))?;
                    if commit {
                        index.commit()?;
                    }
                    Ok::<_, IndexError>(added)
                })
                .await
                .map_err(|e| e.to_string())
                .and_then(|added| added.map_err(|e| e.to_string()))
            }
            Err(e) => Err(e),
        };
        added
            .inspect_err(|e| {
                tracing::warn!(provider = %provider, version = %version, error = %e, "documentation not put in the search index");
            })
            .ok()
    }

    /// A version's kept list, with the content, as text, of each page
    /// `index` lacks; pages it lacks that are gone from the store are
    /// left out of the list. Only contents no version indexed before are
    /// read: most pages are the same in every version. Fails with why the
    /// store or the index could not be read.
    async fn docs_to_index(
        &self,
        index: &Arc<DocIndex>,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<ToIndex>, String> {
        let read = kept::version(self.store(), provider, version).await;
        let Some(docs) = read.map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let (index, docs) = (index.clone(), Arc::new(docs));
        let listed = docs.clone();
        let lacking = tokio::task::spawn_blocking(move || {
            (index.lacking(&listed)).map(|l| l.into_iter().cloned().collect::<Vec<_>>())
        })
        .await;
        let lacking =
            (lacking.map_err(|e| e.to_string())).and_then(|l| l.map_err(|e| e.to_string()))?;
        let mut docs = Arc::unwrap_or_clone(docs);
        let mut contents = Vec::with_capacity(lacking.len());
        for page in lacking {
            match (kept::page(self.store(), &page.sha256).await).map_err(|e| e.to_string())? {
                Some(bytes) => contents.push((page, String::from_utf8_lossy(&bytes).into_owned())),
                None => docs.pages.retain(|p| p.sha256 != page.sha256),
            }
        }
        Ok(Some((docs, contents)))
    }

    /// The held versions' documentation pages `query` finds, best first,
    /// at most `limit`, each once with every held version that has it.
    /// The search reads the index's files: it runs on the runtime's
    /// blocking threads, never on the thread that serves requests.
    pub async fn search_docs(self: &Arc<Self>, query: &str, limit: usize) -> DocSearch {
        let Some(index) = self.docs.search.get().cloned() else {
            return DocSearch::NoIndex;
        };
        let complete = self.docs.search_complete.load(Ordering::Acquire);
        // A page may have a content per version: asked for more than
        // shown, so that the pages shown are whole across versions.
        let asked = limit.saturating_mul(RAW_PER_PAGE).min(MAX_RAW);
        let (this, query) = (self.clone(), query.to_owned());
        let began = Instant::now();
        let searched = tokio::task::spawn_blocking(move || {
            index
                .search(&query, asked)
                .map(|hits| this.by_page(hits, limit))
        })
        .await;
        self.metrics.docs_searched(began.elapsed().as_secs_f64());
        match searched {
            Ok(Ok(pages)) => DocSearch::Found { pages, complete },
            Ok(Err(e)) => DocSearch::Failed(e.to_string()),
            Err(e) => DocSearch::Failed(format!("the search stopped: {e}")),
        }
    }

    /// `hits` as pages, in the order of each page's best, with only the
    /// versions still held, at most `limit`.
    fn by_page(&self, hits: Vec<DocHit>, limit: usize) -> Vec<FoundPage> {
        let mut pages: Vec<FoundPage> = Vec::new();
        let mut held: HashMap<Provider, Vec<Version>> = HashMap::new();
        for hit in hits {
            let Ok(provider) = Provider::from_source(&hit.provider) else {
                continue;
            };
            let held = held.entry(provider.clone()).or_insert_with(|| {
                (self.held_versions(&provider).into_iter())
                    .map(|(v, _)| v)
                    .collect()
            });
            let versions: Vec<Version> = (hit.versions.iter())
                .filter_map(|v| Version::parse(v).ok())
                .filter(|v| held.contains(v))
                .collect();
            if versions.is_empty() {
                continue;
            }
            let same =
                |p: &FoundPage| p.provider == provider && p.kind == hit.kind && p.name == hit.name;
            if let Some(page) = pages.iter_mut().find(|p| same(p)) {
                page.versions.extend(versions);
            } else if pages.len() < limit {
                pages.push(FoundPage {
                    provider,
                    kind: hit.kind,
                    name: hit.name,
                    title: hit.title,
                    versions,
                });
            }
        }
        for page in &mut pages {
            page.versions.sort_by(|a, b| b.cmp(a));
            page.versions.dedup();
        }
        pages
    }
}

/// Commits what was put in `index` (a failure is logged).
async fn commit(index: &Arc<DocIndex>) {
    let index = index.clone();
    let committed = tokio::task::spawn_blocking(move || index.commit()).await;
    if let Ok(Err(e)) = committed {
        tracing::warn!(error = %e, "the documentation search index could not be written");
    }
}
