//! Build records of provider archives ([`crate::store::builds`]): read
//! from a stored archive's executable once it is kept, off the path of the
//! request that fetched it, and on first ask for an archive kept before
//! records were made.

use std::sync::Arc;

use super::Mirror;
use crate::address::ArchiveKey;
use crate::bom::{cyclonedx, PackageFacts};
use crate::error::RequestError;
use crate::store::builds::{self, BuildRecord};
use crate::store::{ArchiveReader, ArchiveSource, StoreError};

impl Mirror {
    /// The CycloneDX bill of materials of a held package ([`crate::bom`]),
    /// made from the version's stored evidence and the archive's build
    /// record; read from the store alone, no origin asked.
    pub async fn package_bom(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<serde_json::Value, RequestError> {
        let not_held = || {
            RequestError::NotHeld(format!(
                "{key} is not held by this mirror: a bill of materials is made for the packages it holds"
            ))
        };
        let record = self
            .stored_record(&key.provider, &key.version)
            .await
            .ok_or_else(not_held)?;
        let pkg = record.packages.get(&key.platform).ok_or_else(not_held)?;
        let build = self.build_record(key).await?.ok_or_else(not_held)?;
        let h1 = self.cached_h1(&record).await.remove(&key.platform);
        let sums = record.sums.get(pkg.sums);
        let verification = if record.unsigned_import {
            "unsigned-import"
        } else {
            record.verification().as_str()
        };
        Ok(cyclonedx(&PackageFacts {
            provider: &key.provider,
            version: &key.version,
            platform: &key.platform,
            filename: &pkg.filename,
            sha256: &pkg.sha256,
            h1: h1.as_deref(),
            signed_by: sums.map_or("", |s| s.signed_by.as_str()),
            verification,
            build: &build,
        }))
    }

    /// The build record of an archive: the kept one, or, for a stored
    /// archive without one, with one whose packages an earlier reading
    /// made ([`builds::PACKAGES_READER`]) or one that looked for other
    /// symbols than the database held names, read from the archive now
    /// and kept. An earlier reading's record is given where the archive is
    /// gone; `None` when the store holds neither the record nor the
    /// archive.
    pub async fn build_record(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<Option<BuildRecord>, RequestError> {
        let db = self.advisories().await.db.clone();
        let none = crate::gobuild::Wanted::default();
        let wanted = db.as_ref().map_or(&none, |db| &db.wanted);
        match builds::read(self.store.as_ref(), key).await {
            Ok(Some(record)) if record.current_for(wanted) => return Ok(Some(record)),
            Ok(Some(earlier)) => {
                let again = self.record_build(key).await?;
                return Ok(again.or(Some(earlier)));
            }
            Ok(None) => {}
            // A record this build cannot read is left as it is.
            Err(e) => {
                return Err(RequestError::DiskUnavailable(format!(
                    "the build record of {key} cannot be read: {e}"
                )))
            }
        }
        self.record_build(key).await
    }

    /// Reads the build information of a stored archive's executables and
    /// keeps the record; `None` when the store does not hold the archive.
    pub(super) async fn record_build(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<Option<BuildRecord>, RequestError> {
        // From the store alone: no origin is asked.
        let Some(record) = self.stored_record(&key.provider, &key.version).await else {
            return Ok(None);
        };
        let Some(pkg) = record.packages.get(&key.platform) else {
            return Ok(None);
        };
        let opened = self
            .store
            .open_archive(key)
            .await
            .map_err(|e| self.store_failed("opening an archive", &e))?;
        let Some(opened) = opened else {
            return Ok(None);
        };
        let (key2, sha256) = (key.clone(), pkg.sha256.clone());
        let read_at_ms = crate::clock::unix_ms_of(self.clock.now());
        let db = self.advisories().await.db.clone();
        let made = self
            .read_stored_zip(opened, move |archive, scratch| {
                let none = crate::gobuild::Wanted::default();
                let how = builds::Unpacking {
                    scratch,
                    max_size: crate::gobuild::MAX_EXECUTABLE_SIZE,
                    read_at_ms,
                    wanted: db.as_ref().map_or(&none, |db| &db.wanted),
                };
                BuildRecord::from_archive(&key2, &sha256, archive, &how)
            })
            .await?;
        let outcome = made.outcome();
        match builds::write(self.store.as_ref(), &made).await {
            Ok(()) => {
                self.advised_lists_changed();
                self.metrics.build_recorded(outcome);
                tracing::info!(archive = %key, executables = made.executables.len(), outcome, "build information recorded");
            }
            Err(e) => {
                self.metrics.build_recorded("failed");
                tracing::warn!(archive = %key, error = %e, "could not keep a build record; it is read again when next asked for");
            }
        }
        Ok(Some(made))
    }

    /// Reads and keeps an archive's build record in the background, after
    /// the archive was kept.
    pub(super) fn record_build_later(self: &Arc<Self>, key: &ArchiveKey) {
        let (this, key) = (self.clone(), key.clone());
        self.tasks.spawn(async move {
            if let Err(e) = this.record_build(&key).await {
                this.metrics.build_recorded("failed");
                tracing::warn!(archive = %key, error = %e, "could not record build information; it is read again when next asked for");
            }
        });
    }
}

impl Mirror {
    /// Runs `read` off the async threads on a stored zip, with a folder to
    /// unpack into. A file on disk is read where it is; a bucket's object
    /// is copied to a staging file first, removed after.
    pub(crate) async fn read_stored_zip<T: Send + 'static>(
        &self,
        opened: ArchiveReader,
        read: impl FnOnce(std::fs::File, &std::path::Path) -> T + Send + 'static,
    ) -> Result<T, RequestError> {
        let staging = self
            .store
            .staging_file()
            .map_err(|e| self.store_failed("creating a temporary file", &e))?;
        let archive = match opened.source {
            ArchiveSource::File(file) => file,
            ArchiveSource::Reader(mut reader) => {
                let copying = |e: std::io::Error| {
                    self.store_failed("copying an archive", &StoreError::from(e))
                };
                let mut copy = tokio::fs::File::from_std(staging.reopen().map_err(copying)?);
                tokio::io::copy(&mut reader, &mut copy)
                    .await
                    .map_err(copying)?;
                copy.into_std().await
            }
        };
        let scratch = staging
            .path()
            .parent()
            .map_or_else(std::env::temp_dir, std::path::Path::to_path_buf);
        tokio::task::spawn_blocking(move || {
            let made = read(archive, &scratch);
            drop(staging);
            made
        })
        .await
        .map_err(|e| RequestError::Internal(format!("reading build information: {e}")))
    }

    /// Runs `work` among the mirror's tracked tasks, which a drain waits
    /// for.
    pub(crate) fn spawn_tracked(
        &self,
        work: impl std::future::Future<Output = ()> + Send + 'static,
    ) {
        self.tasks.spawn(work);
    }

    /// Records a failed store write and gives the answer for the request
    /// that needed it.
    pub(crate) fn store_failed(&self, what: &str, e: &StoreError) -> RequestError {
        self.health.failed(what, e).into()
    }
}
