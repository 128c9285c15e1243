//! The index brought in line with the store. A daemon starts from its
//! snapshot (a fast start, not the truth) or, with none it can trust, from
//! nothing, and at once reconciles the index with a walk of the store (a
//! listing of the bucket) that runs while it serves; later reconciliations
//! follow on a schedule, on SIGHUP, and when another process may have
//! changed the store unseen. Between them, the store's journal and the
//! daemon's own changes keep the index true.
//!
//! A reconciliation clears every archive's `seen` mark, then marks each
//! archive the walk finds (adding those the index lacks, with their sizes
//! and last uses from the store, and taking the store's size where the
//! index's differs), and each archive the daemon stores or uses
//! meanwhile. At its end, what is not marked is not in the store: it
//! leaves the index. An archive that left the store during the walk is not
//! added back (the walk may still report it).
//!
//! Nothing is evicted while a reconciliation runs: an index that may hold
//! archives the store lost would make room for them with real ones. What
//! is over `cache.max_size` at its end is evicted then.

use std::collections::HashSet;

use super::held::listed;
use super::{Index, Residency};
use crate::address::ArchiveKey;
use crate::store::{CachedArchive, HeldItem};

/// What a reconciliation changed in the index.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Corrections {
    /// Archives found in the store that the index lacked.
    pub added: u64,
    /// Archives the index held that the store did not.
    pub dropped: u64,
    /// Archives whose size in the store differed from the index's.
    pub resized: u64,
}

impl Corrections {
    /// Whether the index already agreed with the store.
    pub fn none(&self) -> bool {
        *self == Corrections::default()
    }
}

/// A reconciliation under way.
#[derive(Debug, Default)]
pub(super) struct Reconciling {
    /// Archives that left the store since it began, which the walk may
    /// still report.
    pub gone: HashSet<ArchiveKey>,
    /// Whether the index began empty (a start without a snapshot).
    pub from_empty: bool,
    /// What it changed so far.
    pub corrections: Corrections,
}

impl Residency {
    /// Begins a reconciliation: nothing is evicted until
    /// [`Residency::reconciled`]. `from_empty`: the index holds nothing
    /// yet (a start without a snapshot). A reconciliation begun again
    /// (after a walk that failed) keeps what the failed walk found.
    pub fn reconcile_begins(&self, from_empty: bool) {
        let mut index = self.lock();
        if index.reconciling.is_none() {
            index.archives.clear_seen();
            index.reconciling = Some(Reconciling {
                from_empty,
                ..Reconciling::default()
            });
        }
        drop(index);
        self.metrics.set_index_reconciling(true, from_empty);
    }

    /// Whether a reconciliation is under way, and whether it began from
    /// nothing.
    pub fn reconciling(&self) -> Option<bool> {
        self.lock().reconciling.as_ref().map(|r| r.from_empty)
    }

    /// Whether the store is being walked to build an index that began
    /// empty.
    pub fn walking(&self) -> bool {
        self.reconciling() == Some(true)
    }

    /// Takes in what the walk found: marks each archive, adds those the
    /// index lacks and corrects sizes, passing over archives that left
    /// the store since the reconciliation began. Does nothing when none
    /// is under way.
    pub fn found(&self, archives: &[CachedArchive]) {
        let mut guard = self.lock();
        let index = &mut *guard;
        let Some(reconciling) = &mut index.reconciling else {
            return;
        };
        let mut changed = false;
        for archive in archives {
            if !reconciling.gone.is_empty()
                && reconciling.gone.contains(&ArchiveKey::new(
                    &archive.provider,
                    &archive.version,
                    &archive.platform,
                ))
            {
                continue;
            }
            let Some((name, held)) = listed(&mut index.archives, archive, index.turns + 1) else {
                continue;
            };
            if let Some(known) = index.archives.get_mut(&name) {
                known.seen = true;
                if known.size != archive.size {
                    index.bytes = index.bytes - known.size + archive.size;
                    known.size = archive.size;
                    reconciling.corrections.resized += 1;
                    changed = true;
                }
                continue;
            }
            index.turns += 1;
            index.queue.joined(held.stamp);
            index.archives.put(&name, held);
            index.bytes += archive.size;
            // Building from nothing corrects nothing.
            if !reconciling.from_empty {
                reconciling.corrections.added += 1;
            }
            changed = true;
        }
        drop(guard);
        if changed {
            self.publish();
        }
    }

    /// Ends the reconciliation: what it did not find leaves the index
    /// (unless the index began empty). Returns what it changed; the caller
    /// then evicts what is over ([`Residency::over`]).
    pub fn reconciled(&self) -> Corrections {
        let mut index = self.lock();
        let Some(mut reconciling) = index.reconciling.take() else {
            return Corrections::default();
        };
        let (dropped, bytes) = index.archives.drop_unseen();
        index.bytes -= bytes;
        reconciling.corrections.dropped = dropped;
        if dropped > 0 {
            index.changed = true;
        }
        drop(index);
        self.metrics.set_index_reconciling(false, false);
        self.publish();
        reconciling.corrections
    }

    /// What the store says of an archive now (from the journal): indexed
    /// with its size and last use when it is held (returns true when it
    /// was not indexed), forgotten when not.
    pub fn archive_is(&self, key: &ArchiveKey, held: Option<HeldItem>) -> bool {
        let Some(held) = held else {
            self.forget(key);
            return false;
        };
        let mut index = self.lock();
        let joined = match index.archives.name(key) {
            Some(name) => match index.archives.get_mut(&name) {
                Some(known) => {
                    known.seen = true;
                    let old = std::mem::replace(&mut known.size, held.size);
                    index.bytes = index.bytes - old + held.size;
                    false
                }
                None => true,
            },
            None => true,
        };
        if joined {
            index.insert(key, held.size, held.last_used);
        }
        drop(index);
        self.publish();
        joined
    }
}

impl Index {
    /// Notes, during a reconciliation, that `key` left the store.
    pub(super) fn left(&mut self, key: &ArchiveKey) {
        if let Some(reconciling) = &mut self.reconciling {
            reconciling.gone.insert(key.clone());
        }
    }

    /// Notes, during a reconciliation, that `key` is in the store again.
    pub(super) fn back(&mut self, key: &ArchiveKey) {
        if let Some(reconciling) = &mut self.reconciling {
            reconciling.gone.remove(key);
        }
    }
}
