//! Format versions: what the cache, bundles and inventories say they are,
//! so that a build never misreads what a newer one wrote.
//!
//! The cache (a directory or a bucket prefix) keeps `tfmirror-cache.json`
//! at its root:
//!
//! ```json
//! { "format": 1, "written_by": "0.1.0" }
//! ```
//!
//! A build reads every cache format up to its own ([`CACHE_FORMAT`]) and
//! refuses a newer one before it reads or writes anything else, naming
//! both versions. A cache without a marker was made before caches carried
//! one; its layout is format 1's, and the first build that opens it
//! writes the marker. Bundles and inventories carry their format in their
//! own documents and are checked the same way ([`check_readable`]).
//!
//! A format goes up whenever a build of the previous format would refuse
//! or misread what the new one writes (docs/upgrading.md).

use std::fmt;
use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use super::{Store, StoreError};

/// The cache format this build writes, and the newest it reads.
pub const CACHE_FORMAT: u32 = 1;

/// The cache formats this build reads.
pub const CACHE_FORMATS: RangeInclusive<u32> = 1..=CACHE_FORMAT;

/// The marker's name at the cache's root.
pub const MARKER: &str = "tfmirror-cache.json";

/// This build's version, as markers and manifests record it.
pub const THIS_VERSION: &str = env!("CARGO_PKG_VERSION");

/// `tfmirror-cache.json`. Unknown fields are read past, so that every
/// later build can add to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Marker {
    /// The cache's format.
    pub format: u32,
    /// The tfmirror version that wrote the marker.
    #[serde(default)]
    pub written_by: Option<String>,
}

/// A document in a format newer than this build reads.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct Newer {
    /// What it is, for people: `the cache at /var/cache/tfmirror`,
    /// `bundle site.tar`.
    pub what: String,
    /// Its kind of format: `cache`, `bundle`, `inventory`.
    pub kind: &'static str,
    /// Its format.
    pub found: u32,
    /// The tfmirror version that wrote it, when it says.
    pub written_by: Option<String>,
    /// The formats this build reads.
    pub reads: RangeInclusive<u32>,
}

impl fmt::Display for Newer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (what, kind, found) = (&self.what, self.kind, self.found);
        let by = match &self.written_by {
            Some(v) => format!(", written by tfmirror {v}"),
            None => String::new(),
        };
        let (low, high) = (self.reads.start(), self.reads.end());
        let reads = if low == high {
            format!("{kind} format {high}")
        } else {
            format!("{kind} formats {low} to {high}")
        };
        let newer = match &self.written_by {
            Some(v) => format!("tfmirror {v} or newer"),
            None => "a newer tfmirror".to_owned(),
        };
        write!(
            f,
            "{what} is in {kind} format {found}{by}; this tfmirror ({THIS_VERSION}) reads {reads}: use {newer} with it (docs/upgrading.md)"
        )
    }
}

/// Refuses a document whose format this build does not read: a newer one
/// with [`Newer`]'s message, and one older than any format (0) as invalid.
pub fn check_readable(
    what: impl Into<String>,
    kind: &'static str,
    found: u32,
    written_by: Option<String>,
    reads: RangeInclusive<u32>,
) -> Result<(), String> {
    if reads.contains(&found) {
        return Ok(());
    }
    let what = what.into();
    if found < *reads.start() {
        return Err(format!(
            "{what} says {kind} format {found}, which no tfmirror writes"
        ));
    }
    Err(Newer {
        what,
        kind,
        found,
        written_by,
        reads,
    }
    .to_string())
}

/// Why a cache cannot be used by this build.
#[derive(Debug, thiserror::Error)]
pub enum FormatError {
    /// A newer build wrote it.
    #[error("{0}")]
    Newer(String),
    /// Its marker cannot be read.
    #[error("{location}: {MARKER} is not readable ({reason}); move it aside only if this cache was never opened by another tfmirror version")]
    Unreadable {
        /// Where the cache is.
        location: String,
        /// What is wrong.
        reason: String,
    },
    /// The store could not be read.
    #[error("{0}")]
    Store(#[from] StoreError),
}

/// Reads the cache's marker and refuses a cache this build does not read;
/// a cache without one is marked as this build's format. Every command
/// and the daemon call it before using a store. Returns the cache's
/// format.
pub async fn open_cache(store: &dyn Store) -> Result<u32, FormatError> {
    let location = store.location();
    let Some(bytes) = store.read_document(&[MARKER]).await? else {
        let marker = Marker {
            format: CACHE_FORMAT,
            written_by: Some(THIS_VERSION.to_owned()),
        };
        let bytes = serde_json::to_vec_pretty(&marker).expect("a marker serialises");
        // A cache that cannot be written is still served (the daemon says
        // so on its readiness page); it is marked by the next build that
        // can write it.
        if let Err(e) = store.write_document(&[MARKER], bytes).await {
            tracing::warn!(cache = %location, error = %e, "could not mark the cache with its format");
        }
        return Ok(CACHE_FORMAT);
    };
    let marker: Marker = serde_json::from_slice(&bytes).map_err(|e| FormatError::Unreadable {
        location: location.clone(),
        reason: e.to_string(),
    })?;
    check_readable(
        format!("the cache at {location}"),
        "cache",
        marker.format,
        marker.written_by,
        CACHE_FORMATS,
    )
    .map_err(FormatError::Newer)?;
    Ok(marker.format)
}

#[cfg(test)]
mod tests;
