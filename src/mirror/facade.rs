//! The provider registry protocol (`providers.v1`) in front of the cache,
//! for clients whose CLI configuration points a registry host's
//! `providers.v1` service at tfmirror with a `host` block.
//!
//! Everything comes from the same verified records the network mirror
//! serves: the version list, and for a package the origin's answer with its
//! links pointing into the mirror. The origin's SHA256SUMS documents and
//! their signatures are passed on byte for byte, with the signing keys and
//! what the origin said about them, so clients verify the signature
//! themselves, label the provider as the origin would, and record a `zh:`
//! hash for every platform the signed document lists. The download answer
//! carries OpenTofu's `packages` field too ([`super::packages`]), so that
//! an OpenTofu client records every platform's `h1:` as well.
//!
//! A keyless version (published without a signing key) is passed on as
//! such: no key is ever added to its `signing_keys`, its signature file is
//! served as the origin published it, and the version list's `warnings`
//! tell users which versions are keyless and what tfmirror checked
//! instead.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use serde::Serialize;

use super::packages::PackageEntry;
use super::Mirror;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::protocol::path_segment;
use crate::store::SignedSums;

/// What a link the facade hands out opens.
#[derive(Debug, Clone, Copy)]
pub enum Link<'a> {
    /// An archive.
    Archive(&'a ArchiveKey),
    /// The version's `n`th SHA256SUMS document and its signature.
    Sums(usize),
}

/// Makes the query string of a link (a signature, when access control is
/// on).
pub type LinkQuery<'a> = &'a (dyn Fn(Link<'_>) -> String + Sync);

/// `GET :namespace/:type/versions`.
#[derive(Debug, Serialize)]
struct VersionsDocument {
    versions: Vec<VersionEntry>,
    /// Why versions are left out (the policy's rules and reasons), which
    /// Terraform and OpenTofu print.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<String>,
}

#[derive(Debug, Serialize)]
struct VersionEntry {
    version: String,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    protocols: Vec<String>,
    platforms: Vec<PlatformEntry>,
}

#[derive(Debug, Serialize)]
struct PlatformEntry {
    os: String,
    arch: String,
}

/// `GET :namespace/:type/:version/download/:os/:arch`.
#[derive(Debug, Clone, Serialize)]
struct PackageDocument {
    protocols: Vec<String>,
    os: String,
    arch: String,
    filename: String,
    download_url: String,
    shasums_url: String,
    shasums_signature_url: String,
    shasum: String,
    signing_keys: SigningKeys,
    /// Every platform's hashes and size (OpenTofu's `packages`); left out
    /// when the mirror cannot give every platform's size.
    #[serde(skip_serializing_if = "Option::is_none")]
    packages: Option<BTreeMap<Platform, PackageEntry>>,
}

#[derive(Debug, Clone, Serialize)]
struct SigningKeys {
    gpg_public_keys: Vec<GpgPublicKey>,
}

#[derive(Debug, Clone, Serialize)]
struct GpgPublicKey {
    key_id: String,
    ascii_armor: String,
    trust_signature: String,
    source: String,
    source_url: String,
}

/// One package's download metadata, ready to be rendered with plain links
/// or with links a caller's query completes.
#[derive(Debug)]
pub struct PackageAnswer {
    key: ArchiveKey,
    /// Which of the version's SHA256SUMS documents lists the package.
    sums: usize,
    /// The answer with plain links.
    doc: PackageDocument,
}

impl PackageAnswer {
    /// The answer with plain links (no query).
    pub fn plain(&self) -> Vec<u8> {
        to_json(&self.doc)
    }

    /// The answer with `query` after each link (a signature, when access
    /// control is on).
    pub fn linked(&self, query: LinkQuery<'_>) -> Vec<u8> {
        let mut doc = self.doc.clone();
        let sums_query = with_query(query(Link::Sums(self.sums)));
        doc.download_url
            .push_str(&with_query(query(Link::Archive(&self.key))));
        doc.shasums_url.push_str(&sums_query);
        doc.shasums_signature_url.push_str(&sums_query);
        to_json(&doc)
    }
}

impl Mirror {
    /// A provider's versions in the registry protocol's shape, from the
    /// same version list the network mirror serves.
    pub async fn registry_versions(
        self: &Arc<Self>,
        provider: &Provider,
    ) -> Result<Vec<u8>, RequestError> {
        let (index, denied, _) = self
            .visible_index(provider, self.index(provider).await?)
            .await;
        let versions = index
            .versions
            .iter()
            .map(|(version, platforms)| VersionEntry {
                version: version.to_string(),
                protocols: index.protocols.get(version).cloned().unwrap_or_default(),
                platforms: platforms
                    .iter()
                    .map(|p| PlatformEntry {
                        os: p.os().to_owned(),
                        arch: p.arch().to_owned(),
                    })
                    .collect(),
            })
            .collect();
        let mut warnings: Vec<String> = denied.iter().map(ToString::to_string).collect();
        let keyless: Vec<String> = self
            .keyless_of(provider)
            .iter()
            .filter(|v| index.versions.contains_key(*v))
            .map(ToString::to_string)
            .collect();
        if !keyless.is_empty() {
            warnings.push(format!(
                "{provider} {} published without a signing key: signature validation was skipped by the registry. tfmirror checked the SHA256SUMS, shasum, sizes and h1: hashes, required the signature file, and pinned each such version on first sight",
                if keyless.len() == 1 {
                    format!("version {} is", keyless[0])
                } else {
                    format!("versions {} are", keyless.join(", "))
                }
            ));
        }
        Ok(to_json(&VersionsDocument { versions, warnings }))
    }

    /// One package's download metadata: the origin's answer, verified by
    /// the mirror, with links into the mirror.
    pub async fn registry_package(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<PackageAnswer, RequestError> {
        let record = self.version(&key.provider, &key.version).await?;
        let Some(package) = record.packages.get(&key.platform) else {
            return Err(RequestError::NoPackage(format!(
                "{} {} has no verified package for {}",
                key.provider, key.version, key.platform
            )));
        };
        let sums = record.sums.get(package.sums).ok_or_else(|| {
            RequestError::Internal(format!(
                "the record of {} {} names a missing checksum document",
                key.provider, key.version
            ))
        })?;
        let mut protocols = package.protocols.clone();
        if protocols.is_empty() {
            let index = self.index(&key.provider).await?;
            protocols = index
                .protocols
                .get(&key.version)
                .cloned()
                .unwrap_or_default();
        }
        let sums_path = sums_path(&key.provider, &key.version, package.sums);
        let doc = PackageDocument {
            protocols,
            os: key.platform.os().to_owned(),
            arch: key.platform.arch().to_owned(),
            filename: package.filename.clone(),
            download_url: archive_path(key),
            shasums_url: sums_path.clone(),
            shasums_signature_url: format!("{sums_path}.sig"),
            shasum: package.sha256.clone(),
            signing_keys: signing_keys(sums),
            packages: self.packages_field(record.clone()).await,
        };
        Ok(PackageAnswer {
            key: key.clone(),
            sums: package.sums,
            doc,
        })
    }

    /// A version's `index`th SHA256SUMS document, or its detached
    /// signature, as the origin published it.
    pub async fn registry_sums(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        index: usize,
        signature: bool,
    ) -> Result<Vec<u8>, RequestError> {
        let record = self.version(provider, version).await?;
        let Some(sums) = record.sums.get(index) else {
            return Err(RequestError::NoPackage(format!(
                "{provider} {version} has no checksum document {index}"
            )));
        };
        if signature {
            base64::engine::general_purpose::STANDARD
                .decode(&sums.signature)
                .map_err(|e| {
                    RequestError::Internal(format!(
                        "the stored signature of {provider} {version} is not base64: {e}"
                    ))
                })
        } else {
            Ok(sums.document.clone().into_bytes())
        }
    }
}

/// The keys of a signed document with what the origin said about each.
fn signing_keys(sums: &SignedSums) -> SigningKeys {
    let gpg_public_keys = sums
        .keys
        .iter()
        .enumerate()
        .map(|(i, armor)| {
            let details = sums.key_details.get(i).cloned().unwrap_or_default();
            GpgPublicKey {
                key_id: details.key_id,
                ascii_armor: armor.clone(),
                trust_signature: details.trust_signature,
                source: details.source,
                source_url: details.source_url,
            }
        })
        .collect();
    SigningKeys { gpg_public_keys }
}

/// `?query`, or nothing.
fn with_query(query: String) -> String {
    if query.is_empty() {
        query
    } else {
        format!("?{query}")
    }
}

/// The network mirror's path of an archive, which serves the facade too.
fn archive_path(key: &ArchiveKey) -> String {
    let p = &key.provider;
    format!(
        "/{}/{}/{}/{}",
        path_segment(p.hostname.as_ref()),
        path_segment(p.namespace.as_str()),
        path_segment(p.kind.as_str()),
        path_segment(&key.file_name())
    )
}

/// The facade's path of a version's `index`th SHA256SUMS document.
fn sums_path(p: &Provider, version: &Version, index: usize) -> String {
    format!(
        "/v1/providers/{}/{}/{}/{}/sums/{index}",
        path_segment(p.hostname.as_ref()),
        path_segment(p.namespace.as_str()),
        path_segment(p.kind.as_str()),
        path_segment(version.as_str())
    )
}

fn to_json<T: Serialize>(value: &T) -> Vec<u8> {
    serde_json::to_vec(value).expect("documents always serialize")
}
