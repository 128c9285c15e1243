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
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::policy::{Gate, Subject};
use crate::protocol::{IndexDocument, VersionDocument};
use crate::store::{atomic, h1_of_file, PackageRecord, VersionRecord};
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
/// static mirror layout, from whichever backend holds the cache. Every file
/// is written atomically; archives are hard-linked from a disk cache on the
/// same file system, and otherwise streamed from the store. Versions
/// `policy` denies are left out (and said so on standard output).
pub fn export(
    store: &CommandStore,
    policy: &Gate,
    only: &[Provider],
    dir: &Path,
) -> anyhow::Result<Written> {
    let location = store.location();
    let archives = store
        .wait(store.store().list_archives())
        .with_context(|| format!("listing the archives in {location}"))?;
    let mut chosen = super::selected(archives, only);
    chosen.retain(|(p, v), platforms| {
        match crate::commands::advised::decide_held(store, policy, (p, v), platforms.keys()) {
            Ok(()) => true,
            Err(denied) => {
                println!("LEFT OUT {denied}");
                false
            }
        }
    });
    if chosen.is_empty() {
        anyhow::bail!(
            "the cache holds no archive of the selected providers that the policy allows"
        );
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
            first_seen_ms: std::collections::BTreeMap::new(),
        };
        for (v, platforms) in versions {
            let read = store.wait(store.store().read_version(p, v));
            let Some(mut record) =
                read.with_context(|| format!("reading the record of {p} {v}"))?
            else {
                continue;
            };
            record
                .packages
                .retain(|platform, _| platforms.contains(platform));
            let mut h1 = BTreeMap::new();
            for platform in platforms {
                let key = ArchiveKey::new(p, v, platform);
                let stored = store
                    .wait(store.store().archive(&key))
                    .with_context(|| format!("reading the h1: hash of {key}"))?
                    .with_context(|| format!("{key}: the archive is gone from {location}"))?;
                h1.insert(platform.clone(), stored.h1);
                place_archive(store, &key, &target.join(p.archive_name(v, platform)))?;
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

/// Puts a copy of a cached archive at `dest`: a hard link to the store's
/// file when it has one on the same file system, a copy of the stored
/// bytes otherwise.
fn place_archive(store: &CommandStore, key: &ArchiveKey, dest: &Path) -> anyhow::Result<()> {
    let dir = dest.parent().expect("archive paths have a parent");
    if dest.exists() {
        return Ok(());
    }
    let temp = atomic::temp_file(dir)?;
    if let Some(src) = store.store().archive_file(key) {
        let temp = temp.into_temp_path();
        std::fs::remove_file(&temp)?;
        if std::fs::hard_link(&src, &temp).is_err() {
            std::fs::copy(&src, &temp).with_context(|| format!("copying {}", src.display()))?;
        }
        return atomic::persist(temp, dest).with_context(|| format!("writing {}", dest.display()));
    }
    let (file, temp) = temp.into_parts();
    store
        .wait(async {
            let opened = store.store().open_archive(key).await?;
            let opened =
                opened.ok_or_else(|| std::io::Error::other("it is gone from the store"))?;
            let mut out = tokio::fs::File::from_std(file);
            tokio::io::copy(&mut opened.into_reader(), &mut out).await?;
            out.sync_all().await?;
            Ok::<_, crate::store::StoreError>(())
        })
        .with_context(|| format!("copying {key}"))?;
    atomic::persist(temp, dest).with_context(|| format!("writing {}", dest.display()))
}

/// Imports a static mirror directory: every `<version>.json` under
/// `<hostname>/<namespace>/<type>/`, and each archive it names whose
/// `h1:` or `zh:` hash it records. Versions the cache holds with a
/// signature are left as they are.
pub fn import(store: &CommandStore, policy: &Gate, dir: &Path) -> anyhow::Result<Imported> {
    // A relative directory is relative to the working directory; the
    // records name each archive by its absolute `file:` URL.
    let absolute = std::path::absolute(dir)
        .with_context(|| format!("finding the absolute path of {}", dir.display()))?;
    let dir = absolute.as_path();
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
            match import_version(store, policy, &provider, &provider_dir, &name, &mut report) {
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
    store: &CommandStore,
    policy: &Gate,
    provider: &Provider,
    dir: &Path,
    name: &str,
    report: &mut Imported,
) -> Result<(), Refusal> {
    let version =
        Version::parse(name.trim_end_matches(".json")).map_err(|e| Refusal::from(e.to_string()))?;
    policy
        .check(Subject::Provider(provider), &version)
        .map_err(|denied| Refusal::from(denied.to_string()))?;
    let held = store
        .wait(store.store().read_version(provider, &version))
        .map_err(|e| format!("the record this cache holds cannot be read: {e}"))?;
    if held.is_some_and(|h| !h.unsigned_import) {
        report.versions += 1;
        return Ok(());
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
        evicted_ms: BTreeMap::new(),
        verified_at_ms: crate::clock::system().unix_ms(),
    };
    // Archives stored now and already held, counted once the version's
    // record that names them is written.
    let mut archives = (0, 0);
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
        let key = ArchiveKey::new(provider, &version, platform);
        let download_url = url::Url::from_file_path(dir.join(&expected))
            .map_err(|()| format!("{} is not an absolute path", dir.display()))?;
        match import_archive(store, &key, &dir.join(&expected), &entry.hashes) {
            Ok((sha256, stored)) => {
                if stored {
                    archives.0 += 1;
                } else {
                    archives.1 += 1;
                }
                record.packages.insert(
                    platform.clone(),
                    PackageRecord {
                        filename: expected,
                        download_url,
                        sha256,
                        sums: 0,
                        protocols: Vec::new(),
                        size: None,
                        reported_h1: None,
                    },
                );
            }
            Err(reason) => report.rejected.push((item, reason.to_string())),
        }
    }
    if record.packages.is_empty() {
        return Err("no archive could be imported".into());
    }
    let listed = BTreeMap::from([(version.clone(), record.packages.keys().cloned().collect())]);
    store
        .wait(async {
            store.store().write_version(&record).await?;
            store.store().add_to_index(provider, &listed).await
        })
        .map_err(|e| format!("cache: {e}"))?;
    report.versions += 1;
    report.archives += archives.0;
    report.unchanged += archives.1;
    Ok(())
}

/// Copies one archive into the cache if its hashes match one the directory
/// recorded. Returns its SHA-256 and whether it was stored now.
fn import_archive(
    store: &CommandStore,
    key: &ArchiveKey,
    src: &Path,
    recorded: &[String],
) -> Result<(String, bool), Refusal> {
    if recorded.is_empty() {
        return Err("the directory records no hash to check it against".into());
    }
    let mut input =
        std::fs::File::open(src).map_err(|e| format!("reading {}: {e}", src.display()))?;
    let staging = store.store().staging_file().map_err(|e| e.to_string())?;
    let (temp_path, sha256) =
        atomic::copy_hashed_into(&mut input, staging, store.room()).map_err(|e| match e {
            atomic::CopyError::Read(e) => format!("reading {}: {e}", src.display()),
            e => e.to_string(),
        })?;
    let h1 = h1_of_file(&temp_path).map_err(|e| Refusal::from(e.to_string()))?;
    if !recorded.contains(&h1) && !recorded.contains(&verify::zh(&sha256)) {
        return Err(format!(
            "its hashes ({h1}, {}) are not among those the directory records",
            verify::zh(&sha256)
        )
        .into());
    }
    let held = store
        .wait(store.store().archive(key))
        .map_err(|e| format!("the cache cannot be read: {e}"))?;
    if let Some(held) = held {
        if held.h1 != h1 {
            return Err("the cache holds a different archive under this name".into());
        }
        return Ok((sha256, false));
    }
    store
        .wait(store.store().keep_archive(temp_path, key))
        .map_err(|e| Refusal::from(e.to_string()))?;
    Ok((sha256, true))
}
