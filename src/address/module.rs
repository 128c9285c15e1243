//! Module addresses: `[hostname/]namespace/name/system`, each part parsed
//! into its validated type, as Terraform reads a registry `module` block's
//! `source`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{string_name, Hostname, InvalidName, Provider, MAX_PART_LEN};

/// Checks a module namespace or name the way the module registry
/// protocol's clients do: ASCII letters and digits, with dashes and
/// underscores inside, at most 64 characters. Case is kept.
fn parse_module_part(what: &'static str, given: &str) -> Result<String, InvalidName> {
    let err = |reason| InvalidName::new(what, given, reason);
    let bytes = given.as_bytes();
    let (Some(first), Some(last)) = (bytes.first(), bytes.last()) else {
        return Err(err("must not be empty"));
    };
    if bytes.len() > MAX_PART_LEN {
        return Err(err("too long"));
    }
    if !first.is_ascii_alphanumeric() || !last.is_ascii_alphanumeric() {
        return Err(err("must start and end with a letter or digit"));
    }
    if !bytes
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')
    {
        return Err(err(
            "only ASCII letters, digits, dashes and underscores are allowed",
        ));
    }
    Ok(given.to_owned())
}

/// The namespace part of a module address (`terraform-aws-modules` in
/// `terraform-aws-modules/vpc/aws`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModuleNamespace(String);
string_name!(ModuleNamespace);

impl ModuleNamespace {
    /// Parses a module namespace.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        parse_module_part("module namespace", given).map(ModuleNamespace)
    }
}

/// The name part of a module address (`vpc` in
/// `terraform-aws-modules/vpc/aws`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModuleName(String);
string_name!(ModuleName);

impl ModuleName {
    /// Parses a module name.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        parse_module_part("module name", given).map(ModuleName)
    }
}

/// The target system of a module address (`aws` in
/// `terraform-aws-modules/vpc/aws`): lowercase ASCII letters and digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ModuleSystem(String);
string_name!(ModuleSystem);

impl ModuleSystem {
    /// Parses a module's target system.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let err = |reason| InvalidName::new("module target system", given, reason);
        if given.is_empty() {
            return Err(err("must not be empty"));
        }
        if given.len() > MAX_PART_LEN {
            return Err(err("too long"));
        }
        if !given
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        {
            return Err(err("only lowercase ASCII letters and digits are allowed"));
        }
        Ok(ModuleSystem(given.to_owned()))
    }
}

/// The full address of a registry module: `hostname/namespace/name/system`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Module {
    /// The origin registry's hostname.
    pub hostname: Hostname,
    /// The namespace on that registry.
    pub namespace: ModuleNamespace,
    /// The module's name.
    pub name: ModuleName,
    /// The system the module targets.
    pub system: ModuleSystem,
}

impl fmt::Display for Module {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}/{}/{}",
            self.hostname, self.namespace, self.name, self.system
        )
    }
}

impl Module {
    /// Parses a registry source address as written in a `module` block:
    /// `namespace/name/system` (on `registry.terraform.io`) or
    /// `hostname/namespace/name/system`, optionally followed by
    /// `//subdirectory`, which is returned beside it.
    pub fn from_source(source: &str) -> Result<(Module, Option<String>), InvalidName> {
        Self::from_source_on(source, Provider::DEFAULT_HOSTNAME)
    }

    /// Parses a registry source address, resolving `namespace/name/system`
    /// to `default_host` (the default registry of the client whose rules
    /// are read).
    pub fn from_source_on(
        source: &str,
        default_host: &str,
    ) -> Result<(Module, Option<String>), InvalidName> {
        let (address, subdir) = match source.split_once("//") {
            Some((a, s)) => (a, Some(s.to_owned()).filter(|s| !s.is_empty())),
            None => (source, None),
        };
        let parts: Vec<&str> = address.split('/').collect();
        let (host, namespace, name, system) = match parts.as_slice() {
            [namespace, name, system] => (default_host, *namespace, *name, *system),
            [host, namespace, name, system] => (*host, *namespace, *name, *system),
            _ => {
                return Err(InvalidName::new(
                    "module source address",
                    source,
                    "expected namespace/name/system or hostname/namespace/name/system",
                ))
            }
        };
        Ok((
            Module {
                hostname: Hostname::parse(host)?,
                namespace: ModuleNamespace::parse(namespace)?,
                name: ModuleName::parse(name)?,
                system: ModuleSystem::parse(system)?,
            },
            subdir,
        ))
    }
}
