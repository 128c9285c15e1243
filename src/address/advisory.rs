//! An advisory's ID as a path segment (`/-/advisories/GO-2023-2102`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{string_name, InvalidName};

/// An advisory's ID: `GO-2023-2102`, `GHSA-4374-p667-p6c8`, `CVE-2023-39325`.
/// ASCII letters, digits, `-`, `_`, `.` and `:`, at most 128 of them, not
/// starting with a dot. Kept as given: IDs are case-sensitive in OSV.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct AdvisoryId(String);
string_name!(AdvisoryId);

impl AdvisoryId {
    /// Checks an advisory ID.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let bad = |reason| Err(InvalidName::new("advisory ID", given, reason));
        if given.is_empty() || given.len() > 128 {
            return bad("must be 1 to 128 characters");
        }
        if given.starts_with('.') {
            return bad("must not start with a dot");
        }
        if !given
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
        {
            return bad("may hold only letters, digits, '-', '_', '.' and ':'");
        }
        Ok(AdvisoryId(given.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::AdvisoryId;

    #[test]
    fn ids_as_the_databases_write_them_and_nothing_else() {
        for id in [
            "GO-2023-2102",
            "GHSA-4374-p667-p6c8",
            "CVE-2023-39325",
            "PYSEC-2021-1",
        ] {
            assert_eq!(AdvisoryId::parse(id).unwrap().as_str(), id);
        }
        for bad in ["", "..", "../x", "GO 1", "GO/1", &"x".repeat(129), "é"] {
            assert!(AdvisoryId::parse(bad).is_err(), "{bad:?}");
        }
    }
}
