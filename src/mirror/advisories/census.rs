//! The census: every held provider version and CLI release counted
//! against the advisory database, for the status page and the metrics;
//! made again when the database changes or something arrives.

use std::hash::BuildHasher as _;
use std::sync::Arc;
use std::time::Duration;

use super::HeldAdvisories;
use crate::address::{Platform, Provider};
use crate::mirror::Mirror;

/// What the last count found per provider version, so that the next one
/// (after an archive arrives) matches again only the versions whose
/// platforms changed, not every held one: at a million archives, or on a
/// bucket, reading every record again per arrival would cost more than
/// the count is worth. About 20 bytes per version.
#[derive(Default)]
pub(super) struct CensusMemo {
    /// The database's SHA-256 the results are for.
    database: String,
    /// Hashes the keys.
    hasher: std::collections::hash_map::RandomState,
    /// By a hash of the provider and version: a hash of the platforms
    /// counted, the worst advisory's place in [`crate::advisories::WORST`]
    /// ([`NOT_AFFECTED`] for none), and whether its binaries were all
    /// understood.
    versions: std::collections::HashMap<u64, (u32, u8, bool)>,
}

/// A version that falls under no advisory, in [`CensusMemo`].
const NOT_AFFECTED: u8 = u8::MAX;

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
    /// Versions some of whose binaries were read and not understood (no
    /// Go build information, unreadable, a toolchain not understood) or
    /// whose records could not be read: what they fall under is not
    /// known, whether or not they are among `affected`.
    pub not_known: usize,
    /// CLI releases looked at (a product's version with a platform zip
    /// held).
    pub releases: usize,
    /// Those that fall under any advisory.
    pub releases_affected: usize,
    /// The affected releases by their worst advisory.
    pub releases_by_worst: std::collections::BTreeMap<String, usize>,
    /// Releases some of whose binaries are not understood.
    pub releases_not_known: usize,
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
                let (worst, known, complete) = match memo.versions.get(&key) {
                    Some(&(was, worst, known)) if was == listed => (worst, known, true),
                    _ => {
                        let platforms: Vec<Platform> = (platforms.iter())
                            .filter_map(|p| Platform::parse(p).ok())
                            .collect();
                        let Some((_, summary)) = self
                            .match_version(&provider, &version, &platforms, false)
                            .await
                        else {
                            continue;
                        };
                        let worst = (summary.worst_name())
                            .and_then(|w| crate::advisories::WORST.iter().position(|x| *x == w))
                            .and_then(|i| u8::try_from(i).ok())
                            .unwrap_or(NOT_AFFECTED);
                        (worst, summary.known, summary.not_read.is_empty())
                    }
                };
                // A version whose records could not all be read is
                // counted again next time.
                if complete {
                    counted.insert(key, (listed, worst, known));
                }
                if !known {
                    census.not_known += 1;
                }
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
        self.metrics
            .advisory_not_known(census.not_known, census.releases_not_known);
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
            if !summary.known {
                census.releases_not_known += 1;
            }
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
    ///
    /// `after_count` runs after each count (the daemon hands back the
    /// memory the records' reading freed).
    pub async fn keep_advisory_census(self: Arc<Self>, after_count: fn()) {
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
                after_count();
            }
            // A fixed pause is right here: this is a poll of what may have
            // changed (the store's pointer, another instance's import, an
            // archive kept), not a wait for one event; the census follows
            // within CENSUS_CHECK, and the pointer read costs one small GET.
            tokio::time::sleep(CENSUS_CHECK).await;
        }
    }
}
