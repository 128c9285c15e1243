//! Which archives, module packages and CLI release files the cache holds, how big they are,
//! when each was last used and which archives are being sent right now;
//! and eviction of the least recently used ones when the cache outgrows
//! `cache.max_size`. (A module package being sent may be evicted: its
//! reader keeps the removed file open. Its pin stays in the store.)
//!
//! The index is built once, at start, from the daemon's snapshot of it
//! ([`snapshot`]) or else from the store (by the daemon while it serves:
//! the `walk` module), and kept up to date as archives are stored, used and
//! evicted. Archives take 24 bytes each (the
//! `table` module); the order of last use costs nothing per archive (the
//! `order` module); one eviction costs the same however many archives the
//! cache holds. An archive that another process (`tfmirror sync`,
//! `import`, another instance on a shared bucket) put in the store joins
//! the index when the daemon first finds it there.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::address::{ArchiveKey, Module, Product, ReleaseFile, Version};
use crate::metrics::Metrics;
use crate::store::CachedArchive;
use order::{stamp, Candidate, Queue};
use table::{Held, Name, Table};

pub use held::{Archives, HeldPage};

/// How long between two updates of an archive's last-use time in the store.
const TOUCH_EVERY: Duration = Duration::from_secs(3600);

/// One indexed module package or release file.
#[derive(Debug, Clone, Copy)]
struct Entry {
    size: u64,
    stamp: u64,
}

/// A module version, as the index knows its package.
pub type ModuleKey = (Module, Version);

/// Something eviction removed from the index, for the caller to remove
/// from the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evicted {
    /// An archive.
    Archive(ArchiveKey),
    /// A module version's package (its pin stays).
    Module(Module, Version),
    /// A CLI release file (its release's record stays).
    Release(ReleaseFile),
}

/// The index.
#[derive(Default)]
struct Index {
    archives: Table,
    /// Module packages.
    modules: HashMap<Arc<ModuleKey>, Entry>,
    /// CLI release files.
    releases: HashMap<Arc<ReleaseFile>, Entry>,
    /// Bytes of everything indexed.
    bytes: u64,
    /// The next use's turn.
    turns: u64,
    /// Whether which archives are held changed since the index was built.
    changed: bool,
    /// Archives being sent to clients, with how many readers each: never
    /// evicted.
    readers: HashMap<ArchiveKey, usize>,
    /// Eviction's next candidates.
    queue: Queue,
    /// While the store is walked as the daemon serves (`walk`): the
    /// archives that left the store meanwhile, which the walk may still
    /// report.
    walking: Option<HashSet<ArchiveKey>>,
}

impl Index {
    /// The stamp of a use at `secs`.
    fn next_stamp(&mut self, secs: u64) -> u64 {
        self.turns += 1;
        stamp(secs, self.turns)
    }

    /// Indexes an archive of `size` bytes last used at `secs`. Returns
    /// its entry as it was, if it was indexed.
    fn insert(&mut self, key: &ArchiveKey, size: u64, secs: u64) -> Option<Held> {
        self.insert_touching(key, size, secs, |touched| touched)
    }

    /// Like [`Index::insert`], with the time its last use was written to
    /// the store (0 for an archive not indexed) passed through `touch`.
    fn insert_touching(
        &mut self,
        key: &ArchiveKey,
        size: u64,
        secs: u64,
        touch: impl FnOnce(u32) -> u32,
    ) -> Option<Held> {
        let provider = self.archives.provider_id_or_new(&key.provider);
        let platform = self.archives.platform_id_or_new(&key.platform)?;
        let name = Name {
            provider,
            version: key.version.as_str().into(),
            platform,
        };
        if let Some(gone) = &mut self.walking {
            gone.remove(key);
        }
        let stamp = self.next_stamp(secs);
        let touched = touch(self.archives.get(&name).map_or(0, |h| h.touched));
        let held = Held {
            size,
            stamp,
            touched,
            platform,
        };
        let old = self.archives.put(&name, held);
        self.bytes = self.bytes - old.map_or(0, |o| o.size) + size;
        self.changed |= old.is_none();
        self.queue.joined(stamp);
        old
    }

    fn remove(&mut self, key: &ArchiveKey) -> Option<Held> {
        let old = self.archives.take(&self.archives.name(key)?)?;
        self.bytes -= old.size;
        self.changed = true;
        Some(old)
    }

    /// Indexes a module package or release file in `map`.
    fn place<K: Eq + std::hash::Hash + Clone>(
        map: &mut HashMap<Arc<K>, Entry>,
        bytes: &mut u64,
        key: &K,
        entry: Entry,
    ) {
        let key = match map.get_key_value(key) {
            Some((held, _)) => held.clone(),
            None => Arc::new(key.clone()),
        };
        *bytes += entry.size;
        if let Some(old) = map.insert(key, entry) {
            *bytes -= old.size;
        }
    }

    /// Takes `key` out of `map`, a module package's or release file's.
    fn unplace<K: Eq + std::hash::Hash>(
        map: &mut HashMap<Arc<K>, Entry>,
        bytes: &mut u64,
        key: &K,
    ) -> Option<Entry> {
        let old = map.remove(key)?;
        *bytes -= old.size;
        Some(old)
    }

    /// The entry of a module package or release file of `size` bytes used
    /// at `secs`, with eviction's queue told of its stamp.
    fn queued_entry(&mut self, size: u64, secs: u64) -> Entry {
        let entry = Entry {
            size,
            stamp: self.next_stamp(secs),
        };
        self.queue.joined(entry.stamp);
        entry
    }

    fn insert_module(&mut self, key: &ModuleKey, size: u64, secs: u64) {
        let entry = self.queued_entry(size, secs);
        Self::place(&mut self.modules, &mut self.bytes, key, entry);
    }

    fn remove_module(&mut self, key: &ModuleKey) -> Option<Entry> {
        Self::unplace(&mut self.modules, &mut self.bytes, key)
    }

    fn insert_release(&mut self, key: &ReleaseFile, size: u64, secs: u64) {
        let entry = self.queued_entry(size, secs);
        Self::place(&mut self.releases, &mut self.bytes, key, entry);
    }

    fn remove_release(&mut self, key: &ReleaseFile) -> Option<Entry> {
        Self::unplace(&mut self.releases, &mut self.bytes, key)
    }

    /// What a queued candidate is now: gone or used since it was queued
    /// (`None`), or what eviction would remove and its size.
    fn still(&self, stamp: u64, candidate: &Candidate) -> Option<(Evicted, u64)> {
        match candidate {
            Candidate::Archive(name) => {
                let held = self.archives.get(name).filter(|h| h.stamp == stamp)?;
                Some((Evicted::Archive(self.archives.key(name)?), held.size))
            }
            Candidate::Module(key) => {
                let entry = self.modules.get(key).filter(|e| e.stamp == stamp)?;
                Some((Evicted::Module(key.0.clone(), key.1.clone()), entry.size))
            }
            Candidate::Release(key) => {
                let entry = self.releases.get(key).filter(|e| e.stamp == stamp)?;
                Some((Evicted::Release(ReleaseFile::clone(key)), entry.size))
            }
        }
    }

    /// Takes the least recently used archives and packages out of the
    /// index (never `keep`, never an archive being read) until it holds at
    /// most `max` bytes.
    fn evict_over(&mut self, max: u64, keep: Option<&Evicted>) -> Vec<Evicted> {
        let mut picked = Vec::new();
        let mut passed = Vec::new();
        // A pass that queued only what cannot go ends the search.
        let mut fruitful = true;
        while self.bytes > max {
            let Some((stamp, candidate)) = self.queue.pop() else {
                if !fruitful {
                    break;
                }
                self.queue.put_back(std::mem::take(&mut passed));
                self.refill();
                fruitful = false;
                if self.queue.is_empty() {
                    break;
                }
                continue;
            };
            let Some((named, _)) = self.still(stamp, &candidate) else {
                continue;
            };
            let being_read = match &named {
                Evicted::Archive(key) => self.readers.get(key).is_some_and(|n| *n > 0),
                _ => false,
            };
            if being_read || keep == Some(&named) {
                passed.push((stamp, candidate));
                continue;
            }
            match &named {
                Evicted::Archive(key) => {
                    self.remove(key);
                }
                Evicted::Module(m, v) => {
                    self.remove_module(&(m.clone(), v.clone()));
                }
                Evicted::Release(file) => {
                    self.remove_release(file);
                }
            }
            fruitful = true;
            picked.push(named);
        }
        self.queue.put_back(passed);
        picked
    }
}

/// The cache's residency: see the module documentation.
pub struct Residency {
    max_bytes: Option<u64>,
    metrics: Arc<Metrics>,
    index: Mutex<Index>,
}

impl Residency {
    /// The residency of the archives `held`, the module packages
    /// `modules` and the release files `releases` (each with its size and
    /// last use), to be kept under `max_size`.
    pub fn new(
        held: Archives,
        modules: Vec<(ModuleKey, u64, u64)>,
        releases: Vec<(ReleaseFile, u64, u64)>,
        max_size: Option<bytesize::ByteSize>,
        metrics: Arc<Metrics>,
    ) -> Residency {
        let (archives, bytes, turns) = held.into_parts();
        let mut index = Index {
            archives,
            bytes,
            turns,
            ..Index::default()
        };
        for (key, size, last_used) in modules {
            index.insert_module(&key, size, last_used);
        }
        for (key, size, last_used) in releases {
            index.insert_release(&key, size, last_used);
        }
        let residency = Residency {
            max_bytes: max_size.map(|m| m.as_u64()),
            metrics,
            index: Mutex::new(index),
        };
        residency.publish();
        residency
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().expect("residency lock")
    }

    /// The CLI releases whose files the cache holds, with how many files.
    pub fn held_releases(&self) -> BTreeMap<(Product, Version), usize> {
        let mut out = BTreeMap::new();
        for file in self.lock().releases.keys() {
            *out.entry((file.product, file.version.clone())).or_default() += 1;
        }
        out
    }

    /// Cached bytes (archives, module packages and release files) and
    /// archives.
    pub fn usage(&self) -> (u64, u64) {
        let index = self.lock();
        (index.bytes, index.archives.len())
    }

    fn publish(&self) {
        let (bytes, count) = self.usage();
        self.metrics.set_cache_size(bytes, count);
    }

    /// Marks an archive as being read: it is not evicted until
    /// [`Residency::done_reading`].
    pub fn reading(&self, key: &ArchiveKey) {
        *self.lock().readers.entry(key.clone()).or_default() += 1;
    }

    /// Ends one [`Residency::reading`].
    pub fn done_reading(&self, key: &ArchiveKey) {
        let mut index = self.lock();
        if let Some(n) = index.readers.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                index.readers.remove(key);
            }
        }
    }

    /// Records a use of an archive of `size` bytes (indexing it when it
    /// was not). Returns whether its last-use time should be written to
    /// the store now (at most once per `TOUCH_EVERY`).
    pub fn used(&self, key: &ArchiveKey, size: u64) -> bool {
        let now = now_secs();
        let mut index = self.lock();
        let mut due = false;
        let known = index
            .insert_touching(key, size, now, |touched| {
                due = now.saturating_sub(u64::from(touched)) >= TOUCH_EVERY.as_secs();
                if due {
                    u32::try_from(now).unwrap_or(u32::MAX)
                } else {
                    touched
                }
            })
            .is_some();
        drop(index);
        if !known {
            self.publish();
        }
        due
    }

    /// Counts a newly stored archive and picks the least recently used
    /// archives and module packages to evict (never `key`, never an archive
    /// being read) until the cache fits `cache.max_size`. They leave the
    /// index at once; the caller removes them from the store. Nothing is
    /// picked while the store is being walked: the index does not yet
    /// know what is least recently used.
    pub fn stored(&self, key: &ArchiveKey, size: u64) -> Vec<Evicted> {
        self.stored_then_evict(&Evicted::Archive(key.clone()), |index| {
            index.insert(key, size, now_secs());
        })
    }

    /// Indexes what was stored (`insert`) and picks what to evict, never
    /// `keep`, the newly stored item.
    fn stored_then_evict(&self, keep: &Evicted, insert: impl FnOnce(&mut Index)) -> Vec<Evicted> {
        let mut index = self.lock();
        insert(&mut index);
        let chosen = match self.max_bytes {
            Some(max) if index.walking.is_none() => index.evict_over(max, Some(keep)),
            _ => Vec::new(),
        };
        drop(index);
        self.publish();
        chosen
    }

    /// Like [`Residency::stored`], for a newly stored module package.
    pub fn stored_module(&self, module: &Module, version: &Version, size: u64) -> Vec<Evicted> {
        let key = (module.clone(), version.clone());
        self.stored_then_evict(&Evicted::Module(key.0.clone(), key.1.clone()), |index| {
            index.insert_module(&key, size, now_secs());
        })
    }

    /// Like [`Residency::stored`], for a newly stored release file.
    pub fn stored_release(&self, file: &ReleaseFile, size: u64) -> Vec<Evicted> {
        self.stored_then_evict(&Evicted::Release(file.clone()), |index| {
            index.insert_release(file, size, now_secs());
        })
    }

    /// Records a use of a release file of `size` bytes.
    pub fn release_used(&self, file: &ReleaseFile, size: u64) {
        self.lock().insert_release(file, size, now_secs());
    }

    /// Records a use of a module package of `size` bytes.
    pub fn module_used(&self, module: &Module, version: &Version, size: u64) {
        let key = (module.clone(), version.clone());
        self.lock().insert_module(&key, size, now_secs());
    }

    /// Forgets a module package that is no longer in the store.
    pub fn forget_module(&self, module: &Module, version: &Version) {
        let key = (module.clone(), version.clone());
        self.lock().remove_module(&key);
        self.publish();
    }

    /// Forgets an archive that is no longer in the store.
    pub fn forget(&self, key: &ArchiveKey) {
        let mut index = self.lock();
        let removed = index.remove(key).is_some();
        if let Some(gone) = &mut index.walking {
            gone.insert(key.clone());
        }
        drop(index);
        if removed {
            self.publish();
        }
    }

    /// Puts back an archive whose eviction failed.
    pub fn restore(&self, key: &ArchiveKey, size: u64) {
        self.lock().insert(key, size, 0);
        self.publish();
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl From<Vec<CachedArchive>> for Archives {
    fn from(listed: Vec<CachedArchive>) -> Archives {
        let mut archives = Archives::default();
        for a in listed {
            archives.push(&a);
        }
        archives
    }
}

mod held;
mod order;
pub mod snapshot;
mod table;
#[cfg(test)]
mod tests;
mod walk;
