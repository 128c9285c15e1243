//! The residency index's table of archives, laid out so that a million
//! archives fit in a few tens of megabytes: each provider is held once,
//! with its versions (as written) in order, and each version holds one
//! fixed-size [`Held`] per platform in a boxed slice; platforms are
//! numbered. No string, map entry or heap allocation is made per archive.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::names::ProviderNames;
use super::rows::Rows;
use crate::address::{ArchiveKey, Platform, Provider, Version};

/// One held archive: 24 bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Held {
    /// Size in bytes.
    pub size: u64,
    /// Order of last use: the second (in its upper bits) and the turn
    /// within the index, which breaks ties between uses in one second.
    pub stamp: u64,
    /// When its last use was last written to the store (seconds since the
    /// Unix epoch, 0 for never).
    pub touched: u32,
    /// The platform's number in [`Table::platform`].
    pub platform: u16,
    /// Whether it is known to be in the store: set when the daemon stores
    /// or uses it, or a reconciliation finds it; cleared when a
    /// reconciliation begins (in the padding: still 24 bytes).
    pub seen: bool,
}

/// One provider and what the cache holds of it.
#[derive(Debug)]
pub(super) struct Slot {
    /// The provider.
    pub provider: Provider,
    /// Its versions (as written, in the order of that text) with one
    /// entry per held platform. A version with none is removed.
    pub versions: BTreeMap<Box<str>, Box<[Held]>>,
    /// Its versions and platforms as the pages show them, made when a
    /// page first asks after they change ([`Table::rows`]).
    rows: Option<Arc<Rows>>,
}

/// An archive as the table names it: the provider's number, the version
/// as written and the platform's number.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(super) struct Name {
    pub provider: u32,
    pub version: Box<str>,
    pub platform: u16,
}

/// The table: see the module documentation.
#[derive(Debug, Default)]
pub(super) struct Table {
    slots: Vec<Slot>,
    ids: HashMap<Provider, u32>,
    /// Shared with the pages, which read their text after the lock (a
    /// new platform copies the list if a page still holds it).
    platforms: Arc<Vec<Platform>>,
    platform_ids: HashMap<Platform, u16>,
    count: u64,
    /// Versions with an archive held, kept as the table changes.
    versions: u64,
    /// The providers with an archive held, by name (then number): their
    /// count and their order on the pages, kept as the table changes.
    held: BTreeSet<(Box<str>, u32)>,
    /// The same order as numbers, which a page enters at its position:
    /// made when a page first asks after a provider arrives or leaves.
    order: Option<Arc<[u32]>>,
    /// The names the held providers are found by.
    names: ProviderNames,
}

impl Table {
    /// Archives held.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Versions with an archive held.
    pub fn versions_held(&self) -> u64 {
        self.versions
    }

    /// The providers with an archive held, by name.
    pub fn providers_held(&self) -> &BTreeSet<(Box<str>, u32)> {
        &self.held
    }

    /// The names the held providers are found by.
    pub fn provider_names(&self) -> &ProviderNames {
        &self.names
    }

    /// Provider `id`'s held versions, newest first, as the pages show
    /// them: made once after each change, then shared.
    pub fn rows(&mut self, id: u32) -> Arc<Rows> {
        let platforms = &self.platforms;
        let slot = &mut self.slots[id as usize];
        let (provider, versions) = (&slot.provider, &slot.versions);
        let rows = slot.rows.get_or_insert_with(|| {
            let held = (versions.iter())
                .map(|(v, entries)| (&**v, entries.iter().map(|h| h.platform).collect()));
            Arc::new(Rows::new(provider.to_string(), held, |n| {
                &platforms[usize::from(n)]
            }))
        });
        rows.clone()
    }

    /// The held providers' numbers in page order: made once after a
    /// provider arrives or leaves, then shared.
    pub fn order(&mut self) -> Arc<[u32]> {
        let held = &self.held;
        let order = (self.order).get_or_insert_with(|| held.iter().map(|(_, id)| *id).collect());
        order.clone()
    }

    /// The platforms by number, shared.
    pub fn platforms(&self) -> Arc<Vec<Platform>> {
        self.platforms.clone()
    }

    /// Notes that provider `id` held `before` versions before a change
    /// to its versions or their platforms.
    fn versions_changed(&mut self, id: u32, before: usize) {
        self.slots[id as usize].rows = None;
        let slot = &self.slots[id as usize];
        let after = slot.versions.len();
        self.versions = self.versions + after as u64 - before as u64;
        match (before == 0, after == 0) {
            (true, false) => {
                self.order = None;
                self.held.insert((slot.provider.to_string().into(), id));
                self.names.add(id, &slot.provider);
            }
            (false, true) => {
                self.order = None;
                self.held.remove(&(slot.provider.to_string().into(), id));
                self.names.remove(id);
            }
            _ => {}
        }
    }

    /// The providers, by number (a provider with nothing held stays, with
    /// no versions, so that numbers never change).
    pub fn slots(&self) -> &[Slot] {
        &self.slots
    }

    /// The platform numbered `n`.
    pub fn platform(&self, n: u16) -> &Platform {
        &self.platforms[usize::from(n)]
    }

    /// Whether a platform is numbered `n`.
    pub fn has_platform(&self, n: u16) -> bool {
        usize::from(n) < self.platforms.len()
    }

    /// Sets a whole version's entries (sorted by platform, each platform
    /// once), as a snapshot lists them. Returns the entries it replaced.
    pub fn put_version(
        &mut self,
        provider: u32,
        version: Box<str>,
        held: Box<[Held]>,
    ) -> Option<Box<[Held]>> {
        self.count += held.len() as u64;
        let versions = &mut self.slots[provider as usize].versions;
        let before = versions.len();
        // A version with nothing held is not kept.
        let old = if held.is_empty() {
            versions.remove(&version)
        } else {
            versions.insert(version, held)
        };
        self.count -= old.as_ref().map_or(0, |o| o.len() as u64);
        self.versions_changed(provider, before);
        old
    }

    /// The provider's number, if it was ever indexed.
    pub fn provider_id(&self, provider: &Provider) -> Option<u32> {
        self.ids.get(provider).copied()
    }

    /// The provider's number, numbering it when new.
    pub fn provider_id_or_new(&mut self, provider: &Provider) -> u32 {
        if let Some(id) = self.provider_id(provider) {
            return id;
        }
        let id = u32::try_from(self.slots.len()).expect("fewer than 2^32 providers");
        self.slots.push(Slot {
            provider: provider.clone(),
            versions: BTreeMap::new(),
            rows: None,
        });
        self.ids.insert(provider.clone(), id);
        id
    }

    /// The platform's number, numbering it when new. `None` past 65,536
    /// platforms (there are a few dozen).
    pub fn platform_id_or_new(&mut self, platform: &Platform) -> Option<u16> {
        if let Some(id) = self.platform_ids.get(platform) {
            return Some(*id);
        }
        // The last number is kept for the pages' rows (`rows::END`).
        let id = u16::try_from(self.platforms.len())
            .ok()
            .filter(|n| *n < u16::MAX)?;
        Arc::make_mut(&mut self.platforms).push(platform.clone());
        self.platform_ids.insert(platform.clone(), id);
        Some(id)
    }

    /// The table's name for `key`, when it holds that archive's provider
    /// and platform.
    pub fn name(&self, key: &ArchiveKey) -> Option<Name> {
        Some(Name {
            provider: self.provider_id(&key.provider)?,
            version: key.version.as_str().into(),
            platform: *self.platform_ids.get(&key.platform)?,
        })
    }

    /// The key `name` stands for.
    pub fn key(&self, name: &Name) -> Option<ArchiveKey> {
        Some(ArchiveKey {
            provider: self.slots.get(name.provider as usize)?.provider.clone(),
            version: Version::parse(&name.version).ok()?,
            platform: self.platforms.get(usize::from(name.platform))?.clone(),
        })
    }

    /// The entry of an archive.
    pub fn get(&self, name: &Name) -> Option<&Held> {
        self.slots
            .get(name.provider as usize)?
            .versions
            .get(&name.version)?
            .iter()
            .find(|h| h.platform == name.platform)
    }

    /// The entry of an archive, to change in place (its platform stays).
    pub fn get_mut(&mut self, name: &Name) -> Option<&mut Held> {
        self.slots
            .get_mut(name.provider as usize)?
            .versions
            .get_mut(&name.version)?
            .iter_mut()
            .find(|h| h.platform == name.platform)
    }

    /// Marks every archive as not seen.
    pub fn clear_seen(&mut self) {
        for slot in &mut self.slots {
            for held in slot.versions.values_mut() {
                held.iter_mut().for_each(|h| h.seen = false);
            }
        }
    }

    /// Takes out every archive not seen. Returns how many, and their
    /// bytes.
    pub fn drop_unseen(&mut self) -> (u64, u64) {
        let (mut count, mut bytes) = (0, 0);
        for id in 0..self.slots.len() {
            let slot = &mut self.slots[id];
            let before = slot.versions.len();
            let mut changed = false;
            slot.versions.retain(|_, held| {
                if held.iter().all(|h| h.seen) {
                    return true;
                }
                let kept: Vec<Held> = held.iter().filter(|h| h.seen).copied().collect();
                for gone in held.iter().filter(|h| !h.seen) {
                    count += 1;
                    bytes += gone.size;
                }
                *held = kept.into_boxed_slice();
                changed = true;
                !held.is_empty()
            });
            if changed {
                self.versions_changed(u32::try_from(id).expect("numbered as u32"), before);
            }
        }
        self.count -= count;
        (count, bytes)
    }

    /// Sets an archive's entry (its `platform` is `name`'s). Returns the
    /// entry it replaced.
    pub fn put(&mut self, name: &Name, held: Held) -> Option<Held> {
        let held = Held {
            platform: name.platform,
            ..held
        };
        let slot = &mut self.slots[name.provider as usize];
        let Some(platforms) = slot.versions.get_mut(&name.version) else {
            let before = slot.versions.len();
            slot.versions.insert(name.version.clone(), Box::new([held]));
            self.count += 1;
            self.versions_changed(name.provider, before);
            return None;
        };
        if let Some(old) = platforms.iter_mut().find(|h| h.platform == name.platform) {
            return Some(std::mem::replace(old, held));
        }
        let mut grown = Vec::with_capacity(platforms.len() + 1);
        grown.extend_from_slice(platforms);
        grown.push(held);
        grown.sort_by_key(|h| h.platform);
        *platforms = grown.into_boxed_slice();
        self.count += 1;
        slot.rows = None;
        None
    }

    /// Takes an archive out. Returns its entry.
    pub fn take(&mut self, name: &Name) -> Option<Held> {
        let versions = &mut self.slots.get_mut(name.provider as usize)?.versions;
        let platforms = versions.get_mut(&name.version)?;
        let at = platforms.iter().position(|h| h.platform == name.platform)?;
        let old = platforms[at];
        if platforms.len() == 1 {
            let before = versions.len();
            versions.remove(&name.version);
            self.count -= 1;
            self.versions_changed(name.provider, before);
            return Some(old);
        }
        let mut left = platforms.to_vec();
        left.remove(at);
        *platforms = left.into_boxed_slice();
        self.count -= 1;
        self.slots[name.provider as usize].rows = None;
        Some(old)
    }

    /// Every archive: provider number, version as written, entry.
    pub fn iter(&self) -> impl Iterator<Item = (u32, &str, &Held)> {
        self.slots.iter().zip(0u32..).flat_map(|(slot, id)| {
            slot.versions
                .iter()
                .flat_map(move |(v, held)| held.iter().map(move |h| (id, &**v, h)))
        })
    }
}

#[cfg(test)]
impl Table {
    /// Providers and versions with an archive held, and archives, counted
    /// by a walk of every entry (what the kept counts must equal), with
    /// each provider's versions (newest first) and their platforms.
    pub fn recount(&self) -> (BTreeMap<String, Vec<super::HeldVersion>>, u64, u64) {
        let mut providers: BTreeMap<String, BTreeMap<Version, BTreeSet<String>>> = BTreeMap::new();
        let mut versions = BTreeSet::new();
        let mut archives = 0;
        for (id, version, held) in self.iter() {
            let name = self.slots[id as usize].provider.to_string();
            (providers.entry(name).or_default())
                .entry(Version::parse(version).unwrap())
                .or_default()
                .insert(self.platform(held.platform).to_string());
            versions.insert((id, version.to_owned()));
            archives += 1;
        }
        let rows = (providers.into_iter())
            .map(|(name, versions)| {
                let newest_first = (versions.into_iter().rev())
                    .map(|(v, platforms)| (v, platforms.into_iter().collect()))
                    .collect();
                (name, newest_first)
            })
            .collect();
        (rows, versions.len() as u64, archives)
    }
}
