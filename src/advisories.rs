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
//! - `bounds`: what one advisory and the whole database may weigh;
//! - `import`: zips and directories;
//! - `findings`: one executable's advisories;
//! - `known`: what is not known of a binary's, and why;
//! - `report`: a version's findings as a report for people.

pub mod bounds;
pub mod database;
pub mod findings;
pub mod import;
pub mod known;
pub mod osv;
pub mod range;
pub mod report;
pub mod version;

use std::collections::BTreeMap;

use serde::Serialize;

pub use database::{Database, Severity};
pub use findings::{findings, Finding, Presence, Subject};
pub use known::{Reading, Unknown};

/// The worst severities a version's advisories can come to, worst
/// first: `unrated` where the database rates none of them.
pub const WORST: [&str; 5] = ["critical", "high", "moderate", "low", "unrated"];

/// What a version's findings come to across its platforms.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Whether every platform asked for was read and understood: where
    /// not, `count` is a floor, never "none known" (`unknown` and
    /// `not_read` say why).
    pub known: bool,
    /// Distinct advisories (merged groups), over every platform.
    pub count: usize,
    /// The highest severity among them, where any is rated.
    pub worst: Option<Severity>,
    /// Each advisory: its finding (as first met) and the platforms it
    /// applies to.
    pub advisories: Vec<PlatformFinding>,
    /// Per platform, what was read and is not understood, and why:
    /// binaries with no Go build information, unreadable build
    /// information, a toolchain that names itself in no form Go reads.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub unknown: BTreeMap<String, Vec<Unknown>>,
    /// The platforms asked for whose build record could not be read or
    /// made: the summary is incomplete, is not kept, and is made again on
    /// the next ask.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_read: Vec<String>,
}

impl Default for Summary {
    /// Nothing asked for: known, with nothing found.
    fn default() -> Summary {
        Summary::of(&BTreeMap::new(), Vec::new())
    }
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

    /// Why it is not known, one line per cause (`linux_amd64: …`); empty
    /// when it is.
    pub fn not_known_reasons(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .unknown
            .iter()
            .flat_map(|(platform, why)| {
                why.iter()
                    .map(move |u| format!("{platform}: {}", u.describe()))
            })
            .collect();
        out.extend(
            self.not_read
                .iter()
                .map(|platform| format!("{platform}: its build record could not be read or made")),
        );
        out
    }

    /// In a few words, as `tfmirror advisories show` puts it:
    /// `none known`, `3 known, the worst rated high`, `not known, because
    /// …`, or `3 known, and not wholly known, because …`.
    pub fn headline(&self) -> String {
        let found = match (self.count, self.worst) {
            (0, _) => None,
            (n, Some(worst)) => Some(format!("{n} known, the worst rated {}", worst.as_str())),
            (n, None) => Some(format!("{n} known")),
        };
        let why = self.not_known_reasons().join("; ");
        match (found, self.known) {
            (None, true) => "none known".to_owned(),
            (Some(found), true) => found,
            (None, false) => format!("not known, because {why}"),
            (Some(found), false) => format!("{found}, and not wholly known, because {why}"),
        }
    }

    /// The summary of per-platform readings; `not_read` names the
    /// platforms asked for whose build records could not be read or made.
    pub fn of(per_platform: &BTreeMap<String, Reading>, not_read: Vec<String>) -> Summary {
        let mut advisories: Vec<PlatformFinding> = Vec::new();
        let mut unknown = BTreeMap::new();
        for (platform, reading) in per_platform {
            if !reading.unknown.is_empty() {
                unknown.insert(platform.clone(), reading.unknown.clone());
            }
            for f in &reading.findings {
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
            known: unknown.is_empty() && not_read.is_empty(),
            count: ids.len(),
            worst: advisories.iter().filter_map(|a| a.finding.severity).max(),
            advisories,
            unknown,
            not_read,
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

    fn reading(findings: Vec<Finding>) -> Reading {
        Reading {
            findings,
            unknown: Vec::new(),
        }
    }

    #[test]
    fn a_summary_with_a_binary_not_understood_is_never_none_known() {
        let script = Unknown::NoGoBuild {
            executable: "terraform-provider-tfcli".into(),
            detail: "not an ELF, Mach-O or PE executable".into(),
        };
        let per_platform = BTreeMap::from([
            ("linux_amd64".to_owned(), reading(Vec::new())),
            (
                "darwin_arm64".to_owned(),
                Reading {
                    findings: Vec::new(),
                    unknown: vec![script],
                },
            ),
        ]);
        let summary = Summary::of(&per_platform, Vec::new());
        assert!(!summary.known);
        assert_eq!(summary.count, 0);
        assert!(summary.headline().starts_with("not known, because darwin_arm64: terraform-provider-tfcli has no Go build information"), "{}", summary.headline());
        let json = serde_json::to_value(&summary).unwrap();
        assert_eq!(json["known"], false);
        assert_eq!(json["unknown"]["darwin_arm64"][0]["reason"], "no_go_build");
        // Every platform read and understood, nothing found: none known.
        let clean = Summary::of(
            &BTreeMap::from([("linux_amd64".to_owned(), reading(Vec::new()))]),
            Vec::new(),
        );
        assert!(clean.known);
        assert_eq!(clean.headline(), "none known");
        // A record that could not be read leaves it not known too.
        let partial = Summary::of(
            &BTreeMap::from([(
                "linux_amd64".to_owned(),
                reading(vec![finding(Presence::NotFound { packages: vec![] })]),
            )]),
            vec!["darwin_arm64".into()],
        );
        assert!(!partial.known);
        assert_eq!(partial.headline(), "1 known, and not wholly known, because darwin_arm64: its build record could not be read or made");
    }

    fn present(packages: &[&str]) -> Presence {
        Presence::Present {
            packages: packages.iter().map(|p| (*p).to_owned()).collect(),
            symbols: vec![],
            symbols_not_told: vec![],
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
                (
                    holds.to_owned(),
                    reading(vec![finding(present(&["net/http"]))]),
                ),
                (
                    lacks.to_owned(),
                    reading(vec![finding(Presence::NotFound { packages: vec![] })]),
                ),
            ]);
            let summary = Summary::of(&per_platform, Vec::new());
            assert_eq!(summary.count, 1);
            let only = &summary.advisories[0];
            assert_eq!(only.finding.presence, present(&["net/http"]), "{holds}");
            assert_eq!(
                only.presence_by_platform[lacks],
                Presence::NotFound { packages: vec![] }
            );
            assert_eq!(only.presence_by_platform[holds], present(&["net/http"]));
        }
    }

    #[test]
    fn presences_combine_in_either_order() {
        let all = [
            present(&["net/http"]),
            present(&["crypto/tls", "net/http"]),
            Presence::NotFound { packages: vec![] },
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
            Presence::NotNamed.combine(Presence::NotFound { packages: vec![] }),
            Presence::NotFound { packages: vec![] }
        );
    }
}
