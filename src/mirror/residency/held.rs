//! The archives an index starts with ([`Archives`]), and what it shows of
//! them: one page of the status page's table at a time ([`HeldPage`]),
//! made from the providers on that page alone.

use super::order::stamp;
pub use super::rows::HeldVersion;
use super::rows::Taken;
use super::table::{Held, Name, Table};
use super::Residency;
use crate::store::CachedArchive;

/// The archives a [`Residency`] starts with, gathered one at a time (from
/// a walk of the store, or a snapshot) without holding the listing.
#[derive(Debug, Default)]
pub struct Archives {
    pub(super) table: Table,
    pub(super) bytes: u64,
    pub(super) turns: u64,
}

impl Archives {
    /// Adds a listed archive, with its last use.
    pub fn push(&mut self, archive: &CachedArchive) {
        self.turns += 1;
        let Some((name, held)) = listed(&mut self.table, archive, self.turns) else {
            return;
        };
        let old = self.table.put(&name, held);
        self.bytes = self.bytes - old.map_or(0, |o| o.size) + archive.size;
    }

    /// How many archives.
    pub fn len(&self) -> u64 {
        self.table.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.table.len() == 0
    }

    pub(super) fn into_parts(self) -> (Table, u64, u64) {
        (self.table, self.bytes, self.turns)
    }
}

/// A listed archive's name in `table` (its provider and platform
/// numbered there when new) and its entry as the use of turn `turn` at its
/// last use; `None` when `table` has no room for another platform.
pub(super) fn listed(
    table: &mut Table,
    archive: &CachedArchive,
    turn: u64,
) -> Option<(Name, Held)> {
    let provider = table.provider_id_or_new(&archive.provider);
    let platform = table.platform_id_or_new(&archive.platform)?;
    let name = Name {
        provider,
        version: archive.version.as_str().into(),
        platform,
    };
    let held = Held {
        size: archive.size,
        stamp: stamp(archive.last_used, turn),
        touched: 0,
        platform,
        seen: true,
    };
    Some((name, held))
}

/// One page of the held archives, grouped by provider and version.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct HeldPage {
    /// Providers with at least one archive held.
    pub providers: usize,
    /// Versions with at least one archive held.
    pub versions: usize,
    /// The page shown (from 1).
    pub page: usize,
    /// How many pages there are (at least 1).
    pub pages: usize,
    /// The page's providers (as written), in order, each with its
    /// versions, newest first, and their platforms, in order.
    pub rows: Vec<(String, Vec<HeldVersion>)>,
}

/// A page of the held archives as taken under the index's lock: its
/// counts and its providers' kept rows, shared. [`TakenPage::shown`]
/// makes it into a [`HeldPage`] after the lock.
#[derive(Debug)]
pub struct TakenPage {
    page: HeldPage,
    taken: Taken,
}

impl TakenPage {
    /// The page, its rows made into text.
    pub fn shown(self) -> HeldPage {
        HeldPage {
            rows: self.taken.shown(),
            ..self.page
        }
    }
}

impl Residency {
    /// The providers with an archive held, as written.
    pub fn held_providers(&self) -> Vec<String> {
        let index = self.lock();
        (index.archives.providers_held().iter())
            .map(|(name, _)| name.to_string())
            .collect()
    }

    /// How many providers and versions have an archive held: kept as the
    /// index changes, read without a pass over it.
    pub fn held_counts(&self) -> (usize, usize) {
        let index = self.lock();
        let table = &index.archives;
        let versions = usize::try_from(table.versions_held()).unwrap_or(usize::MAX);
        (table.providers_held().len(), versions)
    }

    /// The names the held providers are found by, as they are now: taken
    /// for a reference count under the index's lock, read after it.
    pub fn provider_names(&self) -> super::names::ProviderNames {
        self.lock().archives.provider_names().clone()
    }

    /// A provider's versions held, newest first, each with its platforms
    /// (sorted).
    pub fn held_versions(&self, provider: &crate::address::Provider) -> Vec<HeldVersion> {
        let mut index = self.lock();
        let table = &mut index.archives;
        let Some(id) = table.provider_id(provider) else {
            return Vec::new();
        };
        let (rows, platforms) = (table.rows(id), table.platforms());
        drop(index);
        rows.shown(&platforms)
    }

    /// Page `wanted` (from 1; out of range means the nearest page) of the
    /// held archives, `per_page` providers to a page.
    pub fn held_page(&self, wanted: usize, per_page: usize) -> HeldPage {
        self.held_page_taken(wanted, per_page).shown()
    }

    /// What [`Residency::held_page`] takes under the index's lock: the
    /// kept counts, the kept order entered at the page's position, and
    /// each shown provider's kept rows (made again only where they
    /// changed). Its cost grows with the page alone, not with the
    /// providers before it or the number of archives.
    pub fn held_page_taken(&self, wanted: usize, per_page: usize) -> TakenPage {
        let mut index = self.lock();
        let table = &mut index.archives;
        let order = table.order();
        let versions = usize::try_from(table.versions_held()).unwrap_or(usize::MAX);
        let per_page = per_page.max(1);
        let pages = order.len().div_ceil(per_page).max(1);
        let page = wanted.clamp(1, pages);
        let start = ((page - 1).saturating_mul(per_page)).min(order.len());
        let end = start.saturating_add(per_page).min(order.len());
        let rows = order[start..end].iter().map(|id| table.rows(*id)).collect();
        let platforms = table.platforms();
        drop(index);
        TakenPage {
            page: HeldPage {
                providers: order.len(),
                versions,
                page,
                pages,
                rows: Vec::new(),
            },
            taken: Taken { rows, platforms },
        }
    }
}
