//! Readiness of what only a configuration asks for: the module sources
//! its client fetches itself (never installable offline through a
//! mirror), and a CLI release meeting its `required_version` where
//! `[releases]` serves that CLI.

use super::{missing, Finding, Needed, Report, Why};
use crate::address::{ArtifactName, Platform, ReleaseFile, Version};
use crate::mirror::Mirror;
use crate::site::selection::{ReleaseRequirement, Selection};

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
