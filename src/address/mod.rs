//! Validated names for everything that identifies a provider package.
//!
//! Every segment of a request path is parsed into one of these types before
//! tfmirror touches the disk or the network, and only these types are ever
//! joined into a filesystem path. A value of one of these types is already
//! normalized the way Terraform normalizes it, so one provider has exactly one
//! spelling and therefore exactly one cache entry.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use part::{parse_part, Underscores};

mod advisory;
mod doc;
mod module;
pub mod oci;
mod part;
mod plain;
mod release;

pub use advisory::AdvisoryId;
pub use doc::{DocName, MAX_DOC_NAME};
pub use module::{Module, ModuleName, ModuleNamespace, ModuleSystem};
pub use release::{ArtifactName, Product, ReleaseFile};

/// Longest accepted namespace or provider type, in bytes.
const MAX_PART_LEN: usize = 64;
/// Longest accepted hostname (a DNS name is at most 253 bytes) plus `:port`.
const MAX_HOSTNAME_LEN: usize = 253 + 6;

/// Why a name was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {given:?}: {reason}")]
pub struct InvalidName {
    /// Which kind of name this was meant to be.
    pub what: &'static str,
    /// The text that was rejected (cut short when very long).
    pub given: String,
    /// What is wrong with it.
    pub reason: &'static str,
}

impl InvalidName {
    fn new(what: &'static str, given: &str, reason: &'static str) -> Self {
        let given = if given.len() > 80 {
            let mut end = 80;
            while !given.is_char_boundary(end) {
                end -= 1;
            }
            format!("{}…", &given[..end])
        } else {
            given.to_owned()
        };
        InvalidName {
            what,
            given,
            reason,
        }
    }
}

/// Implements the string conversions shared by every name type: `Display`,
/// `FromStr`, `AsRef<str>` and serde through the validating constructor.
macro_rules! string_name {
    ($name:ident) => {
        impl $name {
            /// The normalized text of this name.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl FromStr for $name {
            type Err = InvalidName;
            fn from_str(s: &str) -> Result<Self, InvalidName> {
                $name::parse(s)
            }
        }

        impl TryFrom<String> for $name {
            type Error = InvalidName;
            fn try_from(s: String) -> Result<Self, InvalidName> {
                $name::parse(&s)
            }
        }

        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }
    };
}
/// For the name types defined in submodules.
use string_name;

/// A registry hostname as it appears in a provider address, normalized as
/// Terraform normalizes it: lowercase, internationalized names in their
/// punycode (ASCII) form, and an optional `:port` with `:443` dropped.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Hostname(String);
string_name!(Hostname);

impl Hostname {
    /// Parses and normalizes a hostname with an optional port.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let err = |reason| InvalidName::new("hostname", given, reason);
        if given.is_empty() {
            return Err(err("must not be empty"));
        }
        if given.len() > MAX_HOSTNAME_LEN * 4 {
            return Err(err("too long"));
        }
        let (host, port) = match given.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (given, None),
        };
        let port = match port {
            None => None,
            Some(p) => {
                if p.is_empty() || p.len() > 5 || !p.bytes().all(|b| b.is_ascii_digit()) {
                    return Err(err("the port must be a decimal number"));
                }
                match p.parse::<u16>() {
                    Ok(0) | Err(_) => return Err(err("the port must be between 1 and 65535")),
                    Ok(443) => None,
                    Ok(n) => Some(n),
                }
            }
        };
        let ascii = if plain::normalized_hostname(host) {
            host.to_owned()
        } else {
            if host
                .chars()
                .any(|c| c.is_control() || c.is_whitespace() || "/\\@?#%[]".contains(c))
            {
                return Err(err(
                    "contains a character that is not allowed in a hostname",
                ));
            }
            idna::domain_to_ascii_strict(host)
                .map_err(|_| err("not a valid internationalized domain name"))?
        };
        if ascii.is_empty() || ascii.starts_with('.') || ascii.ends_with('.') {
            return Err(err("not a valid domain name"));
        }
        if !ascii
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'.')
        {
            return Err(err("not a valid domain name"));
        }
        let full = match port {
            Some(p) => format!("{ascii}:{p}"),
            None => ascii,
        };
        if full.len() > MAX_HOSTNAME_LEN {
            return Err(err("too long"));
        }
        Ok(Hostname(full))
    }

    /// The `host[:port]` authority to connect to (port 443 when none is given).
    pub fn authority(&self) -> &str {
        &self.0
    }
}

/// The namespace part of a provider address (`hashicorp` in `hashicorp/aws`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Namespace(String);
string_name!(Namespace);

impl Namespace {
    /// Parses and normalizes a namespace.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        parse_part("namespace", given, Underscores::Allowed).map(Namespace)
    }
}

/// The type part of a provider address (`aws` in `hashicorp/aws`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ProviderType(String);
string_name!(ProviderType);

impl ProviderType {
    /// Parses and normalizes a provider type.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        parse_part("provider type", given, Underscores::Refused).map(ProviderType)
    }
}

/// A provider version: a strict semantic version such as `1.2.3` or
/// `2.0.0-beta1`, kept in its canonical text form beside its parsed form,
/// so that ordering never parses again.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Version(String, semver::Version);
string_name!(Version);

impl Version {
    /// Parses a semantic version.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        if given.len() > 128 {
            return Err(InvalidName::new("version", given, "too long"));
        }
        let v = semver::Version::parse(given)
            .map_err(|_| InvalidName::new("version", given, "not a semantic version"))?;
        Ok(Version(v.to_string(), v))
    }

    /// The version as a `semver::Version`, for constraint checks.
    pub fn semver(&self) -> &semver::Version {
        &self.1
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Version {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.1.cmp(&other.1).then_with(|| self.0.cmp(&other.0))
    }
}

/// A target platform, `os_arch`, such as `linux_amd64`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Platform(String);
string_name!(Platform);

impl Platform {
    /// Parses `os_arch`; both parts are lowercase letters and digits.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let err = |reason| InvalidName::new("platform", given, reason);
        let (os, arch) = given
            .split_once('_')
            .ok_or_else(|| err("must be an operating system and an architecture joined by _"))?;
        Self::from_parts(os, arch).map_err(|_| err("must be two lowercase words joined by _"))
    }

    /// The platform tfmirror itself runs on, named as Terraform names it.
    pub fn current() -> Platform {
        let os = match std::env::consts::OS {
            "macos" => "darwin",
            other => other,
        };
        let arch = match std::env::consts::ARCH {
            "x86_64" => "amd64",
            "aarch64" => "arm64",
            "x86" => "386",
            other => other,
        };
        Platform(format!("{os}_{arch}"))
    }

    /// Builds a platform from its operating system and architecture.
    pub fn from_parts(os: &str, arch: &str) -> Result<Self, InvalidName> {
        let word = |w: &str| {
            !w.is_empty()
                && w.len() <= 32
                && w.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        };
        if word(os) && word(arch) {
            Ok(Platform(format!("{os}_{arch}")))
        } else {
            Err(InvalidName::new(
                "platform",
                &format!("{os}_{arch}"),
                "operating system and architecture must be lowercase letters and digits",
            ))
        }
    }

    /// The operating system part (`linux`).
    pub fn os(&self) -> &str {
        self.0.split_once('_').map_or("", |(os, _)| os)
    }

    /// The architecture part (`amd64`).
    pub fn arch(&self) -> &str {
        self.0.split_once('_').map_or("", |(_, a)| a)
    }
}

/// The full address of a provider: `hostname/namespace/type`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Provider {
    /// The origin registry's hostname.
    pub hostname: Hostname,
    /// The namespace on that registry.
    pub namespace: Namespace,
    /// The provider type.
    #[serde(rename = "type")]
    pub kind: ProviderType,
}

impl fmt::Display for Provider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}", self.hostname, self.namespace, self.kind)
    }
}

impl Provider {
    /// The registry hostname a source address without one refers to.
    pub const DEFAULT_HOSTNAME: &'static str = "registry.terraform.io";

    /// Parses a source address as written in `required_providers`:
    /// `namespace/type` (on `registry.terraform.io`, as in Terraform) or
    /// `hostname/namespace/type`.
    pub fn from_source(source: &str) -> Result<Provider, InvalidName> {
        Self::from_source_on(source, Self::DEFAULT_HOSTNAME)
    }

    /// Parses a source address, resolving `namespace/type` to
    /// `default_host` (the default registry of the client whose rules are
    /// read: `registry.opentofu.org` for OpenTofu).
    pub fn from_source_on(source: &str, default_host: &str) -> Result<Provider, InvalidName> {
        let parts: Vec<&str> = source.split('/').collect();
        let (host, namespace, kind) = match parts.as_slice() {
            [namespace, kind] => (default_host, *namespace, *kind),
            [host, namespace, kind] => (*host, *namespace, *kind),
            _ => {
                return Err(InvalidName::new(
                    "provider source address",
                    source,
                    "expected namespace/type or hostname/namespace/type",
                ))
            }
        };
        Ok(Provider {
            hostname: Hostname::parse(host)?,
            namespace: Namespace::parse(namespace)?,
            kind: ProviderType::parse(kind)?,
        })
    }

    /// The file name Terraform gives this provider's archive for `version` and
    /// `platform`, which is also the name the mirror serves it under.
    pub fn archive_name(&self, version: &Version, platform: &Platform) -> String {
        format!(
            "terraform-provider-{}_{}_{}.zip",
            self.kind, version, platform
        )
    }

    /// Parses an archive file name of this provider back into its version and
    /// platform; `None` when the name is not one this provider would use.
    pub fn parse_archive_name(&self, name: &str) -> Option<(Version, Platform)> {
        let rest = name
            .strip_prefix("terraform-provider-")?
            .strip_prefix(self.kind.as_str())?
            .strip_prefix('_')?
            .strip_suffix(".zip")?;
        let (rest, arch) = rest.rsplit_once('_')?;
        let (version, os) = rest.rsplit_once('_')?;
        Some((
            Version::parse(version).ok()?,
            Platform::from_parts(os, arch).ok()?,
        ))
    }
}

/// One archive of the cache: a provider's package for one version and
/// platform.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ArchiveKey {
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// The platform.
    pub platform: Platform,
}

impl ArchiveKey {
    /// The key of `provider`'s package for `version` and `platform`.
    pub fn new(provider: &Provider, version: &Version, platform: &Platform) -> ArchiveKey {
        ArchiveKey {
            provider: provider.clone(),
            version: version.clone(),
            platform: platform.clone(),
        }
    }

    /// The archive's file name, as Terraform names it.
    pub fn file_name(&self) -> String {
        self.provider.archive_name(&self.version, &self.platform)
    }
}

impl fmt::Display for ArchiveKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.provider, self.version, self.platform)
    }
}

#[cfg(test)]
mod tests;
