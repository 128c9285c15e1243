//! Archives: downloaded once, checked against the signed SHA256SUMS, kept
//! in the store, and handed to the HTTP layer as a stream of bytes.
//!
//! A large download (above `upstream.stream_above`, with an announced
//! size) is registered while it arrives, and clients that ask for the
//! archive then read the staging file as it grows rather than wait for
//! the end. The rule that makes this safe lives in `arrivals`, on both
//! sides: the producer says how far the file goes and, only after the
//! whole archive's SHA-256 matched, that it verified; the consumer never
//! sends the last byte before that, and ends the body in an error when the
//! download fails, so no client can ever accept an archive that did not
//! verify.

use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tracing::Instrument;

use super::Mirror;
use crate::address::ArchiveKey;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome};
use crate::policy::Subject;
use crate::store::VersionRecord;
use crate::store::{ArchiveSource, Claim, StoreError};
use crate::upstream::download::{Download, DownloadError};
use crate::verify::Verification;

mod arrivals;
mod body;

pub(super) use arrivals::Arrivals;
use body::{counted, BodySource, Reading};
pub use body::{ArchiveBody, FileOrStream, StoredFile};

/// How soon an instance waiting for another's download first looks for
/// the archive, doubling up to [`CLAIM_POLL_MAX`].
const CLAIM_POLL_FIRST: std::time::Duration = std::time::Duration::from_millis(100);
/// The longest pause between looks for an archive another instance is
/// downloading.
const CLAIM_POLL_MAX: std::time::Duration = std::time::Duration::from_secs(1);

/// An archive the cache holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Archive {
    /// Its size in bytes.
    pub size: u64,
    /// Its `h1:` hash.
    pub h1: String,
}

impl Mirror {
    /// The archive of a package, downloaded and verified on first use.
    /// Concurrent first requests share one download, which runs as its own
    /// task so that it completes (and is kept) even when every client that
    /// asked for it has gone away.
    pub async fn archive(self: &Arc<Self>, key: &ArchiveKey) -> Result<Arc<Archive>, RequestError> {
        self.check_host(&key.provider.hostname)?;
        self.permit(Subject::Provider(&key.provider), &key.version)
            .await?;
        // Counted from before the first look: every request counted is
        // either downloading or waiting for the download under way.
        let waiting = self.metrics.archive_wait();
        let entry = self
            .providers
            .archives
            .entry(key.clone())
            .or_try_insert_with(self.clone().stored_or_download(key.clone()))
            .await
            .map_err(|e| (*e).clone());
        drop(waiting);
        let entry = entry?;
        self.permit_read(key).await?;
        if !entry.is_fresh() {
            self.note(CacheKind::Archive, CacheOutcome::Hit);
        }
        Ok(entry.into_value())
    }

    /// Where clients fetch an archive from the store directly, when
    /// `storage.s3.redirect` is on: a presigned URL valid for
    /// `auth.url_lifetime`, once the archive is stored (downloading it
    /// first when needed). `None` when redirects are off.
    pub async fn archive_redirect(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<Option<url::Url>, RequestError> {
        let redirect = self
            .config
            .storage
            .s3
            .as_ref()
            .is_some_and(|s3| s3.redirect)
            && self.config.storage.backend == crate::config::StorageBackend::S3;
        if !redirect {
            return Ok(None);
        }
        let archive = self.archive(key).await?;
        let url = self
            .store
            .presigned_url(key, self.config.auth.url_lifetime)
            .await
            .map_err(|e| {
                RequestError::DiskUnavailable(format!(
                    "the mirror's cache is not usable right now (signing a link to {key}: {e})"
                ))
            })?;
        if url.is_some() {
            // A use, for eviction; the bytes go from the bucket, not from here.
            let used = self.residency.used(key, archive.size);
            self.evict(used.evicted).await;
        }
        Ok(url)
    }

    /// The archive of a package as a stream of bytes: the stored archive,
    /// or, while it is being downloaded with an announced size, the
    /// download itself as it arrives (starting the download when no one
    /// has). The archive is not evicted while the stream lives.
    pub async fn archive_body(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<ArchiveBody, RequestError> {
        self.check_host(&key.provider.hostname)?;
        self.permit(Subject::Provider(&key.provider), &key.version)
            .await?;
        if self.advised().await {
            // A rule by advisory decides once the binary is read: the
            // archive is stored whole, and read, before it is served.
            self.archive(key).await?;
            return self.open_stored(key).await;
        }
        let cached =
            self.providers.archives.contains_key(key) || self.stored_archive(key).await.is_some();
        if cached || self.offline() {
            return self.open_stored(key).await;
        }
        // Cache outcomes are noted on the request's span or context.
        let mut fetch = tokio::spawn(crate::log_context::in_current_request(
            {
                let (this, key) = (self.clone(), key.clone());
                async move { this.open_stored(&key).await }
            }
            .in_current_span(),
        ));
        loop {
            let added = self.providers.arriving.added.notified();
            tokio::pin!(added);
            added.as_mut().enable();
            if let Some(body) = self.providers.arriving.follow(key, self) {
                // The task goes on: it keeps the archive once it is in.
                return Ok(body);
            }
            tokio::select! {
                done = &mut fetch => {
                    return done.map_err(|e| {
                        RequestError::Internal(format!("the download task failed: {e}"))
                    })?;
                }
                () = &mut added => {}
            }
        }
    }

    /// Opens the stored archive (fetching it first when needed), marked as
    /// being read for as long as its stream lives, and records its use.
    async fn open_stored(self: &Arc<Self>, key: &ArchiveKey) -> Result<ArchiveBody, RequestError> {
        // Marked as being read before it is looked up, so that no eviction
        // can slip in between finding the archive and opening it.
        let reading = Reading::new(self, key);
        for _ in 0..2 {
            let archive = self.archive(key).await?;
            let opened = self.store.open_archive(key).await.map_err(|e| {
                RequestError::DiskUnavailable(format!(
                    "the mirror's cache is not usable right now (opening a cached archive: {e})"
                ))
            })?;
            let Some(opened) = opened else {
                // Removed behind the mirror's back: forget it, fetch again.
                self.providers.archives.invalidate(key).await;
                self.residency.forget(key);
                continue;
            };
            let used = self.residency.used(key, archive.size);
            if used.touch {
                let (this, key) = (self.clone(), key.clone());
                tokio::spawn(async move { this.store.touch_archive(&key).await });
            }
            // Found in the store without the index knowing it: it joined,
            // and what no longer fits goes, as for an arrival.
            self.evict(used.evicted).await;
            let (mirror, size) = (self.clone(), opened.size);
            let source = match opened.source {
                ArchiveSource::File(file) => BodySource::Stored {
                    file,
                    mirror,
                    reading,
                },
                ArchiveSource::Reader(reader) => {
                    BodySource::Stream(counted(reader, mirror, reading))
                }
            };
            return Ok(ArchiveBody { size, source });
        }
        Err(RequestError::DiskUnavailable(format!(
            "{key}: the cached archive keeps disappearing from disk"
        )))
    }

    /// An archive the store holds.
    pub(super) async fn stored_archive(&self, key: &ArchiveKey) -> Option<Archive> {
        let stored = self.store.archive(key).await.ok()??;
        Some(Archive {
            size: stored.size,
            h1: stored.h1,
        })
    }

    async fn stored_or_download(
        self: Arc<Self>,
        key: ArchiveKey,
    ) -> Result<Arc<Archive>, RequestError> {
        match self.store.archive(&key).await {
            Ok(Some(a)) => {
                self.note(CacheKind::Archive, CacheOutcome::Hit);
                return Ok(Arc::new(Archive {
                    size: a.size,
                    h1: a.h1,
                }));
            }
            Ok(None) => {}
            // Not known to be missing: fetching it again would only find
            // the store as unusable for keeping it.
            Err(e) => {
                return Err(RequestError::DiskUnavailable(format!(
                    "the mirror's cache is not usable right now (looking up {key}: {e})"
                )))
            }
        }
        if self.offline() {
            return Err(RequestError::NotHeld(format!(
                "{key} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        self.note(CacheKind::Archive, CacheOutcome::Miss);
        if let Some(a) = self.claim_download(&key).await {
            self.evict_for(&key, a.size).await;
            return Ok(Arc::new(a));
        }
        let tasks = self.tasks.clone();
        let task = tasks.spawn(async move {
            let downloaded = self.download(&key).await;
            self.store.release(&key).await;
            let archive = downloaded?;
            self.evict_for(&key, archive.size).await;
            self.record_build_later(&key);
            self.capture_docs_later(&key.provider, &key.version);
            Ok(archive)
        });
        match task.await {
            Ok(result) => result.map(Arc::new),
            Err(e) => Err(RequestError::Internal(format!(
                "the download task failed: {e}"
            ))),
        }
    }

    /// Claims the download of an archive from the store, so that instances
    /// sharing it download each archive once. While another instance holds
    /// the claim, waits for the archive to appear there and returns it; a
    /// claim its holder stopped renewing lapses and is taken over. `None`:
    /// this instance downloads (also when the store cannot say).
    async fn claim_download(&self, key: &ArchiveKey) -> Option<Archive> {
        let mut pause = CLAIM_POLL_FIRST;
        let mut waited = false;
        loop {
            match self.store.claim(key).await {
                Ok(Claim::Granted) => {
                    self.metrics.download_claim("granted");
                    // The instance that held the claim before may have
                    // stored the archive and let go after this one last
                    // looked: look once more before downloading it again.
                    if let Some(a) = self.stored_archive(key).await {
                        self.store.release(key).await;
                        return Some(a);
                    }
                    return None;
                }
                Ok(Claim::Busy) => {}
                Err(e) => {
                    tracing::warn!(archive = %key, error = %e, "could not claim the download; downloading anyway");
                    return None;
                }
            }
            if !waited {
                waited = true;
                self.metrics.download_claim("waited");
                tracing::info!(archive = %key, "another instance is downloading this archive; waiting for it");
            }
            // A bucket announces nothing when an object appears, so the
            // waiting instance looks again, less often the longer it waits.
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(CLAIM_POLL_MAX);
            if let Some(a) = self.stored_archive(key).await {
                return Some(a);
            }
        }
    }

    /// Counts a newly stored archive and evicts what no longer fits.
    async fn evict_for(&self, key: &ArchiveKey, size: u64) {
        self.arrived(crate::store::Item::Archive(key.clone()));
        let evicted = self.residency.stored(key, size);
        self.evict(evicted).await;
    }

    /// Downloads an archive into a staging file, checks its SHA-256 against
    /// the signed SHA256SUMS, and keeps it.
    async fn download(self: &Arc<Self>, key: &ArchiveKey) -> Result<Archive, RequestError> {
        let what = key.to_string();
        let record = self.version(&key.provider, &key.version).await?;
        let Some(pkg) = record.packages.get(&key.platform) else {
            return Err(RequestError::NoPackage(format!(
                "{} {} has no verified package for {}",
                key.provider, key.version, key.platform
            )));
        };
        let staged = self
            .store
            .staging_file()
            .map_err(|e| self.store_failed("creating a temporary file", &e))?;
        let (file, staged) = staged.into_parts();
        let mut file = tokio::fs::File::from_std(file);
        let max_size = self.config.upstream.max_archive_size.as_u64();
        // An announced size that does not fit is refused before the body
        // is read (the download is dropped unread); one not announced is
        // checked as it arrives.
        let download = Download::start(&self.origin.client, &pkg.download_url, None, max_size)
            .await
            .and_then(|d| d.keeping(self.room()))
            .map_err(|e| RequestError::download(&e, &what))?;
        let stream_above = self.config.upstream.stream_above.as_u64();
        let publisher = download
            .announced()
            .filter(|n| *n > stream_above)
            .map(|size| {
                self.providers
                    .arriving
                    .publish(key.clone(), staged.to_path_buf(), size)
            });
        let written = download
            .write_to(&mut file, &self.metrics, publisher.is_some(), |n| {
                if let Some(p) = &publisher {
                    p.advance(n);
                }
            })
            .await;
        let downloaded = match written {
            Ok(d) => d,
            Err(DownloadError::Write(io)) => {
                return Err(self.store_failed("writing an archive", &StoreError::from(io)))
            }
            Err(e) => return Err(RequestError::download(&e, &what)),
        };
        if record.verification() == Verification::Keyless {
            // Nothing signed vouches for it: its pin, and every size and
            // hash reported, must hold before readers may finish. The
            // check reads the file by path: what tokio still buffers must
            // reach it first.
            file.flush()
                .await
                .map_err(|e| self.store_failed("writing an archive", &StoreError::from(e)))?;
            self.check_keyless_download(&record, key, &staged, &downloaded.sha256, downloaded.size)
                .await?;
        } else if downloaded.sha256 != pkg.sha256 {
            return Err(RequestError::VerificationFailed(format!(
                "{what}: the downloaded archive's SHA-256 {} does not match the signed SHA256SUMS ({}); nothing was stored",
                downloaded.sha256, pkg.sha256
            )));
        }
        // Readers may finish now; storing continues behind them.
        if let Some(p) = &publisher {
            p.verified();
        }
        file.sync_all()
            .await
            .map_err(|e| self.store_failed("writing an archive", &StoreError::from(e)))?;
        drop(file);
        let h1 = match self.store.keep_archive(staged, key).await {
            Ok(kept) => {
                self.metrics
                    .archive_written(kept.created, record.verification());
                // Documents rendered before it are rendered again with its h1:.
                self.providers
                    .archives_kept
                    .fetch_add(1, std::sync::atomic::Ordering::Release);
                kept.h1
            }
            Err(StoreError::NotAnArchive(e)) => {
                return Err(RequestError::VerificationFailed(format!(
                    "{what}: {e}; nothing was stored"
                )))
            }
            Err(e) => return Err(self.store_failed("storing an archive", &e)),
        };
        self.health.succeeded();
        tracing::info!(provider = %key.provider, version = %key.version, platform = %key.platform, bytes = downloaded.size, %h1, "archive verified and stored");
        self.correct_record(&record, key, downloaded.size, &h1)
            .await;
        Ok(Archive {
            size: downloaded.size,
            h1,
        })
    }

    /// What the stored archive shows about the record's unchecked
    /// knowledge: an `h1:` the origin reported, or a size learned before
    /// the archive was fetched, that the archive contradicts is logged at
    /// error and replaced (the size) or dropped (the `h1:`).
    async fn correct_record(&self, record: &VersionRecord, key: &ArchiveKey, size: u64, h1: &str) {
        let Some(pkg) = record.packages.get(&key.platform) else {
            return;
        };
        let wrong_h1 = pkg.reported_h1.as_deref().filter(|r| *r != h1);
        let wrong_size = pkg.size.filter(|s| *s != size);
        if let Some(reported) = wrong_h1 {
            tracing::error!(provider = %key.provider, version = %key.version, platform = %key.platform, reported, computed = %h1, "the origin's packages field reported another h1: than the archive's own; the origin's value is dropped");
        }
        if let Some(learned) = wrong_size {
            tracing::error!(provider = %key.provider, version = %key.version, platform = %key.platform, learned, size, "the archive's size differs from the one learned before it was fetched; the archive's own is kept");
        }
        if wrong_h1.is_none() && wrong_size.is_none() {
            return;
        }
        self.amend_version(record, |amended| {
            if let Some(pkg) = amended.packages.get_mut(&key.platform) {
                if wrong_h1.is_some() {
                    pkg.reported_h1 = None;
                }
                pkg.size = Some(size);
            }
        })
        .await;
    }
}
