//! Readiness of what only a configuration asks for: what its client
//! refuses in it, the module sources
//! its client fetches itself (never installable offline through a
//! mirror), and a CLI release meeting its `required_version` where
//! `[releases]` serves that CLI.

use super::{missing, Finding, Needed, Report, Why};
use crate::address::{ArtifactName, Platform, ReleaseFile, Version};
use crate::mirror::Mirror;
use crate::site::selection::{ReleaseRequirement, Selection};

/// Everything in `selection`'s configuration that its client refuses.
pub(super) fn refused(selection: &Selection, report: &mut Report) {
    for r in &selection.refused {
        let needed = Needed {
            kind: "configuration",
            source: r.at.clone(),
            version: None,
            platform: None,
            required_by: Vec::new(),
        };
        let why = Why::Refused {
            message: r.message.clone(),
            at: r.at.clone(),
        };
        report.add(needed, missing(why));
    }
}

/// Every module source of `selection` that its client fetches itself.
pub(super) fn unserved(selection: &Selection, report: &mut Report) {
    for u in &selection.unserved {
        let needed = Needed {
            kind: "module",
            source: u.source.clone(),
            version: None,
            platform: None,
            required_by: Vec::new(),
        };
        report.add(
            needed,
            missing(Why::NotServed {
                kind: u.kind.to_owned(),
                at: u.at.clone(),
            }),
        );
    }
}

/// The CLI releases `init` accepts: the configuration's own
/// `required_version` joined with that of every registry module it
/// installs (`modules`), as `init` checks every module's; `None` when
/// nothing constrains the CLI.
pub(super) fn cli_with_modules(
    selection: &Selection,
    modules: &[String],
) -> Result<Option<ReleaseRequirement>, String> {
    let mut req = match (&selection.cli, selection.modules.first()) {
        (Some(cli), _) => cli.clone(),
        (None, _) if modules.is_empty() => return Ok(None),
        (None, Some(module)) => ReleaseRequirement {
            product: selection.client(),
            constraints: crate::constraints::Constraints::default(),
            platforms: module.platforms.clone(),
            newest_only: true,
        },
        (None, None) => return Ok(None),
    };
    if modules.is_empty() {
        return Ok(Some(req));
    }
    let mut terms: Vec<&str> = modules.iter().map(String::as_str).collect();
    if !req.constraints.as_str().is_empty() {
        terms.insert(0, req.constraints.as_str());
    }
    req.constraints = crate::constraints::Constraints::parse(&terms.join(", ")).map_err(|e| {
        format!(
            "the required_version constraints of the configuration and its registry modules ({}) cannot be read: {e}",
            terms.join(", ")
        )
    })?;
    Ok(Some(req))
}

fn needed_cli(
    req: &ReleaseRequirement,
    version: Option<&Version>,
    platform: Option<&Platform>,
) -> Needed {
    Needed {
        kind: "cli",
        source: req.product.as_str().to_owned(),
        version: version.cloned(),
        platform: platform.cloned(),
        required_by: vec![format!("required_version {}", req.constraints.as_str())],
    }
}

/// Whether a release of the CLI meeting `req` is held for every platform
/// asked for: the newest such version held whole is reported held; when
/// none is, the newest listed version meeting `req`, with what it lacks.
/// Nothing is reported where `[releases]` does not serve the CLI.
pub(super) async fn cli(mirror: &Mirror, req: &ReleaseRequirement, report: &mut Report) {
    if mirror.release_source(req.product).is_err() {
        return;
    }
    let list = match mirror.release_list(req.product).await {
        Ok(list) if !list.versions.is_empty() => list,
        _ => {
            report.add(needed_cli(req, None, None), missing(Why::NotListed));
            return;
        }
    };
    let mut meeting: Vec<&Version> = list
        .versions
        .keys()
        .filter(|v| req.constraints.allows(v.semver()))
        .collect();
    meeting.sort();
    let Some(newest) = meeting.last().copied() else {
        report.add(
            needed_cli(req, None, None),
            missing(Why::NoVersionMeets {
                constraints: req.constraints.as_str().to_owned(),
                listed: list.versions.len(),
            }),
        );
        return;
    };
    for version in meeting.iter().rev() {
        let findings = held_files(mirror, req, version).await;
        if findings.iter().all(|(_, f)| *f == Finding::Held) {
            for (platform, finding) in findings {
                report.add(needed_cli(req, Some(version), Some(&platform)), finding);
            }
            return;
        }
    }
    for (platform, finding) in held_files(mirror, req, newest).await {
        report.add(needed_cli(req, Some(newest), Some(&platform)), finding);
    }
}

/// What the store holds of one release's archive for each platform.
async fn held_files(
    mirror: &Mirror,
    req: &ReleaseRequirement,
    version: &Version,
) -> Vec<(Platform, Finding)> {
    let mut out = Vec::new();
    for platform in &req.platforms {
        let finding = match ArtifactName::parse(&req.product.zip_name(version, platform)) {
            Err(e) => missing(Why::Unreadable {
                error: e.to_string(),
            }),
            Ok(name) => {
                let file = ReleaseFile {
                    product: req.product,
                    version: version.clone(),
                    name,
                };
                match mirror.store().open_release_file(&file).await {
                    Ok(Some(_)) => Finding::Held,
                    Ok(None) => missing(Why::NeverFetched),
                    Err(e) => missing(Why::Unreadable {
                        error: e.to_string(),
                    }),
                }
            }
        };
        out.push((platform.clone(), finding));
    }
    out
}
