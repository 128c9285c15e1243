//! OSV entries as they are published (schema 1.x): by the Go
//! vulnerability database, by osv.dev, and by GitHub's advisory database.
//! Read leniently, as the data's own tools read it: unknown fields are
//! passed over, `null` and absent fields are the empty value, and the
//! open-ended `database_specific` and `ecosystem_specific` objects are
//! taken as any JSON at all and looked into only for what is used.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// `null` or absent read as the type's empty value.
fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// One OSV entry.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Entry {
    /// Its ID (`GO-2023-2102`, `GHSA-4374-p667-p6c8`).
    #[serde(default, deserialize_with = "nullable")]
    pub id: String,
    /// When it last changed (RFC 3339).
    #[serde(default, deserialize_with = "nullable")]
    pub modified: String,
    /// When it was published.
    #[serde(default, deserialize_with = "nullable")]
    pub published: String,
    /// When it was withdrawn; empty while it stands.
    #[serde(default, deserialize_with = "nullable")]
    pub withdrawn: String,
    /// Other IDs of the same advisory (CVE, GHSA, GO).
    #[serde(default, deserialize_with = "nullable")]
    pub aliases: Vec<String>,
    /// One line.
    #[serde(default, deserialize_with = "nullable")]
    pub summary: String,
    /// Markdown, untrusted.
    #[serde(default, deserialize_with = "nullable")]
    pub details: String,
    /// Scores (`CVSS_V3`, `CVSS_V4`, …).
    #[serde(default, deserialize_with = "nullable")]
    pub severity: Vec<Score>,
    /// What it affects.
    #[serde(default, deserialize_with = "nullable")]
    pub affected: Vec<Affected>,
    /// Links.
    #[serde(default, deserialize_with = "nullable")]
    pub references: Vec<Reference>,
    /// The publishing database's own fields (`review_status`, `url`,
    /// GitHub's `severity` and `github_reviewed`).
    #[serde(default)]
    pub database_specific: Value,
}

/// A score.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Score {
    /// `CVSS_V2`, `CVSS_V3`, `CVSS_V4`, `Ubuntu`, …
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    /// The vector or the rating.
    #[serde(default, deserialize_with = "nullable")]
    pub score: String,
}

/// A link.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Reference {
    /// `ADVISORY`, `FIX`, `REPORT`, `WEB`, …
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    /// Where.
    #[serde(default, deserialize_with = "nullable")]
    pub url: String,
}

/// One affected package and its versions.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Affected {
    /// The package.
    #[serde(default, deserialize_with = "nullable")]
    pub package: Package,
    /// Version ranges.
    #[serde(default, deserialize_with = "nullable")]
    pub ranges: Vec<Range>,
    /// Versions named one by one.
    #[serde(default, deserialize_with = "nullable")]
    pub versions: Vec<String>,
    /// Per-package scores (OSV 1.5).
    #[serde(default, deserialize_with = "nullable")]
    pub severity: Vec<Score>,
    /// The ecosystem's own fields: the Go database's `imports` (packages
    /// and symbols) and `custom_ranges`.
    #[serde(default)]
    pub ecosystem_specific: Value,
    /// The database's own fields.
    #[serde(default)]
    pub database_specific: Value,
}

/// A package.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Package {
    /// `Go` for Go modules.
    #[serde(default, deserialize_with = "nullable")]
    pub ecosystem: String,
    /// The module path, `stdlib` or `toolchain`.
    #[serde(default, deserialize_with = "nullable")]
    pub name: String,
}

/// A range of versions, as events.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Range {
    /// `SEMVER`, `ECOSYSTEM` or `GIT`.
    #[serde(default, rename = "type", deserialize_with = "nullable")]
    pub kind: String,
    /// Its events, in any order.
    #[serde(default, deserialize_with = "nullable")]
    pub events: Vec<Event>,
}

/// One event of a range: exactly one of its fields is set.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Event {
    /// Affected from this version on.
    #[serde(default, deserialize_with = "nullable")]
    pub introduced: String,
    /// Not affected from this version on.
    #[serde(default, deserialize_with = "nullable")]
    pub fixed: String,
    /// Affected up to and including this version.
    #[serde(default, deserialize_with = "nullable")]
    pub last_affected: String,
    /// Nothing at or past this version is described.
    #[serde(default, deserialize_with = "nullable")]
    pub limit: String,
}

impl Entry {
    /// Reads an entry from JSON; the error names what was wrong.
    pub fn from_json(bytes: &[u8]) -> Result<Entry, String> {
        let entry: Entry = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        if entry.id.is_empty() {
            return Err("it has no \"id\"".into());
        }
        crate::address::AdvisoryId::parse(&entry.id)
            .map_err(|e| format!("its \"id\" is not an advisory ID: {e}"))?;
        Ok(entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nulls_absent_and_unknown_fields_read_as_the_empty_value() {
        let entry = Entry::from_json(
            br#"{"id":"GO-2099-0001","aliases":null,"summary":null,"future_field":{"x":1},
                "affected":[{"package":{"name":"example.com/m","ecosystem":"Go","purl":null},
                "ranges":null,"versions":["1.0.0"],"ecosystem_specific":null,
                "severity":[{"type":"CVSS_V3","score":null}]}],
                "database_specific":"any shape at all"}"#,
        )
        .expect("reads");
        assert!(entry.aliases.is_empty() && entry.summary.is_empty());
        assert_eq!(entry.affected[0].package.name, "example.com/m");
        assert!(entry.affected[0].ranges.is_empty());
        assert_eq!(entry.affected[0].severity[0].score, "");
    }

    #[test]
    fn an_entry_without_a_usable_id_is_refused_by_name() {
        assert!(Entry::from_json(br#"{"summary":"x"}"#)
            .unwrap_err()
            .contains("no \"id\""));
        assert!(Entry::from_json(br#"{"id":"../../etc/passwd"}"#)
            .unwrap_err()
            .contains("is not an advisory ID"));
        assert!(Entry::from_json(b"[1,2]").is_err());
        assert!(Entry::from_json(br#"{"id":"GO-1","affected":{"not":"a list"}}"#).is_err());
    }
}
