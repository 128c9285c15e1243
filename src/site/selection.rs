//! What a site needs: providers with version constraints and platforms,
//! registry modules with version constraints, and (in a sync manifest)
//! Terraform's and OpenTofu's own releases, read from a sync
//! manifest (TOML), the `[watch]` section of the configuration (the same
//! entries), a configuration read as its client reads it
//! ([`crate::module_source::configuration`], with the versions and hashes its lock
//! file pins; see [`from_directory`]), or the command line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::address::{Module, Platform, Product, Provider, Version};
use crate::constraints::Constraints;
use crate::module_source::configuration::{Called, ChosenBy, ClientRules, Unserved};

pub use crate::config::watch::{ModuleEntry, ProviderEntry, ReleaseEntry};

/// One provider to mirror.
#[derive(Debug, Clone, PartialEq)]
pub struct Requirement {
    /// The provider.
    pub provider: Provider,
    /// The versions wanted: those that meet these constraints...
    pub constraints: Constraints,
    /// ...only the newest of them when set (what `terraform init` would
    /// pick), else all of them.
    pub newest_only: bool,
    /// Exact versions wanted, pinned by lock files; when there are any,
    /// only these are wanted.
    pub pinned: Vec<Version>,
    /// The hashes the lock files record for each pinned version (`h1:`,
    /// `zh:`): an archive installs only when it matches one of them.
    pub locked_hashes: BTreeMap<Version, BTreeSet<String>>,
    /// The platforms wanted.
    pub platforms: Vec<Platform>,
    /// The module versions whose own `required_providers` ask for it
    /// (`module <address> <version>`); empty when only the configuration
    /// or the manifest itself does.
    pub required_by: Vec<String>,
}

/// One registry module to mirror.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleRequirement {
    /// The module.
    pub module: Module,
    /// The versions wanted: those that meet these constraints...
    pub constraints: Constraints,
    /// ...only the newest of them when set (what `terraform init` would
    /// pick), else all of them.
    pub newest_only: bool,
    /// The platforms of the providers its versions require in their own
    /// `required_providers`; none: those providers are not followed.
    pub platforms: Vec<Platform>,
    /// The directories of its package that are used as modules
    /// (`//subdir` of a call; `""`: the package's root).
    pub subdirs: BTreeSet<String>,
}

/// The module versions' package directories already read: the module,
/// the version, the directory (`""`: the package's root).
pub type ReadDirs = BTreeSet<(Module, Version, String)>;

impl ModuleRequirement {
    /// The directories of `version`'s package this requirement uses that
    /// `read` does not hold yet, added to it now: each directory of each
    /// version is read once, so cycles of calls end.
    pub fn unread(&self, version: &Version, read: &mut ReadDirs) -> BTreeSet<String> {
        self.subdirs
            .iter()
            .filter(|d| read.insert((self.module.clone(), version.clone(), (*d).clone())))
            .cloned()
            .collect()
    }
}

/// CLI releases wanted: a product's versions, for some platforms.
#[derive(Debug, Clone, PartialEq)]
pub struct ReleaseRequirement {
    /// The product.
    pub product: Product,
    /// The versions wanted.
    pub constraints: Constraints,
    /// The platforms whose archives are wanted.
    pub platforms: Vec<Platform>,
    /// Only the newest version that meets the constraints (what a
    /// configuration's `required_version` needs), else all of them.
    pub newest_only: bool,
}

/// Everything a manifest or a configuration asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// The providers.
    pub providers: Vec<Requirement>,
    /// The registry modules.
    pub modules: Vec<ModuleRequirement>,
    /// The CLI releases.
    pub releases: Vec<ReleaseRequirement>,
    /// Whether this is one configuration, whose modules' providers must
    /// meet all their constraints at once (as `terraform init` resolves
    /// them), rather than a list of entries whose module versions are
    /// alternatives.
    pub one_configuration: bool,
    /// For a configuration: whose rules read it.
    pub rules: Option<ClientRules>,
    /// For a configuration: the module sources its client fetches itself,
    /// which no mirror serves.
    pub unserved: Vec<Unserved>,
    /// For a configuration: the CLI versions its `required_version`
    /// constraints accept (the newest of them is wanted), when it has any.
    pub cli: Option<ReleaseRequirement>,
    /// For a configuration: the versions its lock file pins for providers
    /// the configuration does not require itself; they decide for the
    /// providers its registry modules require.
    pub lock_only: Vec<Requirement>,
    /// For a configuration: the test files read beside its root module,
    /// and the rule that decided it.
    pub tests: Option<crate::module_source::configuration::TestsRead>,
    /// For a configuration: what its client refuses in it.
    pub refused: Vec<crate::module_source::configuration::Refusal>,
}

impl Selection {
    /// Whether this configuration needs nothing installed: no provider,
    /// module or CLI release (`init` succeeds on it with nothing to reach).
    pub fn needs_nothing(&self) -> bool {
        self.providers.is_empty()
            && self.modules.is_empty()
            && self.releases.is_empty()
            && self.unserved.is_empty()
            && self.cli.is_none()
            && self.lock_only.is_empty()
    }

    /// Whose rules read what this selection's registry modules require:
    /// its configuration's client, Terraform's for manifests and entries.
    pub fn client(&self) -> Product {
        self.rules.map_or(Product::Terraform, |r| r.client)
    }
}

/// A sync manifest, as written by operators.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Manifest {
    /// Platforms for entries that name none.
    #[serde(default)]
    platforms: Vec<String>,
    /// The providers.
    #[serde(default)]
    provider: Vec<ProviderEntry>,
    /// The registry modules.
    #[serde(default)]
    module: Vec<ModuleEntry>,
    /// The CLI releases.
    #[serde(default)]
    release: Vec<ReleaseEntry>,
    /// Whose rules resolve unqualified sources (`terraform`, the default,
    /// or `opentofu`).
    #[serde(default)]
    client: Option<Product>,
}

/// Reads a sync manifest (see `docs/air-gap.md`).
pub fn from_manifest(path: &Path) -> anyhow::Result<Selection> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the manifest {}", path.display()))?;
    let manifest: Manifest = toml::from_str(&text)
        .with_context(|| format!("the manifest {} is not valid", path.display()))?;
    let mut selection = from_entries(
        &manifest.platforms,
        &manifest.provider,
        &manifest.module,
        manifest.client,
        "",
    )?;
    selection.releases = release_entries(&manifest.platforms, &manifest.release)?;
    if selection.providers.is_empty()
        && selection.modules.is_empty()
        && selection.releases.is_empty()
    {
        bail!(
            "the manifest {} lists no [[provider]], [[module]] or [[release]]",
            path.display()
        );
    }
    Ok(selection)
}

/// An entry's platforms: its own, or the `defaults` given beside the
/// entries; at least one.
fn entry_platforms(
    given: Option<&[String]>,
    defaults: &[Platform],
    what: &str,
) -> anyhow::Result<Vec<Platform>> {
    let platforms = match given {
        Some(p) => parse_platforms(p, &format!("{what}: platforms"))?,
        None => defaults.to_vec(),
    };
    if platforms.is_empty() {
        bail!("{what}: no platforms; give `platforms` beside the entries or in the entry");
    }
    Ok(platforms)
}

/// Reads a manifest's `[[release]]` entries, each with its own platforms
/// or `platforms`; mistakes are named after the entry.
pub fn release_entries(
    platforms: &[String],
    entries: &[ReleaseEntry],
) -> anyhow::Result<Vec<ReleaseRequirement>> {
    let defaults = parse_platforms(platforms, "platforms")?;
    let mut out = Vec::new();
    for (n, entry) in entries.iter().enumerate() {
        let what = format!("release {} ({})", n + 1, entry.product);
        let product: Product = entry.product.parse().with_context(|| what.clone())?;
        if entry.versions.trim().is_empty() {
            bail!("{what}: give `versions`, a constraint such as \"~> 1.9.0\"");
        }
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        let platforms = entry_platforms(entry.platforms.as_deref(), &defaults, &what)?;
        out.push(ReleaseRequirement {
            product,
            constraints,
            platforms,
            newest_only: false,
        });
    }
    Ok(out)
}

/// Reads manifest entries: `providers` (each with its own platforms, or
/// `platforms`) and `modules`, unqualified sources on the default registry
/// of `client` (Terraform's when `None`). Mistakes are named after the
/// entry, with `prefix` before the entry's kind (`watch.` for the
/// configuration's).
pub fn from_entries(
    platforms: &[String],
    providers: &[ProviderEntry],
    modules: &[ModuleEntry],
    client: Option<Product>,
    prefix: &str,
) -> anyhow::Result<Selection> {
    let rules = client.map(|client| ClientRules {
        client,
        chosen_by: ChosenBy::Given,
    });
    let host = client.unwrap_or(Product::Terraform).default_registry();
    let defaults = parse_platforms(platforms, &format!("{prefix}platforms"))?;
    let mut out = Vec::new();
    for (n, entry) in providers.iter().enumerate() {
        let what = format!("{prefix}provider {} ({})", n + 1, entry.source);
        let provider =
            Provider::from_source_on(&entry.source, host).with_context(|| what.clone())?;
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        let platforms = entry_platforms(entry.platforms.as_deref(), &defaults, &what)?;
        out.push(Requirement {
            provider,
            constraints,
            newest_only: false,
            pinned: Vec::new(),
            locked_hashes: BTreeMap::new(),
            platforms,
            required_by: Vec::new(),
        });
    }
    let mut wanted = Vec::new();
    for (n, entry) in modules.iter().enumerate() {
        let what = format!("{prefix}module {} ({})", n + 1, entry.source);
        let (module, subdir) =
            Module::from_source_on(&entry.source, host).with_context(|| what.clone())?;
        if subdir.is_some() {
            bail!("{what}: give the module's registry address without a //subdirectory");
        }
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        wanted.push(ModuleRequirement {
            module,
            constraints,
            newest_only: false,
            platforms: defaults.clone(),
            subdirs: BTreeSet::from([String::new()]),
        });
    }
    Ok(Selection {
        providers: out,
        modules: wanted,
        rules,
        ..Selection::default()
    })
}

/// A provider named on the command line: `[hostname/]namespace/type`,
/// optionally followed by `@` and version constraints. Its newest version
/// that meets them is wanted.
pub fn from_argument(given: &str, platforms: &[Platform]) -> anyhow::Result<Requirement> {
    let (source, constraints) = given.split_once('@').unwrap_or((given, ""));
    Ok(Requirement {
        provider: Provider::from_source(source.trim())?,
        constraints: Constraints::parse(constraints)?,
        newest_only: true,
        pinned: Vec::new(),
        locked_hashes: BTreeMap::new(),
        platforms: platforms.to_vec(),
        required_by: Vec::new(),
    })
}

/// Parses platform names such as `linux_amd64`.
pub fn parse_platforms(names: &[String], what: &str) -> anyhow::Result<Vec<Platform>> {
    names
        .iter()
        .map(|p| Platform::parse(p).with_context(|| format!("{what}: {p:?}")))
        .collect()
}

/// One requirement per called module (as a configuration or a package
/// calls them), with the constraints of all its calls and the
/// directories of its package they use; the providers they require are
/// followed for `platforms`.
pub fn module_requirements(
    called: BTreeMap<Module, Called>,
    platforms: &[Platform],
) -> anyhow::Result<Vec<ModuleRequirement>> {
    called
        .into_iter()
        .map(|(module, called)| {
            let constraints = Constraints::parse(&called.constraints.join(", "))
                .with_context(|| format!("the version constraints of module {module}"))?;
            Ok(ModuleRequirement {
                module,
                constraints,
                newest_only: true,
                platforms: platforms.to_vec(),
                subdirs: called.subdirs,
            })
        })
        .collect()
}

mod configured;
pub use configured::{from_directory, from_locks, from_read, lock_text, locked, Locked};

#[cfg(test)]
mod tests;
