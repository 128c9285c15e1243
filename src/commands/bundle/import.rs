//! Reading a bundle in one pass, verifying every record and archive
//! before it enters the cache, and checking every module package against
//! its pin (and against the pin this cache holds, if any).

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use anyhow::Context;

use super::staging::{read_small, stage, Imported};
use super::{Manifest, ROOT};
use crate::address::{ArchiveKey, Module, Platform, Provider, Version};
use crate::clock::{Clock, SystemClock};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::module_source::tree::TreeError;
use crate::policy::{Gate, Subject};
use crate::store::{ModuleRecord, VersionRecord};
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
    // Verified records of this bundle, and which archives were seen.
    let mut verified: BTreeMap<(Provider, Version), VersionRecord> = BTreeMap::new();
    let mut seen: BTreeSet<(Provider, Version, Platform)> = BTreeSet::new();
    // The platforms whose archives the cache holds now, by provider and
    // version, for its version lists.
    let mut held: BTreeMap<Provider, BTreeMap<Version, Vec<Platform>>> = BTreeMap::new();
    // Origin-reported h1: hashes the imported archives contradict.
    let mut contradicted: Vec<(Provider, Version, Platform)> = Vec::new();
    let mut refused_versions: BTreeSet<(Provider, Version)> = BTreeSet::new();
    let mut modules = Modules {
        max_unpacked,
        ..Modules::default()
    };
    let mut releases = super::releases::Releases::new(releases);
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
            manifest = Some(super::parse_manifest(&bytes)?);
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
    for (p, v, platform) in contradicted {
        if let Some(pkg) = verified
            .get_mut(&(p, v))
            .and_then(|r| r.packages.get_mut(&platform))
        {
            pkg.reported_h1 = None;
        }
    }
    let Some(manifest) = manifest else {
        anyhow::bail!("{} is empty", bundle.display());
    };
    // Store each verified record the cache does not have yet, and list
    // each provider's versions with one write.
    for ((p, v), record) in &verified {
        match store.wait(store_record(store, record)) {
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

/// The module entries of a bundle, as they are read.
#[derive(Default)]
struct Modules {
    /// Pins read, waiting for their packages.
    pins: BTreeMap<(Module, Version), ModuleRecord>,
    /// Versions whose package was checked and kept (or was held already).
    delivered: BTreeSet<(Module, Version)>,
    /// Versions refused.
    refused: BTreeSet<(Module, Version)>,
    /// The cap on a package's unpacked size.
    max_unpacked: u64,
}

impl Modules {
    /// Handles one module entry: a pin, or the package after it.
    fn entry(
        &mut self,
        store: &CommandStore,
        report: &mut Imported,
        module: Module,
        version: Version,
        leaf: &str,
        entry: &mut impl Read,
    ) {
        let item = format!("module {module} {version}");
        let key = (module, version);
        let outcome = match leaf {
            "module.json" => read_small(entry)
                .map_err(|e| Refusal::from(e.to_string()))
                .and_then(|b| {
                    serde_json::from_slice::<ModuleRecord>(&b)
                        .map_err(|e| Refusal::from(format!("its pin is not valid: {e}")))
                })
                .and_then(|pin| check_module_pin(store, &key.0, &key.1, pin))
                .map(|pin| {
                    self.pins.insert(key.clone(), pin);
                }),
            "package.tar.gz" => match self.pins.remove(&key) {
                None => Err(Refusal::from(if self.refused.contains(&key) {
                    "its pin was refused"
                } else {
                    "its pin does not come before it"
                })),
                Some(pin) => import_module(store, &pin, entry, self.max_unpacked).map(|kept| {
                    if kept {
                        report.archives += 1;
                    } else {
                        report.unchanged += 1;
                    }
                    report.modules += 1;
                    self.delivered.insert(key.clone());
                }),
            },
            _ => Err(Refusal::from("not a bundle path")),
        };
        if let Err(reason) = outcome {
            self.refused.insert(key);
            report.rejected.push((item, reason.to_string()));
        }
    }
}

/// Splits `tfmirror-bundle/modules/<host>/<ns>/<name>/<system>/<version>/<leaf>`
/// into validated parts, each in its one normal spelling.
fn parse_module_path(path: &str) -> Option<(Module, Version, String)> {
    let rest = path.strip_prefix(ROOT)?.strip_prefix("/modules/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [host, ns, name, system, version, leaf] = parts.as_slice() else {
        return None;
    };
    let address = format!("{host}/{ns}/{name}/{system}");
    let (module, _) = Module::from_source(&address).ok()?;
    if module.to_string() != address {
        return None;
    }
    let parsed = Version::parse(version).ok()?;
    if parsed.as_str() != *version {
        return None;
    }
    Some((module, parsed, (*leaf).to_owned()))
}

/// A bundle's pin must be the one its path names; a pin this cache holds
/// for the version wins, and the bundle's must agree with it.
fn check_module_pin(
    store: &CommandStore,
    module: &Module,
    version: &Version,
    pin: ModuleRecord,
) -> Result<ModuleRecord, Refusal> {
    if pin.module != *module || pin.version != *version {
        return Err(format!("its pin is for {} {} instead", pin.module, pin.version).into());
    }
    let held = store
        .wait(store.store().read_module(module, version))
        .map_err(|e| format!("the pin this cache holds cannot be read: {e}"))?;
    match held {
        Some(h) if h.commit != pin.commit || h.h1 != pin.h1 => Err(format!(
            "its pin (commit {}, tree {}) differs from the one this cache holds (commit {}, tree {})",
            pin.commit.as_deref().unwrap_or("-"),
            pin.h1,
            h.commit.as_deref().unwrap_or("-"),
            h.h1
        )
        .into()),
        _ => Ok(pin),
    }
}

/// Checks a module package against its pin (the bytes' SHA-256, and the
/// tree's `h1:` hash computed afresh) and keeps it with the pin.
/// `Ok(false)` when the cache holds the package already.
fn import_module(
    store: &CommandStore,
    pin: &ModuleRecord,
    entry: &mut impl Read,
    max_unpacked: u64,
) -> Result<bool, Refusal> {
    let (m, v) = (&pin.module, &pin.version);
    let held = store.wait(async {
        Ok::<_, crate::store::StoreError>(
            store.store().read_module(m, v).await?.is_some()
                && store.store().open_module(m, v).await?.is_some(),
        )
    });
    if held.map_err(|e| format!("the cache cannot be read: {e}"))? {
        return Ok(false);
    }
    let (temp_path, actual) = stage(store, entry)?;
    if actual != pin.sha256 {
        return Err(format!(
            "its package's SHA-256 {actual} does not match its pin ({})",
            pin.sha256
        )
        .into());
    }
    let scratch = temp_path.parent().unwrap_or(Path::new("."));
    let packed = File::open(&temp_path)
        .map_err(TreeError::from)
        .and_then(|file| crate::module_source::tree::repack(file, scratch, max_unpacked))
        .map_err(|e| format!("its package cannot be checked: {e}"))?;
    if packed.h1 != pin.h1 {
        return Err(format!(
            "its tree hashes to {} where its pin says {}",
            packed.h1, pin.h1
        )
        .into());
    }
    store
        .wait(async {
            store.store().keep_module(temp_path, pin).await?;
            store.store().add_to_module_index(m, v).await
        })
        .map_err(|e| format!("storing it failed: {e}"))?;
    Ok(true)
}

/// Keeps in the version lists when the exporting mirror first saw each
/// imported version (the manifest's `first_seen_ms`), so that this site's
/// cooldown counts from the same time; a time this cache has already is
/// kept.
async fn keep_first_seen(
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

/// Stores a verified record unless the cache holds a signed one for the
/// version already.
async fn store_record(
    store: &CommandStore,
    record: &VersionRecord,
) -> Result<(), crate::store::StoreError> {
    let held = store
        .store()
        .read_version(&record.provider, &record.version)
        .await?;
    crate::commands::keyless::keep_pin(store, record, SystemClock.unix_ms()).await?;
    if held.is_none_or(|h| h.unsigned_import) {
        store.store().write_version(record).await?;
    }
    Ok(())
}

/// Splits `tfmirror-bundle/providers/<host>/<ns>/<type>/<version>/<leaf>`
/// into validated parts; anything else (traversal included) is `None`.
fn parse_entry_path(path: &str) -> Option<(Provider, Version, String)> {
    let rest = path.strip_prefix(ROOT)?.strip_prefix("/providers/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [host, ns, kind, version, leaf] = parts.as_slice() else {
        return None;
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
    Some((provider, version, leaf.to_string()))
}

/// A bundle's record must be the one its path names, and its evidence must
/// verify here, under this site's trust policy.
fn check_imported_record(
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
fn agrees_with_cache(
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
fn import_archive(
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
    let kept = store
        .wait(store.store().keep_archive(temp_path, &key))
        .map_err(|e| Refusal::from(e.to_string()))?;
    Ok((true, kept.h1))
}
