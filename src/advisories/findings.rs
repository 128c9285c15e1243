//! Which advisories an executable falls under, and why, from its build
//! record.
//!
//! - The standard library (`stdlib`) by the toolchain version it was built
//!   with (`go1.21.3` as `1.21.3`).
//! - The main module by the version the registry or the release names,
//!   never by `(devel)`. Where that version's major is 2 or more and the
//!   module path carries no `/vN` (a provider module that never took one),
//!   module versions cannot express it: the entry's `custom_ranges` in
//!   release versions decide where it has them; else the version is read
//!   as Go would write it (`+incompatible`) against the module ranges.
//! - Every dependency by its version, or by its replacement's path and
//!   version where it was replaced (a replacement by a directory has no
//!   version and matches nothing).
//!
//! Advisories that name each other (a GO entry and its GHSA alias) are one
//! finding per module, with the GO entry's facts and the highest severity
//! either carries. Presence: where the entry names its packages, whether
//! the binary's function table holds any of them (for the platform's
//! `GOOS`/`GOARCH`), and where it names symbols of a package, whether
//! the table names any of those symbols, as Go's vulnerability checker
//! reads a binary; tfmirror claims no reachability beyond that. A symbol
//! is told only where the table lists inlined functions too (Go 1.16 on)
//! and the record looked for the symbols this database names; else the
//! package alone answers, and the finding says why.

use serde::{Deserialize, Serialize};

use super::database::{Database, Prepared, Review, Severity};
use super::range;
use super::version::{path_major, GoVersion};
use crate::gobuild::{BuildInfo, Symbols};

/// What one executable is matched by.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// Its build information.
    pub build: &'a BuildInfo,
    /// The version the registry or the release names for it.
    pub release_version: Option<&'a str>,
    /// The packages it holds code of, sorted; `None` where not read.
    pub packages: Option<&'a [String]>,
    /// The symbols its function table was searched for and found; `None`
    /// where it was not searched.
    pub symbols: Option<&'a Symbols>,
    /// Its operating system (`linux`).
    pub goos: &'a str,
    /// Its architecture (`amd64`).
    pub goarch: &'a str,
}

/// Whether the packages and symbols an advisory names are in the binary.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Presence {
    /// The binary holds code of these of the named packages.
    Present {
        /// Which packages.
        packages: Vec<String>,
        /// The symbols the advisory names that the function table names
        /// (`net/http.Client.Do`): the finding is by symbol.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        symbols: Vec<String>,
        /// Packages present whose symbols the advisory names but whose
        /// table could not tell them (a toolchain before Go 1.16, whose
        /// table leaves out inlined functions, or a record that looked
        /// for other symbols): present by the package alone. A package in
        /// neither list is present by the package because the advisory
        /// names no symbols of it.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        symbols_not_told: Vec<String>,
    },
    /// None of the named packages is in the binary (for its platform), or
    /// none of the symbols named of those that are.
    NotFound {
        /// The named packages the binary holds, none of whose named
        /// symbols it does.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        packages: Vec<String>,
    },
    /// The advisory names no packages.
    NotNamed,
    /// The binary's packages were not read.
    NotRead,
}

impl Presence {
    /// What two readings of one advisory's presence come to, in either
    /// order: present where either is (with the packages and symbols of
    /// both), else not read where either was not, else not found; an
    /// advisory that names no packages says nothing, and yields to the
    /// other. Used across a version's platforms and across the entries
    /// merged into one finding, so that neither the order platforms were
    /// read in nor the order of the entries decides.
    #[must_use]
    pub fn combine(self, other: Presence) -> Presence {
        use Presence::{NotFound, NotNamed, NotRead, Present};
        match (self, other) {
            (
                Present {
                    packages,
                    symbols,
                    symbols_not_told,
                },
                Present {
                    packages: more_packages,
                    symbols: more_symbols,
                    symbols_not_told: more_not_told,
                },
            ) => Present {
                packages: union(packages, more_packages),
                symbols: union(symbols, more_symbols),
                symbols_not_told: union(symbols_not_told, more_not_told),
            },
            (p @ Present { .. }, _)
            | (_, p @ Present { .. })
            | (p @ (NotFound { .. } | NotNamed), NotNamed)
            | (NotNamed, p @ NotFound { .. }) => p,
            (NotRead, _) | (_, NotRead) => NotRead,
            (NotFound { packages }, NotFound { packages: more }) => NotFound {
                packages: union(packages, more),
            },
        }
    }

    /// In a few words.
    pub fn describe(&self) -> String {
        match self {
            Presence::Present {
                packages,
                symbols,
                symbols_not_told,
            } => {
                let mut said = if symbols.is_empty() {
                    format!("present: {}", packages.join(", "))
                } else {
                    format!("present: {}", symbols.join(", "))
                };
                if !symbols_not_told.is_empty() {
                    said.push_str(" (by the package: the table cannot tell the symbols of ");
                    said.push_str(&symbols_not_told.join(", "));
                    said.push(')');
                }
                said
            }
            Presence::NotFound { packages } if !packages.is_empty() => format!(
                "not found in the binary: {} held, none of the symbols named",
                packages.join(", ")
            ),
            Presence::NotFound { .. } => "not found in the binary".into(),
            Presence::NotNamed => "the advisory names no packages".into(),
            Presence::NotRead => "the binary's packages were not read".into(),
        }
    }

    /// Whether it is [`Presence::NotFound`].
    pub fn is_not_found(&self) -> bool {
        matches!(self, Presence::NotFound { .. })
    }
}

/// Two sorted lists as one, sorted, each item once.
fn union(mut a: Vec<String>, b: Vec<String>) -> Vec<String> {
    a.extend(b);
    a.sort_unstable();
    a.dedup();
    a
}

/// One advisory an executable falls under.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    /// The advisory's ID (the Go database's where it has one).
    pub id: String,
    /// Its other IDs, merged advisories' included.
    pub aliases: Vec<String>,
    /// One line.
    pub summary: String,
    /// The module matched (`stdlib` for the standard library).
    pub module: String,
    /// The version found (the toolchain's for `stdlib`).
    pub found: String,
    /// The least fixed version above it, where one is known.
    pub fixed: Option<String>,
    /// The highest severity the data rates it, where any does.
    pub severity: Option<Severity>,
    /// Whether it was reviewed.
    pub review: Review,
    /// Whether the affected packages are in the binary.
    pub presence: Presence,
    /// How it matched.
    pub matched_by: String,
    /// Its page at its database.
    pub url: String,
}

/// Every finding of one executable, most severe first, then by ID.
pub fn findings(db: &Database, subject: &Subject<'_>) -> Vec<Finding> {
    let build = subject.build;
    let mut found: Vec<(usize, Finding)> = Vec::new();
    let mut check = |module: &str, version: &GoVersion, shown: &str, custom: bool, how: &str| {
        for p in db.by_module.get(module).into_iter().flatten() {
            let ranges = if custom && !p.custom_ranges.is_empty() {
                &p.custom_ranges
            } else {
                &p.ranges
            };
            let in_range = ranges.iter().any(|r| range::contains(r, version));
            let named = !custom && p.versions.contains(version);
            if !in_range && !named {
                continue;
            }
            let fixed = ranges
                .iter()
                .filter(|r| range::contains(r, version))
                .find_map(|r| range::fixed_after(r, version));
            let how = if custom && !p.custom_ranges.is_empty() {
                format!("{how} (the advisory's release-version ranges)")
            } else {
                how.to_string()
            };
            // A fix in the standard library is named as its release is,
            // beside the toolchain's own name (`go1.19.8`, fixed in
            // `go1.20.10`).
            let fixed = match fixed {
                Some(v) if module == "stdlib" => crate::gobuild::release_name(&v).or(Some(v)),
                other => other,
            };
            found.push((
                db.group[p.advisory],
                finding(db, p, subject, module, shown, fixed, how),
            ));
        }
    };
    if let Some(v) = GoVersion::toolchain(&build.go_version) {
        check("stdlib", &v, &build.go_version, false, "toolchain version");
    }
    if let Some(main) = build.main.as_ref().filter(|m| !m.path.is_empty()) {
        match subject.release_version {
            Some(release) => {
                if let Some(v) = GoVersion::parse(release) {
                    let carried = path_major(&main.path).unwrap_or(1);
                    let custom = v.major() >= 2 && v.major() != carried;
                    check(&main.path, &v, release, custom, "release version");
                }
            }
            None => {
                if let Some(v) = GoVersion::parse(&main.version) {
                    check(&main.path, &v, &main.version, false, "module version");
                }
            }
        }
    }
    for dep in &build.deps {
        let (module, how) = match dep.replace.as_deref() {
            Some(r) => (r, "replacement's version"),
            None => (dep, "module version"),
        };
        if let Some(v) = GoVersion::parse(&module.version) {
            check(&module.path, &v, &module.version, false, how);
        }
    }
    merge(found)
}

/// One finding, before merging.
fn finding(
    db: &Database,
    p: &Prepared,
    subject: &Subject<'_>,
    module: &str,
    shown: &str,
    fixed: Option<String>,
    matched_by: String,
) -> Finding {
    let advisory = &db.stored.advisories[p.advisory];
    let affected = &advisory.affected[p.affected];
    let applies = |list: &[String], mine: &str| list.is_empty() || list.iter().any(|x| x == mine);
    let named = affected
        .imports
        .iter()
        .filter(|i| applies(&i.goos, subject.goos) && applies(&i.goarch, subject.goarch));
    let presence = if affected.imports.is_empty() {
        Presence::NotNamed
    } else if let Some(held) = subject.packages {
        presence_in(db, subject, held, named)
    } else {
        Presence::NotRead
    };
    Finding {
        id: advisory.id.clone(),
        aliases: advisory.aliases.clone(),
        summary: advisory.summary.clone(),
        module: module.to_string(),
        found: shown.to_string(),
        fixed,
        severity: advisory.severity,
        review: advisory.review,
        presence,
        matched_by,
        url: advisory.url.clone(),
    }
}

/// Whether the imports `named` are in a binary holding `held`: by
/// package where an import names no symbols; by symbol where it does and
/// the record's search for this database's symbols of the package can
/// tell (its table lists inlined functions); else by the package, said so.
fn presence_in<'i>(
    db: &Database,
    subject: &Subject<'_>,
    held: &[String],
    named: impl Iterator<Item = &'i super::database::Import>,
) -> Presence {
    let holds = |path: &str| held.binary_search_by(|h| h.as_str().cmp(path)).is_ok();
    let (mut packages, mut symbols, mut not_told, mut without) = (vec![], vec![], vec![], vec![]);
    for import in named {
        // The main package is named `main` in the table.
        let main = subject.build.path == import.path && holds("main");
        let path = if main { "main" } else { import.path.as_str() };
        if !holds(path) {
            continue;
        }
        if import.symbols.is_empty() {
            packages.push(import.path.clone());
            continue;
        }
        let looked = subject
            .symbols
            .filter(|s| s.inlined_listed)
            .and_then(|s| s.by_package.get(path))
            .filter(|l| db.wanted.digest(path) == Some(l.asked.as_str()));
        let Some(looked) = looked else {
            packages.push(import.path.clone());
            not_told.push(import.path.clone());
            continue;
        };
        // As written, or without the package's own name before it.
        let found: Vec<String> = (import.symbols.iter())
            .filter_map(|s| {
                let bare = crate::gobuild::without_package_name(&import.path, s);
                [Some(s.as_str()), bare]
                    .into_iter()
                    .flatten()
                    .find(|s| looked.found.contains(*s))
            })
            .map(|s| format!("{}.{s}", import.path))
            .collect();
        if found.is_empty() {
            without.push(import.path.clone());
        } else {
            packages.push(import.path.clone());
            symbols.extend(found);
        }
    }
    if packages.is_empty() {
        return Presence::NotFound {
            packages: union(without, vec![]),
        };
    }
    Presence::Present {
        packages: union(packages, vec![]),
        symbols: union(symbols, vec![]),
        symbols_not_told: union(not_told, vec![]),
    }
}

/// One finding per advisory group and module: the Go database's entry
/// speaks (it names packages and is reviewed or not by the Go team), with
/// every ID of the group and the highest severity any rates.
fn merge(found: Vec<(usize, Finding)>) -> Vec<Finding> {
    let mut merged: Vec<(usize, Finding)> = Vec::new();
    for (group, f) in found {
        let Some((_, kept)) = merged
            .iter_mut()
            .find(|(g, k)| *g == group && k.module == f.module)
        else {
            merged.push((group, f));
            continue;
        };
        let (mut first, second) = if f.id.starts_with("GO-") && !kept.id.starts_with("GO-") {
            (f, kept.clone())
        } else {
            (kept.clone(), f)
        };
        first.severity = first.severity.max(second.severity);
        first.fixed = first.fixed.or(second.fixed);
        for alias in std::iter::once(second.id).chain(second.aliases) {
            if alias != first.id && !first.aliases.contains(&alias) {
                first.aliases.push(alias);
            }
        }
        first.presence = first.presence.combine(second.presence);
        *kept = first;
    }
    let mut out: Vec<Finding> = merged.into_iter().map(|(_, f)| f).collect();
    out.sort_by(|a, b| b.severity.cmp(&a.severity).then_with(|| a.id.cmp(&b.id)));
    out
}
