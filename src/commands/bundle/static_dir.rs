//! Static mirror directories: the layout `terraform providers mirror`
//! writes and any static web server (or Terraform's `filesystem_mirror`)
//! can serve:
//!
//! ```text
//! <hostname>/<namespace>/<type>/index.json
//! <hostname>/<namespace>/<type>/<version>.json
//! <hostname>/<namespace>/<type>/terraform-provider-<type>_<version>_<os>_<arch>.zip
//! ```
//!
//! `export --static` writes one from the cache, with `h1:` and `zh:` hashes
//! for every platform. `import --static` reads one into the cache, keeping
//! only archives whose hashes the directory recorded; since nothing in such
//! a directory is signed, the imports are marked unsigned.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::Imported;
use crate::address::{Platform, Provider, Version};
use crate::commands::Refusal;
use crate::protocol::{IndexDocument, VersionDocument};
use crate::store::{atomic, h1_of_file, DiskStore, PackageRecord, VersionRecord};
use crate::verify;

/// What an export wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// Providers written.
    pub providers: usize,
    /// Versions written.
    pub versions: usize,
    /// Archives written.
    pub archives: usize,
}

/// Writes the cached providers (all, or those in `only`) under `dir` in the
/// static mirror layout. Every file is written atomically; archives are
/// hard-linked from the cache when `dir` is on the same file system.
pub fn export(store: &DiskStore, only: &[Provider], dir: &Path) -> anyhow::Result<Written> {
    let chosen = super::selected(crate::store::inventory::archives(store), only);
    if chosen.is_empty() {
        anyhow::bail!("the cache holds no archive of the selected providers");
    }
    let mut written = Written::default();
    let mut by_provider: BTreeMap<Provider, BTreeMap<Version, Vec<Platform>>> = BTreeMap::new();
    for ((p, v), platforms) in chosen {
        by_provider
            .entry(p)
            .or_default()
            .insert(v, platforms.into_keys().collect());
    }
    for (p, versions) in &by_provider {
        let target = dir
            .join(p.hostname.as_str())
            .join(p.namespace.as_str())
            .join(p.kind.as_str());
        std::fs::create_dir_all(&target)
            .with_context(|| format!("creating {}", target.display()))?;
        let mut listed = crate::store::IndexRecord {
            fetched_at_ms: 0,
            versions: BTreeMap::new(),
            protocols: BTreeMap::new(),
        };
        for (v, platforms) in versions {
            let Some(mut record) = store.read_json::<VersionRecord>(&store.version_path(p, v))?
            else {
                continue;
            };
            record
                .packages
                .retain(|platform, _| platforms.contains(platform));
            let mut h1 = BTreeMap::new();
            for platform in platforms {
                let hash = std::fs::read_to_string(store.h1_path(p, v, platform))
                    .with_context(|| format!("reading the h1: hash of {p} {v} {platform}"))?;
                h1.insert(platform.clone(), hash.trim().to_string());
                let name = p.archive_name(v, platform);
                place_archive(&store.archive_path(p, v, platform), &target.join(&name))?;
                written.archives += 1;
            }
            let doc = VersionDocument::from_record(&record, &h1, |_| None);
            write_json(&target, &format!("{v}.json"), &doc)?;
            listed.versions.insert(v.clone(), platforms.clone());
            written.versions += 1;
        }
        write_json(&target, "index.json", &IndexDocument::from_record(&listed))?;
        written.providers += 1;
    }
    Ok(written)
}

/// Writes a document exactly as the daemon serves it.
fn write_json<T: serde::Serialize>(dir: &Path, name: &str, value: &T) -> anyhow::Result<()> {
    let bytes = serde_json::to_vec(value)?;
    atomic::write(dir, &dir.join(name), &bytes)
        .with_context(|| format!("writing {}", dir.join(name).display()))
}

/// Puts a copy of a cached archive at `dest` (a hard link when possible).
fn place_archive(src: &Path, dest: &Path) -> anyhow::Result<()> {
    let dir = dest.parent().expect("archive paths have a parent");
    if dest.exists() {
        return Ok(());
    }
    let temp = atomic::temp_file(dir)?.into_temp_path();
    std::fs::remove_file(&temp)?;
    if std::fs::hard_link(src, &temp).is_err() {
        std::fs::copy(src, &temp).with_context(|| format!("copying {}", src.display()))?;
    }
    atomic::persist(temp, dest).with_context(|| format!("writing {}", dest.display()))
}

/// Imports a static mirror directory: every `<version>.json` under
/// `<hostname>/<namespace>/<type>/`, and each archive it names whose
/// `h1:` or `zh:` hash it records. Versions the cache holds with a
/// signature are left as they are.
pub fn import(store: &DiskStore, dir: &Path) -> anyhow::Result<Imported> {
    let mut report = Imported::default();
    let mut found = Vec::new();
    for host in read_dirs(dir)? {
        for ns in read_dirs(&host)? {
            for kind in read_dirs(&ns)? {
                found.push(kind);
            }
        }
    }
    if found.is_empty() {
        anyhow::bail!(
            "{} holds no <hostname>/<namespace>/<type>/ directories",
            dir.display()
        );
    }
    for provider_dir in found {
        let relative = provider_dir.strip_prefix(dir).unwrap_or(&provider_dir);
        let source = relative.to_string_lossy().replace('\\', "/");
        let provider = match Provider::from_source(&source) {
            Ok(p) => p,
            Err(e) => {
                report.rejected.push((source, e.to_string()));
                continue;
            }
        };
        let mut names: Vec<String> = std::fs::read_dir(&provider_dir)?
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| n.ends_with(".json") && n != "index.json")
            .collect();
        names.sort();
        for name in names {
            let item = format!("{provider} {}", name.trim_end_matches(".json"));
            match import_version(store, &provider, &provider_dir, &name, &mut report) {
                Ok(()) => {}
                Err(reason) => report.rejected.push((item, reason.to_string())),
            }
        }
    }
    Ok(report)
}

fn read_dirs(dir: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .collect();
    out.sort();
    Ok(out)
}

fn import_version(
    store: &DiskStore,
    provider: &Provider,
    dir: &Path,
    name: &str,
    report: &mut Imported,
) -> Result<(), Refusal> {
    let version =
        Version::parse(name.trim_end_matches(".json")).map_err(|e| Refusal::from(e.to_string()))?;
    let path = store.version_path(provider, &version);
    if let Ok(Some(held)) = store.read_json::<VersionRecord>(&path) {
        if !held.unsigned_import {
            report.versions += 1;
            return Ok(());
        }
    }
    let text = std::fs::read(dir.join(name)).map_err(|e| Refusal::from(e.to_string()))?;
    let doc: VersionDocument =
        serde_json::from_slice(&text).map_err(|e| format!("not a version document: {e}"))?;
    let mut record = VersionRecord {
        provider: provider.clone(),
        version: version.clone(),
        packages: BTreeMap::new(),
        sums: Vec::new(),
        unsigned_import: true,
    };
    for (platform, entry) in &doc.archives {
        let item = format!("{provider} {version} {platform}");
        let expected = provider.archive_name(&version, platform);
        // Only the archive beside the document, under its usual name.
        let file_name = percent_encoding::percent_decode_str(&entry.url).decode_utf8_lossy();
        if file_name != expected {
            report.rejected.push((
                item,
                format!(
                    "its url {:?} is not {expected:?} beside the document",
                    entry.url
                ),
            ));
            continue;
        }
        match import_archive(
            store,
            provider,
            &version,
            platform,
            &dir.join(&expected),
            &entry.hashes,
        ) {
            Ok((sha256, stored)) => {
                if stored {
                    report.archives += 1;
                } else {
                    report.unchanged += 1;
                }
                let download_url = url::Url::from_file_path(dir.join(&expected))
                    .map_err(|()| format!("{} is not an absolute path", dir.display()))?;
                record.packages.insert(
                    platform.clone(),
                    PackageRecord {
                        filename: expected,
                        download_url,
                        sha256,
                        sums: 0,
                        protocols: Vec::new(),
                    },
                );
            }
            Err(reason) => report.rejected.push((item, reason.to_string())),
        }
    }
    if record.packages.is_empty() {
        return Err("no archive could be imported".into());
    }
    let platforms = record.packages.keys().cloned().collect();
    store
        .write_json(&path, &record)
        .and_then(|()| store.add_to_index(provider, &version, platforms))
        .map_err(|e| format!("cache: {e}"))?;
    report.versions += 1;
    Ok(())
}

/// Copies one archive into the cache if its hashes match one the directory
/// recorded. Returns its SHA-256 and whether it was stored now.
fn import_archive(
    store: &DiskStore,
    p: &Provider,
    v: &Version,
    platform: &Platform,
    src: &Path,
    recorded: &[String],
) -> Result<(String, bool), Refusal> {
    if recorded.is_empty() {
        return Err("the directory records no hash to check it against".into());
    }
    let mut input =
        std::fs::File::open(src).map_err(|e| format!("reading {}: {e}", src.display()))?;
    let (temp_path, sha256) =
        atomic::copy_hashed(&mut input, store.tmp_dir()).map_err(|e| match e {
            atomic::CopyError::Read(e) => format!("reading {}: {e}", src.display()),
            e @ atomic::CopyError::Write(_) => e.to_string(),
        })?;
    let h1 = h1_of_file(&temp_path).map_err(|e| Refusal::from(e.to_string()))?;
    if !recorded.contains(&h1) && !recorded.contains(&verify::zh(&sha256)) {
        return Err(format!(
            "its hashes ({h1}, {}) are not among those the directory records",
            verify::zh(&sha256)
        )
        .into());
    }
    if store.archive_path(p, v, platform).exists() {
        let held = std::fs::read_to_string(store.h1_path(p, v, platform)).unwrap_or_default();
        if held.trim() != h1 {
            return Err("the cache holds a different archive under this name".into());
        }
        return Ok((sha256, false));
    }
    store
        .keep_hashed(temp_path, p, v, platform, &h1)
        .map_err(|e| Refusal::from(e.to_string()))?;
    Ok((sha256, true))
}
