//! The advisory database as tfmirror keeps it: each OSV entry that speaks
//! of Go modules, reduced to what matching and the pages use, and the
//! import that made it. Kept in the store as one document, read by every
//! instance on the same store, and indexed in memory by module path.
//!
//! What an import leaves out, and says it did: withdrawn entries; entries
//! of other ecosystems; `toolchain` entries, which concern the `go`
//! command a program was built with, not the program (a provider binary
//! does not run the toolchain); `GIT` ranges, and ranges with a version
//! that does not read as a semantic version.

use std::collections::HashMap;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::osv;
use super::range::{self, Event};
use super::version::GoVersion;

/// The format of the database document this build writes and reads.
pub const DATABASE_FORMAT: u32 = 1;

/// A severity, as GitHub rates advisories (and CVSS scores map onto).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Low.
    Low,
    /// Moderate (CVSS "medium").
    #[serde(alias = "medium")]
    Moderate,
    /// High.
    High,
    /// Critical.
    Critical,
}

impl Severity {
    /// Its name.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Low => "low",
            Severity::Moderate => "moderate",
            Severity::High => "high",
            Severity::Critical => "critical",
        }
    }

    /// Every severity, least first.
    pub const ALL: [Severity; 4] = [
        Severity::Low,
        Severity::Moderate,
        Severity::High,
        Severity::Critical,
    ];
}

/// Whether an entry was reviewed by its database's people.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Review {
    /// Reviewed (`review_status: REVIEWED`, `github_reviewed: true`).
    Reviewed,
    /// Published unreviewed.
    Unreviewed,
    /// The entry does not say.
    Unknown,
}

/// An advisory, as kept.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Advisory {
    /// Its ID.
    pub id: String,
    /// Its other IDs.
    pub aliases: Vec<String>,
    /// One line.
    pub summary: String,
    /// Markdown, untrusted: rendered only through the pages' sanitiser;
    /// at most [`super::bounds::MAX_DETAILS`] bytes.
    pub details: String,
    /// How many bytes the entry's `details` had where they were cut at
    /// import; 0 where they were kept whole.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub details_cut: u64,
    /// When it last changed.
    pub modified: String,
    /// When it was published.
    pub published: String,
    /// Its severity where the data rates it.
    pub severity: Option<Severity>,
    /// What the severity was read from (`GitHub: HIGH`, a CVSS vector).
    pub severity_from: String,
    /// Whether it was reviewed.
    pub review: Review,
    /// Its page at its database, where it names one.
    pub url: String,
    /// The modules it affects.
    pub affected: Vec<AffectedModule>,
}

/// A module an advisory affects, and where.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AffectedModule {
    /// The module path, or `stdlib`.
    pub module: String,
    /// Ranges of module versions (`SEMVER` and `ECOSYSTEM`), as events.
    pub ranges: Vec<Vec<Event>>,
    /// Versions named one by one.
    pub versions: Vec<String>,
    /// Ranges in the project's own release versions where they are not
    /// module versions (`ecosystem_specific.custom_ranges`): a provider
    /// module whose path carries no `/vN` for its registry version's major.
    pub custom_ranges: Vec<Vec<Event>>,
    /// The packages (and their symbols) the fault is in.
    pub imports: Vec<Import>,
}

/// A package an advisory names.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Import {
    /// Its import path.
    pub path: String,
    /// The functions and methods (`Server.Serve`), if named.
    pub symbols: Vec<String>,
    /// The operating systems it applies to; empty for all.
    pub goos: Vec<String>,
    /// The architectures it applies to; empty for all.
    pub goarch: Vec<String>,
}

/// What an entry became at import.
#[derive(Debug)]
pub enum Taken {
    /// Kept, with the number of ranges left out as unreadable.
    Kept(Box<Advisory>, usize),
    /// Withdrawn.
    Withdrawn,
    /// Nothing it affects is a Go module (another ecosystem, or only the
    /// `toolchain`).
    NotGo,
}

impl Advisory {
    /// What an OSV entry becomes.
    pub fn from_osv(entry: osv::Entry) -> Taken {
        if !entry.withdrawn.is_empty() {
            return Taken::Withdrawn;
        }
        let mut unread = 0;
        let mut affected = Vec::new();
        let mut severity = rating(&entry.database_specific, &entry.severity);
        for a in &entry.affected {
            if a.package.ecosystem != "Go" || a.package.name.is_empty() {
                continue;
            }
            if a.package.name == "toolchain" {
                continue;
            }
            if severity.is_none() {
                severity = rating(&a.database_specific, &a.severity);
            }
            let ranges = read_ranges(a.ranges.iter(), &mut unread);
            let custom = a
                .ecosystem_specific
                .get("custom_ranges")
                .and_then(|v| serde_json::from_value::<Vec<osv::Range>>(v.clone()).ok())
                .unwrap_or_default();
            affected.push(AffectedModule {
                module: a.package.name.clone(),
                ranges,
                versions: a.versions.clone(),
                custom_ranges: read_ranges(custom.iter(), &mut unread),
                imports: imports(&a.ecosystem_specific),
            });
        }
        if affected.is_empty() {
            return Taken::NotGo;
        }
        let specific = &entry.database_specific;
        let review = match (
            specific.get("review_status").and_then(|v| v.as_str()),
            specific
                .get("github_reviewed")
                .and_then(serde_json::Value::as_bool),
        ) {
            (Some("REVIEWED"), _) | (_, Some(true)) => Review::Reviewed,
            (Some("UNREVIEWED"), _) | (_, Some(false)) => Review::Unreviewed,
            _ => Review::Unknown,
        };
        let url = specific
            .get("url")
            .and_then(|v| v.as_str())
            .map(str::to_string)
            .or_else(|| {
                entry
                    .references
                    .iter()
                    .find(|r| r.kind == "ADVISORY")
                    .map(|r| r.url.clone())
            })
            .unwrap_or_default();
        let (severity, severity_from) = severity.unzip();
        Taken::Kept(
            Box::new(Advisory {
                id: entry.id,
                aliases: entry.aliases,
                summary: entry.summary,
                details: entry.details,
                details_cut: 0,
                modified: entry.modified,
                published: entry.published,
                severity,
                severity_from: severity_from.unwrap_or_default(),
                review,
                url,
                affected,
            }),
            unread,
        )
    }
}

/// Whether a count is 0 (what a field left out of the document means).
#[allow(clippy::trivially_copy_pass_by_ref)]
fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The `SEMVER` and `ECOSYSTEM` ranges whose every event reads; the
/// others are counted into `unread`.
fn read_ranges<'a>(
    ranges: impl Iterator<Item = &'a osv::Range>,
    unread: &mut usize,
) -> Vec<Vec<Event>> {
    let mut kept = Vec::new();
    for r in ranges {
        if r.kind != "SEMVER" && r.kind != "ECOSYSTEM" {
            *unread += 1;
            continue;
        }
        let events: Vec<Event> = r
            .events
            .iter()
            .filter_map(|e| {
                if !e.introduced.is_empty() {
                    Some(Event::Introduced(e.introduced.clone()))
                } else if !e.fixed.is_empty() {
                    Some(Event::Fixed(e.fixed.clone()))
                } else if !e.last_affected.is_empty() {
                    Some(Event::LastAffected(e.last_affected.clone()))
                } else if !e.limit.is_empty() {
                    Some(Event::Limit(e.limit.clone()))
                } else {
                    None
                }
            })
            .collect();
        if events.is_empty() || range::readable(&events).is_none() {
            *unread += 1;
        } else {
            kept.push(events);
        }
    }
    kept
}

/// The Go database's `ecosystem_specific.imports`.
fn imports(specific: &serde_json::Value) -> Vec<Import> {
    let strings = |v: Option<&serde_json::Value>| -> Vec<String> {
        v.and_then(|v| v.as_array())
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    specific
        .get("imports")
        .and_then(|v| v.as_array())
        .map(|list| {
            list.iter()
                .filter_map(|i| {
                    Some(Import {
                        path: i.get("path")?.as_str()?.to_string(),
                        symbols: strings(i.get("symbols")),
                        goos: strings(i.get("goos")),
                        goarch: strings(i.get("goarch")),
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The severity an entry (or one of its packages) carries: GitHub's
/// rating where given, else the worst CVSS v3 or v4 score's.
fn rating(specific: &serde_json::Value, scores: &[osv::Score]) -> Option<(Severity, String)> {
    if let Some(named) = specific.get("severity").and_then(|v| v.as_str()) {
        let severity = match named.to_ascii_uppercase().as_str() {
            "LOW" => Some(Severity::Low),
            "MODERATE" | "MEDIUM" => Some(Severity::Moderate),
            "HIGH" => Some(Severity::High),
            "CRITICAL" => Some(Severity::Critical),
            _ => None,
        };
        if let Some(s) = severity {
            return Some((s, format!("GitHub: {named}")));
        }
    }
    scores
        .iter()
        .filter_map(|s| {
            let rated = match s.kind.as_str() {
                "CVSS_V3" => cvss::v3::Vector::from_str(&s.score).ok()?.severity(),
                "CVSS_V4" => cvss::v4::Vector::from_str(&s.score)
                    .ok()?
                    .score()
                    .severity(),
                _ => return None,
            };
            let severity = match rated {
                cvss::Severity::None => return None,
                cvss::Severity::Low => Severity::Low,
                cvss::Severity::Medium => Severity::Moderate,
                cvss::Severity::High => Severity::High,
                cvss::Severity::Critical => Severity::Critical,
            };
            Some((severity, s.score.clone()))
        })
        .max_by_key(|(s, _)| *s)
}

/// Where an import came from and what it held.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Source {
    /// What was imported: `go-vulndb-zip`, `osv-zip`, `directory`.
    pub kind: String,
    /// Its name as given (a file name, a URL).
    pub name: String,
    /// Its SHA-256 (a zip's bytes; for a directory, of its entries' names
    /// and bytes in name order).
    pub sha256: String,
    /// Entries kept.
    pub entries: usize,
    /// The newest `modified` time among them.
    pub newest_modified: String,
    /// When it was imported (milliseconds since the Unix epoch).
    pub imported_at_ms: u64,
    /// The tfmirror version that imported it.
    pub imported_by: String,
    /// Withdrawn entries left out.
    pub withdrawn: usize,
    /// Entries of other ecosystems (or only the toolchain) left out.
    pub not_go: usize,
    /// Ranges left out as unreadable (`GIT`, versions that are no semver).
    pub ranges_not_read: usize,
    /// Entries that could not be read, with why (the first 20).
    pub refused: Vec<String>,
    /// How many entries could not be read.
    pub refused_count: usize,
}

/// The database document.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Stored {
    /// Its format.
    pub format: u32,
    /// The import that made it.
    pub source: Source,
    /// Its advisories, by ID.
    pub advisories: Vec<Advisory>,
}

/// One affected module of one advisory, its ranges read.
#[derive(Debug)]
pub struct Prepared {
    /// The advisory's place in the database.
    pub advisory: usize,
    /// The module's place in the advisory.
    pub affected: usize,
    /// Its ranges, read and sorted.
    pub ranges: Vec<Vec<(GoVersion, Event)>>,
    /// Its custom ranges, read and sorted.
    pub custom_ranges: Vec<Vec<(GoVersion, Event)>>,
    /// Its versions, read.
    pub versions: Vec<GoVersion>,
}

/// The database in memory: the advisories and, by module path, where
/// each affected module is.
#[derive(Debug)]
pub struct Database {
    /// The document.
    pub stored: Stored,
    /// By module path (`stdlib` too).
    pub by_module: HashMap<String, Vec<Prepared>>,
    /// For each advisory, the one ID of its group: advisories that name
    /// each other (a GO entry and its GHSA alias) are one.
    pub group: Vec<usize>,
    /// The symbols the advisories name, by package: what a binary's
    /// function table is searched for.
    pub wanted: crate::gobuild::Wanted,
}

impl Database {
    /// Indexes a document.
    pub fn new(stored: Stored) -> Database {
        let mut by_module: HashMap<String, Vec<Prepared>> = HashMap::new();
        let mut wanted = crate::gobuild::Wanted::default();
        for (i, advisory) in stored.advisories.iter().enumerate() {
            for (j, a) in advisory.affected.iter().enumerate() {
                for import in &a.imports {
                    wanted.ask(&import.path, &import.symbols);
                }
                let read = |ranges: &[Vec<Event>]| -> Vec<_> {
                    ranges.iter().filter_map(|r| range::readable(r)).collect()
                };
                by_module
                    .entry(a.module.clone())
                    .or_default()
                    .push(Prepared {
                        advisory: i,
                        affected: j,
                        ranges: read(&a.ranges),
                        custom_ranges: read(&a.custom_ranges),
                        versions: a
                            .versions
                            .iter()
                            .filter_map(|v| GoVersion::parse(v))
                            .collect(),
                    });
            }
        }
        let group = groups(&stored.advisories);
        Database {
            stored,
            by_module,
            group,
            wanted,
        }
    }
}

/// The root of `i` among linked advisories, halving paths on the way.
fn root(parent: &mut [usize], mut i: usize) -> usize {
    while parent[i] != i {
        parent[i] = parent[parent[i]];
        i = parent[i];
    }
    i
}

/// Each advisory's group: the least index among the advisories it is
/// linked to by an ID or alias, through any chain of them.
fn groups(advisories: &[Advisory]) -> Vec<usize> {
    let mut parent: Vec<usize> = (0..advisories.len()).collect();
    let mut first_with: HashMap<&str, usize> = HashMap::new();
    for (i, a) in advisories.iter().enumerate() {
        for name in std::iter::once(&a.id).chain(&a.aliases) {
            match first_with.get(name.as_str()) {
                Some(&j) => {
                    let (ri, rj) = (root(&mut parent, i), root(&mut parent, j));
                    parent[ri.max(rj)] = ri.min(rj);
                }
                None => {
                    first_with.insert(name, i);
                }
            }
        }
    }
    (0..advisories.len())
        .map(|i| root(&mut parent, i))
        .collect()
}

#[cfg(test)]
mod tests;
