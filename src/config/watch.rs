//! `[watch]`: the providers and modules the daemon keeps current, in the
//! form of a sync manifest's entries (read and run by
//! [`crate::site::watch`]).

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::address::{Platform, Product};

/// `[watch]`: providers and modules fetched ahead of time, and how often
/// their origins are asked for new versions. Entries take the form of a
/// sync manifest's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct WatchConfig {
    /// `interval`: how long from one pass to the next, give or take a
    /// tenth. Default `6h`.
    #[serde(with = "humantime_serde")]
    pub interval: Duration,
    /// `jobs`: how many archives one pass downloads at once. Default `4`.
    pub jobs: usize,
    /// `client`: whose rules resolve the entries' unqualified sources:
    /// `"terraform"` (the default: `registry.terraform.io`) or
    /// `"opentofu"` (`registry.opentofu.org`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<Product>,
    /// `platforms`: the platforms of the `[[watch.provider]]` entries that
    /// name none, e.g. `["linux_amd64", "darwin_arm64"]`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<Platform>,
    /// `[[watch.provider]]`: a provider to keep (`source`, `versions`,
    /// `platforms`), as in a sync manifest.
    #[serde(default, rename = "provider", skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<ProviderEntry>,
    /// `[[watch.module]]`: a registry module to keep (`source`,
    /// `versions`), with the registry modules it calls and, for
    /// `platforms`, the providers they require.
    #[serde(default, rename = "module", skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ModuleEntry>,
    /// `[[watch.release]]`: Terraform or OpenTofu releases to keep
    /// (`product`, `versions`, `platforms`), as in a sync manifest; served
    /// when `[releases]` names the product.
    #[serde(default, rename = "release", skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<ReleaseEntry>,
    /// `[[watch.oci]]`: an OCI registry of the site's that every pass
    /// fills with the watched providers and modules (`target`,
    /// `username`, `token` or `token_file`, `ca_file`), as `tfmirror
    /// push-oci` does.
    #[serde(default, rename = "oci", skip_serializing_if = "Vec::is_empty")]
    pub oci: Vec<OciTarget>,
}

/// A `[[watch.oci]]` entry: a site's OCI registry kept filled.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OciTarget {
    /// `target`: `REGISTRY[/PREFIX]`, e.g. `"registry.site.example/opentofu"`.
    pub target: String,
    /// `username`: the username that goes with the token; without one the
    /// token is sent as a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// `token`: the registry password or token, inline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// `token_file`: a file holding the registry password or token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// `ca_file`: extra CA certificates (PEM) to trust for the registry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
}

impl std::fmt::Debug for OciTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OciTarget")
            .field("target", &self.target)
            .field("username", &self.username)
            .field("token", &self.token.as_ref().map(|_| "<hidden>"))
            .field("token_file", &self.token_file)
            .field("ca_file", &self.ca_file)
            .finish()
    }
}

impl Default for WatchConfig {
    fn default() -> Self {
        WatchConfig {
            interval: Duration::from_secs(6 * 3600),
            jobs: 4,
            client: None,
            platforms: Vec::new(),
            providers: Vec::new(),
            modules: Vec::new(),
            releases: Vec::new(),
            oci: Vec::new(),
        }
    }
}

/// A `[[provider]]` entry of a sync manifest, or a `[[watch.provider]]`
/// entry of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProviderEntry {
    /// `source`: the provider, `[hostname/]namespace/type`.
    pub source: String,
    /// `versions`: a version constraint in Terraform's syntax; every
    /// version when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub versions: String,
    /// `platforms`: the platforms wanted, instead of the defaults given
    /// beside the entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platforms: Option<Vec<String>>,
}

/// A `[[module]]` entry of a sync manifest, or a `[[watch.module]]` entry
/// of the configuration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModuleEntry {
    /// `source`: the registry module, `[hostname/]namespace/name/system`.
    pub source: String,
    /// `versions`: a version constraint in Terraform's syntax; every
    /// version when empty.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub versions: String,
}

/// A `[[release]]` entry of a sync manifest, or a `[[watch.release]]` entry
/// of the configuration: Terraform's or OpenTofu's own binaries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReleaseEntry {
    /// `product`: `terraform` or `tofu`.
    pub product: String,
    /// `versions`: a version constraint in Terraform's syntax; required,
    /// since every release a product ever made is seldom what a site needs.
    #[serde(default)]
    pub versions: String,
    /// `platforms`: the platforms wanted, instead of the defaults given
    /// beside the entries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub platforms: Option<Vec<String>>,
}
