//! What the CLI releases the mirror holds are built from, and the
//! advisories they fall under: each stored release zip's build record
//! ([`crate::store::release_builds`]), read in the background once the
//! file is kept, and on first ask for a file kept before records were
//! made; its bill of materials; and a release's advisories across its
//! platforms.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::state::KeptSummary;
use crate::address::{Product, ReleaseFile, Version};
use crate::advisories::Summary;
use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::store::release_builds::{self, ReleaseBuildRecord};

impl Mirror {
    /// The build record of a held release file: the kept one, or, for a
    /// stored zip without one, with one an earlier reading made
    /// ([`crate::store::builds::PACKAGES_READER`]) or one that looked for
    /// other symbols than the database held names, read from the file
    /// now and kept. `None`
    /// when the file is not a platform's zip or the store does not hold
    /// it.
    pub async fn release_build_record(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ReleaseBuildRecord>, RequestError> {
        let db = self.advisories().await.db.clone();
        let none = crate::gobuild::Wanted::default();
        let wanted = db.as_ref().map_or(&none, |db| &db.wanted);
        match release_builds::read(self.store(), file).await {
            Ok(Some(record)) if record.current_for(wanted) => return Ok(Some(record)),
            Ok(Some(earlier)) => {
                let again = self.record_release_build(file).await?;
                return Ok(again.or(Some(earlier)));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(RequestError::DiskUnavailable(format!(
                    "the build record of {file} cannot be read: {e}"
                )))
            }
        }
        self.record_release_build(file).await
    }

    /// Reads the build information of a stored release zip's executable
    /// and keeps the record. From the store alone: no origin is asked.
    async fn record_release_build(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ReleaseBuildRecord>, RequestError> {
        let Some(platform) = file.zip_platform() else {
            return Ok(None);
        };
        let Some(record) = self.held_release(file.product, &file.version).await else {
            return Ok(None);
        };
        let Some(sha256) = super::evidence::listed_sha256(&record, &file.name) else {
            return Ok(None);
        };
        let opened = self
            .store()
            .open_release_file(file)
            .await
            .map_err(|e| self.store_failed("reading a release file", &e))?;
        let Some(opened) = opened else {
            return Ok(None);
        };
        let file2 = file.clone();
        let read_at_ms = crate::clock::unix_ms_of(self.clock().now());
        let db = self.advisories().await.db.clone();
        let made = self
            .read_stored_zip(opened, move |archive, scratch| {
                let none = crate::gobuild::Wanted::default();
                let how = crate::store::builds::Unpacking {
                    scratch,
                    max_size: crate::gobuild::MAX_EXECUTABLE_SIZE,
                    read_at_ms,
                    wanted: db.as_ref().map_or(&none, |db| &db.wanted),
                };
                ReleaseBuildRecord::from_archive(&file2, &platform, &sha256, archive, &how)
            })
            .await?;
        let outcome = made.outcome();
        match release_builds::write(self.store(), &made).await {
            Ok(()) => {
                self.metrics().build_recorded(outcome);
                tracing::info!(target: super::RELEASES_LOG, file = %file, outcome, "build information recorded");
            }
            Err(e) => {
                self.metrics().build_recorded("failed");
                tracing::warn!(target: super::RELEASES_LOG, file = %file, error = %e, "could not keep a build record; it is read again when next asked for");
            }
        }
        Ok(Some(made))
    }

    /// Reads and keeps a release file's build record in the background,
    /// after the file was kept.
    pub(super) fn record_release_build_later(self: &Arc<Self>, file: &ReleaseFile) {
        if file.zip_platform().is_none() {
            return;
        }
        let (this, file) = (self.clone(), file.clone());
        self.spawn_tracked(async move {
            if let Err(e) = this.record_release_build(&file).await {
                this.metrics().build_recorded("failed");
                tracing::warn!(target: super::RELEASES_LOG, file = %file, error = %e, "could not record build information; it is read again when next asked for");
            }
        });
    }

    /// The CycloneDX bill of materials of a held release file
    /// ([`crate::bom`]), from its release record and build record alone.
    pub async fn release_bom(&self, file: &ReleaseFile) -> Result<serde_json::Value, RequestError> {
        let not_held = || {
            RequestError::NotHeld(format!(
                "{file} is not held by this mirror: a bill of materials is made for the release zips it holds"
            ))
        };
        let record = self
            .held_release(file.product, &file.version)
            .await
            .ok_or_else(not_held)?;
        let build = self
            .release_build_record(file)
            .await?
            .ok_or_else(not_held)?;
        Ok(crate::bom::release_cyclonedx(&crate::bom::ReleaseFacts {
            filename: file.name.as_str(),
            signed_by: &record.key_id,
            build: &build,
        }))
    }

    /// What a held release falls under, over the platform zips of
    /// `files`, against the database as last read; `None` when no
    /// database is kept. A file whose record cannot be read or made is
    /// left out.
    pub async fn release_advisories(
        &self,
        product: Product,
        version: &Version,
        files: &[ReleaseFile],
    ) -> Option<Summary> {
        let held = self.advisories().await;
        let db = held.db.clone()?;
        let sha = held.current.as_ref()?.sha256.clone();
        let files: Vec<ReleaseFile> = (files.iter())
            .filter(|f| f.product == product && &f.version == version)
            .cloned()
            .collect();
        let key = (product, version.clone());
        let kept = &self.release_state().summaries;
        if let Some(k) = kept.get(&key).await {
            if k.database == sha && k.files == files {
                return Some(k.summary.clone());
            }
        }
        let mut per_platform: BTreeMap<String, crate::advisories::Reading> = BTreeMap::new();
        let mut not_read = Vec::new();
        for file in &files {
            match self.release_build_record(file).await {
                Ok(Some(record)) => {
                    let found = record.reading(&db);
                    let kept = per_platform.entry(record.platform.to_string()).or_default();
                    kept.findings.extend(found.findings);
                    kept.unknown.extend(found.unknown);
                }
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(target: super::RELEASES_LOG, file = %file, error = %e, "could not match a release file against the advisory database");
                    not_read.push(file.name.to_string());
                }
            }
        }
        let summary = Summary::of(&per_platform, not_read);
        if !summary.not_read.is_empty() {
            // Made again on the next ask.
            return Some(summary);
        }
        let made = KeptSummary {
            database: sha,
            files,
            summary: summary.clone(),
        };
        kept.insert(key, Arc::new(made)).await;
        Some(summary)
    }
}
