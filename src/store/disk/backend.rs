//! The [`Store`] trait over the disk cache's layout: every record read and
//! written atomically on a blocking thread, archives and packages kept by a
//! rename into place, and the listings `tfmirror ls`, `verify` and the
//! residency index read at start.

use std::io;
use std::path::{Path, PathBuf};

use async_trait::async_trait;
use tempfile::{NamedTempFile, TempPath};

use super::DiskStore;
use crate::address::{ArchiveKey, Module, Product, Provider, ReleaseFile, Version};
use crate::store::journal::{self, Journal};
use crate::store::{
    atomic, inventory, ArchiveReader, ArchiveSource, CachedArchive, HeldItem, HeldRelease,
    IndexRecord, Item, Kept, ModuleIndexRecord, ModuleRecord, PolicyDecisions, ReleaseIndexRecord,
    ReleaseRecord, Store, StoreError, StoredArchive, VersionRecord,
};

#[async_trait]
impl Store for DiskStore {
    fn location(&self) -> String {
        self.root.display().to_string()
    }

    async fn read_index(&self, provider: &Provider) -> Result<Option<IndexRecord>, StoreError> {
        self.read_record(self.index_path(provider), "version list")
            .await
    }

    async fn write_index(
        &self,
        provider: &Provider,
        record: &IndexRecord,
    ) -> Result<(), StoreError> {
        self.write_record(self.index_path(provider), record).await
    }

    async fn read_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<VersionRecord>, StoreError> {
        self.read_record(self.version_path(provider, version), "version record")
            .await
    }

    async fn write_version(&self, record: &VersionRecord) -> Result<(), StoreError> {
        let path = self.version_path(&record.provider, &record.version);
        self.write_record(path, record).await
    }

    fn staging_file(&self) -> Result<NamedTempFile, StoreError> {
        Ok(atomic::temp_file(&self.tmp)?)
    }

    async fn read_decisions(&self) -> Result<Option<PolicyDecisions>, StoreError> {
        let path = self.root.join("policy/decisions.json");
        Ok(self.read_json(&path)?)
    }

    async fn write_decisions(&self, record: &PolicyDecisions) -> Result<(), StoreError> {
        let path = self.root.join("policy/decisions.json");
        Ok(self.write_json(&path, record)?)
    }

    async fn read_document(&self, path: &[&str]) -> Result<Option<Vec<u8>>, StoreError> {
        let file: PathBuf = path.iter().fold(self.root.clone(), |p, s| p.join(s));
        match tokio::fs::read(file).await {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn write_document(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError> {
        let file: PathBuf = path.iter().fold(self.root.clone(), |p, s| p.join(s));
        let tmp = self.tmp.clone();
        tokio::task::spawn_blocking(move || atomic::write(&tmp, &file, &bytes))
            .await
            .map_err(io::Error::other)??;
        Ok(())
    }

    async fn list_documents(&self, top: &str) -> Result<Vec<Vec<String>>, StoreError> {
        let base = self.root.clone();
        let top = top.to_owned();
        let found = tokio::task::spawn_blocking(move || documents_below(&base, &top))
            .await
            .map_err(io::Error::other)??;
        Ok(found)
    }

    async fn list_documents_after(
        &self,
        dir: &[&str],
        after: &str,
    ) -> Result<Vec<String>, StoreError> {
        let dir: PathBuf = dir.iter().fold(self.root.clone(), |p, s| p.join(s));
        let after = after.to_owned();
        Ok(
            tokio::task::spawn_blocking(move || super::held::files_after(&dir, &after))
                .await
                .map_err(io::Error::other)??,
        )
    }

    async fn list_documents_aged(
        &self,
        dir: &[&str],
    ) -> Result<Vec<crate::store::KeptDocument>, StoreError> {
        let base = self.root.clone();
        let dir: Vec<String> = dir.iter().map(|s| (*s).to_owned()).collect();
        Ok(
            tokio::task::spawn_blocking(move || documents_aged(&base, &dir))
                .await
                .map_err(io::Error::other)??,
        )
    }

    async fn remove_document(&self, path: &[&str]) -> Result<(), StoreError> {
        let file: PathBuf = path.iter().fold(self.root.clone(), |p, s| p.join(s));
        match tokio::fs::remove_file(file).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    fn journal(&self) -> Option<&std::sync::Arc<Journal>> {
        self.journal.as_ref()
    }

    fn archive_file(&self, key: &ArchiveKey) -> Option<PathBuf> {
        let path = self.archive_path(&key.provider, &key.version, &key.platform);
        path.is_file().then_some(path)
    }

    async fn keep_archive(&self, staged: TempPath, key: &ArchiveKey) -> Result<Kept, StoreError> {
        let _noted = self.changing(Item::Archive(key.clone())).await?;
        let (store, key) = (self.clone(), key.clone());
        let h1 = tokio::task::spawn_blocking(move || {
            store.keep_archive(staged, &key.provider, &key.version, &key.platform)
        })
        .await
        .map_err(io::Error::other)??;
        Ok(Kept { h1, created: true })
    }

    async fn archive(&self, key: &ArchiveKey) -> Result<Option<StoredArchive>, StoreError> {
        let path = self.archive_path(&key.provider, &key.version, &key.platform);
        let size = match tokio::fs::metadata(&path).await {
            Ok(meta) => meta.len(),
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        match tokio::fs::read_to_string(self.h1_path(&key.provider, &key.version, &key.platform))
            .await
        {
            Ok(h1) => Ok(Some(StoredArchive {
                size,
                h1: h1.trim().to_owned(),
            })),
            // An archive without its hash file is not servable (a crash
            // between the two renames, or half an eviction).
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    async fn open_archive(&self, key: &ArchiveKey) -> Result<Option<ArchiveReader>, StoreError> {
        open_file(&self.archive_path(&key.provider, &key.version, &key.platform)).await
    }

    async fn remove_archive(&self, key: &ArchiveKey) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Archive(key.clone())).await?;
        let (store, key) = (self.clone(), key.clone());
        tokio::task::spawn_blocking(move || inventory::remove(&store, &key))
            .await
            .map_err(io::Error::other)??;
        Ok(())
    }

    async fn touch_archive(&self, key: &ArchiveKey) {
        let (store, key) = (self.clone(), key.clone());
        let _ = tokio::task::spawn_blocking(move || inventory::touch(&store, &key)).await;
    }

    async fn held(&self, item: &Item) -> Result<Option<HeldItem>, StoreError> {
        let (store, item) = (self.clone(), item.clone());
        Ok(tokio::task::spawn_blocking(move || store.held_item(&item))
            .await
            .map_err(io::Error::other)??)
    }

    async fn list_archives(&self) -> Result<Vec<CachedArchive>, StoreError> {
        let store = self.clone();
        Ok(
            tokio::task::spawn_blocking(move || inventory::archives(&store))
                .await
                .map_err(io::Error::other)?,
        )
    }

    async fn each_archive(
        &self,
        each: &mut (dyn FnMut(CachedArchive) + Send),
    ) -> Result<(), StoreError> {
        // The walk runs on a thread of its own at the lowest priority, so
        // that the answers being served beside it come first; it hands the
        // archives over in batches, so that no more than a few batches are
        // held at once.
        const BATCH: usize = 1024;
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Vec<CachedArchive>>(4);
        let (done_tx, done) = tokio::sync::oneshot::channel::<()>();
        let store = self.clone();
        std::thread::Builder::new()
            .name("tfmirror-walk".into())
            .spawn(move || {
                super::held::lowest_priority();
                let mut batch = Vec::with_capacity(BATCH);
                inventory::walk(&store, &mut |a| {
                    batch.push(a);
                    if batch.len() == BATCH {
                        let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                        let _ = tx.blocking_send(full);
                    }
                });
                let _ = tx.blocking_send(batch);
                let _ = done_tx.send(());
            })?;
        while let Some(batch) = rx.recv().await {
            batch.into_iter().for_each(&mut *each);
        }
        // A walk that stopped short (a panic) sent no end.
        done.await
            .map_err(|_| io::Error::other("the walk of the cache stopped short"))?;
        Ok(())
    }

    async fn read_module_index(
        &self,
        module: &Module,
    ) -> Result<Option<ModuleIndexRecord>, StoreError> {
        self.read_record(self.module_index_path(module), "module version list")
            .await
    }

    async fn write_module_index(
        &self,
        module: &Module,
        record: &ModuleIndexRecord,
    ) -> Result<(), StoreError> {
        self.write_record(self.module_index_path(module), record)
            .await
    }

    async fn read_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ModuleRecord>, StoreError> {
        self.read_record(self.module_path(module, version), "module pin")
            .await
    }

    async fn keep_module(&self, staged: TempPath, record: &ModuleRecord) -> Result<(), StoreError> {
        let item = Item::Module(record.module.clone(), record.version.clone());
        let _noted = self.changing(item).await?;
        let package = self.module_package_path(&record.module, &record.version);
        tokio::task::spawn_blocking(move || atomic::persist(staged, &package))
            .await
            .map_err(io::Error::other)??;
        self.write_record(self.module_path(&record.module, &record.version), record)
            .await
    }

    async fn open_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ArchiveReader>, StoreError> {
        open_file(&self.module_package_path(module, version)).await
    }

    async fn remove_module(&self, module: &Module, version: &Version) -> Result<(), StoreError> {
        let _noted = (self.changing(Item::Module(module.clone(), version.clone()))).await?;
        match tokio::fs::remove_file(self.module_package_path(module, version)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn list_modules(&self) -> Result<Vec<(ModuleRecord, bool)>, StoreError> {
        let store = self.clone();
        let found = tokio::task::spawn_blocking(move || store.module_pins())
            .await
            .map_err(io::Error::other)??;
        Ok(found)
    }

    async fn read_release_index(
        &self,
        product: Product,
    ) -> Result<Option<ReleaseIndexRecord>, StoreError> {
        self.read_record(self.release_index_path(product), "release list")
            .await
    }

    async fn write_release_index(&self, record: &ReleaseIndexRecord) -> Result<(), StoreError> {
        self.write_record(self.release_index_path(record.product), record)
            .await
    }

    async fn read_release(
        &self,
        product: Product,
        version: &Version,
    ) -> Result<Option<ReleaseRecord>, StoreError> {
        self.read_record(self.release_path(product, version), "release record")
            .await
    }

    async fn write_release(&self, record: &ReleaseRecord) -> Result<(), StoreError> {
        self.write_record(self.release_path(record.product, &record.version), record)
            .await
    }

    async fn keep_release_file(
        &self,
        staged: TempPath,
        file: &ReleaseFile,
        _sha256: &str,
    ) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Release(file.clone())).await?;
        let path = self.release_file_path(file);
        tokio::task::spawn_blocking(move || atomic::persist(staged, &path))
            .await
            .map_err(io::Error::other)??;
        Ok(())
    }

    async fn open_release_file(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ArchiveReader>, StoreError> {
        open_file(&self.release_file_path(file)).await
    }

    async fn remove_release_file(&self, file: &ReleaseFile) -> Result<(), StoreError> {
        let _noted = self.changing(Item::Release(file.clone())).await?;
        match tokio::fs::remove_file(self.release_file_path(file)).await {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn list_releases(&self) -> Result<Vec<HeldRelease>, StoreError> {
        let store = self.clone();
        Ok(tokio::task::spawn_blocking(move || store.release_records())
            .await
            .map_err(io::Error::other)??)
    }

    async fn probe(&self, bytes: usize) -> Result<(), StoreError> {
        let tmp = self.tmp.clone();
        tokio::task::spawn_blocking(move || -> io::Result<()> {
            use std::io::Write;
            let mut file = atomic::temp_file(&tmp)?;
            if bytes > 0 {
                file.write_all(&vec![0u8; bytes])?;
                file.as_file().sync_all()?;
            }
            Ok(())
        })
        .await
        .map_err(io::Error::other)??;
        Ok(())
    }
}

impl DiskStore {
    /// Before a change to `item`: noted in the journal, when there is one.
    async fn changing(&self, item: Item) -> Result<Option<journal::Change<'_>>, StoreError> {
        journal::changing(self.journal.as_ref(), item).await
    }
}

/// Opens a stored file for reading; `None` when it is not there.
async fn open_file(path: &Path) -> Result<Option<ArchiveReader>, StoreError> {
    let path = path.to_owned();
    let opened = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(&path)?;
        let size = file.metadata()?.len();
        Ok::<_, io::Error>((file, size))
    })
    .await
    .map_err(io::Error::other)?;
    match opened {
        Ok((file, size)) => Ok(Some(ArchiveReader {
            size,
            source: ArchiveSource::File(file),
        })),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The paths (segments below `root`) of the files below `root/top`.
fn documents_below(root: &Path, top: &str) -> io::Result<Vec<Vec<String>>> {
    let found = walk_documents(root, &[top.to_owned()])?;
    Ok(found.into_iter().map(|(path, _)| path).collect())
}

/// The files below `dir` (a path below `root`), each with its path below
/// `root` and its metadata, in order of path.
fn walk_documents(
    root: &Path,
    dir: &[String],
) -> io::Result<Vec<(Vec<String>, std::fs::Metadata)>> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_vec()];
    while let Some(dir) = stack.pop() {
        let path: PathBuf = dir.iter().fold(root.to_path_buf(), |p, s| p.join(s));
        let entries = match std::fs::read_dir(&path) {
            Ok(entries) => entries,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let Ok(name) = entry.file_name().into_string() else {
                continue;
            };
            let mut below = dir.clone();
            below.push(name);
            if entry.file_type()?.is_dir() {
                stack.push(below);
            } else {
                out.push((below, entry.metadata()?));
            }
        }
    }
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The files below `dir`, with sizes and modification times, their paths
/// below `dir`.
fn documents_aged(root: &Path, dir: &[String]) -> io::Result<Vec<crate::store::KeptDocument>> {
    let found = walk_documents(root, dir)?;
    Ok(found
        .into_iter()
        .map(|(path, meta)| crate::store::KeptDocument {
            path: path[dir.len()..].to_vec(),
            size: meta.len(),
            // Where the system keeps no such time, it counts as written now.
            written: meta
                .modified()
                .unwrap_or_else(|_| std::time::SystemTime::now()),
        })
        .collect())
}
