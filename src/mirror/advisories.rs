//! The advisory database as the mirror holds it, and what held versions
//! fall under. The database is read from the store at most every
//! [`ADVISORIES_TTL`]: the small pointer each time, the database itself
//! only when the pointer names another one (an import by any instance on
//! the same store). A version's summary is made once per database from
//! its platforms' build records and kept in memory.

use std::sync::Arc;
use std::hash::BuildHasher as _;
use std::time::Duration;

use super::held::{self, Cache};
use super::refreshed::Refreshed;
use super::Mirror;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::advisories::{Database, Finding, Summary};
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
    census: std::sync::Mutex<Option<Arc<Census>>>,
    /// What the last count found per version.
    memo: std::sync::Mutex<CensusMemo>,
}

/// What the last count found per provider version, so that the next one
/// (after an archive arrives) matches again only the versions whose
/// platforms changed, not every held one: at a million archives, or on a
/// bucket, reading every record again per arrival would cost more than
/// the count is worth. About 20 bytes per version.
#[derive(Default)]
struct CensusMemo {
    /// The database's SHA-256 the results are for.
    database: String,
    /// Hashes the keys.
    hasher: std::collections::hash_map::RandomState,
    /// By a hash of the provider and version: a hash of the platforms
    /// counted, and the worst advisory's place in [`WORST`]
    /// ([`NOT_AFFECTED`] for none).
    versions: std::collections::HashMap<u64, (u32, u8)>,
}

/// A version that falls under no advisory, in [`CensusMemo`].
const NOT_AFFECTED: u8 = u8::MAX;

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
            memo: std::sync::Mutex::new(CensusMemo::default()),
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

    /// The advisories a held package falls under, from its build record
    /// (made now where missing); `None` when the store holds neither.
    pub async fn package_findings(
        self: &Arc<Self>,
        db: &Database,
        key: &ArchiveKey,
    ) -> Result<Option<Vec<Finding>>, RequestError> {
        let Some(record) = self.build_record(key).await? else {
            return Ok(None);
        };
        let found = record.findings(db);
        Ok(Some(found))
    }

    /// What a held version falls under, over `platforms`, with the
    /// database it was matched against; `None` when no database is kept.
    /// A platform whose record cannot be read or made is left out.
    pub async fn version_advisories(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platforms: &[Platform],
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
        for platform in platforms {
            let archive = ArchiveKey::new(provider, version, platform);
            match self.package_findings(&db, &archive).await {
                Ok(Some(found)) => {
                    per_platform.insert(platform.to_string(), found);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(archive = %archive, error = %e, "could not match a package against the advisory database");
                }
            }
        }
        let summary = Summary::of(&per_platform);
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

/// What the held provider versions and CLI releases come to against the
/// advisory database.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct Census {
    /// The SHA-256 of the database it was made with.
    pub database: String,
    /// Provider versions looked at.
    pub versions: usize,
    /// Those that fall under any advisory.
    pub affected: usize,
    /// The affected versions by their worst advisory
    /// ([`crate::advisories::WORST`]).
    pub by_worst: std::collections::BTreeMap<String, usize>,
    /// CLI releases looked at (a product's version with a platform zip
    /// held).
    pub releases: usize,
    /// Those that fall under any advisory.
    pub releases_affected: usize,
    /// The affected releases by their worst advisory.
    pub releases_by_worst: std::collections::BTreeMap<String, usize>,
}

/// How often the daemon looks whether the census is due.
const CENSUS_CHECK: Duration = Duration::from_secs(10);

impl Mirror {
    /// The advisory database as last read, without reading the store;
    /// `None` before the first read.
    pub fn advisories_now(&self) -> Option<Arc<HeldAdvisories>> {
        self.advisories.held.last()
    }

    /// The census last made; `None` before the first, or without a
    /// database.
    pub fn advisory_census(&self) -> Option<Arc<Census>> {
        self.advisories
            .census
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Counts every held provider version against the database now, and
    /// keeps and exports the count; `None` without a database.
    pub async fn count_advisories(self: &Arc<Self>) -> Option<Arc<Census>> {
        let held = self.advisories().await;
        let database = held.current.as_ref()?.sha256.clone();
        held.db.as_ref()?;
        // Taken out while counting: a count beside this one starts afresh.
        let mut memo = std::mem::take(&mut *self.advisory_memo());
        if memo.database != database {
            memo.versions.clear();
            memo.database.clone_from(&database);
        }
        let mut counted = std::collections::HashMap::with_capacity(memo.versions.len());
        let mut census = Census {
            database,
            ..Census::default()
        };
        for source in self.held_providers() {
            let Ok(provider) = Provider::from_source(&source) else {
                continue;
            };
            for (version, platforms) in self.held_versions(&provider) {
                census.versions += 1;
                let key = memo.hasher.hash_one((source.as_str(), version.as_str()));
                // Truncated: a changed list is told from the last one.
                #[allow(clippy::cast_possible_truncation)]
                let listed = memo.hasher.hash_one(&platforms) as u32;
                let worst = match memo.versions.get(&key) {
                    Some(&(was, worst)) if was == listed => worst,
                    _ => {
                        let platforms: Vec<Platform> =
                            (platforms.iter()).filter_map(|p| Platform::parse(p).ok()).collect();
                        let Some((_, summary)) = self
                            .version_advisories(&provider, &version, &platforms)
                            .await
                        else {
                            continue;
                        };
                        (summary.worst_name())
                            .and_then(|w| crate::advisories::WORST.iter().position(|x| *x == w))
                            .and_then(|i| u8::try_from(i).ok())
                            .unwrap_or(NOT_AFFECTED)
                    }
                };
                counted.insert(key, (listed, worst));
                if let Some(name) = crate::advisories::WORST.get(usize::from(worst)) {
                    census.affected += 1;
                    *census.by_worst.entry((*name).to_string()).or_default() += 1;
                }
            }
        }
        memo.versions = counted;
        *self.advisory_memo() = memo;
        self.count_release_advisories(&mut census).await;
        self.metrics
            .advisory_affected(&census.by_worst, &census.releases_by_worst);
        let census = Arc::new(census);
        *self
            .advisories
            .census
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(census.clone());
        Some(census)
    }

    /// The census's memo, locked.
    fn advisory_memo(&self) -> std::sync::MutexGuard<'_, CensusMemo> {
        self.advisories
            .memo
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Adds the held CLI releases to `census`.
    async fn count_release_advisories(&self, census: &mut Census) {
        let mut held: std::collections::BTreeMap<_, Vec<_>> = std::collections::BTreeMap::new();
        for file in self.held_release_files() {
            if crate::releases::builds::zip_platform(&file).is_some() {
                held.entry((file.product, file.version.clone()))
                    .or_default()
                    .push(file);
            }
        }
        for ((product, version), files) in held {
            census.releases += 1;
            let Some(summary) = self.release_advisories(product, &version, &files).await else {
                continue;
            };
            if let Some(worst) = summary.worst_name() {
                census.releases_affected += 1;
                *census
                    .releases_by_worst
                    .entry(worst.to_string())
                    .or_default() += 1;
            }
        }
    }

    /// The daemon's census: made again whenever the database changes, an
    /// archive or a release file arrives or the index's first walk ends,
    /// until the mirror drains.
    pub async fn keep_advisory_census(self: Arc<Self>) {
        let mut counted: Option<(String, u64, bool, usize)> = None;
        while !self.draining.load(std::sync::atomic::Ordering::Relaxed) {
            let sha = self
                .advisories()
                .await
                .current
                .as_ref()
                .map(|c| c.sha256.clone());
            let kept = self
                .providers
                .archives_kept
                .load(std::sync::atomic::Ordering::Relaxed);
            // The index's first walk ending changes what is held, too, and
            // so does a release file kept.
            let built = *self.index_built.borrow();
            let releases = self.held_release_files().len();
            let now = sha.map(|sha| (sha, kept, built, releases));
            if now.is_some() && now != counted && self.count_advisories().await.is_some() {
                counted = now;
            }
            // A fixed pause is right here: this is a poll of what may have
            // changed (the store's pointer, another instance's import, an
            // archive kept), not a wait for one event; the census follows
            // within CENSUS_CHECK, and the pointer read costs one small GET.
            tokio::time::sleep(CENSUS_CHECK).await;
        }
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
