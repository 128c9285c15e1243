//! Keyless provider versions in the commands that move and check the
//! cache (`import`, `verify`). Across the gap, a bundle's keyless record is
//! accepted only where this site opts in for its host (checked with the
//! site's trust policy, like any record), must agree with the pin this
//! site holds for the version (unless a re-pin was approved here), and
//! each of its archives must match every size and hash its record and
//! the pin hold. The pin is kept with the record, so the site holds the
//! version to it from then on. `verify` holds each stored keyless record
//! and archive to the pin the same way.

use crate::address::Platform;
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::store::pins::{self, Settled};
use crate::store::{PinnedPackage, StoreError, VersionRecord};
use crate::verify::Verification;

/// Whether a record is of a keyless version.
pub(crate) fn is_keyless(record: &VersionRecord) -> bool {
    record.verification() == Verification::Keyless
}

/// A keyless record must agree with this site's pin for its version.
pub(crate) fn agrees_with_pin(
    store: &CommandStore,
    record: VersionRecord,
) -> Result<VersionRecord, Refusal> {
    if !is_keyless(&record) {
        return Ok(record);
    }
    let Some(seen) = pins::of_record(&record, 0) else {
        return Ok(record);
    };
    let held = store
        .wait(pins::read(store.store(), &record.provider, &record.version))
        .map_err(|e| format!("the keyless pin this site holds cannot be read: {e}"))?;
    pins::settle(held, seen).map_err(|m| Refusal::from(m.to_string()))?;
    Ok(record)
}

/// A keyless version's archive, of `size` bytes and hash `h1`, must match
/// the size and `h1:` its record and this site's pin hold.
pub(crate) fn check_archive(
    store: &CommandStore,
    record: &VersionRecord,
    platform: &Platform,
    (size, h1): (u64, String),
) -> Result<(), Refusal> {
    if !is_keyless(record) {
        return Ok(());
    }
    let Some(pkg) = record.packages.get(platform) else {
        return Ok(());
    };
    let now = PinnedPackage {
        filename: pkg.filename.clone(),
        sha256: pkg.sha256.clone(),
        size: Some(size),
        h1: Some(h1),
    };
    let reported = PinnedPackage {
        size: pkg.size,
        h1: pkg.reported_h1.clone(),
        ..now.clone()
    };
    let pinned = store
        .wait(pins::read(store.store(), &record.provider, &record.version))
        .map_err(|e| format!("the keyless pin this site holds cannot be read: {e}"))?
        .and_then(|p| p.packages.get(platform).cloned());
    for was in pinned.iter().chain([&reported]) {
        pins::check_package(platform, was, &now).map_err(|what| format!("keyless, and {what}"))?;
    }
    Ok(())
}

/// Keeps (or extends, or re-pins) this site's pin for a keyless record
/// that was imported.
pub(crate) async fn keep_pin(
    store: &CommandStore,
    record: &VersionRecord,
    now_ms: u64,
) -> Result<(), StoreError> {
    if !is_keyless(record) {
        return Ok(());
    }
    let Some(seen) = pins::of_record(record, now_ms) else {
        return Ok(());
    };
    let held = pins::read(store.store(), &record.provider, &record.version).await?;
    match pins::settle(held, seen) {
        Ok(Settled::Same(_)) => Ok(()),
        Ok(settled) => pins::write(store.store(), settled.pin()).await,
        // Checked before anything of the version was kept.
        Err(m) => Err(StoreError::Corrupt {
            what: "keyless pin",
            reason: m.to_string(),
        }),
    }
}
