//! What importing a bundle shares between its parts (provider versions,
//! modules, CLI releases): the report, reading a small entry whole, and
//! staging a large one on this host's disk while it is hashed.

use std::io::{self, Read};

use super::MAX_RECORD_BYTES;
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::store::atomic;

/// What an import did, item by item.
#[derive(Debug, Default)]
pub struct Imported {
    /// Versions whose records were verified (new or already cached).
    pub versions: usize,
    /// Archives verified and stored.
    pub archives: usize,
    /// Archives and module packages that were cached already.
    pub unchanged: usize,
    /// Module packages that matched their pins (new or already cached).
    pub modules: usize,
    /// CLI releases whose records were verified (new or already cached).
    pub releases: usize,
    /// Items refused, with the reason.
    pub rejected: Vec<(String, String)>,
    /// Provider versions imported and then refused by a rule by advisory
    /// once their binaries were read, with the reason: kept in the cache,
    /// not served.
    pub refused: Vec<(String, String)>,
    /// What a delta builds on (the manifest's `covers`, beyond what it
    /// carries) that this site does not hold.
    pub not_held: Vec<String>,
    /// What became of the advisory database the bundle carried, if any.
    pub advisories: Option<String>,
    /// Versions whose documentation was kept from the bundle.
    pub docs: usize,
    /// Versions whose documentation the bundle carried and the site
    /// kept already, as fetched at the same time or later.
    pub docs_unchanged: usize,
}

/// Reads a small entry whole.
pub fn read_small(entry: &mut impl Read) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    entry.take(MAX_RECORD_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return Err(io::Error::other("larger than 8 MiB"));
    }
    Ok(bytes)
}

/// Checks an entry's bytes against the size and SHA-256 the manifest
/// names for it.
pub fn as_named(bytes: &[u8], size: u64, sha256: &str) -> Result<(), String> {
    let sha = crate::verify::hex(&crate::verify::Sha256::digest(bytes));
    if bytes.len() as u64 != size || sha != sha256 {
        return Err(format!(
            "its {} bytes (SHA-256 {sha}) are not the {size} bytes (SHA-256 {sha256}) the manifest names",
            bytes.len()
        ));
    }
    Ok(())
}

/// Copies an entry into a staging file of the store while hashing it.
/// Returns the file and its SHA-256.
pub fn stage(
    store: &CommandStore,
    entry: &mut impl Read,
) -> Result<(tempfile::TempPath, String), Refusal> {
    let staging = store.store().staging_file().map_err(|e| e.to_string())?;
    atomic::copy_hashed_into(entry, staging, store.room()).map_err(|e| {
        Refusal::from(match e {
            atomic::CopyError::Read(e) => format!("reading it from the bundle failed: {e}"),
            e => e.to_string(),
        })
    })
}
