//! What a configuration requires, as its client's `init` would install
//! it: the configuration read by the client's rules
//! ([`crate::module_source::configuration`]); for each provider the version the
//! root directory's lock file pins (with the hashes it records), or else
//! the newest version meeting every constraint written for it; for each
//! registry module called, the newest version meeting its calls'
//! constraints; and the newest CLI release meeting `required_version`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Context};

use super::{module_requirements, ReleaseRequirement, Requirement, Selection};
use crate::address::{Platform, Provider, Version};
use crate::constraints::Constraints;
use crate::module_source::configuration;

/// What the configuration at `path` (its root module's directory) needs,
/// read by `client`'s rules (by default OpenTofu's when it holds `.tofu`
/// files, else Terraform's), for `platforms`. A `.terraform.lock.hcl`
/// given alone asks for exactly the versions it pins.
pub fn from_directory(
    path: &Path,
    platforms: &[Platform],
    options: &configuration::ReadOptions,
) -> anyhow::Result<Selection> {
    if platforms.is_empty() {
        bail!("give at least one --platform");
    }
    if path.is_file() && path.file_name().is_some_and(|n| n == ".terraform.lock.hcl") {
        return Ok(from_locks(read_lock_file(path)?, platforms));
    }
    let read = configuration::read(path, options)?;
    let locks = match &read.lock_file {
        Some(file) => read_lock_file(file)?,
        None => Vec::new(),
    };
    from_read(read, locks, platforms)
}

/// What a lock file alone asks for: exactly the versions it pins.
pub fn from_locks(locks: Vec<Locked>, platforms: &[Platform]) -> Selection {
    Selection {
        providers: each_pinned(locks, platforms),
        one_configuration: true,
        ..Selection::default()
    }
}

/// What a configuration `read` (its lock file's entries `locks`) needs
/// for `platforms`.
pub fn from_read(
    read: configuration::Configuration,
    mut locks: Vec<Locked>,
    platforms: &[Platform],
) -> anyhow::Result<Selection> {
    let mut providers = Vec::new();
    for (provider, terms) in &read.providers {
        let constraints = Constraints::parse(&terms.join(", "))
            .with_context(|| format!("the version constraints of {provider}"))?;
        let (mine, rest): (Vec<Locked>, Vec<Locked>) =
            locks.into_iter().partition(|l| &l.provider == provider);
        locks = rest;
        providers.push(pinned(provider.clone(), constraints, &mine, platforms));
    }
    // Lock entries for providers only the registry modules require decide
    // for those; entries for providers nothing requires are dropped, as
    // `init` drops them.
    let lock_only = each_pinned(locks, platforms);
    let modules = module_requirements(read.modules.clone(), platforms)?;
    let cli = if read.core.is_empty() {
        None
    } else {
        let terms: Vec<&str> = read.core.iter().map(|c| c.constraint.as_str()).collect();
        let constraints = Constraints::parse(&terms.join(", "))
            .context("the configuration's required_version constraints")?;
        Some(ReleaseRequirement {
            product: read.rules.client,
            constraints,
            platforms: platforms.to_vec(),
            newest_only: true,
        })
    };
    Ok(Selection {
        providers,
        modules,
        releases: Vec::new(),
        one_configuration: true,
        rules: Some(read.rules),
        unserved: read.unserved,
        cli,
        lock_only,
        tests: read.tests,
        refused: read.refused,
    })
}

/// One requirement for each lock entry: exactly the version it pins.
fn each_pinned(locks: Vec<Locked>, platforms: &[Platform]) -> Vec<Requirement> {
    locks
        .into_iter()
        .map(|lock| {
            let provider = lock.provider.clone();
            pinned(provider, Constraints::default(), &[lock], platforms)
        })
        .collect()
}

/// A provider's requirement: the versions `locks` pin (with their
/// hashes), else the newest meeting `constraints`.
fn pinned(
    provider: Provider,
    constraints: Constraints,
    locks: &[Locked],
    platforms: &[Platform],
) -> Requirement {
    let mut pins: Vec<Version> = locks.iter().map(|l| l.version.clone()).collect();
    pins.sort();
    pins.dedup();
    let mut locked_hashes: BTreeMap<Version, BTreeSet<String>> = BTreeMap::new();
    for lock in locks {
        locked_hashes
            .entry(lock.version.clone())
            .or_default()
            .extend(lock.hashes.iter().cloned());
    }
    Requirement {
        provider,
        constraints,
        newest_only: true,
        pinned: pins,
        locked_hashes,
        platforms: platforms.to_vec(),
        required_by: Vec::new(),
    }
}

fn read_lock_file(path: &Path) -> anyhow::Result<Vec<Locked>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    lock_text(&text, &path.display().to_string())
}

/// The entries of a lock file's text; `named` names it in messages.
pub fn lock_text(text: &str, named: &str) -> anyhow::Result<Vec<Locked>> {
    let body = hcl::parse(text).map_err(|e| anyhow::anyhow!("{named} is not valid HCL: {e}"))?;
    locked(&body).with_context(|| format!("reading {named}"))
}

/// One `provider` block of a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Locked {
    /// The provider.
    pub provider: Provider,
    /// The version it pins.
    pub version: Version,
    /// The constraints recorded with it.
    pub constraints: Option<String>,
    /// The hashes it records (`h1:…`, `zh:…`).
    pub hashes: Vec<String>,
}

/// The `provider` blocks of a lock file.
pub fn locked(body: &hcl::Body) -> anyhow::Result<Vec<Locked>> {
    let mut out = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "provider") {
        let Some(label) = block.labels().first() else {
            bail!("a provider block without its address");
        };
        let address = label.as_str();
        let provider = Provider::from_source(address)
            .with_context(|| format!("lock file provider {address:?}"))?;
        let string = |name: &str| crate::module_source::calls::string_attribute(block.body(), name);
        let version = string("version")
            .ok_or_else(|| anyhow::anyhow!("lock file provider {address:?} has no version"))?;
        let version =
            Version::parse(&version).with_context(|| format!("lock file provider {address:?}"))?;
        let hashes = block
            .body()
            .attributes()
            .find(|a| a.key() == "hashes")
            .map(|a| match a.expr() {
                hcl::Expression::Array(items) => items
                    .iter()
                    .filter_map(|item| match item {
                        hcl::Expression::String(h) => Some(h.clone()),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            })
            .unwrap_or_default();
        out.push(Locked {
            provider,
            version,
            constraints: string("constraints"),
            hashes,
        });
    }
    Ok(out)
}
