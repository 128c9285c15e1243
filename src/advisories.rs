//! Known advisories: which published vulnerabilities the provider
//! versions and CLI releases tfmirror holds fall under, offline.
//!
//! An operator imports a database in the OSV format (`tfmirror advisories
//! import`): the Go vulnerability database's bulk zip, an osv.dev Go zip
//! (which also carries GitHub's advisories, with their severities), or a
//! directory of entries. It is kept in the store ([`crate::store::advisories`]),
//! so every instance on a bucket sees the same one, and matched against
//! the build records of held archives ([`crate::store::builds`]).
//!
//! - `osv`: entries as published, read leniently;
//! - `version`: Go's and OSV's versions in one order;
//! - `range`: OSV range events;
//! - `database`: the kept form, and its index by module;
//! - `import`: zips and directories;
//! - `findings`: one executable's advisories.

pub mod database;
pub mod findings;
pub mod import;
pub mod osv;
pub mod range;
pub mod version;

use std::collections::BTreeMap;

use serde::Serialize;

pub use database::{Database, Severity};
pub use findings::{findings, Finding, Presence, Subject};

/// The worst severities a version's advisories can come to, worst
/// first: `unrated` where the database rates none of them.
pub const WORST: [&str; 5] = ["critical", "high", "moderate", "low", "unrated"];

/// What a version's findings come to across its platforms.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Distinct advisories (merged groups), over every platform.
    pub count: usize,
    /// The highest severity among them, where any is rated.
    pub worst: Option<Severity>,
    /// Each advisory: its finding (as first met) and the platforms it
    /// applies to.
    pub advisories: Vec<PlatformFinding>,
}

/// A finding and the platforms it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformFinding {
    /// The finding.
    pub finding: Finding,
    /// The platforms (`linux_amd64`) whose binaries it applies to.
    pub platforms: Vec<String>,
}

impl Summary {
    /// Its worst advisory's severity as [`WORST`] names it; `None` when it
    /// has none.
    pub fn worst_name(&self) -> Option<&'static str> {
        if self.count == 0 {
            return None;
        }
        Some(self.worst.map_or("unrated", Severity::as_str))
    }

    /// The summary of per-platform findings.
    pub fn of(per_platform: &BTreeMap<String, Vec<Finding>>) -> Summary {
        let mut advisories: Vec<PlatformFinding> = Vec::new();
        for (platform, found) in per_platform {
            for f in found {
                match advisories
                    .iter_mut()
                    .find(|a| a.finding.id == f.id && a.finding.module == f.module)
                {
                    Some(a) => a.platforms.push(platform.clone()),
                    None => advisories.push(PlatformFinding {
                        finding: f.clone(),
                        platforms: vec![platform.clone()],
                    }),
                }
            }
        }
        advisories.sort_by(|a, b| {
            b.finding
                .severity
                .cmp(&a.finding.severity)
                .then_with(|| a.finding.id.cmp(&b.finding.id))
        });
        let mut ids: Vec<&str> = advisories.iter().map(|a| a.finding.id.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        Summary {
            count: ids.len(),
            worst: advisories.iter().filter_map(|a| a.finding.severity).max(),
            advisories,
        }
    }
}
