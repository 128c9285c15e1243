//! A version's advisories as a report for people: how many are in the
//! binaries, how many are not found there and how many cannot be told;
//! grouped by module, the groups with findings present first; in each,
//! the findings present first, then those that cannot be told, and the
//! version that would clear every one of them.

use super::version::GoVersion;
use super::{PlatformFinding, Presence, Summary};

/// A summary's findings as a report.
#[derive(Debug)]
pub struct Report<'a> {
    /// Findings present in a held binary.
    pub present: usize,
    /// Findings whose packages or symbols no held binary holds.
    pub not_found: usize,
    /// Findings that cannot be told either way (the advisory names no
    /// packages, or the packages were not read).
    pub untold: usize,
    /// By module.
    pub groups: Vec<Group<'a>>,
}

/// The findings of one module.
#[derive(Debug)]
pub struct Group<'a> {
    /// The module (`stdlib` for the standard library).
    pub module: &'a str,
    /// The versions found of it, as the binaries name them.
    pub found: String,
    /// Those present.
    pub present: Vec<&'a PlatformFinding>,
    /// Those that cannot be told.
    pub untold: Vec<&'a PlatformFinding>,
    /// Those not found, folded away on the pages.
    pub not_found: Vec<&'a PlatformFinding>,
    /// The least version that clears every finding present or untold
    /// (the highest fix among them), where each names a fix.
    pub clears: Option<&'a str>,
    /// How many of those name no fix.
    pub unfixed: usize,
}

impl Group<'_> {
    /// The group's line: `stdlib go1.16.4: 12 present, 3 not found; all
    /// fixed in go1.16.15`.
    pub fn headline(&self) -> String {
        let mut parts = Vec::new();
        if !self.present.is_empty() {
            parts.push(format!("{} present", self.present.len()));
        }
        if !self.untold.is_empty() {
            parts.push(format!("{} not told", self.untold.len()));
        }
        if !self.not_found.is_empty() {
            parts.push(format!("{} not found", self.not_found.len()));
        }
        let head = format!("{} {}: {}", self.module, self.found, parts.join(", "));
        let open = self.present.len() + self.untold.len();
        if open == 0 {
            return head;
        }
        match (self.clears, self.unfixed) {
            (Some(v), 0) => format!("{head}; all fixed in {v}"),
            (Some(v), n) => format!("{head}; {n} with no fix named, the rest fixed in {v}"),
            (None, _) => format!("{head}; no fix named"),
        }
    }
}

impl Summary {
    /// Its findings as a report ([`Report`]).
    pub fn report(&self) -> Report<'_> {
        let mut groups: Vec<Group<'_>> = Vec::new();
        let (mut present, mut not_found, mut untold) = (0, 0, 0);
        for pf in &self.advisories {
            let module = pf.finding.module.as_str();
            let at = if let Some(at) = groups.iter().position(|g| g.module == module) {
                at
            } else {
                groups.push(Group {
                    module,
                    found: String::new(),
                    present: Vec::new(),
                    untold: Vec::new(),
                    not_found: Vec::new(),
                    clears: None,
                    unfixed: 0,
                });
                groups.len() - 1
            };
            let group = &mut groups[at];
            if !group.found.split(", ").any(|f| f == pf.finding.found) {
                if !group.found.is_empty() {
                    group.found.push_str(", ");
                }
                group.found.push_str(&pf.finding.found);
            }
            match pf.finding.presence {
                Presence::Present { .. } => {
                    present += 1;
                    group.present.push(pf);
                }
                Presence::NotFound { .. } => {
                    not_found += 1;
                    group.not_found.push(pf);
                }
                Presence::NotNamed | Presence::NotRead => {
                    untold += 1;
                    group.untold.push(pf);
                }
            }
        }
        for group in &mut groups {
            let open = group.present.iter().chain(&group.untold);
            let fixes: Vec<&str> = open
                .clone()
                .filter_map(|pf| pf.finding.fixed.as_deref())
                .collect();
            group.unfixed = open.count() - fixes.len();
            group.clears = fixes.into_iter().max_by(|a, b| order(a).cmp(&order(b)));
        }
        // Groups with findings present first, then those that cannot be
        // told, then the rest; by module within each.
        groups.sort_by(|a, b| {
            (a.present.is_empty(), a.untold.is_empty(), a.module).cmp(&(
                b.present.is_empty(),
                b.untold.is_empty(),
                b.module,
            ))
        });
        Report {
            present,
            not_found,
            untold,
            groups,
        }
    }
}

/// A fixed version as the findings name it (`v0.17.0`, or `go1.20.10`
/// for the standard library), in Go's order; `None` sorts lowest.
fn order(fixed: &str) -> Option<GoVersion> {
    GoVersion::toolchain(fixed).or_else(|| GoVersion::parse(fixed))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::{database, Finding, Presence, Reading, Summary};

    fn finding(id: &str, module: &str, fixed: Option<&str>, presence: Presence) -> Finding {
        Finding {
            id: id.into(),
            aliases: Vec::new(),
            summary: String::new(),
            module: module.into(),
            found: if module == "stdlib" {
                "go1.16.4"
            } else {
                "v1.0.0"
            }
            .into(),
            fixed: fixed.map(Into::into),
            severity: None,
            review: database::Review::Reviewed,
            presence,
            matched_by: String::new(),
            url: String::new(),
        }
    }

    fn present() -> Presence {
        Presence::Present {
            packages: vec!["p".into()],
            symbols: vec![],
            symbols_not_told: vec![],
        }
    }

    #[test]
    fn a_report_puts_what_is_present_first_and_names_what_clears_it() {
        let not_found = || Presence::NotFound { packages: vec![] };
        let findings = vec![
            finding("GO-1", "stdlib", Some("go1.16.5"), present()),
            finding("GO-2", "stdlib", Some("go1.16.15"), present()),
            // A fix named only as a lower release of the line: 1.16.15
            // clears both, by Go's order (not the text's, where "1.16.5"
            // is the greater).
            finding("GO-3", "stdlib", Some("go1.20.10"), not_found()),
            finding("GO-4", "example.com/a", Some("v1.2.0"), not_found()),
            finding("GO-5", "example.com/b", None, Presence::NotRead),
            finding("GO-6", "example.com/c", Some("v2.0.0"), present()),
            finding("GO-7", "example.com/c", None, present()),
        ];
        let per_platform = BTreeMap::from([(
            "linux_amd64".to_owned(),
            Reading {
                findings,
                unknown: Vec::new(),
            },
        )]);
        let summary = Summary::of(&per_platform, Vec::new());
        let report = summary.report();
        assert_eq!((report.present, report.not_found, report.untold), (4, 2, 1));
        let order: Vec<&str> = report.groups.iter().map(|g| g.module).collect();
        assert_eq!(
            order,
            ["example.com/c", "stdlib", "example.com/b", "example.com/a"]
        );
        let stdlib = &report.groups[1];
        assert_eq!(stdlib.clears, Some("go1.16.15"));
        assert_eq!(
            stdlib.headline(),
            "stdlib go1.16.4: 2 present, 1 not found; all fixed in go1.16.15"
        );
        assert_eq!(
            report.groups[0].headline(),
            "example.com/c v1.0.0: 2 present; 1 with no fix named, the rest fixed in v2.0.0"
        );
        assert_eq!(
            report.groups[2].headline(),
            "example.com/b v1.0.0: 1 not told; no fix named"
        );
        assert_eq!(
            report.groups[3].headline(),
            "example.com/a v1.0.0: 1 not found"
        );
    }
}
