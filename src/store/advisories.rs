//! The advisory database in the store ([`crate::advisories`]): the
//! database document at `advisories/database.json`, and beside it
//! `advisories/current.json`, which names the import and the database
//! document's SHA-256. Instances look at the small one every few seconds
//! and read the database again only when it names another.
//!
//! An import writes the database first and the pointer after it, so a
//! reader never takes a database the pointer does not vouch for: one read
//! between the two writes finds the old pointer's checksum unmet, keeps
//! what it holds, and looks again.

use crate::verify::Sha256;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::advisories::database::{Source, Stored, DATABASE_FORMAT};

const DATABASE: [&str; 2] = ["advisories", "database.json"];
const CURRENT: [&str; 2] = ["advisories", "current.json"];

/// What `advisories/current.json` says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Current {
    /// The database document's format.
    pub format: u32,
    /// The SHA-256 of the database document's bytes.
    pub sha256: String,
    /// The import.
    pub source: Source,
}

/// Keeps a database, replacing the one kept before.
pub async fn write(store: &dyn Store, stored: &Stored) -> Result<Current, StoreError> {
    let bytes = serde_json::to_vec(stored).map_err(std::io::Error::other)?;
    let current = Current {
        format: DATABASE_FORMAT,
        sha256: hex::encode(Sha256::digest(&bytes)),
        source: stored.source.clone(),
    };
    store.write_document(&DATABASE, bytes).await?;
    let pointer = serde_json::to_vec(&current).map_err(std::io::Error::other)?;
    store.write_document(&CURRENT, pointer).await?;
    Ok(current)
}

/// The pointer to the kept database, if one is kept.
pub async fn current(store: &dyn Store) -> Result<Option<Current>, StoreError> {
    let Some(bytes) = store.read_document(&CURRENT).await? else {
        return Ok(None);
    };
    let current: Current = serde_json::from_slice(&bytes).map_err(|e| StoreError::Corrupt {
        what: "advisory database pointer",
        reason: e.to_string(),
    })?;
    if current.format > DATABASE_FORMAT {
        return Err(StoreError::Corrupt {
            what: "advisory database pointer",
            reason: format!(
                "the database is of format {}; this build reads formats up to {DATABASE_FORMAT}",
                current.format
            ),
        });
    }
    Ok(Some(current))
}

/// The database `current` names; `None` when the kept document is not
/// (or no longer, or not yet) the one it names.
pub async fn database(store: &dyn Store, current: &Current) -> Result<Option<Stored>, StoreError> {
    let Some(bytes) = store.read_document(&DATABASE).await? else {
        return Ok(None);
    };
    if hex::encode(Sha256::digest(&bytes)) != current.sha256 {
        return Ok(None);
    }
    let corrupt = |reason: String| StoreError::Corrupt {
        what: "advisory database",
        reason,
    };
    let mut stored: Stored = serde_json::from_slice(&bytes).map_err(|e| corrupt(e.to_string()))?;
    drop(bytes);
    // One kept by an earlier build is held to this build's bounds.
    crate::advisories::bounds::bound_stored(&mut stored).map_err(corrupt)?;
    Ok(Some(stored))
}
