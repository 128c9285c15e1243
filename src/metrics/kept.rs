//! Series of the metrics counted for every request, looked up in their
//! family once and then kept: counting a warm answer neither hashes its
//! labels nor takes the family's lock. A series is still created by its
//! first count, as the family alone would create it, so `/metrics` lists
//! the same series with the same values.

use std::sync::OnceLock;

use super::labels::{CacheKind, CacheOutcome, Endpoint};

/// `N` kept series of one family, each made on first use.
pub(super) struct Kept<M, const N: usize>([OnceLock<M>; N]);

impl<M, const N: usize> Kept<M, N> {
    /// No series kept yet.
    pub(super) fn new() -> Self {
        Kept(std::array::from_fn(|_| OnceLock::new()))
    }

    /// The series in `slot`, looked up by `make` the first time.
    pub(super) fn get(&self, slot: usize, make: impl FnOnce() -> M) -> &M {
        self.0[slot].get_or_init(make)
    }
}

/// The statuses whose request counters are kept, for each endpoint; the
/// rest are counted through the family.
const KEPT_STATUSES: [u16; 4] = [200, 304, 307, 404];

/// Slots for the request counters: each endpoint with each kept status.
pub(super) const STATUS_SLOTS: usize = Endpoint::COUNT * KEPT_STATUSES.len();

/// The slot of `endpoint` answered with `status`, if that status is kept.
pub(super) fn status_slot(endpoint: Endpoint, status: u16) -> Option<usize> {
    let at = KEPT_STATUSES.iter().position(|&s| s == status)?;
    Some(endpoint as usize * KEPT_STATUSES.len() + at)
}

/// Slots for the cache counters: each kind with each outcome.
pub(super) const CACHE_SLOTS: usize = CacheKind::COUNT * CacheOutcome::COUNT;

/// The slot of a cache lookup of `kind` that ended as `outcome`.
pub(super) fn cache_slot(kind: CacheKind, outcome: CacheOutcome) -> usize {
    kind as usize * CacheOutcome::COUNT + outcome as usize
}
