//! The bytes of OpenTofu's OCI layouts, built canonically (fixed field
//! order, platforms sorted, no whitespace) so that the same verified facts
//! always give the same bytes and so the same digests: a provider
//! version's image index and per-platform manifests, and a module
//! package's image manifest. Both `/v2/` and `tfmirror push-oci` build
//! them here, so a site's registry and the mirror hand out the same
//! digests for the same content.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::address::oci::Digest;
use crate::address::Platform;

/// The image index's media type.
pub const INDEX_TYPE: &str = "application/vnd.oci.image.index.v1+json";
/// The image manifest's media type.
pub const MANIFEST_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
/// The index's artifact type, which OpenTofu requires.
const PROVIDER_ARTIFACT: &str = "application/vnd.opentofu.provider";
/// A platform manifest's artifact type, which OpenTofu requires.
const TARGET_ARTIFACT: &str = "application/vnd.opentofu.provider-target";
/// A module package manifest's artifact type, which OpenTofu requires.
pub const MODULE_ARTIFACT: &str = "application/vnd.opentofu.modulepkg";
/// The layer's media type.
const ZIP_LAYER: &str = "archive/zip";
/// The empty config's media type.
const EMPTY_TYPE: &str = "application/vnd.oci.empty.v1+json";
/// The empty config blob: two bytes.
pub const EMPTY_CONFIG: &[u8] = b"{}";

/// A provider version's layout: the exact bytes of its index and of each
/// platform's manifest, as the store keeps them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProviderLayout {
    /// The image index.
    pub index: String,
    /// Each platform's image manifest.
    pub manifests: BTreeMap<Platform, String>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Descriptor<'a> {
    media_type: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    artifact_type: Option<&'a str>,
    digest: String,
    size: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    platform: Option<OciPlatform<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<&'a str>,
}

#[derive(Serialize)]
struct OciPlatform<'a> {
    architecture: &'a str,
    os: &'a str,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImageIndex<'a> {
    schema_version: u32,
    media_type: &'a str,
    artifact_type: &'a str,
    manifests: Vec<Descriptor<'a>>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct ImageManifest<'a> {
    schema_version: u32,
    media_type: &'a str,
    artifact_type: &'a str,
    config: Descriptor<'a>,
    layers: Vec<Descriptor<'a>>,
}

/// The empty config's descriptor, with its bytes inline.
fn empty_config() -> Descriptor<'static> {
    Descriptor {
        media_type: EMPTY_TYPE,
        artifact_type: None,
        digest: Digest::of(EMPTY_CONFIG).to_string(),
        size: EMPTY_CONFIG.len() as u64,
        platform: None,
        data: Some("e30="),
    }
}

/// Builds a provider version's layout from each platform's archive
/// SHA-256 (hex) and size.
pub fn provider_layout(packages: &BTreeMap<Platform, (String, u64)>) -> ProviderLayout {
    let mut manifests = BTreeMap::new();
    let mut entries = Vec::new();
    for (platform, (sha256, size)) in packages {
        let text = zip_manifest(TARGET_ARTIFACT, &format!("sha256:{sha256}"), *size);
        entries.push(Descriptor {
            media_type: MANIFEST_TYPE,
            artifact_type: Some(TARGET_ARTIFACT),
            digest: Digest::of(text.as_bytes()).to_string(),
            size: text.len() as u64,
            platform: Some(OciPlatform {
                architecture: platform.arch(),
                os: platform.os(),
            }),
            data: None,
        });
        manifests.insert(platform.clone(), text);
    }
    let index = ImageIndex {
        schema_version: 2,
        media_type: INDEX_TYPE,
        artifact_type: PROVIDER_ARTIFACT,
        manifests: entries,
    };
    ProviderLayout {
        index: serde_json::to_string(&index).expect("indexes serialize"),
        manifests,
    }
}

/// An image manifest of `artifact` type with the empty config and one
/// `archive/zip` layer.
fn zip_manifest(artifact: &str, layer: &str, size: u64) -> String {
    let manifest = ImageManifest {
        schema_version: 2,
        media_type: MANIFEST_TYPE,
        artifact_type: artifact,
        config: empty_config(),
        layers: vec![Descriptor {
            media_type: ZIP_LAYER,
            artifact_type: None,
            digest: layer.to_owned(),
            size,
            platform: None,
            data: None,
        }],
    };
    serde_json::to_string(&manifest).expect("manifests serialize")
}

/// A module package's image manifest: one `archive/zip` layer, the
/// package as a zip with this digest and size.
pub fn module_manifest(layer: &Digest, size: u64) -> String {
    zip_manifest(MODULE_ARTIFACT, layer.as_str(), size)
}
