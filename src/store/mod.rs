//! What the cache keeps, behind one trait: provider version lists, version
//! records with the signed evidence that verified them, archives, and for
//! modules their version lists, pins and packaged source trees.
//!
//! The mirror only speaks to [`Store`]; [`DiskStore`] (the layout under
//! `cache.dir`) and [`S3Store`] (a bucket several instances share) are its
//! implementations. An archive enters a store in
//! two steps: it is downloaded into a local staging file
//! ([`Store::staging_file`]), checked, and then kept
//! ([`Store::keep_archive`]), which makes it visible whole or not at all.

pub mod advisories;
pub mod atomic;
pub mod builds;
pub mod changes;
mod disk;
pub mod docs;
pub mod evidence;
pub mod format;
pub mod health;
pub mod inventory;
mod item;
pub mod journal;
pub mod pins;
mod place;
pub mod records;
pub mod release_builds;
mod s3;
pub mod space;

use std::io;
use std::pin::Pin;
use std::sync::Arc;

use anyhow::Context as _;

use async_trait::async_trait;
use tempfile::{NamedTempFile, TempPath};

use crate::address::{ArchiveKey, Module, Platform, Product, Provider, ReleaseFile, Version};
use crate::config::{Config, StorageBackend};

pub use disk::{h1_of_file, DiskStore};
pub use inventory::CachedArchive;
pub use item::{HeldItem, Item, KeptDocument};
pub use records::{
    Acceptance, IndexRecord, KeyDetails, KeylessPin, ModuleIndexRecord, ModuleRecord,
    PackageRecord, PinnedPackage, PolicyDecision, PolicyDecisions, ReleaseIndexRecord,
    ReleaseRecord, Repin, SignedSums, VersionRecord,
};
pub use s3::S3Store;

/// Why the store could not do what was asked.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Reading or writing the storage failed (disk full, read-only file
    /// system, permissions).
    #[error("{0}")]
    Unavailable(#[from] io::Error),
    /// A stored record could not be understood.
    #[error("unreadable {what}: {reason}")]
    Corrupt {
        /// Which record.
        what: &'static str,
        /// What is wrong with it.
        reason: String,
    },
    /// The bytes offered as an archive are not a zip archive, so no `h1:`
    /// hash exists for them.
    #[error("{0}")]
    NotAnArchive(String),
}

/// A release the store holds a record for, with the files it holds of it
/// (name and size).
pub type HeldRelease = (ReleaseRecord, Vec<(String, u64)>);

/// An archive the store holds: its size and `h1:` hash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredArchive {
    /// Size in bytes.
    pub size: u64,
    /// The `h1:` hash.
    pub h1: String,
}

/// An archive the store kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// Its `h1:` hash.
    pub h1: String,
    /// Whether this call created the stored object; `false` when another
    /// instance sharing the store had created it with the same bytes.
    pub created: bool,
}

/// The answer to [`Store::claim`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This instance may download the archive; it calls
    /// [`Store::release`] when done.
    Granted,
    /// Another instance sharing the store is downloading it: look for the
    /// archive again shortly, or claim again.
    Busy,
}

/// An archive opened for reading.
pub struct ArchiveReader {
    /// Its size in bytes.
    pub size: u64,
    /// Where its bytes come from.
    pub source: ArchiveSource,
}

/// Where the bytes of an opened archive come from.
pub enum ArchiveSource {
    /// A file on this machine's disk: a connection that can send files
    /// sends it as it is.
    File(std::fs::File),
    /// Any other reader (an object in a bucket).
    Reader(Pin<Box<dyn tokio::io::AsyncRead + Send>>),
}

impl ArchiveReader {
    /// Its bytes, read in turn.
    pub fn into_reader(self) -> Pin<Box<dyn tokio::io::AsyncRead + Send>> {
        match self.source {
            ArchiveSource::File(file) => Box::pin(tokio::fs::File::from_std(file)),
            ArchiveSource::Reader(reader) => reader,
        }
    }
}

/// Where the cache keeps what it holds. Every write is atomic: a reader
/// sees the old object or the whole new one, never a part.
#[async_trait]
pub trait Store: Send + Sync {
    /// Where the store is, for people (a directory, a bucket).
    fn location(&self) -> String;

    /// A provider's stored version list.
    async fn read_index(&self, provider: &Provider) -> Result<Option<IndexRecord>, StoreError>;

    /// Stores a provider's version list.
    async fn write_index(
        &self,
        provider: &Provider,
        record: &IndexRecord,
    ) -> Result<(), StoreError>;

    /// A provider version's stored record.
    async fn read_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<VersionRecord>, StoreError>;

    /// Stores a provider version's record.
    async fn write_version(&self, record: &VersionRecord) -> Result<(), StoreError>;

    /// A new local file to download an archive into, removed when dropped
    /// unless kept. Clients may read it by path while it is written.
    fn staging_file(&self) -> Result<NamedTempFile, StoreError>;

    /// Keeps a staged archive whose SHA-256 the caller has checked:
    /// computes its `h1:` hash (which proves it is a zip archive) and makes
    /// it visible under `key`.
    async fn keep_archive(&self, staged: TempPath, key: &ArchiveKey) -> Result<Kept, StoreError>;

    /// An archive's size and `h1:` hash, when the store holds it.
    async fn archive(&self, key: &ArchiveKey) -> Result<Option<StoredArchive>, StoreError>;

    /// Opens an archive for reading; `None` when the store does not hold it.
    async fn open_archive(&self, key: &ArchiveKey) -> Result<Option<ArchiveReader>, StoreError>;

    /// Removes an archive (eviction).
    async fn remove_archive(&self, key: &ArchiveKey) -> Result<(), StoreError>;

    /// Records that an archive was used now.
    async fn touch_archive(&self, key: &ArchiveKey);

    /// Every archive the store holds, with its size and last use.
    async fn list_archives(&self) -> Result<Vec<CachedArchive>, StoreError>;

    /// Whether the store holds `item` now, with its size and last use as
    /// the store records them: an archive only with its `h1:` file, as a
    /// listing counts it.
    async fn held(&self, item: &Item) -> Result<Option<HeldItem>, StoreError>;

    /// Calls `each` with every cached archive, in no set order, without
    /// holding the whole listing (the archive index's start).
    async fn each_archive(
        &self,
        each: &mut (dyn FnMut(CachedArchive) + Send),
    ) -> Result<(), StoreError> {
        for archive in self.list_archives().await? {
            each(archive);
        }
        Ok(())
    }

    /// A module's stored version list.
    async fn read_module_index(
        &self,
        module: &Module,
    ) -> Result<Option<ModuleIndexRecord>, StoreError>;

    /// Stores a module's version list.
    async fn write_module_index(
        &self,
        module: &Module,
        record: &ModuleIndexRecord,
    ) -> Result<(), StoreError>;

    /// A module version's pin.
    async fn read_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ModuleRecord>, StoreError>;

    /// Keeps a packaged module (`staged`, checked by the caller) and its
    /// pin: the package becomes visible first, then the pin.
    async fn keep_module(&self, staged: TempPath, record: &ModuleRecord) -> Result<(), StoreError>;

    /// Opens a module version's package; `None` when the store does not
    /// hold it.
    async fn open_module(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Option<ArchiveReader>, StoreError>;

    /// Removes a module version's package (eviction); its pin stays.
    async fn remove_module(&self, module: &Module, version: &Version) -> Result<(), StoreError>;

    /// Every module version the store holds a pin for, with whether its
    /// package is held too.
    async fn list_modules(&self) -> Result<Vec<(ModuleRecord, bool)>, StoreError>;

    /// A product's stored release list.
    async fn read_release_index(
        &self,
        product: Product,
    ) -> Result<Option<ReleaseIndexRecord>, StoreError>;

    /// Stores a product's release list.
    async fn write_release_index(&self, record: &ReleaseIndexRecord) -> Result<(), StoreError>;

    /// A release's verified record.
    async fn read_release(
        &self,
        product: Product,
        version: &Version,
    ) -> Result<Option<ReleaseRecord>, StoreError>;

    /// Stores a release's verified record.
    async fn write_release(&self, record: &ReleaseRecord) -> Result<(), StoreError>;

    /// Keeps a staged release file whose SHA-256 (`sha256`) the caller
    /// checked against the release's signed checksums.
    async fn keep_release_file(
        &self,
        staged: TempPath,
        file: &ReleaseFile,
        sha256: &str,
    ) -> Result<(), StoreError>;

    /// Opens a release file; `None` when the store does not hold it.
    async fn open_release_file(
        &self,
        file: &ReleaseFile,
    ) -> Result<Option<ArchiveReader>, StoreError>;

    /// Removes a release file (eviction, quarantine); its release record
    /// stays.
    async fn remove_release_file(&self, file: &ReleaseFile) -> Result<(), StoreError>;

    /// Every release the store holds a record for, with the files it holds
    /// of it and their sizes, in product and version order.
    async fn list_releases(&self) -> Result<Vec<HeldRelease>, StoreError>;

    /// Writes and removes a scratch object of `bytes` bytes, to learn
    /// whether the store can be written.
    async fn probe(&self, bytes: usize) -> Result<(), StoreError>;

    /// Proves at start that the store can be used at all, so that a
    /// misconfigured one stops the daemon with its reason rather than
    /// answering 503 request by request. Local disks need no proof (a
    /// cache that cannot be written still serves what it holds).
    async fn check_reachable(&self) -> Result<(), StoreError> {
        Ok(())
    }

    /// Claims the download of an archive the store does not hold, so that
    /// instances sharing the store fetch it once. A store only one
    /// instance uses grants every claim.
    async fn claim(&self, _key: &ArchiveKey) -> Result<Claim, StoreError> {
        Ok(Claim::Granted)
    }

    /// Gives up a claim [`Store::claim`] granted.
    async fn release(&self, _key: &ArchiveKey) {}

    /// A URL from which clients may fetch the stored archive directly for
    /// `lifetime`, where the store can hand one out; `None` otherwise.
    async fn presigned_url(
        &self,
        _key: &ArchiveKey,
        _lifetime: std::time::Duration,
    ) -> Result<Option<url::Url>, StoreError> {
        Ok(None)
    }

    /// The versions an operator approved or denied by name.
    async fn read_decisions(&self) -> Result<Option<PolicyDecisions>, StoreError>;

    /// Stores the versions an operator approved or denied by name.
    async fn write_decisions(&self, record: &PolicyDecisions) -> Result<(), StoreError>;

    /// A small record kept at `path` (segments below the store's root,
    /// each a validated name), such as a keyless version's pin
    /// ([`pins`]); `None` when there is none.
    async fn read_document(&self, path: &[&str]) -> Result<Option<Vec<u8>>, StoreError>;

    /// Keeps a small record at `path`, replacing it whole.
    async fn write_document(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError>;

    /// The paths of every record kept below the folder `top`.
    async fn list_documents(&self, top: &str) -> Result<Vec<Vec<String>>, StoreError>;

    /// The names of the records kept in the folder `dir` (not below it)
    /// that sort after `after`, in order.
    async fn list_documents_after(
        &self,
        dir: &[&str],
        after: &str,
    ) -> Result<Vec<String>, StoreError>;

    /// Every record kept below the folder `dir`, with its size and when it
    /// was last written (written again, it counts as new).
    async fn list_documents_aged(&self, dir: &[&str]) -> Result<Vec<KeptDocument>, StoreError>;

    /// Removes the record at `path`; a record that is not there is not an
    /// error.
    async fn remove_document(&self, path: &[&str]) -> Result<(), StoreError>;

    /// The journal this store notes its changes in ([`journal`]), when it
    /// was opened with one.
    fn journal(&self) -> Option<&Arc<journal::Journal>> {
        None
    }

    /// Writes the journal's pending entries and closes its session: what a
    /// command does when it ends.
    async fn close(&self) {
        if let Some(journal) = self.journal() {
            journal.close().await;
        }
    }

    /// The file on this machine that holds a stored archive, where the
    /// store keeps archives as files (so that a copy can be a hard link);
    /// `None` otherwise.
    fn archive_file(&self, _key: &ArchiveKey) -> Option<std::path::PathBuf> {
        None
    }

    /// Adds versions, each with the platforms whose archives are held, to
    /// a provider's stored version list, in one write. A list that does not
    /// exist yet is created with a fetch time of zero, so that an online
    /// mirror asks the origin for the full list.
    async fn add_to_index(
        &self,
        provider: &Provider,
        versions: &std::collections::BTreeMap<Version, Vec<Platform>>,
    ) -> Result<(), StoreError> {
        let mut index = self.read_index(provider).await?.unwrap_or(IndexRecord {
            fetched_at_ms: 0,
            versions: std::collections::BTreeMap::new(),
            protocols: std::collections::BTreeMap::new(),
            first_seen_ms: std::collections::BTreeMap::new(),
        });
        let mut changed = false;
        for (version, platforms) in versions {
            let listed = index.versions.entry(version.clone()).or_insert_with(|| {
                changed = true;
                Vec::new()
            });
            for platform in platforms {
                if !listed.contains(platform) {
                    listed.push(platform.clone());
                    changed = true;
                }
            }
            listed.sort();
        }
        if !changed {
            return Ok(());
        }
        self.write_index(provider, &index).await
    }

    /// Adds a version to a module's stored version list, created as
    /// [`Store::add_to_index`] creates a provider's.
    async fn add_to_module_index(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<(), StoreError> {
        let mut index = self
            .read_module_index(module)
            .await?
            .unwrap_or(ModuleIndexRecord {
                fetched_at_ms: 0,
                versions: Vec::new(),
                first_seen_ms: std::collections::BTreeMap::new(),
            });
        if index.versions.contains(version) {
            return Ok(());
        }
        index.versions.push(version.clone());
        index.versions.sort();
        self.write_module_index(module, &index).await
    }
}

/// Opens the store `storage.backend` names, proves it can be used
/// ([`Store::check_reachable`]) and refuses it when a newer tfmirror wrote
/// it ([`format::open_cache`]), so that a misconfigured or newer store
/// stops the daemon or the command with its reason. Its changes are noted
/// in its journal ([`journal`]). `daemon`: opened by the daemon, which
/// removes what an earlier run left unfinished in the local `tmp/`
/// (commands may run beside a daemon whose files are being written
/// there); every other process also writes the change note
/// ([`changes`]) before its first change.
pub async fn open(config: &Config, daemon: bool) -> anyhow::Result<Arc<dyn Store>> {
    let disk = DiskStore::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    if daemon {
        disk.sweep()
            .with_context(|| format!("sweeping {}", disk.tmp_dir().display()))?;
    }
    let role = if daemon {
        "serve".to_owned()
    } else {
        command_name()
    };
    let store: Arc<dyn Store> =
        if let (StorageBackend::S3, Some(s3)) = (config.storage.backend, &config.storage.s3) {
            let bucket =
                S3Store::open(s3, &config.cache.dir).context("opening the bucket (storage.s3)")?;
            let journal = journal::Journal::start(bucket.place(), &role, !daemon);
            Arc::new(bucket.with_journal(journal))
        } else {
            let journal = journal::Journal::start(Box::new(disk.place()), &role, !daemon);
            Arc::new(disk.with_journal(journal))
        };
    store
        .check_reachable()
        .await
        .map_err(|e| anyhow::anyhow!("the cache's store cannot be used: {e}"))?;
    format::open_cache(store.as_ref()).await?;
    Ok(store)
}

/// The command this process runs, as its journal names it: the first
/// argument when it is a plain word (`sync`, `import`), else `command`.
fn command_name() -> String {
    std::env::args()
        .nth(1)
        .filter(|a| {
            !a.is_empty() && a.len() <= 32 && a.bytes().all(|b| b.is_ascii_lowercase() || b == b'-')
        })
        .unwrap_or_else(|| "command".to_owned())
}
