//! CLI releases: Terraform's and OpenTofu's own binaries, read through the
//! cache like providers and served in the layouts version managers read.
//!
//! A release is trusted through its checksum document: the first request
//! for a version fetches `<product>_<version>_SHA256SUMS` and its detached
//! signatures, verifies them with the product's keys (`[releases]`; the
//! vendor's key by default) and keeps them as a [`ReleaseRecord`]. A file
//! is then served only if that document lists it: it is downloaded once,
//! its SHA-256 checked against the signed line, kept in the store, and
//! served from there, also while the origin is down. A signature or
//! checksum that does not match answers 502 and keeps nothing.
//!
//! - [`builds`]: what each release zip is built from, its bill of
//!   materials and its advisories;
//! - `config`: `[releases]`, the products' sources and keys;
//! - [`evidence`]: checking a record that did not come from the origin;
//! - `origin`: reading the origins' version lists as the clients do;
//! - [`layouts`]: the documents each version manager reads;
//! - [`state`]: what the mirror keeps in memory about releases (a leaf the
//!   mirror holds; the read-through here extends the mirror).

pub mod builds;
pub mod config;
pub mod evidence;
pub mod layouts;
mod origin;
pub mod state;

use std::sync::Arc;

use base64::Engine as _;
use bytes::Bytes;

use crate::address::{ArtifactName, Product, ReleaseFile, Version};
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome};
use crate::mirror::Mirror;
use crate::store::{ArchiveReader, ReleaseIndexRecord, ReleaseRecord, Store, StoreError};
use crate::upstream::download::{Download, DownloadError};
use crate::verify::Sha256Sums;

pub use config::{ProductSource, ReleasesConfig, Source};
pub use state::{ReleaseState, RELEASES_LOG};

/// A release file ready to send.
pub enum ReleaseBody {
    /// A small file kept in the release record (the checksums, their
    /// signatures, the files passed on beside them).
    Small(Bytes),
    /// A file the store holds.
    Stored(ArchiveReader),
}

/// Adds `versions` to the stored list of `product`'s releases, so that the
/// listings name them while no origin answers; says whether it changed.
pub async fn list_held_versions(
    store: &dyn Store,
    product: Product,
    versions: impl IntoIterator<Item = Version>,
) -> Result<bool, StoreError> {
    let mut list = store
        .read_release_index(product)
        .await?
        .unwrap_or(ReleaseIndexRecord {
            product,
            fetched_at_ms: 0,
            versions: std::collections::BTreeMap::new(),
        });
    let before = list.versions.len();
    for v in versions {
        list.versions.entry(v).or_default();
    }
    if list.versions.len() == before {
        return Ok(false);
    }
    store.write_release_index(&list).await?;
    Ok(true)
}

/// What kind of file a release's file name is.
enum Kind {
    Sums,
    Signature(Vec<u8>),
    Extra(Vec<u8>),
    Listed(String),
}

impl Mirror {
    /// The source of `product`, when `[releases]` serves it.
    pub fn release_source(&self, product: Product) -> Result<&Source, RequestError> {
        self.release_state().source(product).ok_or_else(|| {
            RequestError::NotHeld(format!(
                "this mirror does not serve {} releases (releases.products)",
                product.title()
            ))
        })
    }

    /// The versions of `product` this mirror serves: the origin's list
    /// (refreshed after `cache.index_ttl`, the stored one while the origin
    /// is down), with what the store holds, within `releases.<product>.versions`.
    pub async fn release_list(
        &self,
        product: Product,
    ) -> Result<Arc<ReleaseIndexRecord>, RequestError> {
        let source = self.release_source(product)?.clone();
        let state = self.release_state();
        let now = self.clock().unix_ms();
        if let Some((list, fresh_until)) = state.lists.get(&product).await {
            if now < fresh_until || self.offline() {
                self.note(CacheKind::ReleaseList, CacheOutcome::Hit);
                return Ok(list);
            }
        }
        let ttl = u64::try_from(self.config().cache.index_ttl.as_millis()).unwrap_or(u64::MAX);
        let loaded = state
            .lists
            .try_get_with(product, async {
                let stored = self
                    .store()
                    .read_release_index(product)
                    .await
                    .map_err(|e| self.store_failed("reading a release list", &e))?;
                let fresh = stored
                    .as_ref()
                    .is_some_and(|s| now < s.fetched_at_ms.saturating_add(ttl));
                if fresh || self.offline() {
                    self.note(CacheKind::ReleaseList, CacheOutcome::Hit);
                    let list = stored.unwrap_or(ReleaseIndexRecord {
                        product,
                        fetched_at_ms: 0,
                        versions: std::collections::BTreeMap::new(),
                    });
                    return Ok::<_, RequestError>((Arc::new(list), now.saturating_add(ttl)));
                }
                match self.list_releases_at_origin(&source, stored.as_ref(), now).await {
                    Ok(list) => {
                        self.note(CacheKind::ReleaseList, CacheOutcome::Miss);
                        Ok((Arc::new(list), now.saturating_add(ttl)))
                    }
                    Err(e) if stored.is_some() && e.is_outage() => {
                        self.note(CacheKind::ReleaseList, CacheOutcome::Stale);
                        tracing::warn!(target: RELEASES_LOG, error = %e, "the {product} release list could not be refreshed; serving the stored one");
                        let retry = u64::try_from(crate::mirror::RETRY_AFTER_TROUBLE.as_millis())
                            .unwrap_or(u64::MAX);
                        Ok((
                            Arc::new(stored.expect("checked above")),
                            now.saturating_add(retry),
                        ))
                    }
                    Err(e) => Err(RequestError::upstream(
                        &e,
                        &format!("listing {} releases", product.title()),
                    )),
                }
            })
            .await
            .map_err(|e| (*e).clone());
        // The entry expires by the mirror's clock: the next call past its
        // time loads again.
        let (list, fresh_until) = loaded?;
        if fresh_until <= self.clock().unix_ms() {
            state.lists.invalidate(&product).await;
        }
        Ok(list)
    }

    /// A product's release list asked of the origin now, whatever the
    /// stored list's age, and kept for later requests; an origin that
    /// cannot answer is an error, not the stored list (a watch pass must
    /// learn of it).
    pub async fn relist_releases(
        &self,
        product: Product,
    ) -> Result<Arc<ReleaseIndexRecord>, RequestError> {
        let source = self.release_source(product)?.clone();
        let stored = self
            .store()
            .read_release_index(product)
            .await
            .map_err(|e| self.store_failed("reading a release list", &e))?;
        let now = self.clock().unix_ms();
        let list = self
            .list_releases_at_origin(&source, stored.as_ref(), now)
            .await
            .map_err(|e| {
                RequestError::upstream(&e, &format!("listing {} releases", product.title()))
            })?;
        self.note(CacheKind::ReleaseList, CacheOutcome::Miss);
        let ttl = u64::try_from(self.config().cache.index_ttl.as_millis()).unwrap_or(u64::MAX);
        let list = Arc::new(list);
        self.release_state()
            .lists
            .insert(product, (list.clone(), now.saturating_add(ttl)))
            .await;
        Ok(list)
    }

    /// Reads a product's versions from its origin, keeps those served and
    /// those the store holds (also when the origin withdrew them), and
    /// stores the list.
    async fn list_releases_at_origin(
        &self,
        source: &Source,
        stored: Option<&ReleaseIndexRecord>,
        now: u64,
    ) -> Result<ReleaseIndexRecord, crate::upstream::UpstreamError> {
        let mut versions = origin::list(self.origin_client(), source).await?;
        versions.retain(|v, _| source.serves_version(v));
        for held in stored.iter().flat_map(|s| s.versions.keys()) {
            versions.entry(held.clone()).or_default();
        }
        let product = source.product;
        let list = ReleaseIndexRecord {
            product,
            fetched_at_ms: now,
            versions,
        };
        if let Err(e) = self.store().write_release_index(&list).await {
            tracing::warn!(target: RELEASES_LOG, error = %e, "could not store the {product} release list");
        }
        Ok(list)
    }

    /// The verified record of a release: from memory, the store, or the
    /// origin (its checksums fetched and their signature verified before
    /// anything is kept).
    pub async fn release_record(
        &self,
        product: Product,
        version: &Version,
    ) -> Result<Arc<ReleaseRecord>, RequestError> {
        let source = self.release_source(product)?.clone();
        if !source.serves_version(version) {
            return Err(RequestError::Denied(format!(
                "{} {version} is outside releases.{product}.versions",
                product.title()
            )));
        }
        let state = self.release_state();
        let key = (product, version.clone());
        if let Some(record) = state.records.get(&key).await {
            self.note(CacheKind::ReleaseRecord, CacheOutcome::Hit);
            return Ok(record);
        }
        state
            .records
            .try_get_with(key, async {
                let stored = self
                    .store()
                    .read_release(product, version)
                    .await
                    .map_err(|e| self.store_failed("reading a release record", &e))?;
                if let Some(record) = stored {
                    // Checked again with the keys configured now: a record
                    // kept under keys since replaced serves nothing.
                    let record = evidence::check_record(&source, record).map_err(|e| {
                        RequestError::VerificationFailed(format!(
                            "the stored record of {} {version}: {e}",
                            product.title()
                        ))
                    })?;
                    self.note(CacheKind::ReleaseRecord, CacheOutcome::Hit);
                    return Ok(Arc::new(record));
                }
                if self.offline() {
                    return Err(RequestError::NotHeld(format!(
                        "{} {version} is not held by this mirror, which is offline (upstream.offline)",
                        product.title()
                    )));
                }
                self.note(CacheKind::ReleaseRecord, CacheOutcome::Miss);
                let record = origin::verified_release(
                    self.origin_client(),
                    &source,
                    version,
                    self.clock().unix_ms(),
                )
                .await?;
                self.store()
                    .write_release(&record)
                    .await
                    .map_err(|e| self.store_failed("storing a release record", &e))?;
                self.remember_release(product, version).await;
                tracing::info!(target: RELEASES_LOG, %product, %version, key = %record.key_id, "release checksums verified and stored");
                Ok(Arc::new(record))
            })
            .await
            .map_err(|e| (*e).clone())
    }

    /// The verified record of a release this mirror holds, without asking
    /// the origin; `None` when it holds none (or cannot read it).
    pub async fn held_release(
        &self,
        product: Product,
        version: &Version,
    ) -> Option<Arc<ReleaseRecord>> {
        let key = (product, version.clone());
        if let Some(record) = self.release_state().records.get(&key).await {
            return Some(record);
        }
        let record = Arc::new(self.store().read_release(product, version).await.ok()??);
        self.release_state()
            .records
            .insert(key, record.clone())
            .await;
        Some(record)
    }

    /// Adds a version to the stored release list, so that it stays listed
    /// while the origin is away.
    async fn remember_release(&self, product: Product, version: &Version) {
        match list_held_versions(self.store(), product, [version.clone()]).await {
            Ok(true) => self.release_state().lists.invalidate(&product).await,
            Ok(false) => {}
            Err(e) => {
                tracing::warn!(target: RELEASES_LOG, error = %e, "could not store the {product} release list");
            }
        }
    }

    /// One file of a release: the checksums and their signatures from the
    /// record, an archive from the store (downloaded and checked first
    /// when the store lacks it).
    pub async fn release_file(
        self: &Arc<Self>,
        product: Product,
        version: &Version,
        name: &ArtifactName,
    ) -> Result<ReleaseBody, RequestError> {
        let record = self.release_record(product, version).await?;
        let sha256 = match release_kind(&record, name)? {
            Kind::Sums => return Ok(ReleaseBody::Small(Bytes::from(record.sums.clone()))),
            Kind::Signature(bytes) | Kind::Extra(bytes) => {
                return Ok(ReleaseBody::Small(Bytes::from(bytes)))
            }
            Kind::Listed(sha256) => sha256,
        };
        let source = self.release_source(product)?;
        if let Some(platform) = product.platform_of(version, name) {
            if !source.serves_platform(&platform) {
                return Err(RequestError::Denied(format!(
                    "{name}: {platform} is outside releases.{product}.platforms"
                )));
            }
        }
        let file = ReleaseFile {
            product,
            version: version.clone(),
            name: name.clone(),
        };
        if let Some(body) = self.open_release_file(&file).await? {
            self.note(CacheKind::ReleaseFile, CacheOutcome::Hit);
            self.release_used(&file, body.size);
            return Ok(ReleaseBody::Stored(body));
        }
        if self.offline() {
            return Err(RequestError::NotHeld(format!(
                "{file} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        self.note(CacheKind::ReleaseFile, CacheOutcome::Miss);
        self.release_state()
            .downloads
            .try_get_with(file.clone(), self.download_release_file(&file, &sha256))
            .await
            .map_err(|e| (*e).clone())?;
        self.release_state().downloads.invalidate(&file).await;
        self.open_release_file(&file)
            .await?
            .map(ReleaseBody::Stored)
            .ok_or_else(|| {
                RequestError::Internal(format!("{file} was stored and then could not be opened"))
            })
    }

    /// Opens a release file the store holds.
    async fn open_release_file(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ArchiveReader>, RequestError> {
        self.store()
            .open_release_file(file)
            .await
            .map_err(|e| self.store_failed("reading a release file", &e))
    }

    /// Downloads a release file, checks it against the signed checksum and
    /// keeps it; nothing is kept when it does not match.
    async fn download_release_file(
        self: &Arc<Self>,
        file: &ReleaseFile,
        sha256: &str,
    ) -> Result<(), RequestError> {
        let what = file.to_string();
        let source = self.release_source(file.product)?;
        let url = source
            .download_url(&file.version, file.name.as_str())
            .map_err(|e| RequestError::Internal(format!("{what}: {e:#}")))?;
        let staged = self
            .store()
            .staging_file()
            .map_err(|e| self.store_failed("creating a temporary file", &e))?;
        let (std_file, staged) = staged.into_parts();
        let mut out = tokio::fs::File::from_std(std_file);
        let max_size = self.config().upstream.max_archive_size.as_u64();
        let written = async {
            Download::start(self.origin_client(), &url, source.token(), max_size)
                .await?
                .keeping(self.room())?
                .write_to(&mut out, self.metrics(), false, |_| {})
                .await
        }
        .await;
        let downloaded = match written {
            Ok(d) => d,
            Err(DownloadError::Write(io)) => {
                return Err(self.store_failed("writing a release file", &StoreError::from(io)))
            }
            Err(e) => return Err(RequestError::download(&e, &what)),
        };
        if downloaded.sha256 != sha256 {
            return Err(RequestError::VerificationFailed(format!(
                "{what}: the downloaded file's SHA-256 {} does not match the signed {} ({sha256}); nothing was stored",
                downloaded.sha256,
                file.product.sums_name(&file.version)
            )));
        }
        out.sync_all()
            .await
            .map_err(|e| self.store_failed("writing a release file", &StoreError::from(e)))?;
        drop(out);
        self.store()
            .keep_release_file(staged, file, sha256)
            .await
            .map_err(|e| self.store_failed("storing a release file", &e))?;
        self.metrics().release_file_stored();
        self.release_stored(file, downloaded.size).await;
        self.record_release_build_later(file);
        tracing::info!(target: RELEASES_LOG, product = %file.product, version = %file.version, file = %file.name, bytes = downloaded.size, "release file verified and stored");
        Ok(())
    }
}

/// What `name` is in a release: its checksum document, a signature or
/// passed-on file kept in the record, or a file the document lists (with
/// its SHA-256). Anything else is not part of the release.
fn release_kind(record: &ReleaseRecord, name: &ArtifactName) -> Result<Kind, RequestError> {
    let decode = |b64: &String| {
        base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| RequestError::Internal(format!("the stored {name} is not base64: {e}")))
    };
    if name.as_str() == record.sums_name {
        return Ok(Kind::Sums);
    }
    if let Some(b64) = record.signatures.get(name.as_str()) {
        return Ok(Kind::Signature(decode(b64)?));
    }
    if let Some(b64) = record.extras.get(name.as_str()) {
        return Ok(Kind::Extra(decode(b64)?));
    }
    let sums = Sha256Sums::parse(record.sums.as_bytes())
        .map_err(|e| RequestError::Internal(format!("the stored {}: {e}", record.sums_name)))?;
    sums.get(name.as_str()).map(Kind::Listed).ok_or_else(|| {
        RequestError::NotAtOrigin(format!(
            "{name} is not listed in {} {}'s signed {}",
            record.product.title(),
            record.version,
            record.sums_name
        ))
    })
}
