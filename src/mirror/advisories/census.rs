//! The census: every held provider version and CLI release counted
//! against the advisory database, for the status page and the metrics;
//! made again when the database changes or something arrives.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use super::HeldAdvisories;
use crate::address::{Platform, Provider};
use crate::mirror::Mirror;

/// What the last count found per provider version, so that the next one
/// (after an archive arrives) matches again only the versions whose
/// platforms changed, not every held one: at a million archives, or on a
/// bucket, reading every record again per arrival would cost more than
/// the count is worth. Keyed and compared by the names themselves, never
/// by a hash of them: a collision would keep a stale count. A provider's
/// source is kept once for all its versions and a list of platforms once
/// for every version that has it, so a version costs its own name, two
/// shared pointers and two bytes, about 80 bytes with the map's own.
#[derive(Default)]
pub(super) struct CensusMemo {
    /// The database's SHA-256 the results are for.
    database: String,
    /// By provider source, then version.
    versions: HashMap<Arc<str>, HashMap<Box<str>, Counted>>,
}

/// One version as the last count found it.
#[derive(Debug, Clone)]
struct Counted {
    /// The platforms counted, sorted as the index lists them.
    platforms: Arc<[String]>,
    /// The worst advisory's place in [`crate::advisories::WORST`]
    /// ([`NOT_AFFECTED`] for none).
    worst: u8,
    /// Whether its binaries were all understood.
    known: bool,
}

/// A version that falls under no advisory, in [`CensusMemo`].
const NOT_AFFECTED: u8 = u8::MAX;

impl CensusMemo {
    /// Forgets what was counted against another database.
    fn for_database(&mut self, database: &str) {
        if self.database != database {
            self.versions.clear();
            database.clone_into(&mut self.database);
        }
    }

    /// What the last count found for `version` of `source`, where it was
    /// counted over exactly `platforms`: the worst advisory's place and
    /// whether it was known.
    fn reuse(&self, source: &str, version: &str, platforms: &[String]) -> Option<(u8, bool)> {
        let counted = self.versions.get(source)?.get(version)?;
        (*counted.platforms == *platforms).then_some((counted.worst, counted.known))
    }
}

/// The memo a count makes as it goes, for the next count.
#[derive(Default)]
struct Recount {
    /// What is counted so far.
    versions: HashMap<Arc<str>, HashMap<Box<str>, Counted>>,
    /// Each list of platforms seen, kept once.
    lists: std::collections::HashSet<Arc<[String]>>,
}

impl Recount {
    /// Keeps what `version` of `source` came to over `platforms`.
    fn keep(&mut self, source: &str, version: &str, platforms: &[String], worst: u8, known: bool) {
        let platforms = if let Some(list) = self.lists.get(platforms) {
            list.clone()
        } else {
            let list: Arc<[String]> = platforms.into();
            self.lists.insert(list.clone());
            list
        };
        let counted = Counted {
            platforms,
            worst,
            known,
        };
        match self.versions.get_mut(source) {
            Some(versions) => {
                versions.insert(version.into(), counted);
            }
            None => {
                self.versions
                    .insert(source.into(), HashMap::from([(version.into(), counted)]));
            }
        }
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
        memo.for_database(&database);
        let mut counted = Recount::default();
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
                let (worst, known, complete) = if let Some((worst, known)) =
                    memo.reuse(&source, version.as_str(), &platforms)
                {
                    (worst, known, true)
                } else {
                    let parsed: Vec<Platform> = (platforms.iter())
                        .filter_map(|p| Platform::parse(p).ok())
                        .collect();
                    let Some((_, summary)) = self
                        .match_version(&provider, &version, &parsed, false)
                        .await
                    else {
                        continue;
                    };
                    let worst = (summary.worst_name())
                        .and_then(|w| crate::advisories::WORST.iter().position(|x| *x == w))
                        .and_then(|i| u8::try_from(i).ok())
                        .unwrap_or(NOT_AFFECTED);
                    (worst, summary.known, summary.not_read.is_empty())
                };
                // A version whose records could not all be read is
                // counted again next time.
                if complete {
                    counted.keep(&source, version.as_str(), &platforms, worst, known);
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
        memo.versions = counted.versions;
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
            if file.zip_platform().is_some() {
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

#[cfg(test)]
mod tests {
    use super::{CensusMemo, Recount, NOT_AFFECTED};
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    const PLATFORMS: [&str; 4] = [
        "darwin_arm64",
        "linux_amd64",
        "linux_arm64",
        "windows_amd64",
    ];

    /// What matching a version over its platforms finds, as the store
    /// would: any function of the three will do, as long as the memo
    /// does not know it.
    fn matched(source: &str, version: &str, platforms: &[String]) -> (u8, bool) {
        let weight: usize =
            source.len() + version.len() + platforms.iter().map(String::len).sum::<usize>();
        let worst = if platforms.len().is_multiple_of(2) {
            NOT_AFFECTED
        } else {
            u8::try_from(weight % 4).unwrap()
        };
        (worst, !platforms.iter().any(|p| p.starts_with("windows")))
    }

    proptest! {
        /// After any run of arrivals and evictions, a count that reuses
        /// the memo finds for each version what matching it afresh finds.
        #[test]
        fn a_count_from_the_memo_is_a_count_from_scratch(
            steps in proptest::collection::vec((0usize..3, 0usize..3, 0usize..4), 1..40)
        ) {
            let mut held: BTreeMap<(String, String), Vec<String>> = BTreeMap::new();
            let mut memo = CensusMemo::default();
            memo.for_database("db");
            for (provider, version, platform) in steps {
                // A platform arrives, or is evicted where it was held.
                let key = (format!("registry.test/acme/p{provider}"), format!("1.{version}.0"));
                let list = held.entry(key).or_default();
                let platform = PLATFORMS[platform].to_string();
                match list.binary_search(&platform) {
                    Ok(at) => { list.remove(at); }
                    Err(at) => list.insert(at, platform),
                }
                let mut counted = Recount::default();
                for ((source, version), platforms) in &held {
                    let fresh = matched(source, version, platforms);
                    let got = memo.reuse(source, version, platforms).unwrap_or(fresh);
                    prop_assert_eq!(got, fresh, "{} {} {:?}", source, version, platforms);
                    counted.keep(source, version, platforms, got.0, got.1);
                }
                memo.versions = counted.versions;
            }
            // Another database forgets every count.
            memo.for_database("another");
            prop_assert!(memo.versions.is_empty());
        }
    }
}
