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
    /// The platforms asked for whose build record could not be read or
    /// made: the summary is incomplete, is not kept, and is made again on
    /// the next ask.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
}

/// A finding and the platforms it applies to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PlatformFinding {
    /// The finding; its presence is what the platforms' presences come
    /// to together ([`Presence::combine`]).
    pub finding: Finding,
    /// The platforms (`linux_amd64`) whose binaries it applies to.
    pub platforms: Vec<String>,
    /// Each of those platforms' own presence.
    pub presence_by_platform: BTreeMap<String, Presence>,
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
                    Some(a) => {
                        a.platforms.push(platform.clone());
                        a.finding.presence =
                            std::mem::replace(&mut a.finding.presence, Presence::NotNamed)
                                .combine(f.presence.clone());
                        a.presence_by_platform
                            .insert(platform.clone(), f.presence.clone());
                    }
                    None => advisories.push(PlatformFinding {
                        finding: f.clone(),
                        platforms: vec![platform.clone()],
                        presence_by_platform: BTreeMap::from([(
                            platform.clone(),
                            f.presence.clone(),
                        )]),
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
            not_read: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(presence: Presence) -> Finding {
        Finding {
            id: "GO-2023-2102".into(),
            aliases: Vec::new(),
            summary: String::new(),
            module: "stdlib".into(),
            found: "go1.19.8".into(),
            fixed: None,
            severity: None,
            review: database::Review::Reviewed,
            presence,
            matched_by: "toolchain version".into(),
            url: String::new(),
        }
    }

    fn present(packages: &[&str]) -> Presence {
        Presence::Present {
            packages: packages.iter().map(|p| (*p).to_owned()).collect(),
        }
    }

    #[test]
    fn a_findings_presence_over_platforms_does_not_depend_on_their_names() {
        // The platform that holds the package sorts before the one that
        // does not, then after it: the summary says present either way,
        // and keeps each platform's own presence.
        for (holds, lacks) in [
            ("darwin_arm64", "linux_amd64"),
            ("linux_amd64", "darwin_arm64"),
        ] {
            let per_platform = BTreeMap::from([
                (holds.to_owned(), vec![finding(present(&["net/http"]))]),
                (lacks.to_owned(), vec![finding(Presence::NotFound)]),
            ]);
            let summary = Summary::of(&per_platform);
            assert_eq!(summary.count, 1);
            let only = &summary.advisories[0];
            assert_eq!(only.finding.presence, present(&["net/http"]), "{holds}");
            assert_eq!(only.presence_by_platform[lacks], Presence::NotFound);
            assert_eq!(only.presence_by_platform[holds], present(&["net/http"]));
        }
    }

    #[test]
    fn presences_combine_in_either_order() {
        let all = [
            present(&["net/http"]),
            present(&["crypto/tls", "net/http"]),
            Presence::NotFound,
            Presence::NotNamed,
            Presence::NotRead,
        ];
        for a in &all {
            for b in &all {
                let ab = a.clone().combine(b.clone());
                assert_eq!(ab, b.clone().combine(a.clone()), "{a:?} {b:?}");
                // What either says of code present is kept.
                let either_present = [a, b].iter().any(|p| matches!(p, Presence::Present { .. }));
                assert_eq!(matches!(ab, Presence::Present { .. }), either_present);
                if !either_present && [a, b].contains(&&Presence::NotRead) {
                    assert_eq!(ab, Presence::NotRead);
                }
            }
        }
        assert_eq!(
            present(&["net/http"]).combine(present(&["crypto/tls"])),
            present(&["crypto/tls", "net/http"])
        );
        assert_eq!(
            Presence::NotNamed.combine(Presence::NotFound),
            Presence::NotFound
        );
    }
}
