//! Reading a bundle in one pass, verifying every record and archive
//! before it enters the cache, and checking every module package against
//! its pin (and against the pin this cache holds, if any).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::BufReader;
use std::path::Path;

use anyhow::Context;

use super::import_modules::{parse_module_path, Modules};
use super::import_providers::{
    agrees_with_cache, check_imported_record, drop_reported_h1, import_archive, keep_first_seen,
    parse_entry_path, store_record,
};
use super::staging::{read_small, Imported};
use super::{Manifest, ROOT};
use crate::address::{ArchiveKey, Module, Platform, Provider, Version};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::policy::{Gate, Subject};
use crate::store::VersionRecord;
use crate::verify::TrustPolicy;

/// What an import checks a bundle against: this site's trust in provider
/// signing keys, its policy, its `[releases]` sources (with their keys),
/// and the cap on a module package's unpacked size.
pub struct Checks {
    /// Which provider signing keys this site trusts.
    pub trust: TrustPolicy,
    /// This site's policy.
    pub policy: Gate,
    /// The CLI release products this site serves, with their keys.
    pub releases: Vec<crate::releases::Source>,
    /// The most a module package may unpack to.
    pub max_unpacked: u64,
}

/// Imports a bundle into the cache, whichever backend holds it. Versions
/// this site's `policy` denies are refused and reported. Every
/// record's signatures are checked under `trust` and every archive's
/// SHA-256 against its verified record before it is stored; an item that
/// fails is reported and left out, and nothing already cached is replaced.
/// Module packages unpack to at most `max_unpacked` bytes when their tree
/// is checked. A CLI release's record must verify with this site's
/// `[releases]` keys, and each of its files must match the signed
/// checksum. Each archive and package is staged on this host's disk only
/// while it is checked, one at a time.
pub fn import(store: &CommandStore, checks: Checks, bundle: &Path) -> anyhow::Result<Imported> {
    let Checks {
        trust,
        policy,
        releases,
        max_unpacked,
    } = checks;
    let (trust, policy) = (&trust, &policy);
    let file = File::open(bundle).with_context(|| format!("opening {}", bundle.display()))?;
    let mut tar = tar::Archive::new(BufReader::new(file));
    let mut report = Imported::default();
    let mut manifest: Option<Manifest> = None;
    // The advisory database the bundle carries, checked, kept at the end.
    let mut database = None;
    // Verified records of this bundle, and which archives were seen.
    let mut verified: BTreeMap<(Provider, Version), VersionRecord> = BTreeMap::new();
    let mut seen: BTreeSet<(Provider, Version, Platform)> = BTreeSet::new();
    // The platforms whose archives the cache holds now, by provider and
    // version, for its version lists.
    let mut held: BTreeMap<Provider, BTreeMap<Version, Vec<Platform>>> = BTreeMap::new();
    // Origin-reported h1: hashes the imported archives contradict.
    let mut contradicted: Vec<(Provider, Version, Platform)> = Vec::new();
    // Records stored before their version's first archive, so that an
    // import killed midway never leaves an archive without its record;
    // `true` where this import wrote it.
    let mut recorded: BTreeMap<(Provider, Version), bool> = BTreeMap::new();
    let mut refused_versions: BTreeSet<(Provider, Version)> = BTreeSet::new();
    let mut modules = Modules {
        max_unpacked,
        ..Modules::default()
    };
    let mut releases = super::releases::Releases::new(releases);
    let mut docs = super::docs::Import::default();
    let entries = tar
        .entries()
        .with_context(|| format!("{} is not a tar file", bundle.display()))?;
    for entry in entries {
        let mut entry = match entry {
            Ok(e) => e,
            Err(e) => {
                report.rejected.push((
                    "the bundle".into(),
                    format!("it is truncated or damaged: {e}"),
                ));
                break;
            }
        };
        let path = match entry.path() {
            Ok(p) => p.to_string_lossy().into_owned(),
            Err(e) => {
                report
                    .rejected
                    .push(("an entry".into(), format!("unreadable name: {e}")));
                continue;
            }
        };
        if manifest.is_none() {
            if path != format!("{ROOT}/manifest.json") {
                anyhow::bail!(
                    "{} is not a tfmirror bundle: it starts with {path:?}, not its manifest",
                    bundle.display()
                );
            }
            let bytes = read_small(&mut entry).context("reading the manifest")?;
            manifest = Some(super::parse_manifest(&bytes, bundle)?);
            continue;
        }
        if path == super::advisories::entry_path() {
            let named = manifest.as_ref().and_then(|m| m.advisories.as_ref());
            match super::advisories::read(named, &mut entry) {
                Ok(stored) => database = Some(stored),
                Err(why) => report.rejected.push(("the advisory database".into(), why)),
            }
            continue;
        }
        if let Some((module, version, leaf)) = parse_module_path(&path) {
            if let Err(denied) = policy.check(Subject::Module(&module), &version) {
                if leaf == "module.json" {
                    report
                        .rejected
                        .push((format!("module {module} {version}"), denied.to_string()));
                }
                modules.refused.insert((module, version));
                continue;
            }
            modules.entry(store, &mut report, module, version, &leaf, &mut entry);
            continue;
        }
        if let Some(parts) = super::releases::parse_release_path(&path) {
            releases.entry(store, &mut report, parts, &mut entry);
            continue;
        }
        let Some((provider, version, leaf)) = parse_entry_path(&path) else {
            report.rejected.push((path, "not a bundle path".into()));
            continue;
        };
        let key = (provider.clone(), version.clone());
        if let Err(denied) = policy.check(Subject::Provider(&provider), &version) {
            // Denied here: the version and its archives stay out.
            if leaf == "version.json" {
                report
                    .rejected
                    .push((format!("{provider} {version}"), denied.to_string()));
            }
            refused_versions.insert(key);
            continue;
        }
        if leaf == "version.json" {
            let record = read_small(&mut entry)
                .map_err(|e| Refusal::from(e.to_string()))
                .and_then(|b| {
                    serde_json::from_slice::<VersionRecord>(&b)
                        .map_err(|e| Refusal::from(e.to_string()))
                })
                .and_then(|r| check_imported_record(trust, &provider, &version, r))
                .and_then(|r| agrees_with_cache(store, r))
                .and_then(|r| crate::commands::keyless::agrees_with_pin(store, r));
            match record {
                Ok(record) => {
                    verified.insert(key, record);
                }
                Err(reason) => {
                    report
                        .rejected
                        .push((format!("{provider} {version}"), reason.to_string()));
                    refused_versions.insert(key);
                }
            }
            continue;
        }
        if leaf == "docs.json" {
            let named = (manifest.iter().flat_map(|m| &m.versions))
                .find(|mv| mv.provider == provider && mv.version == version)
                .and_then(|mv| mv.docs.as_ref());
            let listed = if verified.contains_key(&key) {
                docs.list((&provider, &version), named, &mut entry)
            } else {
                Err("its version's record was refused or does not come before it".into())
            };
            if let Err(why) = listed {
                report
                    .rejected
                    .push((format!("documentation of {provider} {version}"), why));
            }
            continue;
        }
        if let Some(sha256) = super::docs::page_leaf(&leaf) {
            if let Err(why) = docs.page(store, (&provider, &version), sha256, &mut entry) {
                report.rejected.push((path, why));
            }
            continue;
        }
        let item = path;
        let Some((_, platform)) = provider
            .parse_archive_name(&leaf)
            .filter(|(named, _)| *named == version)
        else {
            report
                .rejected
                .push((item, "not an archive of this provider version".into()));
            continue;
        };
        let Some(record) = verified.get(&key) else {
            let why = if refused_versions.contains(&key) {
                "its version's record was refused"
            } else {
                "its version's record does not come before it"
            };
            report.rejected.push((item, why.into()));
            continue;
        };
        if !recorded.contains_key(&key) {
            match store.wait(store_record(store, record)) {
                Ok(wrote) => {
                    recorded.insert(key.clone(), wrote);
                }
                Err(e) => {
                    let why = format!("storing its version's record failed: {e}");
                    report.rejected.push((item, why));
                    continue;
                }
            }
        }
        seen.insert((provider.clone(), version.clone(), platform.clone()));
        match import_archive(store, record, &platform, &mut entry) {
            Ok((stored, h1)) => {
                if stored {
                    report.archives += 1;
                } else {
                    report.unchanged += 1;
                }
                let reported = record.packages[&platform].reported_h1.as_ref();
                if reported.is_some_and(|r| *r != h1) {
                    tracing::warn!(%provider, %version, %platform, "the record's h1: reported by the origin differs from the archive's own; dropping it");
                    contradicted.push((provider.clone(), version.clone(), platform.clone()));
                }
                held.entry(provider)
                    .or_default()
                    .entry(version)
                    .or_default()
                    .push(platform);
            }
            Err(reason) => report.rejected.push((item, reason.to_string())),
        }
    }
    let mut amended: BTreeMap<(Provider, Version), Vec<Platform>> = BTreeMap::new();
    for (p, v, platform) in contradicted {
        if let Some(pkg) = verified
            .get_mut(&(p.clone(), v.clone()))
            .and_then(|r| r.packages.get_mut(&platform))
        {
            pkg.reported_h1 = None;
            amended.entry((p, v)).or_default().push(platform);
        }
    }
    let Some(manifest) = manifest else {
        anyhow::bail!("{} is empty", bundle.display());
    };
    // Store each verified record the cache does not have yet (those of
    // versions without archives here, and those amended above), and list
    // each provider's versions with one write.
    for ((p, v), record) in &verified {
        let key = (p.clone(), v.clone());
        // The record stored before the archives may still carry an
        // origin-reported h1: they contradict (also one an interrupted
        // earlier import stored).
        let stored = match (recorded.get(&key), amended.get(&key)) {
            (None, _) => store.wait(store_record(store, record)).map(|_| ()),
            (Some(_), Some(platforms)) => store.wait(drop_reported_h1(store, p, v, platforms)),
            (Some(_), None) => Ok(()),
        };
        match stored {
            Ok(()) => {
                report.versions += 1;
                held.entry(p.clone())
                    .or_default()
                    .entry(v.clone())
                    .or_default();
            }
            Err(e) => report.rejected.push((
                format!("{p} {v}"),
                format!("storing its record failed: {e}"),
            )),
        }
    }
    for (p, versions) in &held {
        if let Err(e) = store.wait(store.store().add_to_index(p, versions)) {
            report
                .rejected
                .push((p.to_string(), format!("listing its versions failed: {e}")));
        }
    }
    if let Err(e) = store.wait(keep_first_seen(store, &manifest, &verified)) {
        report.rejected.push((
            "first-seen times".into(),
            format!("keeping them failed: {e}"),
        ));
    }
    // Whatever the manifest promised and the bundle did not deliver.
    for mm in &manifest.modules {
        let key = (mm.module.clone(), mm.version.clone());
        if !modules.refused.contains(&key) && !modules.delivered.contains(&key) {
            report.rejected.push((
                format!("module {} {}", mm.module, mm.version),
                "missing from the bundle (truncated?)".into(),
            ));
        }
    }
    releases.finish(store, &manifest.releases, &mut report);
    docs.finish(store, &mut report);
    match (&database, &manifest.advisories) {
        (Some(stored), _) => super::advisories::keep(store, stored, &mut report),
        (None, Some(_))
            if !report
                .rejected
                .iter()
                .any(|(i, _)| i == "the advisory database") =>
        {
            report.rejected.push((
                "the advisory database".into(),
                "missing from the bundle (truncated?)".into(),
            ));
        }
        (None, _) => {}
    }
    refuse_advised(store, policy, &held, &mut report)?;
    report.not_held = store
        .wait(not_held(store, &manifest))
        .with_context(|| format!("listing what {} holds", store.location()))?;
    for mv in &manifest.versions {
        let key = (mv.provider.clone(), mv.version.clone());
        if refused_versions.contains(&key) {
            continue;
        }
        if !verified.contains_key(&key) {
            report.rejected.push((
                format!("{} {}", mv.provider, mv.version),
                "missing from the bundle (truncated?)".into(),
            ));
            continue;
        }
        for platform in mv.archives.keys() {
            if !seen.contains(&(mv.provider.clone(), mv.version.clone(), platform.clone())) {
                report.rejected.push((
                    mv.provider.archive_name(&mv.version, platform),
                    "missing from the bundle (truncated?)".into(),
                ));
            }
        }
    }
    Ok(report)
}

/// What the manifest says the site holds besides what the bundle carries
/// (a delta's base) and the store does not hold, by name.
async fn not_held(
    store: &CommandStore,
    manifest: &Manifest,
) -> Result<Vec<String>, crate::store::StoreError> {
    let Some(covers) = &manifest.covers else {
        return Ok(Vec::new());
    };
    let carried: BTreeSet<ArchiveKey> = manifest
        .versions
        .iter()
        .flat_map(|mv| {
            mv.archives
                .keys()
                .map(|p| ArchiveKey::new(&mv.provider, &mv.version, p))
        })
        .collect();
    let carried_modules: BTreeSet<(&Module, &Version)> = manifest
        .modules
        .iter()
        .map(|mm| (&mm.module, &mm.version))
        .collect();
    let held: BTreeSet<ArchiveKey> = store
        .store()
        .list_archives()
        .await?
        .iter()
        .map(crate::store::CachedArchive::key)
        .collect();
    let held_modules: BTreeSet<(Module, Version)> = store
        .store()
        .list_modules()
        .await?
        .into_iter()
        .filter(|(_, package)| *package)
        .map(|(pin, _)| (pin.module, pin.version))
        .collect();
    let mut out = Vec::new();
    for (p, versions) in &covers.providers {
        for (v, platforms) in versions {
            for platform in platforms.keys() {
                let key = ArchiveKey::new(p, v, platform);
                if !carried.contains(&key) && !held.contains(&key) {
                    out.push(key.to_string());
                }
            }
        }
    }
    for (m, versions) in &covers.modules {
        for v in versions.keys() {
            if !carried_modules.contains(&(m, v)) && !held_modules.contains(&(m.clone(), v.clone()))
            {
                out.push(format!("module {m} {v}"));
            }
        }
    }
    let carried_files: BTreeSet<String> = manifest
        .releases
        .iter()
        .flat_map(|mr| {
            mr.files
                .keys()
                .map(|name| format!("{} {} {name}", mr.product, mr.version))
        })
        .collect();
    let held_files: BTreeSet<String> = store
        .store()
        .list_releases()
        .await?
        .iter()
        .flat_map(|(record, files)| {
            files
                .iter()
                .map(|(name, _)| format!("{} {} {name}", record.product, record.version))
        })
        .collect();
    for (product, versions) in &covers.releases {
        for (v, files) in versions {
            for name in files.keys() {
                let item = format!("{product} {v} {name}");
                if !carried_files.contains(&item) && !held_files.contains(&item) {
                    out.push(item);
                }
            }
        }
    }
    Ok(out)
}

/// Decides, once their binaries are read, the provider versions whose
/// archives were imported, where rules by advisory apply (with the
/// database the store keeps now, the bundle's included): a refused version
/// stays in the cache, as it does when the daemon reads it, and is not
/// served.
fn refuse_advised(
    store: &CommandStore,
    policy: &Gate,
    held: &BTreeMap<Provider, BTreeMap<Version, Vec<Platform>>>,
    report: &mut Imported,
) -> anyhow::Result<()> {
    if !policy.policy.has_advisory_rules() {
        return Ok(());
    }
    let gate = Gate {
        advisories: crate::commands::store::held_database(store)?,
        ..policy.clone()
    };
    for (provider, versions) in held {
        for (version, platforms) in versions {
            let decided = crate::commands::advised::decide_held(
                store,
                &gate,
                (provider, version),
                platforms.iter(),
            );
            if let Err(denied) = decided {
                report
                    .refused
                    .push((format!("{provider} {version}"), denied.to_string()));
            }
        }
    }
    Ok(())
}
