//! What the cache holds: a walk over the archive files, for the size gauges,
//! `tfmirror ls`, the status page, and eviction of the least recently used
//! archives, module packages and CLI release files when the cache outgrows
//! `cache.max_size` (`tfmirror gc`).

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use serde::Serialize;

use super::{DiskStore, Item};
use crate::address::{
    ArchiveKey, ArtifactName, Hostname, Namespace, Platform, Provider, ProviderType, ReleaseFile,
    Version,
};

/// One cached archive.
#[derive(Debug, Clone, Serialize)]
pub struct CachedArchive {
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// The platform.
    pub platform: Platform,
    /// Size in bytes.
    pub size: u64,
    /// When it was last served (or stored), in seconds since the Unix epoch.
    pub last_used: u64,
    /// Where it is.
    #[serde(skip)]
    pub path: PathBuf,
}

impl CachedArchive {
    /// The key the mirror knows this archive by.
    pub fn key(&self) -> ArchiveKey {
        ArchiveKey::new(&self.provider, &self.version, &self.platform)
    }
}

/// Lists every archive in the cache. Directories and files whose names are
/// not valid addresses are skipped: they were not written by tfmirror.
pub fn archives(store: &DiskStore) -> Vec<CachedArchive> {
    let mut out = Vec::new();
    walk(store, &mut |a| out.push(a));
    out.sort_by(|a, b| {
        (&a.provider, &a.version, &a.platform).cmp(&(&b.provider, &b.version, &b.platform))
    });
    out
}

/// Calls `each` with every archive in the cache, in the order of the
/// walk, without holding the listing.
pub fn walk(store: &DiskStore, each: &mut dyn FnMut(CachedArchive)) {
    let root = store.root().join("providers");
    for (host, host_dir) in subdirs(&root) {
        let Ok(hostname) = Hostname::parse(&host) else {
            continue;
        };
        for (ns, ns_dir) in subdirs(&host_dir) {
            let Ok(namespace) = Namespace::parse(&ns) else {
                continue;
            };
            for (kind, kind_dir) in subdirs(&ns_dir) {
                let Ok(kind) = ProviderType::parse(&kind) else {
                    continue;
                };
                let provider = Provider {
                    hostname: hostname.clone(),
                    namespace: namespace.clone(),
                    kind,
                };
                for (_, version_dir) in subdirs(&kind_dir) {
                    let Ok(entries) = std::fs::read_dir(&version_dir) else {
                        continue;
                    };
                    for entry in entries.flatten() {
                        let name = entry.file_name().to_string_lossy().into_owned();
                        let Some((version, platform)) = provider.parse_archive_name(&name) else {
                            continue;
                        };
                        let Ok(meta) = entry.metadata() else { continue };
                        let h1 = store.h1_path(&provider, &version, &platform);
                        let last_used = std::fs::metadata(&h1)
                            .and_then(|m| m.modified())
                            .or_else(|_| meta.modified())
                            .map_or(0, epoch_secs);
                        each(CachedArchive {
                            provider: provider.clone(),
                            version,
                            platform,
                            size: meta.len(),
                            last_used,
                            path: entry.path(),
                        });
                    }
                }
            }
        }
    }
}

/// What [`evict`] removed.
#[derive(Debug, Default)]
pub struct Evicted {
    /// Archives.
    pub archives: Vec<CachedArchive>,
    /// Module packages (their pins stay), with their sizes.
    pub modules: Vec<(crate::store::ModuleRecord, u64)>,
    /// CLI release files (their releases' records stay), with their sizes.
    pub releases: Vec<(ReleaseFile, u64)>,
}

impl Evicted {
    /// Bytes freed.
    pub fn bytes(&self) -> u64 {
        self.archives.iter().map(|a| a.size).sum::<u64>()
            + self.modules.iter().map(|(_, size)| size).sum::<u64>()
            + self.releases.iter().map(|(_, size)| size).sum::<u64>()
    }
}

/// One thing eviction may remove.
enum Candidate {
    Archive(CachedArchive),
    Module(crate::store::ModuleRecord, u64),
    Release(ReleaseFile),
}

/// The cached release files, with their sizes and last uses (when they
/// were stored: their files' modification times).
fn release_files(store: &DiskStore) -> Vec<(ReleaseFile, u64, u64)> {
    let held = store.release_records().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not list the cached CLI releases");
        Vec::new()
    });
    held.into_iter()
        .flat_map(|(record, files)| {
            files.into_iter().filter_map(move |(name, size)| {
                let file = ReleaseFile {
                    product: record.product,
                    version: record.version.clone(),
                    name: ArtifactName::parse(&name).ok()?,
                };
                let meta = std::fs::metadata(store.release_file_path(&file)).ok()?;
                let used = meta.modified().map_or(0, epoch_secs);
                Some((file, size, used))
            })
        })
        .collect()
}

/// The cached module packages, with their sizes and last uses (their
/// files' modification times).
fn module_packages(store: &DiskStore) -> Vec<(crate::store::ModuleRecord, u64, u64)> {
    let pins = store.module_pins().unwrap_or_else(|e| {
        tracing::warn!(error = %e, "could not list the cached modules");
        Vec::new()
    });
    pins.into_iter()
        .filter(|(_, held)| *held)
        .filter_map(|(pin, _)| {
            let meta =
                std::fs::metadata(store.module_package_path(&pin.module, &pin.version)).ok()?;
            let used = meta.modified().map_or(0, epoch_secs);
            Some((pin, meta.len(), used))
        })
        .collect()
}

/// The bytes the cache's archives, module packages and release files take.
pub fn total_size(store: &DiskStore) -> u64 {
    archives(store).iter().map(|a| a.size).sum::<u64>()
        + module_packages(store).iter().map(|m| m.1).sum::<u64>()
        + release_files(store).iter().map(|r| r.1).sum::<u64>()
}

/// Removes least recently used archives, module packages and release files
/// until their total size is at most `max_bytes`, skipping archives `busy`
/// says are in use. `before` runs before each removal, and what it returns
/// is kept until the removal ended (a journal's note of the change); when
/// it fails, nothing more is removed and its error is returned. Returns
/// what was removed.
pub fn evict<G, E>(
    store: &DiskStore,
    max_bytes: u64,
    busy: impl Fn(&CachedArchive) -> bool,
    mut before: impl FnMut(Item) -> Result<G, E>,
) -> Result<Evicted, E> {
    let mut all: Vec<(u64, u64, Candidate)> = archives(store)
        .into_iter()
        .map(|a| (a.last_used, a.size, Candidate::Archive(a)))
        .chain(
            module_packages(store)
                .into_iter()
                .map(|(pin, size, used)| (used, size, Candidate::Module(pin, size))),
        )
        .chain(
            release_files(store)
                .into_iter()
                .map(|(file, size, used)| (used, size, Candidate::Release(file))),
        )
        .collect();
    let mut total: u64 = all.iter().map(|c| c.1).sum();
    let mut removed = Evicted::default();
    if total <= max_bytes {
        return Ok(removed);
    }
    all.sort_by_key(|c| c.0);
    for (_, size, candidate) in all {
        if total <= max_bytes {
            break;
        }
        match candidate {
            Candidate::Archive(archive) => {
                if busy(&archive) {
                    continue;
                }
                let _noted = before(Item::Archive(archive.key()))?;
                if let Err(e) = remove(store, &archive.key()) {
                    tracing::warn!(path = %archive.path.display(), error = %e, "could not evict archive");
                    continue;
                }
                tracing::info!(provider = %archive.provider, version = %archive.version, platform = %archive.platform, bytes = archive.size, "evicted least recently used archive");
                removed.archives.push(archive);
            }
            Candidate::Module(pin, size) => {
                let _noted = before(Item::Module(pin.module.clone(), pin.version.clone()))?;
                let path = store.module_package_path(&pin.module, &pin.version);
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "could not evict module package");
                    continue;
                }
                tracing::info!(module = %pin.module, version = %pin.version, bytes = size, "evicted least recently used module package; its pin stays");
                removed.modules.push((pin, size));
            }
            Candidate::Release(file) => {
                let _noted = before(Item::Release(file.clone()))?;
                let path = store.release_file_path(&file);
                if let Err(e) = std::fs::remove_file(&path) {
                    tracing::warn!(path = %path.display(), error = %e, "could not evict release file");
                    continue;
                }
                tracing::info!(%file, bytes = size, "evicted least recently used release file; its release's record stays");
                removed.releases.push((file, size));
            }
        }
        total -= size;
    }
    Ok(removed)
}

/// Records that an archive was used now (the modification time of its hash
/// file is its last-use time).
pub fn touch(store: &DiskStore, key: &ArchiveKey) {
    let path = store.h1_path(&key.provider, &key.version, &key.platform);
    if let Ok(f) = std::fs::File::options().append(true).open(path) {
        let _ = f.set_modified(SystemTime::now());
    }
}

/// Removes one archive. The archive goes first: a crash in between leaves
/// only the small hash file, which is never served on its own.
pub fn remove(store: &DiskStore, key: &ArchiveKey) -> std::io::Result<()> {
    std::fs::remove_file(store.archive_path(&key.provider, &key.version, &key.platform))?;
    let _ = std::fs::remove_file(store.h1_path(&key.provider, &key.version, &key.platform));
    Ok(())
}

fn subdirs(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect()
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
