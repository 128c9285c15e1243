//! One module as the clients assemble it from its files: the primary
//! files together, then each override file merged over them (a
//! `required_providers` entry, a module call's `source` and `version`, a
//! provider block's `version`, a resource's `provider` and the list of
//! `required_version` constraints replaced); then what it requires of
//! the registries: every `required_providers` entry, every provider a
//! resource or data source implies or names, every `provider` block.

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::{bail, Context};

use super::files::ModuleFiles;
use super::fs::ConfigFs;
use super::parts::{read_file, Call, Entry, FileParts};
use crate::address::{Product, Provider, ProviderType};

/// What one module requires.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleNeeds {
    /// Each provider with the version constraints written for it (none:
    /// any version).
    pub providers: BTreeMap<Provider, Vec<String>>,
    /// Its `module` calls, by name.
    pub calls: Vec<Call>,
    /// Its `required_version` constraints.
    pub core: Vec<String>,
    /// Its `required_providers` entries by local name.
    pub required: BTreeMap<String, Entry>,
    /// What the clients refuse in it (a declaration made twice).
    pub refused: Vec<Refusal>,
}

/// Something in a configuration that makes the clients refuse it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What is wrong.
    pub message: String,
    /// Where: `file:line` (`file` alone in JSON syntax).
    pub at: String,
}

/// Every variable of the primary files whose default does not conform to
/// its type, as the clients refuse them (a variable an override file
/// redefines is left to the merge, and not judged).
fn invalid_defaults(
    primary: &[(String, FileParts)],
    overrides: &[(String, FileParts)],
) -> Vec<Refusal> {
    let overridden =
        |name: &str| (overrides.iter()).any(|(_, f)| f.variables.iter().any(|v| v.name == name));
    (primary.iter())
        .flat_map(|(_, file)| &file.variables)
        .filter(|v| !overridden(&v.name))
        .filter_map(|v| {
            let why = super::defaults::mismatch(v.ty.as_ref()?, v.default.as_ref()?)?;
            Some(Refusal {
                message: format!("invalid default value for variable {}: {why}", v.name),
                at: v.at.clone(),
            })
        })
        .collect()
}

/// Every declaration made twice among a module's primary files, as the
/// clients refuse them when they assemble the module.
fn duplicates(primary: &[(String, FileParts)]) -> Vec<Refusal> {
    let mut first: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    let mut out = Vec::new();
    for d in primary.iter().flat_map(|(_, file)| &file.declared) {
        match first.get(&(d.what.as_str(), d.key.as_str())) {
            None => {
                first.insert((&d.what, &d.key), &d.at);
            }
            Some(earlier) => {
                let named = if d.key.is_empty() {
                    String::new()
                } else {
                    format!(" {}", d.key)
                };
                out.push(Refusal {
                    message: format!("duplicate {}{named}: already declared at {earlier}", d.what),
                    at: d.at.clone(),
                });
            }
        }
    }
    out
}

/// A provider's address for a local name (`aws`) in a module whose
/// `required_providers` are `required`: the entry's `source`, else
/// `hashicorp/<name>` on the client's default registry. `None` for the
/// built-in `terraform` provider, which is never installed.
pub(super) fn provider_for(
    local: &str,
    required: &BTreeMap<String, Entry>,
    client: Product,
) -> anyhow::Result<Option<Provider>> {
    let source = match required.get(local).and_then(|e| e.source.clone()) {
        Some(source) => source,
        None if local == "terraform" => return Ok(None),
        None => format!("hashicorp/{local}"),
    };
    let provider = Provider::from_source_on(&source, client.default_registry()).with_context(
        || match required.get(local) {
            Some(entry) => format!("required_providers entry {local:?} ({})", entry.at),
            None => format!("the provider {local:?}"),
        },
    )?;
    let builtin =
        provider.hostname.as_str() == "terraform.io" && provider.namespace.as_str() == "builtin";
    Ok((!builtin).then_some(provider))
}

/// Reads a module from its files in `fs` and says what it needs.
pub fn read_module(
    fs: &dyn ConfigFs,
    files: &ModuleFiles,
    client: Product,
) -> anyhow::Result<ModuleNeeds> {
    let read = |paths: &[PathBuf]| -> anyhow::Result<Vec<(String, FileParts)>> {
        paths
            .iter()
            .map(|p| {
                let shown = p.display().to_string();
                let parts = read_file(fs, p, &shown)?;
                Ok((shown, parts))
            })
            .collect()
    };
    let (primary, overrides) = (&files.primary[..], &files.overrides[..]);
    let (primary, overrides) = (read(primary)?, read(overrides)?);
    let mut required: BTreeMap<String, Entry> = BTreeMap::new();
    let mut core = Vec::new();
    let mut blocks: BTreeMap<(String, Option<String>), Option<String>> = BTreeMap::new();
    let mut resources: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
    let mut calls: BTreeMap<String, Call> = BTreeMap::new();
    for (_, file) in &primary {
        required.extend(file.required.iter().cloned());
        core.extend(file.core.iter().cloned());
        for b in &file.providers {
            blocks.insert((b.local.clone(), b.alias.clone()), b.version.clone());
        }
        for r in &file.resources {
            resources.insert(r.key.clone(), (r.kind.clone(), r.provider.clone()));
        }
        for c in &file.calls {
            calls.insert(c.name.clone(), c.clone());
        }
    }
    for (name, file) in &overrides {
        required.extend(file.required.iter().cloned());
        if !file.core.is_empty() {
            core.clone_from(&file.core);
        }
        for b in &file.providers {
            let key = (b.local.clone(), b.alias.clone());
            match blocks.get_mut(&key) {
                Some(version) => {
                    if b.version.is_some() {
                        version.clone_from(&b.version);
                    }
                }
                None if b.alias.is_none() => {
                    blocks.insert(key, b.version.clone());
                }
                None => bail!(
                    "{name} overrides the provider configuration {}.{}, which no primary file defines",
                    b.local,
                    b.alias.as_deref().unwrap_or_default()
                ),
            }
        }
        for r in &file.resources {
            let Some((_, provider)) = resources.get_mut(&r.key) else {
                bail!("{name} overrides {}, which no primary file defines", r.key);
            };
            if r.provider.is_some() {
                provider.clone_from(&r.provider);
            }
        }
        for c in &file.calls {
            let Some(call) = calls.get_mut(&c.name) else {
                bail!(
                    "{} overrides the module call {:?}, which no primary file defines",
                    c.at,
                    c.name
                );
            };
            if c.source.is_some() {
                call.source.clone_from(&c.source);
                call.at.clone_from(&c.at);
            }
            if c.version.is_some() {
                call.version.clone_from(&c.version);
            }
        }
    }
    let mut providers: BTreeMap<Provider, Vec<String>> = BTreeMap::new();
    let mut add = |local: &str, version: Option<&String>| -> anyhow::Result<()> {
        if let Some(provider) = provider_for(local, &required, client)? {
            providers
                .entry(provider)
                .or_default()
                .extend(version.cloned().filter(|v| !v.trim().is_empty()));
        }
        Ok(())
    };
    for (local, entry) in &required {
        add(local, entry.version.as_ref())?;
    }
    for (kind, named) in resources.values() {
        // The provider a resource type implies: its name up to the first
        // `_`, when that is a valid provider type (the clients pass over
        // one that is not).
        let implied = kind.split('_').next().unwrap_or(kind);
        match named {
            Some(local) => add(local, None)?,
            None if ProviderType::parse(implied).is_ok() => add(implied, None)?,
            None => {}
        }
    }
    for ((local, _), version) in &blocks {
        add(local, version.as_ref())?;
    }
    let mut refused = duplicates(&primary);
    refused.extend(invalid_defaults(&primary, &overrides));
    Ok(ModuleNeeds {
        providers,
        calls: calls.into_values().collect(),
        core,
        refused,
        required,
    })
}
