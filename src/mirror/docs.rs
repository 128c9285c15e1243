//! The documentation of each provider version the mirror keeps, captured
//! in the background once one of the version's archives is kept
//! ([`crate::docs::capture`]): a protocol answer never waits for it, and a
//! failure to get it never fails an install. A drain (`sync`'s end) waits
//! for it, as for build records. Versions held before documentation was
//! captured, or whose capture failed, get it by a backfill
//! ([`Mirror::backfill_docs`]): paced by the daemon, at once by
//! `tfmirror docs backfill`.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use url::Url;

use super::Mirror;
use crate::address::{Provider, Version};
use crate::docs::capture::{self, From};
use crate::docs::fetch::Shape;
use crate::policy::Subject;

/// A version's documentation asked for.
type Key = (Provider, Version);

/// The versions whose documentation is being captured, so that the
/// archives of several platforms start one capture, each with what tells
/// those waiting for it that it ended; the search index; and the lists
/// the pages read last.
pub(super) struct DocsState {
    in_flight: Mutex<HashMap<Key, tokio::sync::watch::Receiver<()>>>,
    /// The daemon's search index, once made ([`super::doc_search`]).
    pub(super) search: std::sync::OnceLock<Arc<crate::docs::search::DocIndex>>,
    /// Whether every held version's documentation is in it.
    pub(super) search_complete: std::sync::atomic::AtomicBool,
    /// Versions' lists as last parsed for the pages, each with the bytes
    /// it was parsed from and weighed by its count of pages
    /// ([`LISTS_KEPT`] in all).
    pub(super) lists: moka::sync::Cache<Key, ParsedList>,
}

/// A version's list as the store kept it, and as parsed from that.
pub(super) type ParsedList = (Arc<[u8]>, Arc<crate::store::docs::VersionDocs>);

/// How many pages the lists kept parsed name in all (a page's entry
/// takes a few hundred bytes, parsed and as kept).
const LISTS_KEPT: u64 = 30_000;

impl Default for DocsState {
    fn default() -> DocsState {
        DocsState {
            in_flight: Mutex::default(),
            search: std::sync::OnceLock::new(),
            search_complete: std::sync::atomic::AtomicBool::new(false),
            lists: moka::sync::Cache::builder()
                .max_capacity(LISTS_KEPT)
                .weigher(|_, (_, docs): &ParsedList| {
                    u32::try_from(docs.pages.len()).map_or(u32::MAX, |n| n.saturating_add(1))
                })
                .build(),
        }
    }
}

/// What a capture of one version came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Captured {
    /// Kept: this many pages.
    Kept(usize),
    /// Kept already (or kept by a later build, and left as it is).
    Already,
    /// Its host has no source, or the mirror is offline.
    NoSource,
    /// Another capture of it is under way.
    UnderWay,
    /// Fetching or keeping it failed, for this reason.
    Failed(String),
}

/// What a backfill did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Backfilled {
    /// Versions held, in all.
    pub held: usize,
    /// Versions whose documentation it kept.
    pub kept: usize,
    /// Versions whose documentation was kept already.
    pub already: usize,
    /// Versions whose host has no source.
    pub no_source: usize,
    /// Versions the policy denies: nothing of them is fetched.
    pub denied: usize,
    /// Versions whose documentation could not be kept, with why.
    pub failed: Vec<String>,
}

impl Mirror {
    /// Where `provider`'s documentation is fetched from, in which shape
    /// (`[docs]`); `None` where its host has no source.
    pub fn docs_source(&self, provider: &Provider) -> Option<(Shape, Url)> {
        self.config.docs_source(provider)
    }

    /// Why the mirror keeps no documentation of a version of `provider`
    /// (or none yet), for people; `offline` is whether the mirror's
    /// configuration is offline.
    pub fn why_no_docs(&self, provider: &Provider, offline: bool) -> String {
        self.config.why_no_docs(provider, offline)
    }

    /// Captures `version`'s documentation in the background (see
    /// [`Mirror::capture_docs`]).
    pub(super) fn capture_docs_later(self: &Arc<Self>, provider: &Provider, version: &Version) {
        if self.offline() || self.docs_source(provider).is_none() {
            return;
        }
        let this = self.clone();
        let (provider, version) = (provider.clone(), version.clone());
        self.tasks.spawn(async move {
            this.capture_docs(&provider, &version).await;
        });
    }

    /// Captures `version`'s documentation now, unless it is kept already,
    /// its host has no source (`[docs]`), the mirror is offline, or a
    /// capture of it is under way; says what came of it, and logs it.
    pub async fn capture_docs(&self, provider: &Provider, version: &Version) -> Captured {
        let Some((shape, base)) = self.docs_source(provider).filter(|_| !self.offline()) else {
            return Captured::NoSource;
        };
        let Some(_capturing) = Capturing::start(&self.docs, (provider.clone(), version.clone()))
        else {
            return Captured::UnderWay;
        };
        // A list kept already is not fetched again; one this build cannot
        // read (a later build's, on a shared bucket) is left as it is.
        let outcome = match crate::store::docs::version(self.store.as_ref(), provider, version)
            .await
        {
            Ok(Some(_)) => Captured::Already,
            Err(e) => {
                tracing::warn!(provider = %provider, version = %version, error = %e, "documentation kept that this build cannot read; left as it is");
                Captured::Already
            }
            Ok(None) => {
                let from = From {
                    client: &self.origin.client,
                    base: &base,
                    shape,
                    token: self.origin.credentials.token(&provider.hostname),
                    budget: self.config.docs.max_requests_per_version,
                };
                let now = self.clock.unix_ms();
                match capture::capture(from, self.store.as_ref(), (provider, version), now).await {
                    Ok(kept) => {
                        let docs = &kept.docs;
                        tracing::info!(
                            provider = %provider, version = %version, pages = docs.pages.len(),
                            passed_over = docs.passed_over.values().sum::<usize>(),
                            "documentation kept"
                        );
                        let pages = docs.pages.len();
                        let list = serde_json::to_vec(docs).map_or(0, |l| l.len() as u64);
                        let bytes = list + docs.pages.iter().map(|p| p.size).sum::<u64>();
                        self.metrics.docs_captured("kept");
                        let evicted = self.residency.docs_added(bytes);
                        self.evict(evicted).await;
                        self.index_docs(kept).await;
                        Captured::Kept(pages)
                    }
                    Err(e) => {
                        self.metrics.docs_captured("failed");
                        tracing::warn!(
                            provider = %provider, version = %version, error = %e,
                            "documentation not kept; it is fetched again when an archive of the version is next kept, or by the backfill"
                        );
                        Captured::Failed(e.to_string())
                    }
                }
            }
        };
        outcome
    }

    /// `version`'s documentation, captured now where the mirror keeps
    /// none yet, its host has a source, the mirror is online and the
    /// policy allows the version; a capture under way is waited for. The
    /// capture is the mirror's own task: a caller that goes away leaves it
    /// running. `Err` with why where none is kept. A version not held is
    /// an error, as for [`Mirror::held_docs`].
    pub async fn docs_now(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
    ) -> Result<Result<crate::store::docs::VersionDocs, String>, crate::error::RequestError> {
        if let Some(docs) = self.held_docs(provider, version).await? {
            return Ok(Ok(Arc::unwrap_or_clone(docs)));
        }
        if self.docs_source(provider).is_none() || self.offline() {
            return Ok(Err(self.why_no_docs(provider, self.offline())));
        }
        if let Err(e) = (self.decision(Subject::Provider(provider), version, None, None)).await {
            return Ok(Err(format!(
                "the policy denies it, and nothing of a denied version is fetched: {e}"
            )));
        }
        let key = (provider.clone(), version.clone());
        let mut captured = None;
        // Twice at most: a capture that began between the look and this
        // one's start is waited for.
        for _ in 0..2 {
            let under_way = self.docs_in_flight().get(&key).cloned();
            if let Some(mut ended) = under_way {
                // Err: the capture ended, its sender gone.
                let _ = ended.changed().await;
                break;
            }
            let this = self.clone();
            let (p, v) = key.clone();
            let task = self
                .tasks
                .spawn(async move { this.capture_docs(&p, &v).await });
            captured = task.await.ok();
            if captured != Some(Captured::UnderWay) {
                break;
            }
        }
        if let Some(docs) = self.held_docs(provider, version).await? {
            return Ok(Ok(Arc::unwrap_or_clone(docs)));
        }
        Ok(Err(match captured {
            Some(Captured::Failed(why)) => format!("fetching it failed: {why}"),
            _ => "none is kept yet".into(),
        }))
    }

    fn docs_in_flight(
        &self,
    ) -> std::sync::MutexGuard<'_, HashMap<Key, tokio::sync::watch::Receiver<()>>> {
        self.docs
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Captures the documentation of every version the store holds an
    /// archive of and keeps none of, one version at a time, `pause`
    /// between the fetches (the daemon's pacing; none for the command).
    /// Versions the policy denies are passed over: nothing of them is
    /// fetched.
    /// The versions are those of the archive index, once it is
    /// reconciled with the store (a command's is from the start): a
    /// backfill lists nothing of the store itself.
    pub async fn backfill_docs(self: &Arc<Self>, pause: Duration) -> Backfilled {
        self.index_built().await;
        let mut held: BTreeSet<(Provider, Version)> = BTreeSet::new();
        for name in self.held_providers() {
            let Ok(provider) = Provider::from_source(&name) else {
                continue;
            };
            for (version, _) in self.held_versions(&provider) {
                held.insert((provider.clone(), version));
            }
        }
        let mut done = Backfilled {
            held: held.len(),
            ..Backfilled::default()
        };
        let mut fetched = false;
        for (provider, version) in &held {
            if self.docs_source(provider).is_none() || self.offline() {
                done.no_source += 1;
                continue;
            }
            let allowed = self
                .decision(Subject::Provider(provider), version, None, None)
                .await;
            if allowed.is_err() {
                done.denied += 1;
                continue;
            }
            // The pause falls between a fetch and the next capture, never
            // after the last.
            if std::mem::take(&mut fetched) && !pause.is_zero() {
                self.clock.sleep_until(self.clock.now() + pause).await;
            }
            match self.capture_docs(provider, version).await {
                Captured::Kept(_) => done.kept += 1,
                Captured::Already | Captured::UnderWay => {
                    done.already += 1;
                    continue;
                }
                Captured::NoSource => done.no_source += 1,
                Captured::Failed(why) => done.failed.push(format!("{provider} {version}: {why}")),
            }
            fetched = true;
        }
        done
    }

    /// The daemon's backfills ([`Mirror::backfill_docs`]): once it has
    /// started, then `docs.backfill_every` after each ends, paced by
    /// `docs.backfill_pause`; none where capture is off or the mirror is
    /// offline.
    pub async fn keep_docs_backfilled(self: Arc<Self>) {
        if !self.config.docs.enabled || self.offline() {
            return;
        }
        loop {
            let done = self.backfill_docs(self.config.docs.backfill_pause).await;
            self.metrics.docs_backfilled();
            tracing::info!(
                held = done.held,
                kept = done.kept,
                already = done.already,
                no_source = done.no_source,
                denied = done.denied,
                failed = done.failed.len(),
                "documentation backfill done"
            );
            let next = self.clock.now() + self.config.docs.backfill_every;
            self.clock.sleep_until(next).await;
        }
    }
}

/// A capture under way: named in the state's list while it lives, and
/// taken off it however it ends (finished, failed, or its task dropped),
/// which wakes those waiting for it.
struct Capturing<'a> {
    state: &'a DocsState,
    key: Key,
    _ended: tokio::sync::watch::Sender<()>,
}

impl<'a> Capturing<'a> {
    /// The capture of `key` begun; `None` where one is under way.
    fn start(state: &'a DocsState, key: Key) -> Option<Capturing<'a>> {
        let mut in_flight = state
            .in_flight
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if in_flight.contains_key(&key) {
            return None;
        }
        let (ended, waiting) = tokio::sync::watch::channel(());
        in_flight.insert(key.clone(), waiting);
        Some(Capturing {
            state,
            key,
            _ended: ended,
        })
    }
}

impl Drop for Capturing<'_> {
    fn drop(&mut self) {
        (self.state.in_flight.lock())
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.key);
    }
}
