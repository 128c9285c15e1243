//! What a site needs: providers with version constraints and platforms,
//! registry modules with version constraints, and (in a sync manifest)
//! Terraform's and OpenTofu's own releases, read from a sync
//! manifest (TOML), the `[watch]` section of the configuration (the same
//! entries), a Terraform configuration (the `required_providers` and
//! `module` blocks of its `.tf` files, and the versions and hashes pinned
//! in its `.terraform.lock.hcl` files), or the command line.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::address::{Module, Platform, Product, Provider, Version};
use crate::constraints::Constraints;

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
        });
    }
    Ok(out)
}

/// Reads manifest entries: `providers` (each with its own platforms, or
/// `platforms`) and `modules`. Mistakes are named after the entry, with
/// `prefix` before the entry's kind (`watch.` for the configuration's).
pub fn from_entries(
    platforms: &[String],
    providers: &[ProviderEntry],
    modules: &[ModuleEntry],
    prefix: &str,
) -> anyhow::Result<Selection> {
    let defaults = parse_platforms(platforms, &format!("{prefix}platforms"))?;
    let mut out = Vec::new();
    for (n, entry) in providers.iter().enumerate() {
        let what = format!("{prefix}provider {} ({})", n + 1, entry.source);
        let provider = Provider::from_source(&entry.source).with_context(|| what.clone())?;
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
        let (module, subdir) = Module::from_source(&entry.source).with_context(|| what.clone())?;
        if subdir.is_some() {
            bail!("{what}: give the module's registry address without a //subdirectory");
        }
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        wanted.push(ModuleRequirement {
            module,
            constraints,
            newest_only: false,
            platforms: defaults.clone(),
        });
    }
    Ok(Selection {
        providers: out,
        modules: wanted,
        releases: Vec::new(),
        one_configuration: false,
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

/// What a Terraform configuration requires: for each provider, the
/// versions its lock files pin (with the hashes they record), or else the
/// newest version that meets the constraints of all its
/// `required_providers` entries, as `terraform init` would choose; and for
/// each registry module its `module` blocks call, the newest version that
/// meets their constraints. `path` is the configuration's directory (read
/// with the directories below it), or one `.tf` or `.terraform.lock.hcl`
/// file.
pub fn from_directory(path: &Path, platforms: &[Platform]) -> anyhow::Result<Selection> {
    if platforms.is_empty() {
        bail!("give at least one --platform");
    }
    let mut files = Vec::new();
    if path.is_file() {
        files.push(path.to_path_buf());
    } else {
        collect_files(path, &mut files)
            .with_context(|| format!("reading the directory {}", path.display()))?;
    }
    let mut constraints: BTreeMap<Provider, Vec<String>> = BTreeMap::new();
    let mut pinned: BTreeMap<Provider, Vec<Version>> = BTreeMap::new();
    let mut hashes: BTreeMap<(Provider, Version), BTreeSet<String>> = BTreeMap::new();
    let mut called: BTreeMap<Module, Vec<String>> = BTreeMap::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let body = hcl::parse(&text)
            .map_err(|e| anyhow::anyhow!("{} is not valid HCL: {e}", file.display()))?;
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == ".terraform.lock.hcl" {
            for lock in locked(&body).with_context(|| format!("reading {}", file.display()))? {
                constraints.entry(lock.provider.clone()).or_default();
                hashes
                    .entry((lock.provider.clone(), lock.version.clone()))
                    .or_default()
                    .extend(lock.hashes);
                pinned.entry(lock.provider).or_default().push(lock.version);
            }
        } else {
            for (module, version) in crate::module_source::calls::module_calls(&body) {
                let list = called.entry(module).or_default();
                list.extend(version);
            }
            for (provider, version) in crate::module_source::calls::required_providers(&body)
                .with_context(|| format!("reading {}", file.display()))?
            {
                let list = constraints.entry(provider).or_default();
                if let Some(v) = version {
                    list.push(v);
                }
            }
        }
    }
    if constraints.is_empty() && called.is_empty() {
        bail!(
            "{} holds no required_providers entry, no registry module call and no lock file",
            path.display()
        );
    }
    let mut out = Vec::new();
    for (provider, terms) in constraints {
        let joined = terms.join(", ");
        let parsed = Constraints::parse(&joined)
            .with_context(|| format!("the version constraints of {provider}"))?;
        let mut pins = pinned.remove(&provider).unwrap_or_default();
        pins.sort();
        pins.dedup();
        let locked_hashes = pins
            .iter()
            .filter_map(|v| Some((v.clone(), hashes.remove(&(provider.clone(), v.clone()))?)))
            .collect();
        out.push(Requirement {
            provider,
            constraints: parsed,
            newest_only: true,
            pinned: pins,
            locked_hashes,
            platforms: platforms.to_vec(),
            required_by: Vec::new(),
        });
    }
    let modules = module_requirements(called, platforms)?;
    Ok(Selection {
        providers: out,
        modules,
        releases: Vec::new(),
        one_configuration: true,
    })
}

/// One requirement per module that `calls` (module calls with their
/// version constraints, as a package holds them) call, with the
/// constraints of all its calls; the providers they require are followed
/// for `platforms`.
pub fn requirements_of_calls(
    calls: Vec<(Module, Option<String>)>,
    platforms: &[Platform],
) -> anyhow::Result<Vec<ModuleRequirement>> {
    let mut called: BTreeMap<Module, Vec<String>> = BTreeMap::new();
    for (callee, constraint) in calls {
        called.entry(callee).or_default().extend(constraint);
    }
    module_requirements(called, platforms)
}

/// One requirement per called module, with the constraints of all its
/// calls; the providers they require are followed for `platforms`.
pub fn module_requirements(
    called: BTreeMap<Module, Vec<String>>,
    platforms: &[Platform],
) -> anyhow::Result<Vec<ModuleRequirement>> {
    called
        .into_iter()
        .map(|(module, terms)| {
            let constraints = Constraints::parse(&terms.join(", "))
                .with_context(|| format!("the version constraints of module {module}"))?;
            Ok(ModuleRequirement {
                module,
                constraints,
                newest_only: true,
                platforms: platforms.to_vec(),
            })
        })
        .collect()
}

/// The `.tf` and `.terraform.lock.hcl` files under `dir`, skipping the
/// `.terraform` directories Terraform keeps its working data in.
fn collect_files(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.collect::<Result<_, _>>()?;
    entries.sort_by_key(std::fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type()?;
        if kind.is_dir() {
            if name != ".terraform" && name != ".git" {
                collect_files(&path, out)?;
            }
        } else if name.ends_with(".tf") || name == ".terraform.lock.hcl" {
            out.push(path);
        }
    }
    Ok(())
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

#[cfg(test)]
mod tests;
