//! What a packaged module asks of the registries: the registry modules it
//! calls and the providers it requires, read as its client reads it
//! ([`super::configuration`]).

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use super::configuration::{self, fs::Package, Called, Unserved};
use crate::address::{Module, Product, Provider};

/// What a packaged module asks of the registries, read as its client
/// reads it: from the directories its callers use and the local modules
/// those call inside the package (never its `examples/`), each with its
/// version constraints when given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Needs {
    /// The registry modules it calls.
    pub modules: BTreeMap<Module, Called>,
    /// The providers it requires, with their joined constraints.
    pub providers: Vec<(Provider, Option<String>)>,
    /// The module sources it calls that its client fetches itself.
    pub unserved: Vec<Unserved>,
    /// Its `required_version` constraints (and those of the local modules
    /// it calls), which `init` checks as it checks the root module's.
    pub core: Vec<String>,
    /// What its client refuses in it (`init` fails on it).
    pub refused: Vec<configuration::Refusal>,
}

/// The value of a body's attribute `name` when it is a literal string.
pub fn string_attribute(body: &hcl::Body, name: &str) -> Option<String> {
    body.attributes()
        .find(|a| a.key() == name)
        .and_then(|a| match a.expr() {
            hcl::Expression::String(s) => Some(s.clone()),
            _ => None,
        })
}

/// What a packaged module (`tar.gz`) asks for, read by `client`'s rules
/// from `subdirs` (`""`: the package's root).
pub fn needs_in_package(
    package: impl Read,
    subdirs: &BTreeSet<String>,
    client: Product,
) -> Result<Needs, CallsError> {
    let files = Package::read(package).map_err(CallsError::Unpack)?;
    let read = configuration::read_package(&files, subdirs, client)
        .map_err(|e| CallsError::Invalid(format!("{e:#}")))?;
    Ok(Needs {
        modules: read.modules,
        providers: read
            .providers
            .into_iter()
            .map(|(p, terms)| (p, Some(terms.join(", ")).filter(|t| !t.is_empty())))
            .collect(),
        unserved: read.unserved,
        core: read.core.into_iter().map(|c| c.constraint).collect(),
        refused: read.refused,
    })
}

/// Why what a stored package asks for could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CallsError {
    /// Reading the package from the store failed.
    #[error("reading the package: {0}")]
    Read(std::io::Error),
    /// The package is not a readable `tar.gz`.
    #[error("the package cannot be read: {0}")]
    Unpack(std::io::Error),
    /// Its configuration cannot be read as its client reads it.
    #[error("the module's configuration cannot be read: {0}")]
    Invalid(String),
}

/// What a package opened from the store asks for (see
/// [`needs_in_package`]); the unpacking runs off the async threads.
pub async fn needs_in_stored(
    package: crate::store::ArchiveReader,
    subdirs: BTreeSet<String>,
    client: Product,
) -> Result<Needs, CallsError> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::with_capacity(usize::try_from(package.size).unwrap_or(0));
    package
        .into_reader()
        .read_to_end(&mut bytes)
        .await
        .map_err(CallsError::Read)?;
    tokio::task::spawn_blocking(move || needs_in_package(&bytes[..], &subdirs, client))
        .await
        .map_err(|e| CallsError::Unpack(std::io::Error::other(e)))?
}
