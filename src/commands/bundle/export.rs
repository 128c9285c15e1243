//! Writing a bundle: the cached versions' records, then their archives;
//! then the cached module versions' pins, each before its package. A delta
//! leaves out what the receiving site holds already.

use std::collections::BTreeMap;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

use anyhow::Context;
use tokio::runtime::Handle;
use tokio_util::io::SyncIoBridge;

use super::{
    append_bytes, entry_dir, module_entry_dir, Manifest, ManifestModule, ManifestRelease,
    ManifestVersion, FORMAT, ROOT,
};
use crate::address::{ArchiveKey, Platform, Provider, ReleaseFile, Version};
use crate::clock::{Clock, SystemClock};
use crate::commands::store::CommandStore;
use crate::policy::{Gate, Subject};
use crate::site::inventory::{AtSite, HeldModule, SiteInventory};
use crate::store::{atomic, ArchiveReader, CachedArchive, ModuleRecord, VersionRecord};

/// The providers to export: all cached ones, or those named, with the
/// size of each archive.
pub fn selected(
    archives: Vec<CachedArchive>,
    only: &[Provider],
) -> BTreeMap<(Provider, Version), BTreeMap<Platform, u64>> {
    let mut out: BTreeMap<(Provider, Version), BTreeMap<Platform, u64>> = BTreeMap::new();
    for archive in archives {
        if only.is_empty() || only.contains(&archive.provider) {
            out.entry((archive.provider, archive.version))
                .or_default()
                .insert(archive.platform, archive.size);
        }
    }
    out
}

/// What an export wrote.
#[derive(Debug, Default)]
pub struct Exported {
    /// Versions written.
    pub versions: usize,
    /// Archives written.
    pub archives: usize,
    /// Module versions written.
    pub modules: usize,
    /// CLI release files written.
    pub release_files: usize,
    /// Bytes of archives and packages written.
    pub bytes: u64,
    /// What the policy kept out, with the rule and reason.
    pub denied: Vec<String>,
    /// For a delta: archives and module versions left out because the
    /// site holds them.
    pub held_there: usize,
    /// For a delta: what the site holds under the same name with other
    /// hashes, left out (an import there would refuse it).
    pub conflicts: Vec<String>,
    /// The advisories of the database it carries, if it carries one.
    pub advisories: Option<usize>,
    /// Versions whose documentation it carries.
    pub docs: usize,
    /// Documentation pages it carries.
    pub doc_pages: usize,
    /// Versions whose documentation is left out because the store does
    /// not keep it whole, and why.
    pub docs_left_out: Vec<String>,
}

/// Writes a bundle of the cached providers (all, or those in `only`) to
/// `output`, atomically; with no `only`, the cached module packages and
/// CLI release files too; `with_advisories`, the advisory database the
/// store keeps (if it keeps one); `with_docs`, each version's
/// documentation the store keeps whole.
/// Versions `policy` denies are left out (and listed in the result), and
/// with `site` (a delta), what the receiving site holds already. The
/// manifest records what the site holds once the bundle is imported.
/// It reads through the [`Store`](crate::store::Store) trait, whichever
/// backend holds the cache, and streams each archive and package from the
/// store into the bundle: nothing is copied to local disk first. The store's async calls
/// run on the command's runtime while the bundle is written on this thread.
pub fn export(
    store: &CommandStore,
    policy: &Gate,
    only: &[Provider],
    output: &Path,
    site: Option<&SiteInventory>,
    (with_advisories, with_docs): (bool, bool),
) -> anyhow::Result<Exported> {
    let store_handle = store;
    let (runtime, store) = (store.handle(), store.store());
    let location = store.location();
    let archives = runtime
        .block_on(store.list_archives())
        .with_context(|| format!("listing the archives in {location}"))?;
    let mut chosen = selected(archives, only);
    let mut denied = Vec::new();
    chosen.retain(|(p, v), platforms| {
        match crate::commands::advised::decide_held(store_handle, policy, (p, v), platforms.keys())
        {
            Ok(()) => true,
            Err(refused) => {
                denied.push(refused.to_string());
                false
            }
        }
    });
    let mut modules: Vec<ModuleRecord> = if only.is_empty() {
        runtime
            .block_on(store.list_modules())
            .with_context(|| format!("listing the modules in {location}"))?
            .into_iter()
            .filter_map(|(pin, held)| held.then_some(pin))
            .collect()
    } else {
        Vec::new()
    };
    modules.retain(
        |pin| match policy.check(Subject::Module(&pin.module), &pin.version) {
            Ok(()) => true,
            Err(refused) => {
                denied.push(refused.to_string());
                false
            }
        },
    );
    let mut lacks = SiteLacks::default();
    let releases = if only.is_empty() {
        runtime
            .block_on(super::releases::held(store, |record, name, sha256| {
                let Some(site) = site else {
                    return true;
                };
                let at_site = site.release_file(record.product, &record.version, name, sha256);
                lacks.keep(at_site, |theirs| {
                    format!(
                        "{} {} {name}: the site holds SHA-256 {theirs}, this cache {sha256}",
                        record.product, record.version
                    )
                })
            }))
            .with_context(|| format!("listing the CLI releases in {location}"))?
    } else {
        Vec::new()
    };
    if let Some(site) = site {
        modules.retain(|pin| {
            lacks.keep(site.module(pin), |theirs| {
                format!(
                    "module {} {}: the site's pin has the tree hash {theirs}, this cache's {}",
                    pin.module, pin.version, pin.h1
                )
            })
        });
    } else if chosen.is_empty() && modules.is_empty() && releases.is_empty() {
        anyhow::bail!(
            "the cache holds no archive of the selected providers that the policy allows"
        );
    }
    let dir = atomic::dir_of(output);
    let temp =
        atomic::temp_file(dir).with_context(|| format!("creating a file in {}", dir.display()))?;
    let (file, temp_path) = temp.into_parts();
    let mut tar = tar::Builder::new(BufWriter::new(file));
    let mut covers = site.cloned().unwrap_or_default();
    if !with_docs {
        // What the site keeps of documentation is not this bundle's to
        // say: its manifest stays readable by builds before documentation.
        covers.docs = crate::site::inventory::HeldDocs::default();
    }
    let mut manifest = Manifest {
        format: FORMAT,
        written_by: Some(crate::store::format::THIS_VERSION.to_owned()),
        created_ms: SystemClock.unix_ms(),
        versions: Vec::new(),
        modules: Vec::new(),
        releases: Vec::new(),
        covers: None,
        advisories: None,
    };
    let database = if with_advisories {
        super::advisories::for_export(store_handle)?
    } else {
        None
    };
    if let Some((_, named)) = &database {
        manifest.format = super::FORMAT_WITH_ADVISORIES;
        manifest.advisories = Some(named.clone());
    }
    let mut records = Vec::new();
    let mut docs = super::docs::Export::default();
    let mut carried = Vec::new();
    let mut lists: BTreeMap<Provider, Option<crate::store::IndexRecord>> = BTreeMap::new();
    for ((p, v), mut archives) in chosen {
        let mut record: VersionRecord = runtime
            .block_on(store.read_version(&p, &v))?
            .with_context(|| format!("{p} {v}: archives are cached but its record is missing"))?;
        if record.unsigned_import {
            // Nothing crosses the gap that cannot be verified on the other side.
            tracing::warn!(provider = %p, version = %v, "not exported: an unsigned import");
            continue;
        }
        if let Some(site) = site {
            archives.retain(|platform, _| {
                let Some(pkg) = record.packages.get(platform) else {
                    return true;
                };
                let at_site = site.archive(&ArchiveKey::new(&p, &v, platform), &pkg.sha256);
                lacks.keep(at_site, |theirs| {
                    format!(
                        "{p} {v} {platform}: the site holds {theirs}, this cache zh:{}",
                        pkg.sha256
                    )
                })
            });
            // A version the site holds whole goes again only for the
            // documentation the site lacks of it.
            let docs_only = archives.is_empty();
            if docs_only && (!with_docs || site.docs.keeps(&p, &v)) {
                continue;
            }
        }
        // This cache's own history stays here.
        record.evicted_ms.clear();
        for platform in archives.keys() {
            let hashes = record
                .packages
                .get(platform)
                .map(|pkg| vec![format!("zh:{}", pkg.sha256)])
                .unwrap_or_default();
            covers.add_archive(&ArchiveKey::new(&p, &v, platform), hashes);
        }
        if !lists.contains_key(&p) {
            let read = runtime
                .block_on(store.read_index(&p))
                .with_context(|| format!("reading the version list of {p} from {location}"))?;
            lists.insert(p.clone(), read);
        }
        let first_seen_ms = lists[&p]
            .as_ref()
            .and_then(|l| l.first_seen_ms.get(&v).copied());
        let site_keeps = site.is_some_and(|s| s.docs.keeps(&p, &v));
        let doc = if with_docs && !site_keeps {
            docs.version(store_handle, (&p, &v))?
        } else {
            None
        };
        if archives.is_empty() && doc.is_none() {
            continue;
        }
        if let Some((carried, _)) = &doc {
            let pages = carried.docs.pages.iter().map(|pg| pg.sha256.as_str());
            covers.docs.add((&p, &v), pages);
        }
        manifest.versions.push(ManifestVersion {
            provider: p,
            version: v,
            archives,
            first_seen_ms,
            docs: doc.as_ref().map(|(_, named)| named.clone()),
        });
        records.push(record);
        carried.push(doc.map(|(c, _)| c));
    }
    for pin in &modules {
        covers.add_module(&pin.module, &pin.version, HeldModule::from(pin));
        // The pin records the package's size; a package that no longer has
        // it fails the export when it is written (`append_stream`).
        manifest.modules.push(ManifestModule {
            module: pin.module.clone(),
            version: pin.version.clone(),
            size: pin.size,
        });
    }
    super::releases::cover(&mut covers, &releases);
    manifest.releases = releases
        .iter()
        .map(|(record, files)| ManifestRelease {
            product: record.product,
            version: record.version.clone(),
            files: files.clone(),
        })
        .collect();
    if carried.iter().any(Option::is_some) || !covers.docs.is_empty() {
        manifest.format = super::docs::FORMAT_WITH_DOCS;
    }
    manifest.covers = Some(covers);
    let mut done = Exported {
        denied,
        held_there: lacks.held_there,
        conflicts: lacks.conflicts,
        ..Exported::default()
    };
    append_bytes(
        &mut tar,
        &format!("{ROOT}/manifest.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    if let Some((bytes, _)) = &database {
        append_bytes(&mut tar, &super::advisories::entry_path(), bytes)?;
        done.advisories = manifest.advisories.as_ref().map(|a| a.entries);
    }
    let mtime = manifest.created_ms / 1000;
    for ((entry, record), doc) in manifest.versions.iter().zip(&records).zip(&carried) {
        let (p, v) = (&entry.provider, &entry.version);
        let base = entry_dir(p, v);
        append_bytes(
            &mut tar,
            &format!("{base}/version.json"),
            &serde_json::to_vec_pretty(record)?,
        )?;
        done.versions += 1;
        for (platform, size) in &entry.archives {
            let key = ArchiveKey::new(p, v, platform);
            let opened = runtime
                .block_on(store.open_archive(&key))?
                .with_context(|| format!("{key}: the archive is gone from {location}"))?;
            let name = format!("{base}/{}", p.archive_name(v, platform));
            append_stream(&mut tar, runtime, &name, *size, mtime, opened)
                .with_context(|| format!("writing {key} into the bundle"))?;
            done.archives += 1;
            done.bytes += size;
        }
        if let Some(doc) = doc {
            let site_has = |sha256: &str| site.is_some_and(|s| s.docs.has_page(sha256));
            done.doc_pages += super::docs::append(&mut tar, store_handle, &base, doc, site_has)?;
            done.docs += 1;
        }
    }
    done.docs_left_out = docs.left_out;
    for (entry, pin) in manifest.modules.iter().zip(&modules) {
        let base = module_entry_dir(&entry.module, &entry.version);
        append_bytes(
            &mut tar,
            &format!("{base}/module.json"),
            &serde_json::to_vec_pretty(pin)?,
        )?;
        let opened = runtime
            .block_on(store.open_module(&entry.module, &entry.version))?
            .with_context(|| {
                format!(
                    "module {} {}: its package is gone",
                    entry.module, entry.version
                )
            })?;
        append_stream(
            &mut tar,
            runtime,
            &format!("{base}/package.tar.gz"),
            entry.size,
            mtime,
            opened,
        )
        .with_context(|| {
            format!(
                "writing module {} {} into the bundle",
                entry.module, entry.version
            )
        })?;
        done.modules += 1;
        done.bytes += entry.size;
    }
    for (record, files) in &releases {
        let base = super::releases::release_entry_dir(record.product, &record.version);
        append_bytes(
            &mut tar,
            &format!("{base}/release.json"),
            &serde_json::to_vec_pretty(record)?,
        )?;
        for (name, size) in files {
            let file = ReleaseFile {
                product: record.product,
                version: record.version.clone(),
                name: name.clone(),
            };
            let opened = runtime
                .block_on(store.open_release_file(&file))?
                .with_context(|| format!("{file}: the file is gone from {location}"))?;
            append_stream(
                &mut tar,
                runtime,
                &format!("{base}/{name}"),
                *size,
                mtime,
                opened,
            )
            .with_context(|| format!("writing {file} into the bundle"))?;
            done.release_files += 1;
            done.bytes += size;
        }
    }
    let writer = tar.into_inner().context("finishing the bundle")?;
    let file = writer
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    file.sync_all()?;
    atomic::persist(temp_path, output).with_context(|| format!("writing {}", output.display()))?;
    Ok(done)
}

/// A delta's tally of what it leaves out because the site holds it.
#[derive(Default)]
struct SiteLacks {
    held_there: usize,
    conflicts: Vec<String>,
}

impl SiteLacks {
    /// Whether to carry an item that stands `at_site` there; a conflict is
    /// described by `conflict` (given the site's hash) and left out.
    fn keep(&mut self, at_site: AtSite, conflict: impl FnOnce(&str) -> String) -> bool {
        match at_site {
            AtSite::Lacks => true,
            AtSite::Holds => {
                self.held_there += 1;
                false
            }
            AtSite::Differs(theirs) => {
                self.conflicts.push(conflict(&theirs));
                false
            }
        }
    }
}

/// Appends one stored object of `size` bytes, read as it is written. An
/// object that changed size since it was listed fails the export rather
/// than write a corrupt entry.
fn append_stream<W: Write>(
    tar: &mut tar::Builder<W>,
    runtime: &Handle,
    path: &str,
    size: u64,
    mtime: u64,
    opened: ArchiveReader,
) -> anyhow::Result<()> {
    if opened.size != size {
        anyhow::bail!("{path}: {} bytes now, {size} when listed", opened.size);
    }
    let mut header = tar::Header::new_gnu();
    header.set_size(size);
    header.set_mode(0o644);
    header.set_mtime(mtime);
    let reader = SyncIoBridge::new_with_handle(opened.into_reader(), runtime.clone());
    tar.append_data(&mut header, path, reader.take(size))?;
    Ok(())
}
