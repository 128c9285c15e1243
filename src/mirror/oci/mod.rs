//! OpenTofu's OCI layout of a provider version, for `oci_mirror`: a tag
//! per version naming an image index (`artifactType`
//! `application/vnd.opentofu.provider`) with one image manifest per
//! platform (`application/vnd.opentofu.provider-target`), whose one
//! `archive/zip` layer is the origin's archive byte for byte, so its
//! digest is the `zh:` hash the signed SHA256SUMS vouch for.
//!
//! The index and manifests are built from the verified version record
//! alone (every platform's SHA-256 and size; no archive is downloaded to
//! build them), canonically (fixed field order, platforms sorted, no
//! whitespace), and only once every platform's size is known: an index is
//! published complete or not at all. The bytes are kept in the store
//! (`oci/<host>/<namespace>/<type>/<version>.json`) the first time they
//! are answered and served from there ever after, so a digest once handed
//! out always returns the same bytes, after restarts and on every
//! instance sharing the store.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;

mod layout;
mod modules;

use super::Mirror;
use crate::address::oci::{tag_of, Digest, Reference};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::store::VersionRecord;
pub use layout::{module_manifest, provider_layout, ProviderLayout, MODULE_ARTIFACT};

pub use layout::{EMPTY_CONFIG, INDEX_TYPE, MANIFEST_TYPE};

/// The folder of the store the layouts are kept in.
const TOP: &str = "oci";
/// How many digests the mirror remembers the version of.
const DIGESTS_REMEMBERED: u64 = 100_000;
/// How many layouts the mirror keeps in memory.
const LAYOUTS_REMEMBERED: u64 = 10_000;

/// A manifest as served.
#[derive(Debug, Clone)]
pub struct OciManifest {
    /// Its media type, for `Content-Type`.
    pub media_type: &'static str,
    /// Its digest, for `Docker-Content-Digest`.
    pub digest: Digest,
    /// Its bytes.
    pub bytes: Bytes,
}

impl OciManifest {
    fn new(media_type: &'static str, bytes: Vec<u8>) -> OciManifest {
        OciManifest {
            media_type,
            digest: Digest::of(&bytes),
            bytes: Bytes::from(bytes),
        }
    }
}

/// What a blob digest names in a provider's repository.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciBlob {
    /// The two-byte empty config.
    EmptyConfig,
    /// A version's archive for one platform.
    Archive(ArchiveKey),
}

/// The layouts answered lately, and which version each of their digests
/// (of a manifest or a layer) belongs to.
pub(super) struct OciState {
    versions: moka::sync::Cache<(Provider, Digest), Version>,
    layouts: moka::sync::Cache<(Provider, Version), Arc<Layout>>,
}

impl OciState {
    pub(super) fn new() -> OciState {
        OciState {
            versions: moka::sync::Cache::new(DIGESTS_REMEMBERED),
            layouts: moka::sync::Cache::new(LAYOUTS_REMEMBERED),
        }
    }
}

/// A version's layout, parsed for answering.
struct Layout {
    index: OciManifest,
    manifests: BTreeMap<Platform, OciManifest>,
    layers: BTreeMap<Digest, Platform>,
}

impl Layout {
    /// Reads a kept layout; the layer digests come from its manifests.
    fn parse(stored: ProviderLayout) -> Result<Layout, String> {
        let mut layers = BTreeMap::new();
        let mut manifests = BTreeMap::new();
        for (platform, text) in stored.manifests {
            let value: serde_json::Value =
                serde_json::from_str(&text).map_err(|e| e.to_string())?;
            let layer = value["layers"][0]["digest"]
                .as_str()
                .ok_or("a manifest without its layer")?;
            layers.insert(
                Digest::parse(layer).map_err(|e| e.to_string())?,
                platform.clone(),
            );
            manifests.insert(platform, OciManifest::new(MANIFEST_TYPE, text.into_bytes()));
        }
        Ok(Layout {
            index: OciManifest::new(INDEX_TYPE, stored.index.into_bytes()),
            manifests,
            layers,
        })
    }

    fn digests(&self) -> impl Iterator<Item = &Digest> {
        std::iter::once(&self.index.digest)
            .chain(self.manifests.values().map(|m| &m.digest))
            .chain(self.layers.keys())
    }
}

/// The folder of the store a provider's layouts are kept in.
fn folder(provider: &Provider) -> [&str; 4] {
    [
        TOP,
        provider.hostname.as_str(),
        provider.namespace.as_str(),
        provider.kind.as_str(),
    ]
}

/// The path of the layout kept as `leaf` in a provider's folder.
fn path_of<'a>(provider: &'a Provider, leaf: &'a str) -> [&'a str; 5] {
    let [top, host, namespace, kind] = folder(provider);
    [top, host, namespace, kind, leaf]
}

impl Mirror {
    /// A provider's versions as tags (`+` written `_`), in version order,
    /// without those the policy denies or holds back.
    pub async fn oci_tags(
        self: &Arc<Self>,
        provider: &Provider,
    ) -> Result<Vec<String>, RequestError> {
        let listed = self.index(provider).await?;
        let (visible, _, _) = self.visible_index(provider, listed).await;
        Ok(visible.versions.keys().map(tag_of).collect())
    }

    /// The manifest a reference names: a tag's image index, or the index
    /// or platform manifest with that digest.
    pub async fn oci_manifest(
        self: &Arc<Self>,
        provider: &Provider,
        reference: &Reference,
    ) -> Result<OciManifest, RequestError> {
        let (version, digest) = match reference {
            Reference::Tag(version) => (version.clone(), None),
            Reference::Digest(digest) => (
                self.version_of_digest(provider, digest).await?,
                Some(digest),
            ),
        };
        let layout = self.layout(provider, &version).await?;
        let Some(digest) = digest else {
            return Ok(layout.index.clone());
        };
        std::iter::once(&layout.index)
            .chain(layout.manifests.values())
            .find(|m| &m.digest == digest)
            .cloned()
            .ok_or_else(|| unknown(provider, digest))
    }

    /// What a blob digest names in a provider's repository.
    pub async fn oci_blob(
        self: &Arc<Self>,
        provider: &Provider,
        digest: &Digest,
    ) -> Result<OciBlob, RequestError> {
        if *digest == Digest::of(EMPTY_CONFIG) {
            return Ok(OciBlob::EmptyConfig);
        }
        let version = self.version_of_digest(provider, digest).await?;
        let layout = self.layout(provider, &version).await?;
        let platform = layout
            .layers
            .get(digest)
            .ok_or_else(|| unknown(provider, digest))?;
        Ok(OciBlob::Archive(ArchiveKey::new(
            provider, &version, platform,
        )))
    }

    /// A version's layout: the kept one, else built from the verified
    /// record and kept.
    async fn layout(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
    ) -> Result<Arc<Layout>, RequestError> {
        // The policy and the record's verification first, as for any answer.
        let record = self.version(provider, version).await?;
        if let Some(layout) = self.kept_layout(provider, version).await? {
            return Ok(layout);
        }
        let stored = provider_layout(&self.sizes(record).await?);
        let bytes =
            serde_json::to_vec(&stored).map_err(|e| RequestError::Internal(e.to_string()))?;
        let leaf = format!("{version}.json");
        self.store
            .write_document(&path_of(provider, &leaf), bytes)
            .await
            .map_err(|e| self.store_failed("keeping an OCI layout", &e))?;
        self.remember(provider, version, stored)
    }

    /// The layout kept for a version, if any (from memory, else from the
    /// store, remembering its digests), whatever the policy says of it now.
    async fn kept_layout(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<Arc<Layout>>, RequestError> {
        if let Some(layout) = self.oci.layouts.get(&(provider.clone(), version.clone())) {
            return Ok(Some(layout));
        }
        let leaf = format!("{version}.json");
        let Some(bytes) = self
            .store
            .read_document(&path_of(provider, &leaf))
            .await
            .map_err(|e| self.store_failed("reading an OCI layout", &e))?
        else {
            return Ok(None);
        };
        let stored = serde_json::from_slice::<ProviderLayout>(&bytes).map_err(|e| {
            RequestError::Internal(format!("the kept OCI layout of {provider} {version}: {e}"))
        })?;
        self.remember(provider, version, stored).map(Some)
    }

    /// Parses a layout and remembers it, and which version its digests
    /// belong to.
    fn remember(
        &self,
        provider: &Provider,
        version: &Version,
        stored: ProviderLayout,
    ) -> Result<Arc<Layout>, RequestError> {
        let layout = Arc::new(Layout::parse(stored).map_err(|e| {
            RequestError::Internal(format!("the kept OCI layout of {provider} {version}: {e}"))
        })?);
        for digest in layout.digests() {
            self.oci
                .versions
                .insert((provider.clone(), digest.clone()), version.clone());
        }
        self.oci
            .layouts
            .insert((provider.clone(), version.clone()), layout.clone());
        Ok(layout)
    }

    /// Every platform's SHA-256 and size, or why the index cannot be
    /// complete yet.
    async fn sizes(
        self: &Arc<Self>,
        record: Arc<VersionRecord>,
    ) -> Result<BTreeMap<Platform, (String, u64)>, RequestError> {
        let what = format!("{} {}", record.provider, record.version);
        let entries = self.packages_field(record.clone()).await.ok_or_else(|| {
            RequestError::UpstreamUnreachable(format!(
                "{what}: not every platform's archive size is known, and an OCI index is published only complete"
            ))
        })?;
        Ok(record
            .packages
            .iter()
            .filter_map(|(platform, pkg)| {
                let size = entries.get(platform)?.package_size;
                Some((platform.clone(), (pkg.sha256.clone(), size)))
            })
            .collect())
    }

    /// The version a manifest or layer digest belongs to: remembered from
    /// an earlier answer, else found among the layouts kept for the
    /// provider, else among its verified records' archives.
    async fn version_of_digest(
        self: &Arc<Self>,
        provider: &Provider,
        digest: &Digest,
    ) -> Result<Version, RequestError> {
        let key = (provider.clone(), digest.clone());
        if let Some(v) = self.oci.versions.get(&key) {
            return Ok(v);
        }
        let kept = self
            .store
            .list_documents(TOP)
            .await
            .map_err(|e| self.store_failed("listing OCI layouts", &e))?;
        let folder = folder(provider);
        for path in kept.iter().filter(|p| p.len() == 5 && p[..4] == folder) {
            let Some(version) = path[4]
                .strip_suffix(".json")
                .and_then(|v| Version::parse(v).ok())
            else {
                continue;
            };
            if self.kept_layout(provider, &version).await?.is_some() {
                if let Some(v) = self.oci.versions.get(&key) {
                    return Ok(v);
                }
            }
        }
        Err(unknown(provider, digest))
    }
}

fn unknown(provider: &Provider, digest: &Digest) -> RequestError {
    RequestError::NotHeld(format!("{provider} has no OCI object {digest}"))
}
