//! The order of last use, kept without an entry per archive: each entry
//! carries a stamp (the second of its last use and a turn), and eviction
//! takes its candidates from a short queue of the oldest stamps, filled
//! by one pass over the index when it runs dry. A use gives an entry a
//! newer stamp than any in the queue, so the queued entry it leaves behind
//! is recognised as stale and passed over; a new entry is newer than any
//! queued one. Whatever is not queued is therefore newer than everything
//! queued, and the queue's head is the least recently used entry. One
//! pass costs a few milliseconds at a million archives and serves
//! [`BATCH`] evictions.

use std::collections::{BinaryHeap, VecDeque};
use std::sync::Arc;

use super::table::Name;
use super::{Index, ModuleKey};
use crate::address::ReleaseFile;

/// How many candidates one pass queues.
pub(super) const BATCH: usize = 4096;

/// Bits of a stamp that hold the turn.
const TURN_BITS: u32 = 20;

/// The stamp of a use at `secs` (seconds since the Unix epoch) in turn
/// `turn`: ordered by second, then by turn (which wraps within a second
/// only after a million uses).
pub(super) fn stamp(secs: u64, turn: u64) -> u64 {
    (secs << TURN_BITS) | (turn & ((1 << TURN_BITS) - 1))
}

/// Something eviction may pick, named as the index holds it.
#[derive(Debug, Clone)]
pub(super) enum Candidate {
    Archive(Name),
    Module(Arc<ModuleKey>),
    Release(Arc<ReleaseFile>),
}

/// The queue of the oldest entries, oldest first, with the stamps they
/// had when queued.
#[derive(Debug, Default)]
pub(super) struct Queue {
    queued: VecDeque<(u64, Candidate)>,
}

impl Queue {
    /// Forgets the queue when an entry joins with a stamp older than its
    /// newest (a restored eviction, an entry read with its old last use):
    /// the next pass orders it.
    pub fn joined(&mut self, stamp: u64) {
        if self
            .queued
            .back()
            .is_some_and(|(newest, _)| stamp < *newest)
        {
            self.queued.clear();
        }
    }

    /// The oldest queued candidate.
    pub fn pop(&mut self) -> Option<(u64, Candidate)> {
        self.queued.pop_front()
    }

    /// Puts back, at the head, candidates passed over (in the order they
    /// were popped).
    pub fn put_back(&mut self, passed: Vec<(u64, Candidate)>) {
        for item in passed.into_iter().rev() {
            self.queued.push_front(item);
        }
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.queued.is_empty()
    }
}

impl Index {
    /// Every stamp in the index.
    fn stamps(&self) -> impl Iterator<Item = u64> + '_ {
        (self.archives.iter().map(|(_, _, h)| h.stamp))
            .chain(self.modules.values().map(|e| e.stamp))
            .chain(self.releases.values().map(|e| e.stamp))
    }

    /// Queues the [`BATCH`] oldest entries: one pass finds the stamp
    /// below which they lie, a second names them.
    pub(super) fn refill(&mut self) {
        let mut newest_kept = BinaryHeap::with_capacity(BATCH + 1);
        for s in self.stamps() {
            if newest_kept.len() < BATCH {
                newest_kept.push(s);
            } else if newest_kept.peek().is_some_and(|top| s < *top) {
                newest_kept.pop();
                newest_kept.push(s);
            }
        }
        let Some(&limit) = newest_kept.peek() else {
            return;
        };
        let mut found: Vec<(u64, Candidate)> = Vec::with_capacity(newest_kept.len());
        for (provider, version, held) in self.archives.iter() {
            if held.stamp <= limit {
                let name = Name {
                    provider,
                    version: version.into(),
                    platform: held.platform,
                };
                found.push((held.stamp, Candidate::Archive(name)));
            }
        }
        for (key, entry) in &self.modules {
            if entry.stamp <= limit {
                found.push((entry.stamp, Candidate::Module(key.clone())));
            }
        }
        for (key, entry) in &self.releases {
            if entry.stamp <= limit {
                found.push((entry.stamp, Candidate::Release(key.clone())));
            }
        }
        found.sort_unstable_by_key(|(s, _)| *s);
        self.queue.queued = found.into();
    }
}
