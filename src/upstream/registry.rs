//! The provider registry protocol (`providers.v1`) as tfmirror reads it:
//! the list of versions with their platforms, and the download metadata of
//! one package. Answers are read as the clients read them
//! ([`super::wire`]): what Terraform or OpenTofu accepts, tfmirror accepts.

use std::collections::BTreeMap;

use serde_json::Value;
use url::Url;

use super::client::{Client, UpstreamError};
use super::wire::{FieldError, Node};
use crate::address::{Platform, Provider, Version};
use crate::store::KeyDetails;

/// `GET :namespace/:type/versions`.
#[derive(Debug)]
pub struct VersionsResponse {
    /// Every version the registry offers.
    pub versions: Vec<VersionEntry>,
}

impl VersionsResponse {
    /// Reads the answer. `versions[].version` and `versions[].protocols`
    /// are what the clients read, so a wrong type there is refused; a
    /// `null` entry is an entry with no version (left out later, as the
    /// clients leave it out). The clients ignore `platforms` altogether, so
    /// one that cannot be read counts as absent (and is logged).
    pub fn read(doc: &Value, url: &Url) -> Result<Self, UpstreamError> {
        let read = || -> Result<Self, FieldError> {
            let root = Node::root(doc).object()?;
            let mut versions = Vec::new();
            for item in root.get("versions").items()? {
                let entry = item.object()?;
                let platforms_node = entry.get("platforms");
                let platforms = read_platforms(&platforms_node).unwrap_or_else(|e| {
                    tracing::warn!(%url, error = %e, "ignoring platforms that cannot be read (the clients ignore them too)");
                    Vec::new()
                });
                versions.push(VersionEntry {
                    version: entry.get("version").string()?,
                    protocols: entry.get("protocols").strings()?,
                    platforms,
                });
            }
            Ok(VersionsResponse { versions })
        };
        read().map_err(|e| UpstreamError::from((url, e)))
    }

    /// The versions that are semantic versions, each with the platforms
    /// whose names are valid. Others are left out (and logged); a version
    /// listed twice keeps its last entry.
    pub fn usable(&self, provider: &Provider) -> BTreeMap<Version, Vec<Platform>> {
        let mut versions = BTreeMap::new();
        for entry in &self.versions {
            let Ok(version) = Version::parse(&entry.version) else {
                tracing::warn!(%provider, version = %entry.version, "ignoring a version that is not semantic versioning");
                continue;
            };
            let platforms: Vec<Platform> = entry
                .platforms
                .iter()
                .filter_map(|p| Platform::from_parts(&p.os, &p.arch).ok())
                .collect();
            versions.insert(version, platforms);
        }
        versions
    }

    /// The protocol versions listed for each usable version that lists any.
    pub fn protocols(&self) -> BTreeMap<Version, Vec<String>> {
        self.versions
            .iter()
            .filter(|e| !e.protocols.is_empty())
            .filter_map(|e| Some((Version::parse(&e.version).ok()?, e.protocols.clone())))
            .collect()
    }
}

/// One entry of [`VersionsResponse`].
#[derive(Debug)]
pub struct VersionEntry {
    /// The version number, as the registry spells it.
    pub version: String,
    /// The plugin protocol versions it supports.
    pub protocols: Vec<String>,
    /// The platforms that have packages for this version.
    pub platforms: Vec<PlatformEntry>,
}

fn read_platforms(node: &Node<'_>) -> Result<Vec<PlatformEntry>, FieldError> {
    node.items()?
        .iter()
        .map(|item| {
            let platform = item.object()?;
            Ok(PlatformEntry {
                os: platform.get("os").string()?,
                arch: platform.get("arch").string()?,
            })
        })
        .collect()
}

/// A platform in [`VersionEntry`].
#[derive(Debug)]
pub struct PlatformEntry {
    /// Operating system, e.g. `linux`.
    pub os: String,
    /// Architecture, e.g. `amd64`.
    pub arch: String,
}

/// `GET :namespace/:type/:version/download/:os/:arch`.
#[derive(Debug)]
pub struct PackageResponse {
    /// The plugin protocol versions the package supports.
    pub protocols: Vec<String>,
    /// Must echo the requested operating system.
    pub os: String,
    /// Must echo the requested architecture.
    pub arch: String,
    /// The archive's file name as recorded in SHA256SUMS.
    pub filename: String,
    /// Where the archive is downloaded from (may be relative).
    pub download_url: String,
    /// The SHA256SUMS document of this version.
    pub shasums_url: String,
    /// The detached OpenPGP signature of the SHA256SUMS document.
    pub shasums_signature_url: String,
    /// The archive's SHA-256, lowercase hex.
    pub shasum: String,
    /// The keys allowed to sign the SHA256SUMS document.
    pub signing_keys: SigningKeys,
    /// `packages`: every platform's hashes and archive size, as OpenTofu's
    /// registry reports them. Empty when the field is absent, or when it
    /// is in a shape OpenTofu's client refuses (Terraform ignores the
    /// field, so an answer is never refused for it: the mirror then works
    /// out what it can itself).
    pub packages: BTreeMap<Platform, ReportedPackage>,
}

/// One platform's entry in [`PackageResponse::packages`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReportedPackage {
    /// Its hashes in lock-file form (`zh:…`, `h1:…`).
    pub hashes: Vec<String>,
    /// The archive's size in bytes (above zero).
    pub size: u64,
}

impl ReportedPackage {
    /// The hashes of one scheme (`"zh:"`, `"h1:"`), prefix included.
    pub fn with_scheme<'a>(&'a self, scheme: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.hashes
            .iter()
            .filter(move |h| h.starts_with(scheme))
            .map(String::as_str)
    }
}

/// Reads `packages` as OpenTofu's client does: a platform name that does
/// not parse, a hash without a scheme, a size that is not above zero or a
/// wrong type make it refuse the answer, so the field is not used.
fn read_packages(node: &Node<'_>) -> Result<BTreeMap<Platform, ReportedPackage>, FieldError> {
    let mut out = BTreeMap::new();
    for (name, entry) in node.object()?.entries() {
        let wrong = |reason: String| FieldError {
            path: entry.path().to_owned(),
            reason,
        };
        let platform = Platform::parse(name).map_err(|e| wrong(format!("not a platform: {e}")))?;
        let fields = entry.object()?;
        let hashes = fields.get("hashes").strings()?;
        if let Some(bad) = hashes.iter().find(|h| h.find(':').is_none_or(|i| i == 0)) {
            return Err(wrong(format!("{bad:?} is not a hash with a scheme")));
        }
        let size = fields.get("package_size").integer()?;
        let size = u64::try_from(size)
            .ok()
            .filter(|s| *s > 0)
            .ok_or_else(|| wrong(format!("package_size {size} is not above zero")))?;
        out.insert(platform, ReportedPackage { hashes, size });
    }
    Ok(out)
}

impl PackageResponse {
    /// Reads the answer as the clients do. The fields both clients need to
    /// install (`os`, `arch`, `filename`, the three URLs, `shasum`) must be
    /// there and not empty: an answer without them decodes in Go, but every
    /// install from it fails, so it is refused here with the field's name.
    /// `protocols` and `ascii_armor` are read by the clients and refused
    /// when of the wrong type; an entry whose `ascii_armor` is empty,
    /// `null` or absent is no key (left out). Of the other key details, Terraform reads
    /// only `trust_signature` and OpenTofu none; they are kept when they
    /// are strings and read as empty otherwise (what either client accepts
    /// is accepted; what is served on is always a string).
    pub fn read(doc: &Value, url: &Url) -> Result<Self, UpstreamError> {
        let read = || -> Result<Self, FieldError> {
            let root = Node::root(doc).object()?;
            let required = |name: &str| root.get(name).required_string();
            let mut keys = Vec::new();
            for item in root
                .get("signing_keys")
                .object()?
                .get("gpg_public_keys")
                .items()?
            {
                let key = item.required_object()?;
                let detail = |name: &str| key.get(name).string().unwrap_or_default();
                let ascii_armor = key.get("ascii_armor").string()?;
                if ascii_armor.trim().is_empty() {
                    // A blank entry, as the OpenTofu Registry once sent:
                    // no key at all.
                    tracing::warn!(%url, "ignoring a signing_keys entry with no ascii_armor");
                    continue;
                }
                keys.push(GpgPublicKey {
                    ascii_armor,
                    details: KeyDetails {
                        key_id: detail("key_id"),
                        trust_signature: detail("trust_signature"),
                        source: detail("source"),
                        source_url: detail("source_url"),
                    },
                });
            }
            let packages = read_packages(&root.get("packages")).unwrap_or_else(|e| {
                tracing::warn!(%url, error = %e, "ignoring a packages field OpenTofu would refuse (Terraform ignores it); the mirror works out the packages itself");
                BTreeMap::new()
            });
            Ok(PackageResponse {
                packages,
                protocols: root.get("protocols").strings()?,
                os: required("os")?,
                arch: required("arch")?,
                filename: required("filename")?,
                download_url: required("download_url")?,
                shasums_url: required("shasums_url")?,
                shasums_signature_url: required("shasums_signature_url")?,
                shasum: required("shasum")?,
                signing_keys: SigningKeys {
                    gpg_public_keys: keys,
                },
            })
        };
        read().map_err(|e| UpstreamError::from((url, e)))
    }
}

/// `signing_keys` of [`PackageResponse`].
#[derive(Debug)]
pub struct SigningKeys {
    /// The GPG public keys.
    pub gpg_public_keys: Vec<GpgPublicKey>,
}

/// One key of [`SigningKeys`].
#[derive(Debug)]
pub struct GpgPublicKey {
    /// The ASCII-armored public key.
    pub ascii_armor: String,
    /// What the registry says about it (ID, trust signature, source),
    /// kept as given.
    pub details: KeyDetails,
}

/// Reads a provider's versions from the registry at `base`, presenting
/// `token` when given.
pub async fn versions(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    provider: &Provider,
) -> Result<VersionsResponse, UpstreamError> {
    let url = endpoint(
        base,
        &[
            provider.namespace.as_str(),
            provider.kind.as_str(),
            "versions",
        ],
    )?;
    let (doc, _, final_url) = client.get_document(&url, token).await?;
    VersionsResponse::read(&doc, &final_url)
}

/// Reads one package's download metadata, with the URL that produced it
/// (relative URLs in the answer resolve against it, as the clients
/// resolve them).
pub async fn package(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    provider: &Provider,
    version: &Version,
    platform: &Platform,
) -> Result<(PackageResponse, Url), UpstreamError> {
    let url = endpoint(
        base,
        &[
            provider.namespace.as_str(),
            provider.kind.as_str(),
            version.as_str(),
            "download",
            platform.os(),
            platform.arch(),
        ],
    )?;
    let (doc, _, final_url) = client.get_document(&url, token).await?;
    let answer = PackageResponse::read(&doc, &final_url)?;
    Ok((answer, final_url))
}

/// Joins path segments (percent-encoding each) beneath `base`.
pub(crate) fn endpoint(base: &Url, segments: &[&str]) -> Result<Url, UpstreamError> {
    let mut url = base.clone();
    url.path_segments_mut()
        .map_err(|()| UpstreamError::Invalid {
            url: base.to_string(),
            reason: "not a base URL".into(),
        })?
        .pop_if_empty()
        .extend(segments);
    Ok(url)
}

#[cfg(test)]
mod tests;
