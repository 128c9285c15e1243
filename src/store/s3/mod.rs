//! The bucket store: the cache kept in an S3-compatible bucket that
//! several instances behind one URL share (`storage.backend = "s3"`).
//!
//! Keys under `storage.s3.prefix` follow the disk layout
//! (`providers/…/index.json`, `…/<version>/version.json`, the archive and
//! its `.h1`, `modules/…`), plus:
//!
//! ```text
//! releases/<product>/…                           CLI releases, as on disk
//! leases/<provider path>/<version>/<archive>.lease   who is downloading an archive, until when
//! tmp/<instance>-<n>                                 large uploads before their conditional copy
//! probe/<instance>                                   the readiness probe's scratch object
//! ```
//!
//! An object appears whole or not at all: a record is one `PUT`; an
//! archive or package is created with `If-None-Match: *` (small ones in one
//! `PUT`, large ones uploaded in parts under `tmp/` and then copied into
//! place by a conditional multipart copy), so of several instances storing
//! the same archive exactly one creates it, and the others check the
//! winner's bytes against the SHA-256 they verified. An archive's `.h1` is
//! written before the archive, as on disk.
//!
//! Objects in the bucket are not touched on use (that would rewrite them)
//! and the daemon evicts nothing from the bucket: lifecycle rules bound it
//! (`cache.max_size` is refused with a bucket). The local tier, when
//! configured, records uses and evicts as a disk cache does.
//!
//! By job: `keys` (the layout), `records` (one `PUT` each, copies in the
//! tier), `upload` (archives and packages created once and whole),
//! `leases` (download claims), `tier` (the local read-through tier); this
//! file opens the bucket and answers the [`Store`] trait with them.

use std::collections::HashMap;
use std::io;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use bytes::Bytes;
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use tempfile::{NamedTempFile, TempPath};

use super::journal::{self, Journal};
use super::{
    atomic, ArchiveReader, ArchiveSource, CachedArchive, Claim, DiskStore, HeldItem, HeldRelease,
    IndexRecord, Item, Kept, ModuleIndexRecord, ModuleRecord, PolicyDecisions, ReleaseIndexRecord,
    ReleaseRecord, Store, StoreError, StoredArchive, VersionRecord,
};
use crate::address::{ArchiveKey, Module, Product, Provider, ReleaseFile, Version};

mod connect;
mod documents;
mod keys;
mod leases;
mod listing;
mod records;
mod tier;
mod upload;

use tier::Tier;
use upload::hash_file;

/// The cache in a bucket.
pub struct S3Store {
    bucket: Arc<AmazonS3>,
    /// `s3://bucket/prefix`, for people.
    name: String,
    /// The endpoint and addressing style, for the message when the bucket
    /// cannot be reached at all.
    addressing: String,
    prefix: Key,
    /// Local directory for downloads under way.
    tmp: PathBuf,
    /// This process, in lease objects and temporary keys.
    instance: String,
    lease_time: Duration,
    /// Lease renewals running, by archive.
    renewing: Mutex<HashMap<ArchiveKey, tokio::task::JoinHandle<()>>>,
    uploads: AtomicU64,
    /// The local read-through tier, when configured.
    tier: Option<Arc<Tier>>,
    /// Where its changes are noted.
    journal: Option<Arc<Journal>>,
}

impl S3Store {
    /// A bucket failure as a store error naming the bucket.
    fn failed(&self, e: &object_store::Error) -> StoreError {
        StoreError::Unavailable(io::Error::other(format!("bucket {}: {e}", self.name)))
    }

    /// An object's bytes; `None` when there is no such object.
    async fn read_bytes(&self, key: &Key) -> Result<Option<Bytes>, StoreError> {
        match self.bucket.get(key).await {
            Ok(got) => Ok(Some(got.bytes().await.map_err(|e| self.failed(&e))?)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// Every object under `<prefix>/<top>/`.
    async fn list_below(&self, top: &str) -> Result<Vec<object_store::ObjectMeta>, StoreError> {
        self.bucket
            .list(Some(&self.key([top])))
            .try_collect()
            .await
            .map_err(|e| self.failed(&e))
    }

    /// Before a change to `item`: noted in the journal.
    async fn changing(&self, item: Item) -> Result<Option<journal::Change<'_>>, StoreError> {
        journal::changing(self.journal.as_ref(), item).await
    }

    async fn delete(&self, key: &Key) -> Result<(), StoreError> {
        match self.bucket.delete(key).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(self.failed(&e)),
        }
    }
}

#[async_trait]
impl Store for S3Store {
    fn location(&self) -> String {
        self.name.clone()
    }

    async fn read_index(&self, provider: &Provider) -> Result<Option<IndexRecord>, StoreError> {
        let key = self.provider_key(provider, &["index.json"]);
        self.read_record(&key, |d| d.index_path(provider), "version list")
            .await
    }

    async fn write_index(
        &self,
        provider: &Provider,
        record: &IndexRecord,
    ) -> Result<(), StoreError> {
        let key = self.provider_key(provider, &["index.json"]);
        self.write_record(&key, |d| d.index_path(provider), record)
            .await
    }

    async fn read_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<VersionRecord>, StoreError> {
        let key = self.provider_key(provider, &[version.as_str(), "version.json"]);
        self.read_record(
            &key,
            |d| d.version_path(provider, version),
            "version record",
        )
        .await
    }

    async fn write_version(&self, record: &VersionRecord) -> Result<(), StoreError> {
        let key = self.provider_key(&record.provider, &[record.version.as_str(), "version.json"]);
        let local = |d: &DiskStore| d.version_path(&record.provider, &record.version);
        self.write_record(&key, local, record).await
    }

    fn staging_file(&self) -> Result<NamedTempFile, StoreError> {
        Ok(atomic::temp_file(&self.tmp)?)
    }

    async fn keep_archive(&self, staged: TempPath, key: &ArchiveKey) -> Result<Kept, StoreError> {
        let _noted = self.changing(Item::Archive(key.clone())).await?;
        let path = staged.to_path_buf();
        let (h1, sha256) = tokio::task::spawn_blocking(move || hash_file(&path))
            .await
            .map_err(io::Error::other)??;
        self.bucket
            .put(&self.h1_key(key), PutPayload::from(h1.clone().into_bytes()))
            .await
            .map_err(|e| self.failed(&e))?;
        let created = self
            .create_checked(&staged, &self.archive_key(key), &sha256)
            .await?;
        if let Some(tier) = self.tier.clone() {
            let (kept, h1) = (key.clone(), h1.clone());
            let disk = tier.disk.clone();
            let moved = tokio::task::spawn_blocking(move || {
                disk.keep_hashed(staged, &kept.provider, &kept.version, &kept.platform, &h1)
            })
            .await;
            if let Ok(Err(e)) = moved {
                tracing::warn!(archive = %key, error = %e, "could not keep an archive in the local cache tier");
            }
            tier.trim().await;
        }
        Ok(Kept { h1, created })
    }

    async fn archive(&self, key: &ArchiveKey) -> Result<Option<StoredArchive>, StoreError> {
        if let Some(tier) = &self.tier {
            if let Ok(Some(held)) = tier.disk.archive(key).await {
                return Ok(Some(held));
            }
        }
        let size = match self.bucket.head(&self.archive_key(key)).await {
            Ok(meta) => meta.size,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.failed(&e)),
        };
        // An archive without its hash is not servable (half an eviction).
        let Some(h1) = self.read_bytes(&self.h1_key(key)).await? else {
            return Ok(None);
        };
        Ok(Some(StoredArchive {
            size,
            h1: String::from_utf8_lossy(&h1).trim().to_owned(),
        }))
    }

    async fn open_archive(&self, key: &ArchiveKey) -> Result<Option<ArchiveReader>, StoreError> {
        if let Some(tier) = &self.tier {
            if tier
                .disk
                .archive(key)
                .await
                .is_ok_and(|held| held.is_some())
            {
                if let Ok(Some(reader)) = tier.disk.open_archive(key).await {
                    return Ok(Some(reader));
                }
            }
        }
        let opened = self.open_object(&self.archive_key(key)).await?;
        if opened.is_some() {
            self.fill_tier(key);
        }
        Ok(opened)
    }

    async fn remove_archive(&self, key: &ArchiveKey) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Archive(key.clone())).await?;
        if let Some(tier) = &self.tier {
            tier.disk.remove_archive(key).await?;
        }
        self.delete(&self.archive_key(key)).await?;
        self.delete(&self.h1_key(key)).await
    }

    /// Records the use in the local tier (its eviction order); the
    /// bucket's objects are not rewritten on use.
    async fn touch_archive(&self, key: &ArchiveKey) {
        if let Some(tier) = &self.tier {
            tier.disk.touch_archive(key).await;
        }
    }

    async fn list_archives(&self) -> Result<Vec<CachedArchive>, StoreError> {
        self.archives_held().await
    }

    async fn each_archive(
        &self,
        each: &mut (dyn FnMut(CachedArchive) + Send),
    ) -> Result<(), StoreError> {
        self.each_archive_held(each).await
    }

    async fn read_module_index(
        &self,
        module: &Module,
    ) -> Result<Option<ModuleIndexRecord>, StoreError> {
        let key = self.module_key(module, &["versions.json"]);
        self.read_record(&key, |d| d.module_index_path(module), "module version list")
            .await
    }

    async fn write_module_index(
        &self,
        module: &Module,
        record: &ModuleIndexRecord,
    ) -> Result<(), StoreError> {
        let key = self.module_key(module, &["versions.json"]);
        self.write_record(&key, |d| d.module_index_path(module), record)
            .await
    }

    async fn read_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ModuleRecord>, StoreError> {
        let key = self.module_key(module, &[version.as_str(), "module.json"]);
        self.read_record(&key, |d| d.module_path(module, version), "module pin")
            .await
    }

    async fn keep_module(&self, staged: TempPath, record: &ModuleRecord) -> Result<(), StoreError> {
        let item = Item::Module(record.module.clone(), record.version.clone());
        let _noted = self.changing(item).await?;
        let version = record.version.as_str();
        let package = self.module_key(&record.module, &[version, "package.tar.gz"]);
        self.create_checked(&staged, &package, &record.sha256)
            .await?;
        let pin = self.module_key(&record.module, &[version, "module.json"]);
        self.write_json(&pin, record).await
    }

    async fn open_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ArchiveReader>, StoreError> {
        self.open_object(&self.module_key(module, &[version.as_str(), "package.tar.gz"]))
            .await
    }

    async fn remove_module(&self, module: &Module, version: &Version) -> Result<(), StoreError> {
        let _noted = (self.changing(Item::Module(module.clone(), version.clone()))).await?;
        self.delete(&self.module_key(module, &[version.as_str(), "package.tar.gz"]))
            .await
    }

    async fn read_decisions(&self) -> Result<Option<PolicyDecisions>, StoreError> {
        self.read_json(&self.key(["policy", "decisions.json"]), "policy decisions")
            .await
    }

    async fn write_decisions(&self, record: &PolicyDecisions) -> Result<(), StoreError> {
        self.write_json(&self.key(["policy", "decisions.json"]), record)
            .await
    }

    async fn read_document(&self, path: &[&str]) -> Result<Option<Vec<u8>>, StoreError> {
        self.document(path).await
    }

    async fn write_document(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError> {
        self.put_document(path, bytes).await
    }

    async fn list_documents(&self, top: &str) -> Result<Vec<Vec<String>>, StoreError> {
        self.documents(top).await
    }

    async fn list_documents_after(
        &self,
        dir: &[&str],
        after: &str,
    ) -> Result<Vec<String>, StoreError> {
        self.documents_after(dir, after).await
    }

    async fn list_documents_aged(
        &self,
        dir: &[&str],
    ) -> Result<Vec<crate::store::KeptDocument>, StoreError> {
        self.documents_aged(dir).await
    }

    async fn remove_document(&self, path: &[&str]) -> Result<(), StoreError> {
        self.remove_document_at(path).await
    }

    fn journal(&self) -> Option<&Arc<Journal>> {
        self.journal.as_ref()
    }

    async fn held(&self, item: &Item) -> Result<Option<HeldItem>, StoreError> {
        self.held_item(item).await
    }

    async fn list_modules(&self) -> Result<Vec<(ModuleRecord, bool)>, StoreError> {
        self.modules_held().await
    }

    async fn read_release_index(
        &self,
        product: Product,
    ) -> Result<Option<ReleaseIndexRecord>, StoreError> {
        let key = self.key(["releases", product.as_str(), "versions.json"]);
        self.read_record(&key, |d| d.release_index_path(product), "release list")
            .await
    }

    async fn write_release_index(&self, record: &ReleaseIndexRecord) -> Result<(), StoreError> {
        let product = record.product;
        let key = self.key(["releases", product.as_str(), "versions.json"]);
        self.write_record(&key, |d| d.release_index_path(product), record)
            .await
    }

    async fn read_release(
        &self,
        product: Product,
        version: &Version,
    ) -> Result<Option<ReleaseRecord>, StoreError> {
        let key = self.release_key(product, version, "release.json");
        self.read_record(&key, |d| d.release_path(product, version), "release record")
            .await
    }

    async fn write_release(&self, record: &ReleaseRecord) -> Result<(), StoreError> {
        let key = self.release_key(record.product, &record.version, "release.json");
        self.write_record(
            &key,
            |d| d.release_path(record.product, &record.version),
            record,
        )
        .await
    }

    async fn keep_release_file(
        &self,
        staged: TempPath,
        file: &ReleaseFile,
        sha256: &str,
    ) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Release(file.clone())).await?;
        self.create_checked(&staged, &self.release_file_key(file), sha256)
            .await
            .map(|_created| ())
    }

    async fn open_release_file(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ArchiveReader>, StoreError> {
        self.open_object(&self.release_file_key(file)).await
    }

    async fn remove_release_file(&self, file: &ReleaseFile) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Release(file.clone())).await?;
        self.delete(&self.release_file_key(file)).await
    }

    async fn list_releases(&self) -> Result<Vec<HeldRelease>, StoreError> {
        self.releases_held().await
    }

    async fn probe(&self, bytes: usize) -> Result<(), StoreError> {
        self.probe_bucket(bytes).await
    }

    async fn check_reachable(&self) -> Result<(), StoreError> {
        self.probe(0).await.map_err(|e| {
            StoreError::Unavailable(io::Error::other(format!(
                "{e} (reached at {}; the probe writes, reads and removes {}/probe/{})",
                self.addressing, self.name, self.instance
            )))
        })
    }

    async fn claim(&self, key: &ArchiveKey) -> Result<Claim, StoreError> {
        self.claim_lease(key).await
    }

    async fn release(&self, key: &ArchiveKey) {
        self.release_lease(key).await;
    }

    async fn presigned_url(
        &self,
        key: &ArchiveKey,
        lifetime: Duration,
    ) -> Result<Option<url::Url>, StoreError> {
        use object_store::signer::Signer;
        let url = self
            .bucket
            .signed_url(http::Method::GET, &self.archive_key(key), lifetime)
            .await
            .map_err(|e| self.failed(&e))?;
        Ok(Some(url))
    }
}

impl S3Store {
    /// Opens an object for reading; `None` when there is no such object.
    async fn open_object(&self, key: &Key) -> Result<Option<ArchiveReader>, StoreError> {
        let got = match self.bucket.get(key).await {
            Ok(got) => got,
            Err(object_store::Error::NotFound { .. }) => return Ok(None),
            Err(e) => return Err(self.failed(&e)),
        };
        let size = got.meta.size;
        let name = self.name.clone();
        let stream = got
            .into_stream()
            .map_err(move |e| io::Error::other(format!("bucket {name}: {e}")));
        Ok(Some(ArchiveReader {
            size,
            source: ArchiveSource::Reader(Box::pin(tokio_util::io::StreamReader::new(stream))),
        }))
    }
}
