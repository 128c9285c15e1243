//! What is not known of a binary's advisories, and why: a binary the
//! mirror read but whose advisories it cannot tell is never shown, counted
//! or ruled on as one that falls under none.
//!
//! "No Go build information" is not known, not "Go advisories do not
//! apply": a Go program that was packed or damaged carries none either,
//! and a provider that is not a Go program is rare enough that the
//! operator says so (`unknown = "allow"` on a rule) rather than the
//! mirror guessing.

use serde::{Deserialize, Serialize};

use super::Finding;

/// Why the advisories of one executable are not, or not wholly, known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum Unknown {
    /// No Go build information was found in it: not a Go program, or a Go
    /// program packed or built without it.
    NoGoBuild {
        /// The executable's name in the archive.
        executable: String,
        /// What the reader found instead.
        detail: String,
    },
    /// Its build information could not be read (damaged, or lying about
    /// its sizes).
    Unreadable {
        /// The executable's name in the archive.
        executable: String,
        /// Why.
        error: String,
    },
    /// Its toolchain names itself in a way Go's tools do not read either:
    /// the standard library's advisories are not known (its modules' still
    /// are).
    Toolchain {
        /// The executable's name in the archive.
        executable: String,
        /// The toolchain's name of itself, as the binary gives it.
        go_version: String,
    },
}

impl Unknown {
    /// In a few words.
    pub fn describe(&self) -> String {
        match self {
            Unknown::NoGoBuild { executable, detail } => {
                format!("{executable} has no Go build information ({detail})")
            }
            Unknown::Unreadable { executable, error } => {
                format!("{executable}'s build information could not be read: {error}")
            }
            Unknown::Toolchain {
                executable,
                go_version,
            } => format!(
                "{executable}'s toolchain {go_version:?} is not a Go version: its standard library's advisories are not known"
            ),
        }
    }
}

/// What one platform's binaries come to against the database: the
/// findings, and what could not be told.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reading {
    /// The advisories found.
    pub findings: Vec<Finding>,
    /// What is not known, per executable.
    pub unknown: Vec<Unknown>,
}
