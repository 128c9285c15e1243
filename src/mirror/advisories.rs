//! The advisory database as the mirror holds it, and what held versions
//! fall under. The database is read from the store at most every
//! [`ADVISORIES_TTL`]: the small pointer each time, the database itself
//! only when the pointer names another one (an import by any instance on
//! the same store). A version's summary is made once per database from
//! its platforms' build records and kept in memory.

use std::sync::Arc;
use std::time::Duration;

mod census;

use super::held::{self, Cache};
use super::refreshed::Refreshed;
use super::Mirror;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::advisories::{Database, Reading, Summary};
use crate::error::RequestError;
use crate::store::advisories::{self, Current};

/// How long the database as read is used before the store is looked at
/// again: how soon an import by another instance is seen.
pub(super) const ADVISORIES_TTL: Duration = Duration::from_secs(5);

/// How many bytes of versions' summaries are kept, about: a summary
/// weighs [`FINDING_WEIGHT`] per finding. Versions beyond it are matched
/// again when asked for.
const SUMMARIES_WEIGHT: u64 = 16 << 20;

/// What one finding of a kept summary is reckoned to weigh, in bytes.
const FINDING_WEIGHT: u32 = 512;

/// The kept database as last read.
#[derive(Debug, Default)]
pub struct HeldAdvisories {
    /// What the store's pointer said; `None` when nothing was imported.
    pub current: Option<Current>,
    /// The database it names, indexed; `None` when nothing was imported or
    /// it could not be read.
    pub db: Option<Arc<Database>>,
}

/// The mirror's advisory state.
pub(super) struct AdvisoryState {
    held: Refreshed<HeldAdvisories>,
    /// Each version's summary, with the database's SHA-256 and the
    /// platforms it was made from (a platform stored since makes it again).
    summaries: Cache<(Provider, Version), Arc<KeptSummary>>,
    /// The held versions counted against the database, last made.
    census: std::sync::Mutex<Option<Arc<census::Census>>>,
    /// What the last count found per version.
    memo: std::sync::Mutex<census::CensusMemo>,
    /// Each provider's held versions' summaries as the version lists of
    /// rules by advisory last matched them (`gate/advised`), kept for
    /// [`ADVISORIES_TTL`] at most, so that build records another instance
    /// kept on the store are read again.
    pub(super) lists: moka::sync::Cache<Provider, Arc<AdvisedList>>,
    /// Bumped when a build record is kept or an archive evicted here: a
    /// kept list made before is matched again.
    pub(super) generation: std::sync::atomic::AtomicU64,
}

/// A provider's held versions' summaries, as matched for its version
/// lists.
pub(super) struct AdvisedList {
    /// [`AdvisoryState::generation`] when they were matched.
    pub generation: u64,
    /// The database's SHA-256.
    pub database: String,
    /// The summaries, by version.
    pub versions: Arc<std::collections::BTreeMap<Version, Summary>>,
}

/// A version's summary as kept, with what it was made from.
struct KeptSummary {
    /// The database's SHA-256.
    database: String,
    /// The platforms matched.
    platforms: Vec<Platform>,
    /// The summary.
    summary: Summary,
}

impl AdvisoryState {
    /// Nothing read yet.
    pub(super) fn new() -> AdvisoryState {
        AdvisoryState {
            held: Refreshed::new(ADVISORIES_TTL),
            summaries: moka::future::Cache::builder()
                .max_capacity(SUMMARIES_WEIGHT)
                .weigher(|_, kept: &Arc<KeptSummary>| {
                    let findings = u32::try_from(kept.summary.advisories.len()).unwrap_or(u32::MAX);
                    findings.saturating_add(1).saturating_mul(FINDING_WEIGHT)
                })
                .build_with_hasher(held::KeyHash::default()),
            census: std::sync::Mutex::new(None),
            memo: std::sync::Mutex::new(census::CensusMemo::default()),
            lists: moka::sync::Cache::builder()
                .max_capacity(SUMMARIES_WEIGHT)
                .time_to_live(ADVISORIES_TTL)
                .weigher(|_, list: &Arc<AdvisedList>| {
                    let findings: usize =
                        list.versions.values().map(|s| s.advisories.len() + 1).sum();
                    u32::try_from(findings)
                        .unwrap_or(u32::MAX)
                        .saturating_mul(FINDING_WEIGHT)
                })
                .build(),
            generation: std::sync::atomic::AtomicU64::new(0),
        }
    }
}

impl Mirror {
    /// The advisory database, as read from the store within the last few
    /// seconds (`ADVISORIES_TTL`).
    pub async fn advisories(&self) -> Arc<HeldAdvisories> {
        let state = &self.advisories;
        if let Some(live) = state.held.live() {
            return live;
        }
        let load = || async {
            let last = state.held.last();
            let current = match advisories::current(self.store.as_ref()).await {
                Ok(current) => current,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the advisory database's pointer; the one held is kept");
                    return last.unwrap_or_default();
                }
            };
            let Some(current) = current else {
                return Arc::new(HeldAdvisories::default());
            };
            if let Some(last) = last.filter(|l| {
                l.db.is_some() && l.current.as_ref().map(|c| &c.sha256) == Some(&current.sha256)
            }) {
                return last;
            }
            let db = match advisories::database(self.store.as_ref(), &current).await {
                Ok(Some(stored)) => tokio::task::spawn_blocking(move || Database::new(stored))
                    .await
                    .ok()
                    .map(Arc::new),
                Ok(None) => None,
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the advisory database");
                    None
                }
            };
            if let Some(db) = &db {
                self.metrics.advisory_database(&db.stored.source);
            }
            Arc::new(HeldAdvisories {
                current: Some(current),
                db,
            })
        };
        Box::pin(state.held.get_or_load(load)).await
    }

    /// What a held package comes to against the database (the
    /// advisories it falls under, and what is not known of it), from its
    /// build record (made now where missing); `None` when the store holds
    /// neither.
    pub async fn package_findings(
        self: &Arc<Self>,
        db: &Database,
        key: &ArchiveKey,
    ) -> Result<Option<Reading>, RequestError> {
        let Some(record) = self.build_record(key).await? else {
            return Ok(None);
        };
        Ok(Some(record.reading(db)))
    }

    /// What a held version falls under, over `platforms`, with the
    /// database it was matched against; `None` when no database is kept.
    /// A platform whose record cannot be read or made is named in the
    /// summary's `not_read`, and such a summary is not kept.
    pub async fn version_advisories(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platforms: &[Platform],
    ) -> Option<(Arc<HeldAdvisories>, Summary)> {
        self.match_version(provider, version, platforms, true).await
    }

    /// [`Mirror::version_advisories`], keeping the summary made for the
    /// pages' next views when `keep` (the census keeps its own, smaller,
    /// result: a count of every held version must not fill the pages'
    /// cache).
    pub(super) async fn match_version(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platforms: &[Platform],
        keep: bool,
    ) -> Option<(Arc<HeldAdvisories>, Summary)> {
        let held = self.advisories().await;
        let db = held.db.clone()?;
        let sha = held.current.as_ref().map(|c| c.sha256.clone())?;
        let key = (provider.clone(), version.clone());
        if let Some(kept) = self.advisories.summaries.get(&key).await {
            if kept.database == sha && kept.platforms == platforms {
                return Some((held, kept.summary.clone()));
            }
        }
        let mut per_platform = std::collections::BTreeMap::new();
        let mut not_read = Vec::new();
        for platform in platforms {
            let archive = ArchiveKey::new(provider, version, platform);
            match self.package_findings(&db, &archive).await {
                Ok(Some(found)) => {
                    per_platform.insert(platform.to_string(), found);
                }
                Ok(None) => not_read.push(platform.to_string()),
                Err(e) => {
                    tracing::warn!(archive = %archive, error = %e, "could not match a package against the advisory database");
                    not_read.push(platform.to_string());
                }
            }
        }
        let summary = Summary::of(&per_platform, not_read);
        // An incomplete summary is made again on the next ask.
        if !keep || !summary.not_read.is_empty() {
            return Some((held, summary));
        }
        self.advisories
            .summaries
            .insert(
                key,
                Arc::new(KeptSummary {
                    database: sha,
                    platforms: platforms.to_vec(),
                    summary: summary.clone(),
                }),
            )
            .await;
        Some((held, summary))
    }
}

/// Why fetching the advisory databases failed; the one kept stays.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// `[advisories] urls` names none.
    #[error("[advisories] urls names no database to fetch")]
    NothingToFetch,
    /// The mirror is offline.
    #[error("this mirror is offline (upstream.offline): it fetches no advisory database")]
    Offline,
    /// A database could not be fetched.
    #[error("fetching {url}: {reason}")]
    Fetch {
        /// What.
        url: String,
        /// Why.
        reason: String,
    },
    /// What was fetched does not read.
    #[error(transparent)]
    Import(#[from] crate::advisories::import::ImportError),
    /// The store could not keep it.
    #[error("keeping the advisory database: {0}")]
    Store(#[from] crate::store::StoreError),
}

impl Mirror {
    /// Fetches `[advisories] urls` through the upstream client (its
    /// request forgery guard, CA file and timeouts), each into a staging
    /// file of at most `advisories.max_size`, reads them as one database
    /// and keeps it in the store, replacing the one kept before. Nothing
    /// is kept when any of them fails.
    pub async fn sync_advisories(&self) -> Result<crate::advisories::database::Source, SyncError> {
        let settings = &self.config.advisories;
        if self.config.upstream.offline {
            return Err(SyncError::Offline);
        }
        if settings.urls.is_empty() {
            return Err(SyncError::NothingToFetch);
        }
        let mut staged = Vec::new();
        for url in &settings.urls {
            let failed = |reason: String| SyncError::Fetch {
                url: url.to_string(),
                reason,
            };
            let file = self
                .store
                .staging_file()
                .map_err(|e| failed(e.to_string()))?;
            let download = crate::upstream::download::Download::start(
                &self.origin.client,
                url,
                None,
                settings.max_size.as_u64(),
            )
            .await
            .map_err(|e| failed(e.to_string()))?;
            let mut out =
                tokio::fs::File::from_std(file.reopen().map_err(|e| failed(e.to_string()))?);
            download
                .write_to(&mut out, &self.metrics, true, |_| {})
                .await
                .map_err(|e| failed(e.to_string()))?;
            // Every byte reaches the file before it is read by path.
            tokio::io::AsyncWriteExt::flush(&mut out)
                .await
                .map_err(|e| failed(e.to_string()))?;
            staged.push((file.into_temp_path(), url.to_string()));
        }
        let paths: Vec<(std::path::PathBuf, String)> = staged
            .iter()
            .map(|(path, name)| (path.to_path_buf(), name.clone()))
            .collect();
        let now = crate::clock::unix_ms_of(self.clock.now());
        let stored =
            tokio::task::spawn_blocking(move || crate::advisories::import::read_all(&paths, now))
                .await
                .map_err(|e| SyncError::Fetch {
                    url: "the advisory databases".into(),
                    reason: e.to_string(),
                })??;
        drop(staged);
        advisories::write(self.store.as_ref(), &stored).await?;
        tracing::info!(
            entries = stored.source.entries,
            from = %stored.source.name,
            "advisory database fetched and kept"
        );
        Ok(stored.source)
    }

    /// The daemon's schedule of [`Mirror::sync_advisories`], every
    /// `advisories.sync_interval` (first at start), until the mirror
    /// drains. A failed fetch is logged and tried again at the next turn.
    pub async fn keep_advisories_fetched(self: Arc<Self>) {
        let every = self.config.advisories.sync_interval;
        if every.is_zero() || self.config.advisories.urls.is_empty() || self.config.upstream.offline
        {
            return;
        }
        while !self.draining.load(std::sync::atomic::Ordering::Relaxed) {
            if let Err(e) = self.sync_advisories().await {
                tracing::warn!(error = %e, "could not fetch the advisory database; the one kept stays");
            }
            let next = self.clock.now() + every;
            self.clock.sleep_until(next).await;
        }
    }
}
