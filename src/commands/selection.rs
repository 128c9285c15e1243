//! What to mirror: providers with version constraints and platforms, and
//! registry modules with version constraints, read from a sync manifest
//! (TOML), from a Terraform configuration directory (the
//! `required_providers` and `module` blocks of its `.tf` files and the
//! versions pinned in its `.terraform.lock.hcl` files), or from the command
//! line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use serde::Deserialize;

use crate::address::{Module, Platform, Provider, Version};
use crate::constraints::Constraints;

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
    /// The platforms wanted.
    pub platforms: Vec<Platform>,
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
}

/// Everything a manifest or a configuration asks for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Selection {
    /// The providers.
    pub providers: Vec<Requirement>,
    /// The registry modules.
    pub modules: Vec<ModuleRequirement>,
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
    provider: Vec<ManifestEntry>,
    /// The registry modules.
    #[serde(default)]
    module: Vec<ManifestModule>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestModule {
    source: String,
    #[serde(default)]
    versions: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ManifestEntry {
    source: String,
    #[serde(default)]
    versions: String,
    platforms: Option<Vec<String>>,
}

/// Reads a sync manifest (see the README, "Air-gapped sites").
pub fn from_manifest(path: &Path) -> anyhow::Result<Selection> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading the manifest {}", path.display()))?;
    let manifest: Manifest = toml::from_str(&text)
        .with_context(|| format!("the manifest {} is not valid", path.display()))?;
    let defaults = parse_platforms(&manifest.platforms, "platforms")?;
    let mut out = Vec::new();
    for (n, entry) in manifest.provider.iter().enumerate() {
        let what = format!("provider {} ({})", n + 1, entry.source);
        let provider = Provider::from_source(&entry.source).with_context(|| what.clone())?;
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        let platforms = match &entry.platforms {
            Some(p) => parse_platforms(p, &format!("{what}: platforms"))?,
            None => defaults.clone(),
        };
        if platforms.is_empty() {
            bail!("{what}: no platforms; give `platforms` at the top or in the entry");
        }
        out.push(Requirement {
            provider,
            constraints,
            newest_only: false,
            pinned: Vec::new(),
            platforms,
        });
    }
    let mut modules = Vec::new();
    for (n, entry) in manifest.module.iter().enumerate() {
        let what = format!("module {} ({})", n + 1, entry.source);
        let (module, subdir) = Module::from_source(&entry.source).with_context(|| what.clone())?;
        if subdir.is_some() {
            bail!("{what}: give the module's registry address without a //subdirectory");
        }
        let constraints = Constraints::parse(&entry.versions).with_context(|| what.clone())?;
        modules.push(ModuleRequirement {
            module,
            constraints,
            newest_only: false,
        });
    }
    if out.is_empty() && modules.is_empty() {
        bail!(
            "the manifest {} lists no [[provider]] and no [[module]]",
            path.display()
        );
    }
    Ok(Selection {
        providers: out,
        modules,
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
        platforms: platforms.to_vec(),
    })
}

/// Parses platform names such as `linux_amd64`.
pub fn parse_platforms(names: &[String], what: &str) -> anyhow::Result<Vec<Platform>> {
    names
        .iter()
        .map(|p| Platform::parse(p).with_context(|| format!("{what}: {p:?}")))
        .collect()
}

/// What a Terraform configuration directory requires: for each provider,
/// the versions its lock files pin, or else the newest version that meets
/// the constraints of all its `required_providers` entries, as
/// `terraform init` would choose; and for each registry module its
/// `module` blocks call, the newest version that meets their constraints.
pub fn from_directory(dir: &Path, platforms: &[Platform]) -> anyhow::Result<Selection> {
    if platforms.is_empty() {
        bail!("give at least one --platform");
    }
    let mut files = Vec::new();
    collect_files(dir, &mut files)
        .with_context(|| format!("reading the directory {}", dir.display()))?;
    let mut constraints: BTreeMap<Provider, Vec<String>> = BTreeMap::new();
    let mut pinned: BTreeMap<Provider, Vec<Version>> = BTreeMap::new();
    let mut called: BTreeMap<Module, Vec<String>> = BTreeMap::new();
    for file in &files {
        let text =
            std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
        let body = hcl::parse(&text)
            .map_err(|e| anyhow::anyhow!("{} is not valid HCL: {e}", file.display()))?;
        let name = file.file_name().and_then(|n| n.to_str()).unwrap_or("");
        if name == ".terraform.lock.hcl" {
            for (provider, version, _) in
                locked(&body).with_context(|| format!("reading {}", file.display()))?
            {
                constraints.entry(provider.clone()).or_default();
                pinned.entry(provider).or_default().push(version);
            }
        } else {
            for (module, version) in crate::module_source::calls::module_calls(&body) {
                let list = called.entry(module).or_default();
                list.extend(version);
            }
            for (provider, version) in
                required(&body).with_context(|| format!("reading {}", file.display()))?
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
            dir.display()
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
        out.push(Requirement {
            provider,
            constraints: parsed,
            newest_only: true,
            pinned: pins,
            platforms: platforms.to_vec(),
        });
    }
    let modules = module_requirements(called)?;
    Ok(Selection {
        providers: out,
        modules,
    })
}

/// One requirement per called module, with the constraints of all its
/// calls.
pub fn module_requirements(
    called: BTreeMap<Module, Vec<String>>,
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

/// The providers of the `required_providers` blocks of one file, with their
/// version constraints when given.
fn required(body: &hcl::Body) -> anyhow::Result<Vec<(Provider, Option<String>)>> {
    let mut out = Vec::new();
    for terraform in body.blocks().filter(|b| b.identifier() == "terraform") {
        for block in terraform
            .body()
            .blocks()
            .filter(|b| b.identifier() == "required_providers")
        {
            for attr in block.body().attributes() {
                let local = attr.key();
                let (source, version) = match attr.expr() {
                    // The old form: `aws = "~> 5.0"`.
                    hcl::Expression::String(v) => (None, Some(v.clone())),
                    hcl::Expression::Object(fields) => {
                        let field = |name: &str| {
                            fields.iter().find_map(|(k, v)| {
                                let key = match k {
                                    hcl::ObjectKey::Identifier(i) => i.as_str().to_string(),
                                    hcl::ObjectKey::Expression(hcl::Expression::String(s)) => {
                                        s.clone()
                                    }
                                    _ => return None,
                                };
                                match v {
                                    hcl::Expression::String(s) if key == name => Some(s.clone()),
                                    _ => None,
                                }
                            })
                        };
                        (field("source"), field("version"))
                    }
                    _ => bail!(
                        "required_providers entry {local:?} is neither a string nor an object"
                    ),
                };
                // Without a source, Terraform assumes hashicorp/<local name>.
                let source = source.unwrap_or_else(|| format!("hashicorp/{local}"));
                let provider = Provider::from_source(&source)
                    .with_context(|| format!("required_providers entry {local:?}"))?;
                out.push((provider, version));
            }
        }
    }
    Ok(out)
}

/// The `provider` blocks of a lock file: address, pinned version and the
/// constraints recorded with it.
pub fn locked(body: &hcl::Body) -> anyhow::Result<Vec<(Provider, Version, Option<String>)>> {
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
        out.push((provider, version, string("constraints")));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_required_providers_and_lock_files() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("main.tf"),
            r#"
terraform {
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
    widget = {
      source = "registry.example/acme/widget"
    }
    null = ">= 3.0"
  }
}
resource "null_resource" "x" {}
"#,
        )
        .unwrap();
        std::fs::create_dir_all(dir.path().join("modules/net/.terraform")).unwrap();
        std::fs::write(
            dir.path().join("modules/net/versions.tf"),
            "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \">= 5.1\" }\n  }\n}\n",
        )
        .unwrap();
        // Working data is skipped.
        std::fs::write(
            dir.path().join("modules/net/.terraform/ignored.tf"),
            "this is { not hcl",
        )
        .unwrap();
        std::fs::write(
            dir.path().join(".terraform.lock.hcl"),
            r#"
provider "registry.example/acme/widget" {
  version     = "1.2.0"
  constraints = "~> 1.0"
  hashes = [
    "h1:abc=",
  ]
}
"#,
        )
        .unwrap();
        std::fs::write(
            dir.path().join("modules.tf"),
            r#"
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "vpc_again" {
  source  = "registry.terraform.io/terraform-aws-modules/vpc/aws//modules/x"
  version = "< 5.2"
}
module "local" {
  source = "./modules/net"
}
module "git" {
  source = "git::https://example.com/net.git?ref=v1"
}
module "github" {
  source = "github.com/org/repo"
}
"#,
        )
        .unwrap();
        let platforms = vec![Platform::parse("linux_amd64").unwrap()];
        let selection = from_directory(dir.path(), &platforms).unwrap();
        assert_eq!(selection.modules.len(), 1);
        assert_eq!(
            selection.modules[0].module.to_string(),
            "registry.terraform.io/terraform-aws-modules/vpc/aws"
        );
        assert_eq!(selection.modules[0].constraints.as_str(), "~> 5.0, < 5.2");
        let found = selection.providers;
        let by_name: BTreeMap<String, &Requirement> =
            found.iter().map(|r| (r.provider.to_string(), r)).collect();
        assert_eq!(
            by_name.keys().collect::<Vec<_>>(),
            [
                "registry.example/acme/widget",
                "registry.terraform.io/hashicorp/aws",
                "registry.terraform.io/hashicorp/null",
            ]
        );
        let aws = by_name["registry.terraform.io/hashicorp/aws"];
        assert_eq!(aws.constraints.as_str(), "~> 5.0, >= 5.1");
        let widget = by_name["registry.example/acme/widget"];
        assert_eq!(widget.pinned, [Version::parse("1.2.0").unwrap()]);
        assert_eq!(
            by_name["registry.terraform.io/hashicorp/null"]
                .constraints
                .as_str(),
            ">= 3.0"
        );
    }

    #[test]
    fn manifests_name_their_mistakes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m.toml");
        for (text, says) in [
            ("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"a/b/c/d\"\n", "provider 1"),
            ("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"a/b\"\nversions = \"=> 1\"\n", "did you mean"),
            ("[[provider]]\nsource = \"a/b\"\n", "no platforms"),
            ("platforms = [\"Linux\"]\n[[provider]]\nsource = \"a/b\"\n", "platforms"),
            ("platforms = []\n[[provider]]\nsource = \"a/b\"\nversion = \"1\"\n", "unknown field"),
            ("[[module]]\nsource = \"a/b\"\n", "module 1"),
            ("[[module]]\nsource = \"a/b/c//sub\"\n", "subdirectory"),
            ("platforms = []\n", "no [[provider]] and no [[module]]"),
        ] {
            std::fs::write(&path, text).unwrap();
            let err = format!("{:#}", from_manifest(&path).unwrap_err());
            assert!(err.contains(says), "{text}: {err}");
        }
        std::fs::write(
            &path,
            "platforms = [\"linux_amd64\", \"darwin_arm64\"]\n[[provider]]\nsource = \"hashicorp/aws\"\nversions = \"~> 5.0\"\n[[provider]]\nsource = \"registry.opentofu.org/opentofu/random\"\nversions = \">= 3.5, < 4.0\"\nplatforms = [\"linux_amd64\"]\n",
        )
        .unwrap();
        let found = from_manifest(&path).unwrap().providers;
        assert_eq!(
            found[0].provider.to_string(),
            "registry.terraform.io/hashicorp/aws"
        );
        assert_eq!(found[0].platforms.len(), 2);
        assert_eq!(found[1].platforms.len(), 1);
    }
}
