//! Importing provider versions from a bundle: each record must be the one
//! its path names and verify under this site's trust policy, agree with
//! what this cache holds and with its keyless pins; each archive must
//! match its verified checksum before it is kept.

use std::collections::BTreeMap;
use std::io::Read;

use super::staging::stage;
use super::{Manifest, ROOT};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::clock::{Clock, SystemClock};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::store::VersionRecord;
use crate::verify::TrustPolicy;

/// Keeps in the version lists when the exporting mirror first saw each
/// imported version (the manifest's `first_seen_ms`), so that this site's
/// cooldown counts from the same time; a time this cache has already is
/// kept.
pub(super) async fn keep_first_seen(
    store: &CommandStore,
    manifest: &Manifest,
    verified: &BTreeMap<(Provider, Version), VersionRecord>,
) -> Result<(), crate::store::StoreError> {
    let mut by_provider: BTreeMap<&Provider, Vec<(&Version, u64)>> = BTreeMap::new();
    for mv in &manifest.versions {
        if let Some(seen) = mv.first_seen_ms {
            if verified.contains_key(&(mv.provider.clone(), mv.version.clone())) {
                by_provider
                    .entry(&mv.provider)
                    .or_default()
                    .push((&mv.version, seen));
            }
        }
    }
    for (provider, seen) in by_provider {
        let Some(mut list) = store.store().read_index(provider).await? else {
            continue;
        };
        let before = list.first_seen_ms.len();
        for (version, at) in seen {
            list.first_seen_ms.entry(version.clone()).or_insert(at);
        }
        if list.first_seen_ms.len() != before {
            store.store().write_index(provider, &list).await?;
        }
    }
    Ok(())
}

/// Stores a verified record (after a keyless version's pin) unless the
/// cache holds a signed one for the version already; `true` when it wrote
/// it.
pub(super) async fn store_record(
    store: &CommandStore,
    record: &VersionRecord,
) -> Result<bool, crate::store::StoreError> {
    let held = store
        .store()
        .read_version(&record.provider, &record.version)
        .await?;
    crate::commands::keyless::keep_pin(store, record, SystemClock.unix_ms()).await?;
    if held.is_none_or(|h| h.unsigned_import) {
        store.store().write_version(record).await?;
        return Ok(true);
    }
    Ok(false)
}

/// Clears the origin-reported `h1:` of `platforms` in the stored record of
/// `provider` `version`, which the archives imported for them contradict.
pub(super) async fn drop_reported_h1(
    store: &CommandStore,
    provider: &Provider,
    version: &Version,
    platforms: &[Platform],
) -> Result<(), crate::store::StoreError> {
    let Some(mut stored) = store.store().read_version(provider, version).await? else {
        return Ok(());
    };
    let mut changed = false;
    for platform in platforms {
        if let Some(pkg) = stored.packages.get_mut(platform) {
            changed |= pkg.reported_h1.take().is_some();
        }
    }
    if changed {
        store.store().write_version(&stored).await?;
    }
    Ok(())
}

/// Splits `tfmirror-bundle/providers/<host>/<ns>/<type>/<version>/<leaf>`
/// into validated parts; anything else (traversal included) is `None`.
pub(super) fn parse_entry_path(path: &str) -> Option<(Provider, Version, String)> {
    let rest = path.strip_prefix(ROOT)?.strip_prefix("/providers/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    // A file of the version's, or one of its documentation pages
    // (`docs/<sha256>.md`).
    let (host, ns, kind, version, leaf) = match parts.as_slice() {
        [host, ns, kind, version, leaf] => (host, ns, kind, version, (*leaf).to_owned()),
        [host, ns, kind, version, "docs", page] => {
            (host, ns, kind, version, format!("docs/{page}"))
        }
        _ => return None,
    };
    let provider = Provider::from_source(&format!("{host}/{ns}/{kind}")).ok()?;
    // The names must already be in their normal form: one spelling only.
    if provider.to_string() != format!("{host}/{ns}/{kind}") {
        return None;
    }
    let version = Version::parse(version).ok()?;
    if version.as_str() != parts[3] {
        return None;
    }
    Some((provider, version, leaf))
}

/// A bundle's record must be the one its path names, and its evidence must
/// verify here, under this site's trust policy.
pub(super) fn check_imported_record(
    trust: &TrustPolicy,
    provider: &Provider,
    version: &Version,
    record: VersionRecord,
) -> Result<VersionRecord, Refusal> {
    if record.provider != *provider || record.version != *version {
        return Err(format!(
            "its record is for {} {} instead",
            record.provider, record.version
        )
        .into());
    }
    crate::store::evidence::check_record(trust, &record)?;
    Ok(record)
}

/// A signed record the cache already holds for the version wins; the
/// bundle's must then name the same checksums for the platforms both list.
pub(super) fn agrees_with_cache(
    store: &CommandStore,
    record: VersionRecord,
) -> Result<VersionRecord, Refusal> {
    let held = store
        .wait(
            store
                .store()
                .read_version(&record.provider, &record.version),
        )
        .map_err(|e| format!("the record this cache holds cannot be read: {e}"))?;
    let Some(held) = held else {
        return Ok(record);
    };
    if held.unsigned_import {
        return Ok(record);
    }
    for (platform, pkg) in &record.packages {
        if held
            .packages
            .get(platform)
            .is_some_and(|h| h.sha256 != pkg.sha256)
        {
            return Err(format!(
                "{platform}: its checksum {} differs from the {} of the record this cache holds",
                pkg.sha256, held.packages[platform].sha256
            )
            .into());
        }
    }
    Ok(record)
}

/// Streams one archive into a staging file while hashing it; keeps it only
/// when its SHA-256 is the verified one. Returns whether it was stored now
/// (`false` when the cache held it already) and its `h1:` hash.
pub(super) fn import_archive(
    store: &CommandStore,
    record: &VersionRecord,
    platform: &Platform,
    entry: &mut impl Read,
) -> Result<(bool, String), Refusal> {
    let pkg = record
        .packages
        .get(platform)
        .ok_or_else(|| format!("its version's record has no package for {platform}"))?;
    let key = ArchiveKey::new(&record.provider, &record.version, platform);
    let held = store
        .wait(store.store().archive(&key))
        .map_err(|e| format!("the cache cannot be read: {e}"))?;
    if let Some(held) = held {
        return Ok((false, held.h1));
    }
    let (temp_path, actual) = stage(store, entry)?;
    if actual != pkg.sha256 {
        return Err(format!(
            "its SHA-256 {actual} does not match the signed SHA256SUMS ({})",
            pkg.sha256
        )
        .into());
    }
    if crate::commands::keyless::is_keyless(record) {
        let size = std::fs::metadata(&temp_path)
            .map_err(|e| e.to_string())?
            .len();
        let h1 = crate::store::h1_of_file(&temp_path).map_err(|e| e.to_string())?;
        crate::commands::keyless::check_archive(store, record, platform, (size, h1))?;
    }
    // The build record is read here, from the archive just checked, not
    // taken from the bundle: it is the archive's own word.
    let build = build_record(&key, &pkg.sha256, &temp_path);
    let kept = store
        .wait(store.store().keep_archive(temp_path, &key))
        .map_err(|e| Refusal::from(e.to_string()))?;
    if let Some(build) = build {
        if let Err(e) = store.wait(crate::store::builds::write(store.store(), &build)) {
            tracing::warn!(archive = %key, error = %e, "could not keep a build record; it is read again when next asked for");
        }
    }
    Ok((true, kept.h1))
}

/// The build record of a staged archive whose SHA-256 was checked.
fn build_record(
    key: &ArchiveKey,
    sha256: &str,
    staged: &std::path::Path,
) -> Option<crate::store::builds::BuildRecord> {
    let file = std::fs::File::open(staged).ok()?;
    let scratch = staged.parent()?;
    let now = crate::clock::unix_ms_of(std::time::SystemTime::now());
    // Without the site's database's symbols: the mirror and `verify`
    // look for them where the site's database names any.
    Some(crate::store::builds::BuildRecord::from_archive(
        key,
        sha256,
        file,
        &crate::store::builds::Unpacking {
            scratch,
            max_size: crate::gobuild::MAX_EXECUTABLE_SIZE,
            read_at_ms: now,
            wanted: &crate::gobuild::Wanted::default(),
        },
    ))
}
