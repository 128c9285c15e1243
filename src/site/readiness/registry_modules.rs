//! Readiness of registry modules: each version a configuration needs, and
//! the versions the held packages call in turn, held or missing and why.

use std::collections::{BTreeSet, VecDeque};

use super::{chosen, held_back_or_none, missing, unlisted, Finding, Needed, Report, Why};
use crate::address::{Module, Product, Version};
use crate::mirror::Mirror;
use crate::module_source::calls::Needs;
use crate::policy::Subject;
use crate::site::module_providers::{self, ModuleProvider};
use crate::site::selection::ModuleRequirement;

/// What a configuration needs of a module version (any version when
/// `None`).
pub(super) fn needed_module(module: &Module, version: Option<&Version>) -> Needed {
    Needed {
        kind: "module",
        source: module.to_string(),
        version: version.cloned(),
        platform: None,
        required_by: Vec::new(),
    }
}

/// What the held packages of registry modules ask for beyond modules.
#[derive(Debug, Default)]
pub(super) struct Found {
    /// The providers they require.
    pub providers: Vec<ModuleProvider>,
    /// Their `required_version` constraints.
    pub core: Vec<String>,
}

/// The registry modules `requirements` need, and those their held
/// packages call, each version once; returns what the held packages
/// require of providers and of the CLI.
pub(super) async fn modules(
    mirror: &std::sync::Arc<Mirror>,
    requirements: &[ModuleRequirement],
    client: Product,
    report: &mut Report,
) -> Found {
    let mut found = Found::default();
    let mut queue: VecDeque<ModuleRequirement> = requirements.iter().cloned().collect();
    let mut read = crate::site::selection::ReadDirs::new();
    while let Some(req) = queue.pop_front() {
        let listed = match mirror.module_index(&req.module).await {
            Ok(listed) => listed,
            Err(e) => {
                report.add(needed_module(&req.module, None), missing(unlisted(&e)));
                continue;
            }
        };
        let visible = mirror
            .visible_module_index(&req.module, listed.clone())
            .await;
        let meets = |v: &Version| req.constraints.allows(v.semver());
        let versions = chosen(
            &listed.versions,
            &visible.versions,
            &[],
            meets,
            req.newest_only,
        );
        if versions.is_empty() {
            let why = held_back_or_none(
                mirror,
                Subject::Module(&req.module),
                &listed.versions,
                meets,
            )
            .await
            .unwrap_or(Why::NoVersionMeets {
                constraints: req.constraints.as_str().to_owned(),
                listed: visible.versions.len(),
            });
            report.add(needed_module(&req.module, None), missing(why));
            continue;
        }
        for version in versions {
            let fresh = req.unread(version, &mut read);
            if fresh.is_empty() {
                continue;
            }
            let needed = needed_module(&req.module, Some(version));
            let needs = match module_version(mirror, &req.module, version, fresh, client).await {
                Ok(needs) => needs,
                Err(why) => {
                    report.add(needed, missing(why));
                    continue;
                }
            };
            report.add(needed, Finding::Held);
            let by = format!("module {} {version}", req.module);
            for r in needs.refused {
                let why = Why::Refused {
                    message: r.message,
                    at: format!("{by}: {}", r.at),
                };
                report.add(needed_module(&req.module, Some(version)), missing(why));
            }
            for u in needs.unserved {
                let needed = Needed {
                    kind: "module",
                    source: u.source,
                    version: None,
                    platform: None,
                    required_by: vec![by.clone()],
                };
                let at = format!("{}: {}", by, u.at);
                let why = Why::NotServed {
                    kind: u.kind.to_owned(),
                    at,
                };
                report.add(needed, missing(why));
            }
            found.core.extend(needs.core);
            found.providers.extend(module_providers::of_module(
                &req.module,
                version,
                needs.providers,
                &req.platforms,
            ));
            match crate::site::selection::module_requirements(needs.modules, &req.platforms) {
                Ok(more) => queue.extend(more),
                Err(e) => report.add(
                    needed_module(&req.module, Some(version)),
                    missing(Why::Unreadable {
                        error: format!("{e:#}"),
                    }),
                ),
            }
        }
    }
    found
}

/// A module version the mirror holds, as what its package asks for; or
/// why it is not held.
pub(super) async fn module_version(
    mirror: &std::sync::Arc<Mirror>,
    module: &Module,
    version: &Version,
    subdirs: BTreeSet<String>,
    client: Product,
) -> Result<Needs, Why> {
    match mirror.verdict(Subject::Module(module), version).await {
        Ok(Ok(())) => {}
        Ok(Err(denied)) => return Err(denied.into()),
        Err(e) => {
            return Err(Why::Unreadable {
                error: e.to_string(),
            })
        }
    }
    let unreadable = |e: &dyn std::fmt::Display| Why::Unreadable {
        error: e.to_string(),
    };
    let store = mirror.store();
    if store
        .read_module(module, version)
        .await
        .map_err(|e| unreadable(&e))?
        .is_none()
    {
        return Err(Why::NeverFetched);
    }
    let Some(package) = store
        .open_module(module, version)
        .await
        .map_err(|e| unreadable(&e))?
    else {
        return Err(Why::Evicted { at_ms: None });
    };
    crate::module_source::calls::needs_in_stored(package, subdirs, client)
        .await
        .map_err(|e| unreadable(&e))
}
