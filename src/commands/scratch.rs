//! Commands on a bucket, through a scratch disk cache under `cache.dir`.
//! Importing: a bundle is imported, with every check of a disk import, into
//! the scratch cache, and what that accepted is then copied into the
//! configured store ([`publish`]). What the store holds already wins: a
//! version record or module pin there that disagrees with the bundle's is
//! kept, and the bundle's item is reported and left out. Exporting: what the
//! store holds is copied into the scratch cache ([`pull`]), which is then
//! exported as a disk cache is; `verify` checks such a copy the same way.

use std::collections::BTreeMap;
use std::path::Path;

use futures_util::StreamExt as _;
use tempfile::TempPath;
use tokio::io::AsyncWriteExt as _;

use anyhow::Context as _;

use crate::address::{ArchiveKey, Hostname, Module, Namespace, Provider, ProviderType, Version};
use crate::config::Config;
use crate::store::{atomic, DiskStore, IndexRecord, ModuleIndexRecord, Store, StoreError};

/// A scratch disk cache under `cache.dir`, removed when the directory is
/// dropped.
pub fn open(config: &Config, prefix: &str) -> anyhow::Result<(tempfile::TempDir, DiskStore)> {
    std::fs::create_dir_all(&config.cache.dir)
        .with_context(|| format!("creating cache.dir {}", config.cache.dir.display()))?;
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&config.cache.dir)
        .with_context(|| format!("a scratch directory in {}", config.cache.dir.display()))?;
    let store = DiskStore::open(dir.path())?;
    Ok((dir, store))
}

/// What was copied into the store.
#[derive(Debug, Default)]
pub struct Published {
    /// Version records written (new to the store).
    pub versions: usize,
    /// Archives and module packages stored.
    pub stored: usize,
    /// Archives and module packages the store held already.
    pub existed: usize,
    /// Items left out because the store holds something else under their
    /// name, with the reason.
    pub kept_theirs: Vec<(String, String)>,
}

/// Copies the scratch cache `from` into `into`.
pub async fn publish(from: &DiskStore, into: &dyn Store) -> Result<Published, StoreError> {
    let mut done = Published::default();
    for provider in providers(from.root()) {
        publish_provider(from, into, &provider, &mut done).await?;
    }
    publish_modules(from, into, &mut done).await?;
    Ok(done)
}

/// The providers whose version lists the scratch cache holds.
fn providers(root: &Path) -> Vec<Provider> {
    let pattern = root.join("providers/*/*/*/index.json");
    let Ok(paths) = glob::glob(&pattern.to_string_lossy()) else {
        return Vec::new();
    };
    paths
        .flatten()
        .filter_map(|index| {
            let kind = index.parent()?;
            let ns = kind.parent()?;
            let host = ns.parent()?;
            let name = |p: &Path| p.file_name().map(|n| n.to_string_lossy().into_owned());
            Some(Provider {
                hostname: Hostname::parse(&name(host)?).ok()?,
                namespace: Namespace::parse(&name(ns)?).ok()?,
                kind: ProviderType::parse(&name(kind)?).ok()?,
            })
        })
        .collect()
}

async fn publish_provider(
    from: &DiskStore,
    into: &dyn Store,
    provider: &Provider,
    done: &mut Published,
) -> Result<(), StoreError> {
    let Some(index) = from.read_json::<IndexRecord>(&from.index_path(provider))? else {
        return Ok(());
    };
    let mut listed = into.read_index(provider).await?.unwrap_or(IndexRecord {
        fetched_at_ms: 0,
        versions: BTreeMap::new(),
        protocols: BTreeMap::new(),
    });
    for version in index.versions.keys() {
        let Some(ours) =
            from.read_json::<crate::store::VersionRecord>(&from.version_path(provider, version))?
        else {
            continue;
        };
        // The store's record, when it has one, decides which archives it
        // may hold; ours must agree with it on every platform both list.
        let record = if let Some(theirs) = into.read_version(provider, version).await? {
            let disagree = ours.packages.iter().find(|(platform, pkg)| {
                theirs
                    .packages
                    .get(*platform)
                    .is_some_and(|t| t.sha256 != pkg.sha256)
            });
            if let Some((platform, _)) = disagree {
                done.kept_theirs.push((
                    format!("{provider} {version}"),
                    format!("the store's record names another archive for {platform}; the store's is kept"),
                ));
                continue;
            }
            theirs
        } else {
            into.write_version(&ours).await?;
            done.versions += 1;
            ours
        };
        let entry = listed.versions.entry(version.clone()).or_default();
        for platform in record.packages.keys() {
            if !entry.contains(platform) {
                entry.push(platform.clone());
            }
            let key = ArchiveKey::new(provider, version, platform);
            let path = from.archive_path(provider, version, platform);
            if !path.is_file() {
                continue;
            }
            if into.archive(&key).await?.is_some() {
                done.existed += 1;
                continue;
            }
            // The scratch file is checked already (import compared it with
            // the verified record); the store takes it over.
            into.keep_archive(TempPath::try_from_path(path)?, &key)
                .await?;
            done.stored += 1;
        }
        entry.sort();
    }
    into.write_index(provider, &listed).await
}

async fn publish_modules(
    from: &DiskStore,
    into: &dyn Store,
    done: &mut Published,
) -> Result<(), StoreError> {
    for (pin, held) in from.module_pins()? {
        let (module, version) = (&pin.module, &pin.version);
        if let Some(theirs) = into.read_module(module, version).await? {
            if theirs.h1 != pin.h1 {
                done.kept_theirs.push((
                    format!("module {module} {version}"),
                    format!(
                        "the store pins {} and the bundle {}; the store's pin is kept",
                        theirs.h1, pin.h1
                    ),
                ));
                continue;
            }
            if into.open_module(module, version).await?.is_some() {
                done.existed += 1;
                continue;
            }
        }
        if held {
            let package = from.module_package_path(module, version);
            into.keep_module(TempPath::try_from_path(package)?, &pin)
                .await?;
            done.stored += 1;
        }
        let mut index = into
            .read_module_index(module)
            .await?
            .unwrap_or(ModuleIndexRecord {
                fetched_at_ms: 0,
                versions: Vec::new(),
            });
        if !index.versions.contains(version) {
            index.versions.push(version.clone());
            index.versions.sort();
            into.write_module_index(module, &index).await?;
        }
    }
    Ok(())
}

/// What [`pull`] copied.
#[derive(Debug, Default)]
pub struct Pulled {
    /// Archives.
    pub archives: Vec<ArchiveKey>,
    /// Module packages.
    pub packages: Vec<(Module, Version)>,
}

/// Copies what `from` holds (version lists, the records of versions with
/// stored archives, the archives, module pins and packages) into the
/// scratch cache `into`.
pub async fn pull(from: &dyn Store, into: &DiskStore) -> Result<Pulled, StoreError> {
    let mut copied = Pulled::default();
    let mut seen_providers = std::collections::BTreeSet::new();
    let mut seen_versions = std::collections::BTreeSet::new();
    for archive in from.list_archives().await? {
        let key = archive.key();
        if seen_providers.insert(key.provider.clone()) {
            if let Some(index) = from.read_index(&key.provider).await? {
                into.write_json(&into.index_path(&key.provider), &index)?;
            }
        }
        if seen_versions.insert((key.provider.clone(), key.version.clone())) {
            if let Some(record) = from.read_version(&key.provider, &key.version).await? {
                into.write_json(&into.version_path(&key.provider, &key.version), &record)?;
            }
        }
        let (Some(stored), Some(reader)) =
            (from.archive(&key).await?, from.open_archive(&key).await?)
        else {
            continue;
        };
        let staged = copy_to_file(into, reader).await?;
        into.keep_hashed(
            staged,
            &key.provider,
            &key.version,
            &key.platform,
            &stored.h1,
        )?;
        copied.archives.push(key);
    }
    for (pin, held) in from.list_modules().await? {
        let (module, version) = (&pin.module, &pin.version);
        if let Some(index) = from.read_module_index(module).await? {
            into.write_json(&into.module_index_path(module), &index)?;
        }
        if held {
            if let Some(reader) = from.open_module(module, version).await? {
                let staged = copy_to_file(into, reader).await?;
                atomic::persist(staged, &into.module_package_path(module, version))?;
                copied.packages.push((module.clone(), version.clone()));
            }
        }
        into.write_json(&into.module_path(module, version), &pin)?;
    }
    Ok(copied)
}

/// Writes a stored object into a new file in the scratch cache's `tmp/`.
async fn copy_to_file(
    into: &DiskStore,
    opened: crate::store::ArchiveReader,
) -> Result<TempPath, StoreError> {
    let (file, staged) = atomic::temp_file(into.tmp_dir())?.into_parts();
    let mut file = tokio::fs::File::from_std(file);
    let mut chunks = tokio_util::io::ReaderStream::new(opened.into_reader());
    while let Some(chunk) = chunks.next().await {
        file.write_all(&chunk?).await?;
    }
    file.sync_all().await?;
    Ok(staged)
}
