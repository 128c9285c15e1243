//! The provider registry protocol (`providers.v1`) as tfmirror reads it:
//! the list of versions with their platforms, and the download metadata of
//! one package.

use std::collections::BTreeMap;

use serde::Deserialize;
use url::Url;

use super::client::{Client, UpstreamError};
use crate::address::{Platform, Provider, Version};
use crate::store::KeyDetails;

/// `GET :namespace/:type/versions`.
#[derive(Debug, Deserialize)]
pub struct VersionsResponse {
    /// Every version the registry offers.
    pub versions: Vec<VersionEntry>,
}

impl VersionsResponse {
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
#[derive(Debug, Deserialize)]
pub struct VersionEntry {
    /// The version number, as the registry spells it.
    pub version: String,
    /// The plugin protocol versions it supports.
    #[serde(default)]
    pub protocols: Vec<String>,
    /// The platforms that have packages for this version.
    #[serde(default)]
    pub platforms: Vec<PlatformEntry>,
}

/// A platform in [`VersionEntry`].
#[derive(Debug, Deserialize)]
pub struct PlatformEntry {
    /// Operating system, e.g. `linux`.
    pub os: String,
    /// Architecture, e.g. `amd64`.
    pub arch: String,
}

/// `GET :namespace/:type/:version/download/:os/:arch`.
#[derive(Debug, Deserialize)]
pub struct PackageResponse {
    /// The plugin protocol versions the package supports.
    #[serde(default)]
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
}

/// `signing_keys` of [`PackageResponse`].
#[derive(Debug, Deserialize)]
pub struct SigningKeys {
    /// The GPG public keys.
    #[serde(default)]
    pub gpg_public_keys: Vec<GpgPublicKey>,
}

/// One key of [`SigningKeys`].
#[derive(Debug, Deserialize)]
pub struct GpgPublicKey {
    /// The ASCII-armored public key.
    pub ascii_armor: String,
    /// What the registry says about it (ID, trust signature, source),
    /// kept as given.
    #[serde(flatten)]
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
    client.get_json(&url, token).await.map(|(v, _)| v)
}

/// Reads one package's download metadata. Relative URLs in the answer are
/// resolved against the URL that produced it.
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
    client.get_json(&url, token).await
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
mod tests {
    use super::*;

    #[test]
    fn endpoints_land_beneath_the_base() {
        let base = Url::parse("https://r.example/v1/providers/").unwrap();
        let url = endpoint(&base, &["ns", "t", "1.0.0+b", "download", "linux", "amd64"]).unwrap();
        assert_eq!(
            url.as_str(),
            "https://r.example/v1/providers/ns/t/1.0.0+b/download/linux/amd64"
        );
        let url = endpoint(&base, &["ünï", "t", "versions"]).unwrap();
        assert_eq!(
            url.as_str(),
            "https://r.example/v1/providers/%C3%BCn%C3%AF/t/versions"
        );
    }
}
