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
mod tests {
    use super::*;
    use serde_json::json;

    fn url() -> Url {
        Url::parse("https://r.example/v1/providers/acme/widget/1.0.0/download/linux/amd64").unwrap()
    }

    /// A download answer as the public registry sends it for a community
    /// provider, listing `key`.
    fn answer(key: &serde_json::Value) -> serde_json::Value {
        json!({
            "protocols": ["5.0"], "os": "linux", "arch": "amd64",
            "filename": "terraform-provider-widget_1.0.0_linux_amd64.zip",
            "download_url": "https://dl.example/w.zip",
            "shasums_url": "https://dl.example/SHA256SUMS",
            "shasums_signature_url": "https://dl.example/SHA256SUMS.sig",
            "shasum": "a".repeat(64),
            "signing_keys": {"gpg_public_keys": [key]},
        })
    }

    #[test]
    fn null_key_details_and_a_missing_key_id_read_as_empty() {
        let doc = answer(&json!({
            "ascii_armor": "ARMOR", "trust_signature": null, "source": null, "source_url": null,
        }));
        let read = PackageResponse::read(&doc, &url()).unwrap();
        let key = &read.signing_keys.gpg_public_keys[0];
        assert_eq!(key.ascii_armor, "ARMOR");
        assert_eq!(key.details, KeyDetails::default());
    }

    #[test]
    fn extra_fields_other_spellings_and_empty_lists_are_fine() {
        let mut doc = answer(
            &json!({"key_id": "51852D87348FFC4C", "ascii_armor": "ARMOR", "source_url": 7, "comment": {"a": 1}}),
        );
        doc["packages"] = json!({"linux_amd64": {"hashes": ["zh:00"], "package_size": 1}});
        doc["protocols"] = serde_json::Value::Null;
        doc["Filename"] = doc["filename"].take();
        doc.as_object_mut().unwrap().remove("filename");
        let read = PackageResponse::read(&doc, &url()).unwrap();
        assert!(read.protocols.is_empty());
        assert_eq!(
            read.filename,
            "terraform-provider-widget_1.0.0_linux_amd64.zip"
        );
        // Terraform ignores source_url; a number there is read as empty.
        assert_eq!(read.signing_keys.gpg_public_keys[0].details.source_url, "");
        assert_eq!(
            read.signing_keys.gpg_public_keys[0].details.key_id,
            "51852D87348FFC4C"
        );
        // Every way the OpenTofu Registry says "no key" reads as no key.
        for none in [
            json!({"gpg_public_keys": null}),
            json!({"gpg_public_keys": []}),
            json!({}),
            serde_json::Value::Null,
            json!({"gpg_public_keys": [{"ascii_armor": "", "key_id": ""}]}),
            json!({"gpg_public_keys": [{"key_id": "X", "ascii_armor": null}, {"key_id": "Y"}]}),
        ] {
            let mut doc = answer(&json!({}));
            doc["signing_keys"] = none.clone();
            let read = PackageResponse::read(&doc, &url()).unwrap();
            assert!(read.signing_keys.gpg_public_keys.is_empty(), "{none}");
        }
        let mut doc = answer(&json!({}));
        doc.as_object_mut().unwrap().remove("signing_keys");
        assert!(PackageResponse::read(&doc, &url())
            .unwrap()
            .signing_keys
            .gpg_public_keys
            .is_empty());
    }

    #[test]
    fn what_the_clients_refuse_is_refused_naming_the_field_and_the_url() {
        let cases = [
            (
                "os",
                json!(5),
                "`os`: expected a string, found the number 5",
            ),
            (
                "protocols",
                json!("5.0"),
                "`protocols`: expected a list, found a string",
            ),
            (
                "shasum",
                serde_json::Value::Null,
                "`shasum`: required, but null",
            ),
            (
                "signing_keys",
                json!({"gpg_public_keys": [null]}),
                "`signing_keys.gpg_public_keys[0]`: is null",
            ),
            (
                "signing_keys",
                json!({"gpg_public_keys": [{"ascii_armor": 7}]}),
                "`signing_keys.gpg_public_keys[0].ascii_armor`: expected a string",
            ),
            (
                "signing_keys",
                json!([]),
                "`signing_keys`: expected an object, found a list",
            ),
        ];
        for (field, value, says) in cases {
            let mut doc = answer(&json!({"ascii_armor": "ARMOR"}));
            doc[field] = value;
            let err = PackageResponse::read(&doc, &url()).unwrap_err().to_string();
            assert!(err.contains(says), "{field}: {err}");
            assert!(err.contains(url().as_str()), "{err}");
        }
        let err = PackageResponse::read(&json!([1]), &url())
            .unwrap_err()
            .to_string();
        assert!(err.contains("(the document)`: expected an object"), "{err}");
    }

    #[test]
    fn version_lists_read_as_the_clients_read_them() {
        let doc = json!({
            "id": "acme/widget", "warnings": null,
            "versions": [
                {"version": "1.0.0", "protocols": ["5.0"], "platforms": [{"os": "linux", "arch": "amd64"}]},
                {"version": "1.1.0", "protocols": null, "platforms": null},
                {"version": "1.2.0", "platforms": "not a list"},
                null,
            ],
        });
        let read = VersionsResponse::read(&doc, &url()).unwrap();
        assert_eq!(read.versions.len(), 4);
        assert_eq!(read.versions[3].version, "");
        assert!(read.versions[2].platforms.is_empty());
        let provider = Provider::from_source("r.example/acme/widget").unwrap();
        assert_eq!(read.usable(&provider).len(), 3);
        assert!(VersionsResponse::read(&json!({"versions": null}), &url())
            .unwrap()
            .versions
            .is_empty());
        assert!(VersionsResponse::read(&serde_json::Value::Null, &url())
            .unwrap()
            .versions
            .is_empty());
        let err =
            VersionsResponse::read(&json!({"versions": [{"version": 1}]}), &url()).unwrap_err();
        assert!(err.to_string().contains("`versions[0].version`"), "{err}");
    }

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

    #[test]
    fn the_packages_field_is_used_only_in_a_shape_opentofu_accepts() {
        let with = |packages: serde_json::Value| {
            let mut doc = answer(&json!({"ascii_armor": "KEY"}));
            doc["packages"] = packages;
            PackageResponse::read(&doc, &url()).expect("the answer itself is fine")
        };
        let zh = format!("zh:{}", "a".repeat(64));
        let read = with(json!({
            "linux_amd64": {"hashes": [zh, "h1:abc="], "package_size": 6_184_593},
            "darwin_arm64": {"hashes": [zh], "package_size": 1, "extra": true},
        }));
        let linux = Platform::parse("linux_amd64").unwrap();
        assert_eq!(read.packages.len(), 2);
        assert_eq!(read.packages[&linux].size, 6_184_593);
        assert_eq!(
            read.packages[&linux].with_scheme("h1:").collect::<Vec<_>>(),
            ["h1:abc="]
        );
        // Absent and null are no field; each shape OpenTofu's client
        // refuses (and Terraform ignores) leaves the field unused.
        assert!(with(serde_json::Value::Null).packages.is_empty());
        for refused in [
            json!("linux_amd64"),
            json!({"linux-amd64": {"hashes": [zh], "package_size": 1}}),
            json!({"linux_amd64": {"hashes": [zh], "package_size": 0}}),
            json!({"linux_amd64": {"hashes": [zh], "package_size": -5}}),
            json!({"linux_amd64": {"hashes": [zh]}}),
            json!({"linux_amd64": {"hashes": [zh], "package_size": 1.5}}),
            json!({"linux_amd64": {"hashes": [zh, "abc"], "package_size": 1}}),
            json!({"linux_amd64": {"hashes": [zh, ":abc"], "package_size": 1}}),
            json!({"linux_amd64": {"hashes": zh, "package_size": 1}}),
            json!({"linux_amd64": null}),
        ] {
            assert!(with(refused.clone()).packages.is_empty(), "{refused}");
        }
    }
}
