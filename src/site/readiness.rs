//! Offline readiness (`tfmirror check`): whether configurations will
//! install from this mirror's cache alone, answered the way `terraform
//! init` would meet the mirror with no origin behind it. For every
//! provider version, platform and registry module version a configuration
//! needs, the answer is *held* or *missing*, and why (never listed, no
//! version meets the constraints, never fetched, evicted, denied by the
//! policy, held back by the cooldown, an unsigned import); a lock file
//! whose hashes match nothing the mirror holds for a platform is reported
//! too, since `terraform init` would refuse the archive.
//!
//! The versions are chosen as the clients choose them from this mirror:
//! those a lock file pins, else the newest version meeting the constraints
//! among those the mirror's stored list shows them (the policy applied).
//! Registry modules are followed into the modules they call, through the
//! packages the cache holds.

use serde::Serialize;

use super::selection::{Requirement, Selection};
use crate::address::{ArchiveKey, Platform, Version};
use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::policy::Subject;

pub use advisories::advisories;
pub use documentation::{documentation, Documentation};

/// One thing a configuration needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Needed {
    /// `provider` or `module`.
    pub kind: &'static str,
    /// The provider's or module's address.
    pub source: String,
    /// The version, once one is chosen.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// The platform, for a provider's archive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub platform: Option<Platform>,
    /// The module versions whose own `required_providers` ask for this
    /// provider (`module <address> <version>`).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub required_by: Vec<String>,
}

impl std::fmt::Display for Needed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.kind, self.source)?;
        if let Some(v) = &self.version {
            write!(f, " {v}")?;
        }
        if let Some(p) = &self.platform {
            write!(f, " {p}")?;
        }
        if !self.required_by.is_empty() {
            write!(f, " (required by {})", self.required_by.join(", "))?;
        }
        Ok(())
    }
}

/// What the mirror holds of one needed thing.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum Finding {
    /// Held, verified when it was stored.
    Held,
    /// Not held.
    Missing {
        /// Why.
        #[serde(flatten)]
        why: Why,
    },
    /// Held, but a lock file records hashes none of which it matches:
    /// `terraform init` would refuse it.
    LockMismatch {
        /// The hashes the lock file records.
        locked: Vec<String>,
        /// The hashes of what the mirror holds.
        held: Vec<String>,
    },
}

/// One line of a report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Item {
    /// What is needed.
    #[serde(flatten)]
    pub needed: Needed,
    /// What the mirror holds of it.
    #[serde(flatten)]
    pub finding: Finding,
}

impl std::fmt::Display for Item {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.finding {
            Finding::Held => write!(f, "HELD     {}", self.needed),
            Finding::Missing {
                why: why @ Why::Refused { .. },
            } => write!(f, "REFUSED  {why}"),
            Finding::Missing { why } => write!(f, "MISSING  {}: {why}", self.needed),
            Finding::LockMismatch { locked, held } => write!(
                f,
                "MISMATCH {}: the lock file's hashes ({}) match nothing this mirror holds for it ({})",
                self.needed,
                locked.join(", "),
                held.join(", ")
            ),
        }
    }
}

/// The answer for a set of configurations.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Report {
    /// Every needed thing, with what the mirror holds of it.
    pub items: Vec<Item>,
    /// Versions a rule by advisory hides from the constraints, newer than
    /// the version chosen (or any, where none could be): the configuration
    /// installs without them, and whoever reads the report should know
    /// why it gets an older version. They do not make it not ready.
    pub hidden: Vec<Hidden>,
}

/// A provider version the constraints admit that a rule by advisory
/// leaves out of the lists clients see.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hidden {
    /// The provider.
    pub source: String,
    /// The version.
    pub version: Version,
    /// The refusal, as a client asking for it by name would get it: the
    /// rule, the advisories (or why they are not known) and its reason.
    pub refused: String,
}

impl std::fmt::Display for Hidden {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "HIDDEN   provider {} {}: {}",
            self.source, self.version, self.refused
        )
    }
}

impl Serialize for Report {
    /// `{"ready": …, "items": […]}`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut out = s.serialize_struct("Report", 3)?;
        out.serialize_field("ready", &self.ready())?;
        out.serialize_field("items", &self.items)?;
        if self.hidden.is_empty() {
            out.skip_field("hidden")?;
        } else {
            out.serialize_field("hidden", &self.hidden)?;
        }
        out.end()
    }
}

impl Report {
    /// Whether everything needed is held and matches its lock files.
    pub fn ready(&self) -> bool {
        self.items.iter().all(|i| i.finding == Finding::Held)
    }

    /// How many items are held, missing and mismatched.
    pub fn counts(&self) -> (usize, usize, usize) {
        let mut counts = (0, 0, 0);
        for item in &self.items {
            match item.finding {
                Finding::Held => counts.0 += 1,
                Finding::Missing { .. } => counts.1 += 1,
                Finding::LockMismatch { .. } => counts.2 += 1,
            }
        }
        counts
    }

    /// Adds `other`'s items that this report lacks.
    pub fn extend(&mut self, other: &Report) {
        for item in &other.items {
            self.add(item.needed.clone(), item.finding.clone());
        }
        for hidden in &other.hidden {
            self.hide(hidden.clone());
        }
    }

    fn hide(&mut self, hidden: Hidden) {
        if !self.hidden.contains(&hidden) {
            self.hidden.push(hidden);
        }
    }

    fn add(&mut self, needed: Needed, finding: Finding) {
        let item = Item { needed, finding };
        if !self.items.contains(&item) {
            self.items.push(item);
        }
    }
}

/// Adds to `report` what `selection` needs and what the mirror holds of
/// it. The mirror should be offline, so that only what it holds counts.
pub async fn check(mirror: &std::sync::Arc<Mirror>, selection: &Selection, report: &mut Report) {
    let mut modules = Report::default();
    let found =
        registry_modules::modules(mirror, &selection.modules, selection.client(), &mut modules)
            .await;
    let (providers, unmergeable) = selection.providers_with(&found.providers);
    for req in &providers {
        provider(mirror, req, report).await;
    }
    for problem in unmergeable {
        let needed = Needed {
            kind: "provider",
            source: problem.provider.to_string(),
            version: None,
            platform: None,
            required_by: Vec::new(),
        };
        report.add(
            needed,
            missing(Why::Unmergeable {
                error: problem.error,
            }),
        );
    }
    for item in modules.items {
        report.add(item.needed, item.finding);
    }
    configured::refused(selection, report);
    configured::unserved(selection, report);
    match configured::cli_with_modules(selection, &found.core) {
        Ok(Some(cli)) => configured::cli(mirror, &cli, report).await,
        Ok(None) => {}
        Err(error) => {
            let needed = Needed {
                kind: "cli",
                source: selection.client().as_str().to_owned(),
                version: None,
                platform: None,
                required_by: found.core.clone(),
            };
            report.add(needed, missing(Why::Unmergeable { error }));
        }
    }
}

fn needed_provider(
    req: &Requirement,
    version: Option<&Version>,
    platform: Option<&Platform>,
) -> Needed {
    Needed {
        kind: "provider",
        source: req.provider.to_string(),
        version: version.cloned(),
        platform: platform.cloned(),
        required_by: req.required_by.clone(),
    }
}

fn missing(why: Why) -> Finding {
    Finding::Missing { why }
}

/// Why a list could not be had: the mirror never listed it, or its store
/// failed.
fn unlisted(e: &RequestError) -> Why {
    match e {
        RequestError::NotHeld(_) | RequestError::NotAtOrigin(_) => Why::NotListed,
        RequestError::HostNotAllowed(host) => Why::HostNotAllowed { host: host.clone() },
        other => Why::Unreadable {
            error: other.to_string(),
        },
    }
}

/// The versions clients would install, or why there are none: pinned
/// versions the list holds, else the newest (or, for a manifest, every)
/// version meeting the constraints that the policy lets clients see.
fn chosen<'a>(
    listed: &'a [Version],
    visible: &[Version],
    pinned: &'a [Version],
    allows: impl Fn(&Version) -> bool,
    newest_only: bool,
) -> Vec<&'a Version> {
    if !pinned.is_empty() {
        return pinned.iter().collect();
    }
    let mut matching: Vec<&Version> = listed
        .iter()
        .filter(|v| visible.contains(v) && allows(v))
        .collect();
    matching.sort();
    if newest_only && matching.len() > 1 {
        matching = matching.split_off(matching.len() - 1);
    }
    matching
}

async fn provider(mirror: &std::sync::Arc<Mirror>, req: &Requirement, report: &mut Report) {
    let listed = match mirror.index(&req.provider).await {
        Ok(listed) => listed,
        Err(e) => {
            let why = unlisted(&e);
            if req.pinned.is_empty() {
                report.add(needed_provider(req, None, None), missing(why.clone()));
            }
            for v in &req.pinned {
                report.add(needed_provider(req, Some(v), None), missing(why.clone()));
            }
            return;
        }
    };
    let (visible, left_out, _) = mirror.visible_index(&req.provider, listed.clone()).await;
    let all: Vec<Version> = listed.versions.keys().cloned().collect();
    let shown: Vec<Version> = visible.versions.keys().cloned().collect();
    let versions = chosen(
        &all,
        &shown,
        &req.pinned,
        |v| req.constraints.allows(v.semver()),
        req.newest_only,
    );
    hidden_by_advisories(req, &left_out, versions.iter().max().copied(), report);
    if versions.is_empty() {
        let why = held_back_or_none(mirror, Subject::Provider(&req.provider), &all, |v| {
            req.constraints.allows(v.semver())
        })
        .await
        .unwrap_or(Why::NoVersionMeets {
            constraints: req.constraints.as_str().to_owned(),
            listed: shown.len(),
        });
        report.add(needed_provider(req, None, None), missing(why));
        return;
    }
    for version in versions {
        if !req.constraints.allows(version.semver()) {
            report.add(
                needed_provider(req, Some(version), None),
                missing(Why::LockedOutsideConstraints {
                    constraints: req.constraints.as_str().to_owned(),
                }),
            );
            continue;
        }
        if !listed.versions.contains_key(version) {
            report.add(
                needed_provider(req, Some(version), None),
                missing(Why::NotInList),
            );
            continue;
        }
        match mirror
            .verdict(Subject::Provider(&req.provider), version)
            .await
        {
            Ok(Ok(())) => {}
            Ok(Err(denied)) => {
                report.add(
                    needed_provider(req, Some(version), None),
                    missing(denied.into()),
                );
                continue;
            }
            Err(e) => {
                report.add(
                    needed_provider(req, Some(version), None),
                    missing(Why::Unreadable {
                        error: e.to_string(),
                    }),
                );
                continue;
            }
        }
        provider_version(mirror, req, version, report).await;
    }
}

/// Notes in `report` each version of `left_out` (what the policy leaves
/// out of `req`'s list) that a rule by advisory hides, that the
/// constraints admit, and that is newer than `chosen` (the newest version
/// chosen, if any).
fn hidden_by_advisories(
    req: &Requirement,
    left_out: &[crate::policy::Denied],
    chosen: Option<&Version>,
    report: &mut Report,
) {
    for denied in left_out.iter().filter(|d| !d.counted.is_empty()) {
        let Ok(version) = Version::parse(&denied.version) else {
            continue;
        };
        if req.constraints.allows(version.semver()) && chosen.is_none_or(|c| version > *c) {
            report.hide(Hidden {
                source: req.provider.to_string(),
                version,
                refused: denied.to_string(),
            });
        }
    }
}

/// Among `listed` versions that `meets` allows, the newest one the policy
/// holds back, as the reason none can be installed; `None` when no listed
/// version meets the constraints at all.
async fn held_back_or_none(
    mirror: &std::sync::Arc<Mirror>,
    subject: Subject<'_>,
    listed: &[Version],
    meets: impl Fn(&Version) -> bool,
) -> Option<Why> {
    let newest = listed.iter().filter(|v| meets(v)).max()?;
    match mirror.verdict(subject, newest).await {
        Ok(Err(denied)) => Some(denied.into()),
        _ => None,
    }
}

async fn provider_version(
    mirror: &std::sync::Arc<Mirror>,
    req: &Requirement,
    version: &Version,
    report: &mut Report,
) {
    let record = match mirror.store().read_version(&req.provider, version).await {
        Ok(record) => record,
        Err(e) => {
            report.add(
                needed_provider(req, Some(version), None),
                missing(Why::Unreadable {
                    error: e.to_string(),
                }),
            );
            return;
        }
    };
    let locked = req.locked_hashes.get(version);
    for platform in &req.platforms {
        let needed = needed_provider(req, Some(version), Some(platform));
        let Some(record) = &record else {
            report.add(needed, missing(Why::NeverFetched));
            continue;
        };
        if record.unsigned_import && !mirror.config().cache.allow_unsigned_imports {
            report.add(needed, missing(Why::UnsignedImport));
            continue;
        }
        let Some(package) = record.packages.get(platform) else {
            report.add(needed, missing(Why::NoPackage));
            continue;
        };
        let key = ArchiveKey::new(&req.provider, version, platform);
        let finding = match mirror.store().archive(&key).await {
            Ok(Some(stored)) => {
                let held = vec![stored.h1, format!("zh:{}", package.sha256)];
                match locked {
                    Some(locked)
                        if !locked.is_empty() && !held.iter().any(|h| locked.contains(h)) =>
                    {
                        Finding::LockMismatch {
                            locked: locked.iter().cloned().collect(),
                            held,
                        }
                    }
                    _ => Finding::Held,
                }
            }
            Ok(None) => missing(match record.evicted_ms.get(platform) {
                Some(at) => Why::Evicted { at_ms: Some(*at) },
                None => Why::NeverFetched,
            }),
            Err(e) => missing(Why::Unreadable {
                error: e.to_string(),
            }),
        };
        report.add(needed, finding);
    }
}

mod advisories;
mod configured;
mod documentation;
mod registry_modules;
mod why;
pub use why::Why;

#[cfg(test)]
mod tests;
