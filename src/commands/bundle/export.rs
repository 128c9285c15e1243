//! Writing a bundle: the cached versions' records, then their archives;
//! then the cached module versions' pins, each before its package.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;

use anyhow::Context;

use super::{entry_dir, module_entry_dir, Manifest, ManifestModule, ManifestVersion, FORMAT, ROOT};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::clock::{Clock, SystemClock};
use crate::store::{atomic, inventory, DiskStore, ModuleRecord, VersionRecord};

/// The providers to export: all cached ones, or those named.
pub fn selected(
    store: &DiskStore,
    only: &[Provider],
) -> BTreeMap<(Provider, Version), Vec<Platform>> {
    let mut out: BTreeMap<(Provider, Version), Vec<Platform>> = BTreeMap::new();
    for archive in inventory::archives(store) {
        let ArchiveKey {
            provider: p,
            version: v,
            platform,
        } = archive.key();
        if only.is_empty() || only.contains(&p) {
            out.entry((p, v)).or_default().push(platform);
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
    /// Bytes of archives and packages written.
    pub bytes: u64,
}

/// Writes a bundle of the cached providers (all, or those in `only`) to
/// `output`, atomically; with no `only`, the cached module packages too.
pub fn export(store: &DiskStore, only: &[Provider], output: &Path) -> anyhow::Result<Exported> {
    let chosen = selected(store, only);
    let modules: Vec<ModuleRecord> = if only.is_empty() {
        store
            .module_pins()
            .context("listing the cached modules")?
            .into_iter()
            .filter_map(|(pin, held)| held.then_some(pin))
            .collect()
    } else {
        Vec::new()
    };
    if chosen.is_empty() && modules.is_empty() {
        anyhow::bail!("the cache holds no archive of the selected providers");
    }
    let dir = output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let temp =
        atomic::temp_file(dir).with_context(|| format!("creating a file in {}", dir.display()))?;
    let (file, temp_path) = temp.into_parts();
    let mut tar = tar::Builder::new(BufWriter::new(file));
    let mut done = Exported::default();
    let mut manifest = Manifest {
        format: FORMAT,
        created_ms: SystemClock.unix_ms(),
        versions: Vec::new(),
        modules: Vec::new(),
    };
    let mut records = Vec::new();
    for ((p, v), platforms) in &chosen {
        let record: VersionRecord = store
            .read_json(&store.version_path(p, v))?
            .with_context(|| format!("{p} {v}: archives are cached but its record is missing"))?;
        if record.unsigned_import {
            // Nothing crosses the gap that cannot be verified on the other side.
            tracing::warn!(provider = %p, version = %v, "not exported: an unsigned import");
            continue;
        }
        let mut archives = BTreeMap::new();
        for platform in platforms {
            let size = std::fs::metadata(store.archive_path(p, v, platform))?.len();
            archives.insert(platform.clone(), size);
        }
        manifest.versions.push(ManifestVersion {
            provider: p.clone(),
            version: v.clone(),
            archives,
        });
        records.push(record);
    }
    for pin in &modules {
        let path = store.module_package_path(&pin.module, &pin.version);
        manifest.modules.push(ManifestModule {
            module: pin.module.clone(),
            version: pin.version.clone(),
            size: std::fs::metadata(&path)?.len(),
        });
    }
    append_bytes(
        &mut tar,
        &format!("{ROOT}/manifest.json"),
        &serde_json::to_vec_pretty(&manifest)?,
    )?;
    for (entry, record) in manifest.versions.iter().zip(&records) {
        let (p, v) = (&entry.provider, &entry.version);
        let base = entry_dir(p, v);
        append_bytes(
            &mut tar,
            &format!("{base}/version.json"),
            &serde_json::to_vec_pretty(record)?,
        )?;
        done.versions += 1;
        for (platform, size) in &entry.archives {
            let path = store.archive_path(p, v, platform);
            let mut file =
                File::open(&path).with_context(|| format!("reading {}", path.display()))?;
            let mut header = tar::Header::new_gnu();
            header.set_size(*size);
            header.set_mode(0o644);
            header.set_mtime(manifest.created_ms / 1000);
            tar.append_data(
                &mut header,
                format!("{base}/{}", p.archive_name(v, platform)),
                &mut file,
            )
            .with_context(|| format!("writing {} into the bundle", path.display()))?;
            done.archives += 1;
            done.bytes += size;
        }
    }
    for (entry, pin) in manifest.modules.iter().zip(&modules) {
        let base = module_entry_dir(&entry.module, &entry.version);
        append_bytes(
            &mut tar,
            &format!("{base}/module.json"),
            &serde_json::to_vec_pretty(pin)?,
        )?;
        let path = store.module_package_path(&entry.module, &entry.version);
        let mut file = File::open(&path).with_context(|| format!("reading {}", path.display()))?;
        let mut header = tar::Header::new_gnu();
        header.set_size(entry.size);
        header.set_mode(0o644);
        header.set_mtime(manifest.created_ms / 1000);
        tar.append_data(&mut header, format!("{base}/package.tar.gz"), &mut file)
            .with_context(|| format!("writing {} into the bundle", path.display()))?;
        done.modules += 1;
        done.bytes += entry.size;
    }
    let writer = tar.into_inner().context("finishing the bundle")?;
    let file = writer
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    file.sync_all()?;
    atomic::persist(temp_path, output).with_context(|| format!("writing {}", output.display()))?;
    Ok(done)
}

fn append_bytes<W: Write>(tar: &mut tar::Builder<W>, path: &str, bytes: &[u8]) -> io::Result<()> {
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(SystemClock.unix_ms() / 1000);
    tar.append_data(&mut header, path, bytes)
}
