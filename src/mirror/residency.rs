//! Which archives, module packages and CLI release files the cache holds, how big they are,
//! when each was last used and which archives are being sent right now;
//! and eviction of the least recently used ones when the cache outgrows
//! `cache.max_size`. (A module package being sent may be evicted: its
//! reader keeps the removed file open. Its pin stays in the store.)
//!
//! The index is read from the store once, at start, and kept up to date
//! as archives are stored, used and evicted, so that one eviction costs
//! the same however many archives the cache holds. An archive that another
//! process (`tfmirror sync`, `import`) put in the store joins the index
//! when the daemon first finds it there.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::address::{ArchiveKey, Module, Product, ReleaseFile, Version};
use crate::metrics::Metrics;
use crate::store::CachedArchive;
use compact::{compact, compact_of, expand, parts, Compact};

/// How long between two updates of an archive's last-use time in the store.
const TOUCH_EVERY: Duration = Duration::from_secs(3600);

/// One indexed archive.
#[derive(Debug, Clone, Copy)]
struct Entry {
    size: u64,
    last_used: u64,
    /// Order of use, which breaks ties between uses in the same second.
    turn: u64,
}

/// A module version, as the index knows its package.
pub type ModuleKey = (Module, Version);

/// What the cache holds, as `by_age` names it.
#[derive(Debug, Clone)]
enum Aged {
    Archive(Compact),
    Module(Arc<ModuleKey>),
    Release(Arc<ReleaseFile>),
}

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

/// The index. Each key is held once and shared by `entries` (or
/// `modules`) and `order.by_age`, which is ordered by (last use, turn),
/// which turns make unique, so it never compares keys.
#[derive(Default)]
struct Index {
    entries: HashMap<Compact, Entry>,
    /// Module packages.
    modules: HashMap<Arc<ModuleKey>, Entry>,
    /// CLI release files.
    releases: HashMap<Arc<ReleaseFile>, Entry>,
    /// Last use and totals of both.
    order: Order,
    /// Counts changes of which archives are held (not of their use).
    generation: u64,
    /// Archives being sent to clients, with how many readers each: never
    /// evicted.
    readers: HashMap<Compact, usize>,
    /// When each archive's last use was last written to the store.
    touched: HashMap<Compact, Instant>,
}

/// The order of last use and the totals that archives and module
/// packages share.
#[derive(Default)]
struct Order {
    /// Archives and module packages ordered by last use, oldest first.
    by_age: BTreeMap<(u64, u64), Aged>,
    /// The next use's turn.
    turns: u64,
    /// Bytes of everything indexed.
    bytes: u64,
}

impl Order {
    /// Indexes `key` in `map`, named in `by_age` by `aged`. Returns
    /// whether it was new.
    fn place<K: Eq + std::hash::Hash + ?Sized>(
        &mut self,
        map: &mut HashMap<Arc<K>, Entry>,
        key: &K,
        make: impl FnOnce(&K) -> Arc<K>,
        size: u64,
        last_used: u64,
        aged: fn(Arc<K>) -> Aged,
    ) -> bool {
        let (key, new) = match map.get_key_value(key) {
            Some((held, _)) => (held.clone(), false),
            None => (make(key), true),
        };
        if let Some(old) = map.remove(&key) {
            self.bytes -= old.size;
            self.by_age.remove(&(old.last_used, old.turn));
        }
        self.turns += 1;
        let entry = Entry {
            size,
            last_used,
            turn: self.turns,
        };
        self.bytes += size;
        self.by_age
            .insert((last_used, entry.turn), aged(key.clone()));
        map.insert(key, entry);
        new
    }

    /// Takes `key` out of `map` and of the order.
    fn unplace<K: Eq + std::hash::Hash + ?Sized>(
        &mut self,
        map: &mut HashMap<Arc<K>, Entry>,
        key: &K,
    ) -> Option<Entry> {
        let old = map.remove(key)?;
        self.bytes -= old.size;
        self.by_age.remove(&(old.last_used, old.turn));
        Some(old)
    }
}

impl Index {
    /// Indexes an archive of `size` bytes last used at `last_used`.
    fn insert(&mut self, key: &str, size: u64, last_used: u64) {
        if self.order.place(
            &mut self.entries,
            key,
            |k: &str| Compact::from(k),
            size,
            last_used,
            Aged::Archive,
        ) {
            self.generation += 1;
        }
    }

    fn remove(&mut self, key: &str) -> Option<Entry> {
        let old = self.order.unplace(&mut self.entries, key)?;
        self.generation += 1;
        Some(old)
    }

    /// Indexes a module package of `size` bytes last used at `last_used`.
    fn insert_module(&mut self, key: &ModuleKey, size: u64, last_used: u64) {
        self.order.place(
            &mut self.modules,
            key,
            |k| Arc::new(k.clone()),
            size,
            last_used,
            Aged::Module,
        );
    }

    fn remove_module(&mut self, key: &ModuleKey) -> Option<Entry> {
        self.order.unplace(&mut self.modules, key)
    }

    /// Indexes a release file of `size` bytes last used at `last_used`.
    fn insert_release(&mut self, key: &ReleaseFile, size: u64, last_used: u64) {
        self.order.place(
            &mut self.releases,
            key,
            |k| Arc::new(k.clone()),
            size,
            last_used,
            Aged::Release,
        );
    }

    /// Takes the least recently used archives and packages out of the
    /// index (never `keep`, never an archive being read) until it holds at
    /// most `max` bytes.
    fn evict_over(&mut self, max: u64, keep: &Evicted) -> Vec<Evicted> {
        let mut over = self.order.bytes.saturating_sub(max);
        let mut picked = Vec::new();
        for aged in self.order.by_age.values() {
            if over == 0 {
                break;
            }
            let (named, size) = match aged {
                Aged::Archive(k) => {
                    if self.readers.get(k.as_ref()).is_some_and(|n| *n > 0) {
                        continue;
                    }
                    // A form that did not parse back would be a bug: that
                    // archive stays rather than another being removed.
                    let Some(key) = expand(k) else {
                        debug_assert!(false, "{k} does not parse back");
                        continue;
                    };
                    (Evicted::Archive(key), self.entries[k.as_ref()].size)
                }
                Aged::Module(k) => (
                    Evicted::Module(k.0.clone(), k.1.clone()),
                    self.modules[k.as_ref()].size,
                ),
                Aged::Release(k) => (
                    Evicted::Release(ReleaseFile::clone(k)),
                    self.releases[k.as_ref()].size,
                ),
            };
            if named == *keep {
                continue;
            }
            over = over.saturating_sub(size);
            picked.push(named);
        }
        for named in &picked {
            match named {
                Evicted::Archive(k) => {
                    let k = compact(k);
                    self.remove(&k);
                    self.touched.remove(k.as_str());
                }
                Evicted::Module(m, v) => {
                    self.remove_module(&(m.clone(), v.clone()));
                }
                Evicted::Release(file) => {
                    self.order.unplace(&mut self.releases, file);
                }
            }
        }
        picked
    }
}

/// The held archives grouped for display: provider (as written) →
/// version → platforms, sorted.
pub type Holdings = BTreeMap<String, BTreeMap<Version, Vec<String>>>;

/// The cache's residency: see the module documentation.
pub struct Residency {
    max_bytes: Option<u64>,
    metrics: Arc<Metrics>,
    index: Mutex<Index>,
    /// [`Holdings`] as last grouped, with the index generation it shows.
    holdings: Mutex<Option<(u64, Arc<Holdings>)>>,
}

impl Residency {
    /// The residency of the archives `held`, the module packages
    /// `modules` and the release files `releases` (each with its size and
    /// last use), to be kept under `max_size`.
    pub fn new(
        held: Vec<CachedArchive>,
        modules: Vec<(ModuleKey, u64, u64)>,
        releases: Vec<(ReleaseFile, u64, u64)>,
        max_size: Option<bytesize::ByteSize>,
        metrics: Arc<Metrics>,
    ) -> Residency {
        let mut index = Index::default();
        for a in held {
            index.insert(
                &compact_of(&a.provider, &a.version, &a.platform),
                a.size,
                a.last_used,
            );
        }
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
            holdings: Mutex::new(None),
        };
        residency.publish();
        residency
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Index> {
        self.index.lock().expect("residency lock")
    }

    /// The held archives grouped by provider and version: grouped again
    /// only after archives joined or left the index, so that looking
    /// costs nothing however many archives are held.
    pub fn holdings(&self) -> Arc<Holdings> {
        let mut cached = self.holdings.lock().expect("holdings lock");
        let index = self.lock();
        if let Some((generation, holdings)) = cached.as_ref() {
            if *generation == index.generation {
                return holdings.clone();
            }
        }
        let mut grouped = Holdings::new();
        for key in index.entries.keys() {
            let (provider, version, platform) = parts(key);
            let Ok(version) = Version::parse(version) else {
                continue;
            };
            grouped
                .entry(provider.to_owned())
                .or_default()
                .entry(version)
                .or_default()
                .push(platform.to_owned());
        }
        let generation = index.generation;
        drop(index);
        for platforms in grouped.values_mut().flat_map(BTreeMap::values_mut) {
            platforms.sort();
        }
        let grouped = Arc::new(grouped);
        *cached = Some((generation, grouped.clone()));
        grouped
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
        (index.order.bytes, index.entries.len() as u64)
    }

    fn publish(&self) {
        let (bytes, count) = self.usage();
        self.metrics.set_cache_size(bytes, count);
    }

    /// Marks an archive as being read: it is not evicted until
    /// [`Residency::done_reading`].
    pub fn reading(&self, key: &ArchiveKey) {
        *self.lock().readers.entry(compact(key).into()).or_default() += 1;
    }

    /// Ends one [`Residency::reading`].
    pub fn done_reading(&self, key: &ArchiveKey) {
        let key = compact(key);
        let mut index = self.lock();
        if let Some(n) = index.readers.get_mut(key.as_str()) {
            *n -= 1;
            if *n == 0 {
                index.readers.remove(key.as_str());
            }
        }
    }

    /// Records a use of an archive of `size` bytes (indexing it when it
    /// was not). Returns whether its last-use time should be written to
    /// the store now (at most once per `TOUCH_EVERY`).
    pub fn used(&self, key: &ArchiveKey, size: u64) -> bool {
        let key = compact(key);
        let mut index = self.lock();
        let known = index.entries.contains_key(key.as_str());
        index.insert(&key, size, now_secs());
        let due = index
            .touched
            .get(key.as_str())
            .is_none_or(|t| t.elapsed() >= TOUCH_EVERY);
        if due {
            index.touched.insert(key.into(), Instant::now());
        }
        drop(index);
        if !known {
            self.publish();
        }
        due
    }

    /// Counts a newly stored archive and picks the least recently used
    /// archives and module packages to evict (never `key`, never an archive
    /// being read) until the cache fits `cache.max_size`. They leave the
    /// index at once; the caller removes them from the store.
    pub fn stored(&self, key: &ArchiveKey, size: u64) -> Vec<Evicted> {
        self.stored_then_evict(&Evicted::Archive(key.clone()), |index| {
            index.insert(&compact(key), size, now_secs());
        })
    }

    /// Indexes what was stored (`insert`) and picks what to evict, never
    /// `keep`, the newly stored item.
    fn stored_then_evict(&self, keep: &Evicted, insert: impl FnOnce(&mut Index)) -> Vec<Evicted> {
        let mut index = self.lock();
        insert(&mut index);
        let chosen = match self.max_bytes {
            Some(max) => index.evict_over(max, keep),
            None => Vec::new(),
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
        let removed = self.lock().remove(&compact(key)).is_some();
        if removed {
            self.publish();
        }
    }

    /// Puts back an archive whose eviction failed.
    pub fn restore(&self, key: &ArchiveKey, size: u64) {
        self.lock().insert(&compact(key), size, 0);
        self.publish();
    }
}

fn now_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

mod compact;
#[cfg(test)]
mod tests;
