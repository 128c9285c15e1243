//! The on-disk cache.
//!
//! Layout under `cache.dir` (every name below `providers/` comes from the
//! validated address types, never from raw request text):
//!
//! ```text
//! tmp/                                        files being written; swept at start
//! providers/<hostname>/<namespace>/<type>/
//!     index.json                              versions and platforms, with fetch time
//!     <version>/version.json                  verified package metadata and its evidence
//!     <version>/terraform-provider-<type>_<version>_<os>_<arch>.zip
//!     <version>/terraform-provider-<type>_<version>_<os>_<arch>.zip.h1
//! ```
//!
//! An archive is present only once its SHA-256 has matched the signed
//! SHA256SUMS; its `.h1` file holds its `h1:` hash and is written before the
//! archive is moved into place.

pub mod atomic;
pub mod health;
pub mod inventory;
pub mod records;

use std::io;
use std::path::{Path, PathBuf};

use crate::address::{Platform, Provider, Version};

pub use records::{IndexRecord, PackageRecord, SignedSums, VersionRecord};

/// The `h1:` hash of an archive file; an error when it is not a zip.
pub fn h1_of_file(path: &Path) -> Result<String, KeepError> {
    let file = std::fs::File::open(path).map_err(KeepError::Disk)?;
    crate::verify::h1_of_zip(io::BufReader::new(file))
        .map_err(|e| KeepError::NotAnArchive(e.to_string()))
}

/// Why a checked archive could not be kept.
#[derive(Debug, thiserror::Error)]
pub enum KeepError {
    /// Reading or writing the cache failed.
    #[error("{0}")]
    Disk(io::Error),
    /// The bytes are not a zip archive, so no `h1:` hash exists for them.
    #[error("{0}")]
    NotAnArchive(String),
}

/// The cache directory and its layout.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    tmp: PathBuf,
}

impl Store {
    /// Opens (creating when needed) the cache at `root`.
    pub fn open(root: &Path) -> io::Result<Store> {
        let tmp = root.join("tmp");
        std::fs::create_dir_all(root.join("providers"))?;
        std::fs::create_dir_all(&tmp)?;
        Ok(Store {
            root: root.to_path_buf(),
            tmp,
        })
    }

    /// Removes unfinished files that an earlier run of the daemon left in
    /// `tmp/`. Only the daemon does this, at start: the other commands may
    /// run beside a daemon whose files there are still being written.
    pub fn sweep(&self) -> io::Result<()> {
        let mut swept = 0;
        for entry in std::fs::read_dir(&self.tmp)? {
            let entry = entry?;
            if std::fs::remove_file(entry.path()).is_ok() {
                swept += 1;
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
    ) -> Result<String, KeepError> {
        let h1 = h1_of_file(&temp)?;
        self.keep_hashed(temp, p, v, platform, &h1)?;
        Ok(h1)
    }

    /// Like [`Store::keep_archive`], for an archive whose `h1:` hash the
    /// caller has computed already.
    pub fn keep_hashed(
        &self,
        temp: tempfile::TempPath,
        p: &Provider,
        v: &Version,
        platform: &Platform,
        h1: &str,
    ) -> Result<(), KeepError> {
        atomic::write(&self.tmp, &self.h1_path(p, v, platform), h1.as_bytes())
            .and_then(|()| atomic::persist(temp, &self.archive_path(p, v, platform)))
            .map_err(KeepError::Disk)
    }

    /// Adds a version and its platforms to a provider's stored version
    /// list (created when there is none, with a fetch time of zero so that
    /// an online mirror asks the origin for the full list).
    pub fn add_to_index(
        &self,
        p: &Provider,
        v: &Version,
        platforms: Vec<Platform>,
    ) -> io::Result<()> {
        let path = self.index_path(p);
        let mut index: IndexRecord = self.read_json(&path)?.unwrap_or(IndexRecord {
            fetched_at_ms: 0,
            versions: Default::default(),
        });
        if index.versions.get(v) == Some(&platforms) {
            return Ok(());
        }
        let listed = index.versions.entry(v.clone()).or_default();
        for platform in platforms {
            if !listed.contains(&platform) {
                listed.push(platform);
            }
        }
        listed.sort();
        self.write_json(&path, &index)
    }

    /// Writes a JSON record atomically.
    pub fn write_json<T: serde::Serialize>(&self, path: &Path, value: &T) -> io::Result<()> {
        let bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        atomic::write(&self.tmp, path, &bytes)
    }
}
