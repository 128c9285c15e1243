//! The local-disk store: today's layout under `cache.dir`.
//!
//! Layout under `cache.dir` (every name below `providers/` comes from the
//! validated address types, never from raw request text):
//!
//! ```text
//! tmp/                                        files and checkouts being written; swept at start
//! providers/<hostname>/<namespace>/<type>/
//!     index.json                              versions and platforms, with fetch time
//!     <version>/version.json                  verified package metadata and its evidence
//!     <version>/terraform-provider-<type>_<version>_<os>_<arch>.zip
//!     <version>/terraform-provider-<type>_<version>_<os>_<arch>.zip.h1
//! modules/<hostname>/<namespace>/<name>/<system>/
//!     versions.json                           the module's versions, with fetch time
//!     <version>/module.json                   the pin: source, commit, tree hash
//!     <version>/package.tar.gz                the packaged source tree
//! releases/<product>/
//!     versions.json                           the CLI's released versions, with fetch time
//!     <version>/release.json                  the verified SHA256SUMS and its signatures
//!     <version>/files/<file>                  a release file that matched the signed checksums
//! ```
//!
//! A module's package is moved into place before its pin is written; a pin
//! stays when its package is removed, so a later fetch is checked against
//! it.
//!
//! An archive is present only once its SHA-256 has matched the signed
//! SHA256SUMS; its `.h1` file holds its `h1:` hash and is written before the
//! archive is moved into place.

use std::io;
use std::path::{Path, PathBuf};

use super::journal::{DiskPlace, Journal};
use super::{atomic, HeldRelease, ModuleRecord, ReleaseRecord, StoreError};
use crate::address::{Module, Platform, Product, Provider, ReleaseFile, Version};

/// The `h1:` hash of an archive file; an error when it is not a zip.
pub fn h1_of_file(path: &Path) -> Result<String, StoreError> {
    let file = std::fs::File::open(path)?;
    crate::verify::h1_of_zip(io::BufReader::new(file))
        .map_err(|e| StoreError::NotAnArchive(e.to_string()))
}

/// The cache directory and its layout.
#[derive(Debug, Clone)]
pub struct DiskStore {
    root: PathBuf,
    tmp: PathBuf,
    /// Where its changes are noted, when it was opened as the cache's
    /// store (the local tier of a bucket notes none).
    journal: Option<std::sync::Arc<Journal>>,
}

impl DiskStore {
    /// Opens (creating when needed) the cache at `root`.
    pub fn open(root: &Path) -> io::Result<DiskStore> {
        let tmp = root.join("tmp");
        std::fs::create_dir_all(root.join("providers"))?;
        std::fs::create_dir_all(&tmp)?;
        Ok(DiskStore {
            root: root.to_path_buf(),
            tmp,
            journal: None,
        })
    }

    /// The same store, noting its changes in `journal`.
    #[must_use]
    pub fn with_journal(mut self, journal: std::sync::Arc<Journal>) -> DiskStore {
        self.journal = Some(journal);
        self
    }

    /// Its root, as a journal writes there.
    pub fn place(&self) -> DiskPlace {
        DiskPlace {
            root: self.root.clone(),
            tmp: self.tmp.clone(),
        }
    }

    /// Removes unfinished files that an earlier run of the daemon left in
    /// `tmp/`. Only the daemon does this, at start: the other commands may
    /// run beside a daemon whose files there are still being written.
    pub fn sweep(&self) -> io::Result<()> {
        let mut swept = 0;
        for entry in std::fs::read_dir(&self.tmp)? {
            let entry = entry?;
            // Directories too: a module's source is checked out into one.
            let removed = if entry.file_type()?.is_dir() {
                std::fs::remove_dir_all(entry.path())
            } else {
                std::fs::remove_file(entry.path())
            };
            match removed {
                Ok(()) => swept += 1,
                Err(e) => tracing::warn!(
                    path = %entry.path().display(),
                    error = %e,
                    "could not remove an unfinished file of an earlier run"
                ),
            }
        }
        if swept > 0 {
            tracing::info!(swept, "removed unfinished files of an earlier run");
        }
        Ok(())
    }

    /// The cache's root directory.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The directory for files being written.
    pub fn tmp_dir(&self) -> &Path {
        &self.tmp
    }

    fn provider_dir(&self, p: &Provider) -> PathBuf {
        self.root
            .join("providers")
            .join(p.hostname.as_str())
            .join(p.namespace.as_str())
            .join(p.kind.as_str())
    }

    fn module_dir(&self, m: &Module) -> PathBuf {
        self.root
            .join("modules")
            .join(m.hostname.as_str())
            .join(m.namespace.as_str())
            .join(m.name.as_str())
            .join(m.system.as_str())
    }

    /// Where a module version's pin is kept.
    pub fn module_path(&self, m: &Module, v: &Version) -> PathBuf {
        self.module_dir(m).join(v.as_str()).join("module.json")
    }

    /// Where a module version's package is kept.
    pub fn module_package_path(&self, m: &Module, v: &Version) -> PathBuf {
        self.module_dir(m).join(v.as_str()).join("package.tar.gz")
    }

    /// Where a module's version list is kept.
    pub fn module_index_path(&self, m: &Module) -> PathBuf {
        self.module_dir(m).join("versions.json")
    }

    /// Every module version pinned in the cache, with whether its package
    /// is held too, in address and version order.
    pub fn module_pins(&self) -> io::Result<Vec<(ModuleRecord, bool)>> {
        let pattern = self.root.join("modules/*/*/*/*/*/module.json");
        let mut out = Vec::new();
        for path in glob::glob(&pattern.to_string_lossy())
            .map_err(io::Error::other)?
            .flatten()
        {
            let record: Option<ModuleRecord> = self.read_json(&path)?;
            if let Some(record) = record {
                let held = path.with_file_name("package.tar.gz").is_file();
                out.push((record, held));
            }
        }
        out.sort_by(|a, b| (&a.0.module, &a.0.version).cmp(&(&b.0.module, &b.0.version)));
        Ok(out)
    }

    /// Where a product's release list is kept.
    pub fn release_index_path(&self, product: Product) -> PathBuf {
        self.root
            .join("releases")
            .join(product.as_str())
            .join("versions.json")
    }

    /// Where a release's verified record is kept.
    pub fn release_path(&self, product: Product, version: &Version) -> PathBuf {
        self.root
            .join("releases")
            .join(product.as_str())
            .join(version.as_str())
            .join("release.json")
    }

    /// Where a release file is kept.
    pub fn release_file_path(&self, file: &ReleaseFile) -> PathBuf {
        self.release_path(file.product, &file.version)
            .with_file_name("files")
            .join(file.name.as_str())
    }

    /// Every release recorded in the cache, with the files held of it
    /// (name and size).
    pub fn release_records(&self) -> io::Result<Vec<HeldRelease>> {
        let pattern = self.root.join("releases/*/*/release.json");
        let mut out = Vec::new();
        for path in glob::glob(&pattern.to_string_lossy())
            .map_err(io::Error::other)?
            .flatten()
        {
            let Some(record) = self.read_json::<ReleaseRecord>(&path)? else {
                continue;
            };
            let mut files = Vec::new();
            match std::fs::read_dir(path.with_file_name("files")) {
                Ok(entries) => {
                    for entry in entries {
                        let entry = entry?;
                        let meta = entry.metadata()?;
                        if meta.is_file() {
                            files.push((
                                entry.file_name().to_string_lossy().into_owned(),
                                meta.len(),
                            ));
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(e),
            }
            files.sort();
            out.push((record, files));
        }
        out.sort_by(|a, b| (a.0.product, &a.0.version).cmp(&(b.0.product, &b.0.version)));
        Ok(out)
    }

    /// Where a provider's version list is kept.
    pub fn index_path(&self, p: &Provider) -> PathBuf {
        self.provider_dir(p).join("index.json")
    }

    /// Where a provider version's verified metadata is kept.
    pub fn version_path(&self, p: &Provider, v: &Version) -> PathBuf {
        self.provider_dir(p).join(v.as_str()).join("version.json")
    }

    /// Where an archive is kept.
    pub fn archive_path(&self, p: &Provider, v: &Version, platform: &Platform) -> PathBuf {
        self.provider_dir(p)
            .join(v.as_str())
            .join(p.archive_name(v, platform))
    }

    /// Where an archive's `h1:` hash is kept.
    pub fn h1_path(&self, p: &Provider, v: &Version, platform: &Platform) -> PathBuf {
        let mut path = self.archive_path(p, v, platform).into_os_string();
        path.push(".h1");
        PathBuf::from(path)
    }

    /// Reads a JSON record; `Ok(None)` when it does not exist.
    pub fn read_json<T: serde::de::DeserializeOwned>(&self, path: &Path) -> io::Result<Option<T>> {
        match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Moves a downloaded archive whose SHA-256 has been checked into place:
    /// computes its `h1:` hash (which also proves it is a zip archive),
    /// writes the `.h1` file, then renames the archive to its cache path.
    /// Returns the `h1:` hash.
    pub fn keep_archive(
        &self,
        temp: tempfile::TempPath,
        p: &Provider,
        v: &Version,
        platform: &Platform,
    ) -> Result<String, StoreError> {
        let h1 = h1_of_file(&temp)?;
        self.keep_hashed(temp, p, v, platform, &h1)?;
        Ok(h1)
    }

    /// Like [`DiskStore::keep_archive`], for an archive whose `h1:` hash the
    /// caller has computed already.
    pub fn keep_hashed(
        &self,
        temp: tempfile::TempPath,
        p: &Provider,
        v: &Version,
        platform: &Platform,
        h1: &str,
    ) -> Result<(), StoreError> {
        atomic::write(&self.tmp, &self.h1_path(p, v, platform), h1.as_bytes())
            .and_then(|()| atomic::persist(temp, &self.archive_path(p, v, platform)))
            .map_err(StoreError::from)
    }

    /// Writes a JSON record atomically.
    pub fn write_json<T: serde::Serialize>(&self, path: &Path, value: &T) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        atomic::write(&self.tmp, path, &bytes)
    }
}

impl DiskStore {
    /// Reads a JSON record that may not be there, on a blocking thread.
    async fn read_record<T>(
        &self,
        path: PathBuf,
        what: &'static str,
    ) -> Result<Option<T>, StoreError>
    where
        T: serde::de::DeserializeOwned + Send + 'static,
    {
        let read = tokio::task::spawn_blocking(move || match std::fs::read(path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        });
        let Some(bytes) = read.await.map_err(io::Error::other)?? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                what,
                reason: e.to_string(),
            })
    }

    /// Writes a JSON record atomically, on a blocking thread.
    async fn write_record<T: serde::Serialize>(
        &self,
        path: PathBuf,
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        let tmp = self.tmp.clone();
        tokio::task::spawn_blocking(move || atomic::write(&tmp, &path, &bytes))
            .await
            .map_err(io::Error::other)??;
        Ok(())
    }
}

mod backend;
mod held;
