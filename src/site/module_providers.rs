//! The providers registry modules require in their own
//! `required_providers` blocks: gathered while a fill or a readiness check
//! walks the modules (at any depth), then merged into the selection's
//! providers.

use std::collections::BTreeMap;

use super::selection::{Requirement, Selection};
use crate::address::{Module, Platform, Provider, Version};
use crate::constraints::Constraints;

/// A provider one module version requires.
#[derive(Debug, Clone, PartialEq)]
pub struct ModuleProvider {
    /// The provider.
    pub provider: Provider,
    /// Its version constraint as the module writes it, if any.
    pub constraint: Option<String>,
    /// The module version that requires it: `module <address> <version>`.
    pub required_by: String,
    /// The platforms wanted for it.
    pub platforms: Vec<Platform>,
}

/// The providers a module version requires, wanted for `platforms`; none
/// when `platforms` is empty (the module's entry asked for no platforms).
pub fn of_module(
    module: &Module,
    version: &Version,
    providers: Vec<(Provider, Option<String>)>,
    platforms: &[Platform],
) -> Vec<ModuleProvider> {
    if platforms.is_empty() {
        return Vec::new();
    }
    let required_by = format!("module {module} {version}");
    providers
        .into_iter()
        .map(|(provider, constraint)| ModuleProvider {
            provider,
            constraint,
            required_by: required_by.clone(),
            platforms: platforms.to_vec(),
        })
        .collect()
}

/// A provider whose modules' constraints cannot be read together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unmergeable {
    /// The provider.
    pub provider: Provider,
    /// Why, naming the modules.
    pub error: String,
}

impl std::fmt::Display for Unmergeable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "provider {}: {}", self.provider, self.error)
    }
}

impl Selection {
    /// The providers this selection needs, with those `found` inside its
    /// registry modules merged in.
    ///
    /// In one configuration a provider must meet the constraints of the
    /// configuration and of every module requiring it at once, as
    /// `terraform init` resolves them, unless lock files pin it (then the
    /// lock decides). Among manifest or watch entries, whose module
    /// versions are alternatives, each module version's requirement
    /// stands alone: the newest version meeting it.
    pub fn providers_with(&self, found: &[ModuleProvider]) -> (Vec<Requirement>, Vec<Unmergeable>) {
        let mut out = self.providers.clone();
        let mut problems = Vec::new();
        if self.one_configuration {
            let mut groups: BTreeMap<&Provider, Vec<&ModuleProvider>> = BTreeMap::new();
            for item in found {
                groups.entry(&item.provider).or_default().push(item);
            }
            for (provider, items) in groups {
                let existing = out.iter().position(|r| &r.provider == provider);
                if existing.is_none() {
                    // The lock file decides for a provider only modules
                    // require, within the modules' constraints.
                    if let Some(lock) = self.lock_only.iter().find(|r| &r.provider == provider) {
                        match merged(provider, None, &items) {
                            Ok(req) => out.push(Requirement {
                                pinned: lock.pinned.clone(),
                                locked_hashes: lock.locked_hashes.clone(),
                                platforms: lock.platforms.clone(),
                                ..req
                            }),
                            Err(error) => problems.push(Unmergeable {
                                provider: provider.clone(),
                                error,
                            }),
                        }
                        continue;
                    }
                }
                let base = existing.map(|i| out[i].clone());
                if base.as_ref().is_some_and(|r| !r.pinned.is_empty()) {
                    continue;
                }
                let base_terms = base.as_ref().map(|r| r.constraints.as_str());
                match merged(provider, base_terms, &items) {
                    Ok(req) => match existing {
                        Some(i) => {
                            let r = &mut out[i];
                            r.constraints = req.constraints;
                            r.required_by.extend(req.required_by);
                            add_platforms(&mut r.platforms, &req.platforms);
                        }
                        None => out.push(req),
                    },
                    Err(error) => problems.push(Unmergeable {
                        provider: provider.clone(),
                        error,
                    }),
                }
            }
        } else {
            for item in found {
                match merged(&item.provider, None, &[item]) {
                    Ok(req) => match out.iter_mut().find(|r| {
                        r.newest_only
                            && !r.required_by.is_empty()
                            && r.provider == req.provider
                            && r.constraints == req.constraints
                            && r.platforms == req.platforms
                    }) {
                        Some(same) => same.required_by.extend(req.required_by),
                        None => out.push(req),
                    },
                    Err(error) => problems.push(Unmergeable {
                        provider: item.provider.clone(),
                        error,
                    }),
                }
            }
        }
        (out, problems)
    }
}

/// One requirement for `provider` meeting `base` (the configuration's own
/// constraints) and every item's; the error names the modules.
fn merged(
    provider: &Provider,
    base: Option<&str>,
    items: &[&ModuleProvider],
) -> Result<Requirement, String> {
    let terms: Vec<&str> = base
        .into_iter()
        .chain(items.iter().filter_map(|i| i.constraint.as_deref()))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .collect();
    let required_by: Vec<String> = items.iter().map(|i| i.required_by.clone()).collect();
    let constraints = Constraints::parse(&terms.join(", ")).map_err(|e| {
        format!(
            "the version constraints required by {} cannot be read: {e}",
            required_by.join(", ")
        )
    })?;
    let mut platforms = Vec::new();
    for item in items {
        add_platforms(&mut platforms, &item.platforms);
    }
    Ok(Requirement {
        provider: provider.clone(),
        constraints,
        newest_only: true,
        pinned: Vec::new(),
        locked_hashes: BTreeMap::new(),
        platforms,
        required_by,
    })
}

fn add_platforms(into: &mut Vec<Platform>, more: &[Platform]) {
    for p in more {
        if !into.contains(p) {
            into.push(p.clone());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Provider {
        Provider::from_source(s).unwrap()
    }

    fn found(provider: &str, constraint: Option<&str>, by: &str) -> ModuleProvider {
        ModuleProvider {
            provider: p(provider),
            constraint: constraint.map(str::to_owned),
            required_by: by.to_owned(),
            platforms: vec![Platform::parse("linux_amd64").unwrap()],
        }
    }

    fn root(provider: &str, constraint: &str, pinned: &[&str]) -> Requirement {
        Requirement {
            provider: p(provider),
            constraints: Constraints::parse(constraint).unwrap(),
            newest_only: true,
            pinned: pinned.iter().map(|v| Version::parse(v).unwrap()).collect(),
            locked_hashes: BTreeMap::new(),
            platforms: vec![Platform::parse("darwin_arm64").unwrap()],
            required_by: Vec::new(),
        }
    }

    #[test]
    fn one_configuration_meets_every_constraint_at_once_unless_locked() {
        let selection = Selection {
            providers: vec![
                root("hashicorp/aws", ">= 4.0", &[]),
                root("hashicorp/random", "", &["3.1.0"]),
            ],
            one_configuration: true,
            ..Selection::default()
        };
        let (out, problems) = selection.providers_with(&[
            found("hashicorp/aws", Some("< 5.0"), "module a 1.0.0"),
            found("hashicorp/aws", None, "module b 2.0.0"),
            found("hashicorp/random", Some("~> 2.0"), "module a 1.0.0"),
            found("acme/widget", Some("~> 1.0"), "module b 2.0.0"),
            found("acme/widget", Some(">= 1.2"), "module c 1.0.0"),
        ]);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(out.len(), 3);
        assert_eq!(out[0].constraints.as_str(), ">= 4.0, < 5.0");
        assert_eq!(out[0].required_by, ["module a 1.0.0", "module b 2.0.0"]);
        assert_eq!(out[0].platforms.len(), 2);
        // The lock file decides for random.
        assert_eq!(out[1], selection.providers[1]);
        assert_eq!(out[2].provider, p("acme/widget"));
        assert_eq!(out[2].constraints.as_str(), "~> 1.0, >= 1.2");
        assert!(out[2].newest_only);
    }

    #[test]
    fn entries_keep_each_module_versions_requirement_apart() {
        let selection = Selection {
            providers: vec![Requirement {
                newest_only: false,
                ..root("hashicorp/aws", "", &[])
            }],
            ..Selection::default()
        };
        let (out, problems) = selection.providers_with(&[
            found("hashicorp/aws", Some("~> 4.0"), "module a 1.0.0"),
            found("hashicorp/aws", Some("~> 5.0"), "module a 2.0.0"),
            found("hashicorp/aws", Some("~> 5.0"), "module b 1.0.0"),
            found("acme/widget", Some("nonsense"), "module b 1.0.0"),
        ]);
        assert_eq!(out.len(), 3);
        assert_eq!(out[0], selection.providers[0]);
        assert_eq!(out[1].constraints.as_str(), "~> 4.0");
        assert_eq!(out[2].constraints.as_str(), "~> 5.0");
        assert_eq!(out[2].required_by, ["module a 2.0.0", "module b 1.0.0"]);
        assert_eq!(problems.len(), 1);
        assert!(
            problems[0].to_string().contains("acme/widget")
                && problems[0].error.contains("module b 1.0.0"),
            "{problems:?}"
        );
    }

    #[test]
    fn a_lock_file_decides_for_providers_only_modules_require() {
        let selection = Selection {
            lock_only: vec![
                root("acme/widget", "", &["3.1.0"]),
                root("acme/unused", "", &["1.0.0"]),
            ],
            one_configuration: true,
            ..Selection::default()
        };
        let (out, problems) =
            selection.providers_with(&[found("acme/widget", Some("~> 2.0"), "module a 1.0.0")]);
        assert!(problems.is_empty(), "{problems:?}");
        // Only what a module requires, pinned by the lock file, with the
        // module's constraint kept so that a pin outside it is refused.
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].pinned, [Version::parse("3.1.0").unwrap()]);
        assert_eq!(out[0].constraints.as_str(), "~> 2.0");
        assert_eq!(out[0].required_by, ["module a 1.0.0"]);
    }

    #[test]
    fn modules_without_platforms_bring_no_providers() {
        let m = Module::from_source("acme/net/aws").unwrap().0;
        let v = Version::parse("1.0.0").unwrap();
        let needs = vec![(p("hashicorp/aws"), None)];
        assert!(of_module(&m, &v, needs.clone(), &[]).is_empty());
        let linux = [Platform::parse("linux_amd64").unwrap()];
        let got = of_module(&m, &v, needs, &linux);
        assert_eq!(
            got[0].required_by,
            "module registry.terraform.io/acme/net/aws 1.0.0"
        );
    }
}
