//! Which archives, module packages and CLI release files the cache holds, how big they are,
//! when each was last used and which archives are being sent right now;
//! and eviction of the least recently used ones when the cache outgrows
//! `cache.max_size`. (A module package being sent may be evicted: its
//! reader keeps the removed file open. Its pin stays in the store.)
//!
//! The daemon's index starts from its snapshot ([`snapshot`]) or from
//! nothing, is reconciled with the store while the daemon serves
//! ([`reconcile`]), and is kept up to date as archives are stored, used
//! and evicted, and as the store's journal reports what other processes
//! changed. Archives take 24 bytes each (the `table` module); the order of
//! last use costs nothing per archive (the `order` module); one eviction
//! costs the same however many archives the cache holds; module packages
//! and release files are few (the `packages` module). An archive found in
//! the store on use joins the index as an arrival does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::address::{ArchiveKey, Module, ReleaseFile, Version};
use crate::metrics::Metrics;
use crate::store::{CachedArchive, Item};
use order::{stamp, Candidate, Queue};
use table::{Held, Name, Table};

pub use held::{Archives, HeldPage, HeldVersion, TakenPage};
pub use reconcile::Corrections;

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

/// What a use of an archive asks of the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Used {
    /// Write the use to the store now (at most once per `TOUCH_EVERY`).
    pub touch: bool,
    /// What to evict now that an archive the index lacked joined it.
    pub evicted: Vec<Item>,
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
    /// Bytes of documentation kept: counted toward the bound, never picked
    /// for eviction (it goes with its versions, [`super::doc_sweep`]).
    docs: u64,
    /// The next use's turn.
    turns: u64,
    /// Whether which archives are held changed since the index was built.
    changed: bool,
    /// Archives being sent to clients, with how many readers each: never
    /// evicted.
    readers: HashMap<ArchiveKey, usize>,
    /// Eviction's next candidates.
    queue: Queue,
    /// The reconciliation with the store under way, if any.
    reconciling: Option<reconcile::Reconciling>,
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
        self.back(key);
        let stamp = self.next_stamp(secs);
        let touched = touch(self.archives.get(&name).map_or(0, |h| h.touched));
        let held = Held {
            size,
            stamp,
            touched,
            platform,
            seen: true,
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

    /// What a queued candidate is now: gone or used since it was queued
    /// (`None`), or what eviction would remove and its size.
    fn still(&self, stamp: u64, candidate: &Candidate) -> Option<(Item, u64)> {
        match candidate {
            Candidate::Archive(name) => {
                let held = self.archives.get(name).filter(|h| h.stamp == stamp)?;
                Some((Item::Archive(self.archives.key(name)?), held.size))
            }
            Candidate::Module(key) => {
                let entry = self.modules.get(key).filter(|e| e.stamp == stamp)?;
                Some((Item::Module(key.0.clone(), key.1.clone()), entry.size))
            }
            Candidate::Release(key) => {
                let entry = self.releases.get(key).filter(|e| e.stamp == stamp)?;
                Some((Item::Release(ReleaseFile::clone(key)), entry.size))
            }
        }
    }

    /// Takes the least recently used archives and packages out of the
    /// index (never `keep`, never an archive being read) until it holds at
    /// most `max` bytes.
    fn evict_over(&mut self, max: u64, keep: Option<&Item>) -> Vec<Item> {
        let mut picked = Vec::new();
        let mut passed = Vec::new();
        // A pass that queued only what cannot go ends the search.
        let mut fruitful = true;
        while self.bytes.saturating_add(self.docs) > max {
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
                Item::Archive(key) => self.readers.get(key).is_some_and(|n| *n > 0),
                _ => false,
            };
            if being_read || keep == Some(&named) {
                passed.push((stamp, candidate));
                continue;
            }
            match &named {
                Item::Archive(key) => {
                    self.remove(key);
                }
                Item::Module(m, v) => {
                    self.remove_module(&(m.clone(), v.clone()));
                }
                Item::Release(file) => {
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

    /// Cached bytes (archives, module packages and release files) and
    /// archives.
    pub fn usage(&self) -> (u64, u64) {
        let index = self.lock();
        (index.bytes, index.archives.len())
    }

    fn publish(&self) {
        let (bytes, count) = self.usage();
        self.metrics.set_cache_size(bytes, count);
        self.metrics.set_docs_bytes(self.docs_bytes());
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

    /// Records a use of an archive of `size` bytes, indexing it when it
    /// was not (and then picking what to evict, as for an arrival).
    pub fn used(&self, key: &ArchiveKey, size: u64) -> Used {
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
        if known {
            return Used {
                touch: due,
                evicted: Vec::new(),
            };
        }
        Used {
            touch: due,
            evicted: self.over(Some(&Item::Archive(key.clone()))),
        }
    }

    /// Counts a newly stored archive and picks the least recently used
    /// archives and module packages to evict (never `key`, never an archive
    /// being read) until the cache fits `cache.max_size`. They leave the
    /// index at once; the caller removes them from the store. Nothing is
    /// picked while the store is being walked: the index does not yet
    /// know what is least recently used.
    pub fn stored(&self, key: &ArchiveKey, size: u64) -> Vec<Item> {
        self.stored_then_evict(&Item::Archive(key.clone()), |index| {
            index.insert(key, size, now_secs());
        })
    }

    /// Indexes what was stored (`insert`) and picks what to evict, never
    /// `keep`, the newly stored item.
    fn stored_then_evict(&self, keep: &Item, insert: impl FnOnce(&mut Index)) -> Vec<Item> {
        insert(&mut self.lock());
        self.over(Some(keep))
    }

    /// Picks the least recently used archives and packages to evict (never
    /// `keep`, never an archive being read) until the cache fits
    /// `cache.max_size`. They leave the index at once; the caller removes
    /// them from the store. Nothing is picked while a reconciliation runs
    /// ([`reconcile`]).
    pub fn over(&self, keep: Option<&Item>) -> Vec<Item> {
        let mut index = self.lock();
        let chosen = match self.max_bytes {
            Some(max) if index.reconciling.is_none() => index.evict_over(max, keep),
            _ => Vec::new(),
        };
        drop(index);
        self.publish();
        chosen
    }

    /// Sets the bytes documentation takes in the store, as a sweep counted
    /// them, and picks what to evict for them (see [`Residency::over`]).
    pub fn docs_counted(&self, bytes: u64) -> Vec<Item> {
        self.lock().docs = bytes;
        self.over(None)
    }

    /// Adds the bytes of documentation just kept (counted whole, pages
    /// shared with other versions too, until the next sweep counts them
    /// once), and picks what to evict for them.
    pub fn docs_added(&self, bytes: u64) -> Vec<Item> {
        let mut index = self.lock();
        index.docs = index.docs.saturating_add(bytes);
        drop(index);
        self.over(None)
    }

    /// The bytes documentation is counted as taking.
    pub fn docs_bytes(&self) -> u64 {
        self.lock().docs
    }

    /// Forgets an archive that is no longer in the store.
    pub fn forget(&self, key: &ArchiveKey) {
        let mut index = self.lock();
        let removed = index.remove(key).is_some();
        index.left(key);
        drop(index);
        if removed {
            self.publish();
        }
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

#[cfg(test)]
mod counting;
mod held;
pub mod names;
mod order;
mod packages;
pub mod reconcile;
mod rows;
pub mod snapshot;
mod table;
#[cfg(test)]
mod tests;
