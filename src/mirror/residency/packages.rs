//! Module packages and CLI release files in the index: fewer than the
//! archives by far, each held in a map with its size and stamp, taking
//! their turn with the archives in eviction's order.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::{now_secs, Entry, Index, ModuleKey, Residency};
use crate::address::{Module, Product, ReleaseFile, Version};
use crate::store::Item;

impl Index {
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

    pub(super) fn insert_module(&mut self, key: &ModuleKey, size: u64, secs: u64) {
        let entry = self.queued_entry(size, secs);
        Self::place(&mut self.modules, &mut self.bytes, key, entry);
    }

    pub(super) fn remove_module(&mut self, key: &ModuleKey) -> Option<Entry> {
        Self::unplace(&mut self.modules, &mut self.bytes, key)
    }

    pub(super) fn insert_release(&mut self, key: &ReleaseFile, size: u64, secs: u64) {
        let entry = self.queued_entry(size, secs);
        Self::place(&mut self.releases, &mut self.bytes, key, entry);
    }

    pub(super) fn remove_release(&mut self, key: &ReleaseFile) -> Option<Entry> {
        Self::unplace(&mut self.releases, &mut self.bytes, key)
    }
}

impl Residency {
    /// The CLI releases whose files the cache holds, with how many files.
    pub fn held_releases(&self) -> BTreeMap<(Product, Version), usize> {
        let mut out = BTreeMap::new();
        for file in self.lock().releases.keys() {
            *out.entry((file.product, file.version.clone())).or_default() += 1;
        }
        out
    }

    /// The CLI release files held.
    pub fn held_release_files(&self) -> Vec<ReleaseFile> {
        self.lock()
            .releases
            .keys()
            .map(|f| ReleaseFile::clone(f))
            .collect()
    }

    /// Like [`Residency::stored`], for a newly stored module package.
    pub fn stored_module(&self, module: &Module, version: &Version, size: u64) -> Vec<Item> {
        let key = (module.clone(), version.clone());
        self.stored_then_evict(&Item::Module(key.0.clone(), key.1.clone()), |index| {
            index.insert_module(&key, size, now_secs());
        })
    }

    /// Like [`Residency::stored`], for a newly stored release file.
    pub fn stored_release(&self, file: &ReleaseFile, size: u64) -> Vec<Item> {
        self.stored_then_evict(&Item::Release(file.clone()), |index| {
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

    /// Forgets a release file that is no longer in the store.
    pub fn forget_release(&self, file: &ReleaseFile) {
        self.lock().remove_release(file);
        self.publish();
    }

    /// The module packages and release files indexed.
    pub fn packages(&self) -> (Vec<ModuleKey>, Vec<ReleaseFile>) {
        let index = self.lock();
        let modules = index.modules.keys().map(|k| ModuleKey::clone(k)).collect();
        let releases = index
            .releases
            .keys()
            .map(|k| ReleaseFile::clone(k))
            .collect();
        (modules, releases)
    }

    /// Indexes a module package or release file found in the store with its
    /// size and last use, when it is not indexed (or corrects its size).
    /// Returns whether it was not indexed.
    pub fn package_found(&self, item: &Item, size: u64, last_used: u64) -> bool {
        let mut guard = self.lock();
        let index = &mut *guard;
        let joined = match item {
            Item::Module(module, version) => {
                let key = (module.clone(), version.clone());
                let new = Self::found_in(&mut index.modules, &mut index.bytes, &key, size);
                if new {
                    index.insert_module(&key, size, last_used);
                }
                new
            }
            Item::Release(file) => {
                let new = Self::found_in(&mut index.releases, &mut index.bytes, file, size);
                if new {
                    index.insert_release(file, size, last_used);
                }
                new
            }
            Item::Archive(_) => false,
        };
        drop(guard);
        self.publish();
        joined
    }

    /// Corrects the size of `key` in `map` when it is there; true when it
    /// is not.
    fn found_in<K: Eq + std::hash::Hash>(
        map: &mut HashMap<Arc<K>, Entry>,
        bytes: &mut u64,
        key: &K,
        size: u64,
    ) -> bool {
        match map.get_mut(key) {
            Some(entry) => {
                *bytes = *bytes - entry.size + size;
                entry.size = size;
                false
            }
            None => true,
        }
    }
}
