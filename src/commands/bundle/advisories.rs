//! The advisory database in a bundle (`tfmirror-bundle/advisories/database.json`,
//! right after the manifest): the database document the exporting store
//! keeps, named in the manifest by its SHA-256 and size. An import checks
//! both before it keeps it, and keeps it only when it is not older than
//! the one the site holds (by when each was imported). A bundle that
//! carries a database is of format 3; builds before it refuse it by name.

use std::io::Read;

use serde::{Deserialize, Serialize};

use super::staging::Imported;
use super::ROOT;
use crate::advisories::database::{Stored, DATABASE_FORMAT};
use crate::commands::store::CommandStore;

/// The largest database a bundle carries.
pub const MAX_DATABASE_BYTES: u64 = 512 << 20;

/// The entry's path.
pub fn entry_path() -> String {
    format!("{ROOT}/advisories/database.json")
}

/// The manifest's word on the database a bundle carries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestAdvisories {
    /// The SHA-256 of the entry's bytes.
    pub sha256: String,
    /// Their size.
    pub size: u64,
    /// Advisories in it.
    pub entries: usize,
    /// Where it was imported from on the exporting side.
    pub source: String,
}

/// The kept database's document and the manifest's word on it; `None`
/// when the store keeps none.
pub fn for_export(store: &CommandStore) -> anyhow::Result<Option<(Vec<u8>, ManifestAdvisories)>> {
    use crate::store::advisories;
    let Some(current) = store.wait(advisories::current(store.store()))? else {
        return Ok(None);
    };
    let Some(stored) = store.wait(advisories::database(store.store(), &current))? else {
        anyhow::bail!(
            "the advisory database in {} does not match its pointer (an import under way?); export again",
            store.location()
        );
    };
    let bytes = serde_json::to_vec(&stored)?;
    let named = ManifestAdvisories {
        sha256: crate::verify::hex(&crate::verify::Sha256::digest(&bytes)),
        size: bytes.len() as u64,
        entries: stored.source.entries,
        source: stored.source.name.clone(),
    };
    Ok(Some((bytes, named)))
}

/// Reads and checks the entry against the manifest; the database, or why
/// it is refused.
pub fn read(named: Option<&ManifestAdvisories>, entry: &mut impl Read) -> Result<Stored, String> {
    let named = named.ok_or("the manifest names no advisory database")?;
    if named.size > MAX_DATABASE_BYTES {
        return Err(format!("larger than {MAX_DATABASE_BYTES} bytes"));
    }
    let mut bytes = Vec::new();
    entry
        .take(named.size + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("reading it from the bundle failed: {e}"))?;
    super::staging::as_named(&bytes, named.size, &named.sha256)?;
    let mut stored: Stored =
        serde_json::from_slice(&bytes).map_err(|e| format!("it is not a database: {e}"))?;
    drop(bytes);
    if stored.format > DATABASE_FORMAT {
        return Err(format!(
            "it is of format {}; this build reads formats up to {DATABASE_FORMAT}",
            stored.format
        ));
    }
    crate::advisories::bounds::bound_stored(&mut stored)?;
    Ok(stored)
}

/// Keeps a checked database unless the site's is newer; says what it did.
pub fn keep(store: &CommandStore, stored: &Stored, report: &mut Imported) {
    use crate::store::advisories;
    let item = "the advisory database".to_string();
    let theirs = match store.wait(advisories::current(store.store())) {
        Ok(current) => current,
        Err(e) => {
            report
                .rejected
                .push((item, format!("reading the site's failed: {e}")));
            return;
        }
    };
    if let Some(theirs) = theirs.filter(|t| t.source.imported_at_ms > stored.source.imported_at_ms)
    {
        report.advisories = Some(format!(
            "the site's advisory database (imported from {}) is newer than the bundle's: kept",
            theirs.source.name
        ));
        return;
    }
    match store.wait(advisories::write(store.store(), stored)) {
        Ok(_) => {
            report.advisories = Some(format!(
                "advisory database of {} advisories (from {}) kept",
                stored.source.entries, stored.source.name
            ));
        }
        Err(e) => report
            .rejected
            .push((item, format!("keeping it failed: {e}"))),
    }
}
