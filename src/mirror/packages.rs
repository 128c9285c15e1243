//! Every platform's package of a version at once — its `zh:`, its `h1:`
//! when known and its exact size — for the `packages` field of the
//! registry facade's download answer, which OpenTofu reads to write every
//! platform's hashes into a lock file without downloading them.
//!
//! A stored archive's own size and `h1:` count first; then what the version
//! record learned: the origin's own `packages` field (its `zh:` checked
//! against the signed checksums when the record was made), or the
//! `Content-Length` of the origin's download URL, asked once per version
//! and kept in the record. OpenTofu fails an install whose entry is
//! missing or whose size is wrong, so a field the mirror cannot complete
//! is left out rather than sent in part.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::join_all;
use serde::Serialize;

use super::archive::Archive;
use super::Mirror;
use crate::address::{ArchiveKey, Platform};
use crate::store::VersionRecord;
use crate::upstream::download::Download;
use crate::verify;

/// One platform's entry of the `packages` field.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageEntry {
    /// `zh:` first, then `h1:` when known.
    pub hashes: Vec<String>,
    /// The archive's size in bytes.
    pub package_size: u64,
}

impl Mirror {
    /// The `packages` field for `record`: an entry for every platform, or
    /// `None` when a size could not be learned (the reason is logged).
    pub(super) async fn packages_field(
        self: &Arc<Self>,
        record: Arc<VersionRecord>,
    ) -> Option<BTreeMap<Platform, PackageEntry>> {
        let held = self.held_archives(&record).await;
        let lacking = |r: &VersionRecord| {
            r.packages
                .iter()
                .any(|(platform, pkg)| pkg.size.is_none() && !held.contains_key(platform))
        };
        let record = if lacking(&record) {
            match self.learn_sizes(record, &held).await {
                Ok(learned) => learned,
                Err(reason) => {
                    tracing::warn!(%reason, "leaving out the packages field: not every platform's size is known");
                    return None;
                }
            }
        } else {
            record
        };
        let mut out = BTreeMap::new();
        for (platform, pkg) in &record.packages {
            let (size, h1) = match held.get(platform) {
                Some(archive) => (archive.size, Some(archive.h1.clone())),
                None => (pkg.size?, pkg.reported_h1.clone()),
            };
            if size == 0 {
                return None;
            }
            let mut hashes = vec![verify::zh(&pkg.sha256)];
            hashes.extend(h1);
            out.insert(
                platform.clone(),
                PackageEntry {
                    hashes,
                    package_size: size,
                },
            );
        }
        Some(out)
    }

    /// The archives of `record` the cache holds, with their sizes and
    /// `h1:` hashes.
    pub(super) async fn held_archives(
        &self,
        record: &VersionRecord,
    ) -> BTreeMap<Platform, Arc<Archive>> {
        let mut out = BTreeMap::new();
        for platform in record.packages.keys() {
            let key = ArchiveKey::new(&record.provider, &record.version, platform);
            if let Some(archive) = self.providers.archives.get(&key).await {
                out.insert(platform.clone(), archive);
            } else if let Some(archive) = self.stored_archive(&key).await {
                let archive = Arc::new(archive);
                out.insert(platform.clone(), archive.clone());
                self.providers.archives.insert(key, archive).await;
            }
        }
        out
    }

    /// Learns the sizes `record` lacks (of archives the cache does not
    /// hold) from the origin, once per version however many ask at once,
    /// and keeps them in the record.
    async fn learn_sizes(
        self: &Arc<Self>,
        record: Arc<VersionRecord>,
        held: &BTreeMap<Platform, Arc<Archive>>,
    ) -> Result<Arc<VersionRecord>, String> {
        if self.offline() {
            return Err("the mirror is offline (upstream.offline)".into());
        }
        let key = (record.provider.clone(), record.version.clone());
        let held: Vec<Platform> = held.keys().cloned().collect();
        let this = self.clone();
        self.providers
            .sizing
            .try_get_with(key, async move { this.ask_sizes(&record, &held).await })
            .await
            .map_err(|e| e.to_string())
    }

    /// Asks the origin for the size of each archive of `record` that has
    /// none and is not `held`: the `Content-Length` of its download URL,
    /// whose body is not read.
    async fn ask_sizes(
        &self,
        record: &VersionRecord,
        held: &[Platform],
    ) -> Result<Arc<VersionRecord>, String> {
        let max_size = self.config.upstream.max_archive_size.as_u64();
        let lacking = record
            .packages
            .iter()
            .filter(|(platform, pkg)| pkg.size.is_none() && !held.contains(platform));
        let asked = join_all(lacking.map(|(platform, pkg)| async move {
            let started =
                Download::start(&self.origin.client, &pkg.download_url, None, max_size).await;
            let size = started.map_err(|e| e.to_string()).and_then(|download| {
                download
                    .announced()
                    .filter(|n| *n > 0)
                    .ok_or_else(|| "the origin announces no size".to_owned())
            });
            (platform.clone(), size)
        }))
        .await;
        let mut learned = Vec::new();
        for (platform, size) in asked {
            let size = size
                .map_err(|e| format!("{} {} {platform}: {e}", record.provider, record.version))?;
            learned.push((platform, size));
        }
        tracing::info!(provider = %record.provider, version = %record.version, "learned the sizes of the version's archives from the origin");
        Ok(self
            .amend_version(record, |amended| {
                for (platform, size) in learned {
                    if let Some(pkg) = amended.packages.get_mut(&platform) {
                        pkg.size = Some(size);
                    }
                }
            })
            .await)
    }
}
