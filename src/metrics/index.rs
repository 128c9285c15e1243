//! The metrics of the archive index: whether a reconciliation with the
//! store is running, what reconciliations corrected, when the index last
//! agreed with the store, and what the store's journal reported.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

use super::Metrics;

/// Why a reconciliation ran.
pub const REASONS: [&str; 5] = ["start", "schedule", "signal", "writer_lost", "many_changes"];

/// What a reconciliation corrected.
pub const CHANGES: [&str; 3] = ["added", "dropped", "resized"];

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ChangeLabels {
    change: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ReasonLabels {
    reason: &'static str,
}

/// The index's metrics, registered with the rest.
#[derive(Default)]
pub(super) struct IndexMetrics {
    walking: Gauge,
    reconciling: Gauge,
    reconciled: Gauge,
    reconciliations: Family<ReasonLabels, Counter>,
    corrections: Family<ChangeLabels, Counter>,
    journal_items: Counter,
}

/// Registers the metrics of this file, with every label value at 0.
pub(super) fn register(registry: &mut Registry, m: &IndexMetrics) {
    registry.register(
        "cache_index_walking",
        "1 while the daemon walks the store to build its archive index from nothing (a start with no snapshot it can trust)",
        m.walking.clone(),
    );
    registry.register(
        "cache_index_reconciling",
        "1 while the daemon reconciles its archive index with the store (walking it, or listing the bucket); nothing is evicted meanwhile",
        m.reconciling.clone(),
    );
    registry.register(
        "cache_index_reconciled_timestamp_seconds",
        "When the last reconciliation of the archive index with the store ended, in seconds since the Unix epoch (0: none yet)",
        m.reconciled.clone(),
    );
    registry.register(
        "cache_index_reconciliations",
        "Reconciliations of the archive index with the store that ended, by reason (start, schedule, signal, writer_lost, many_changes)",
        m.reconciliations.clone(),
    );
    registry.register(
        "cache_index_corrections",
        "What reconciliations corrected in the archive index, by change: added (in the store, not indexed), dropped (indexed, not in the store), resized",
        m.corrections.clone(),
    );
    registry.register(
        "cache_index_journal_items",
        "Archives, module packages and release files other processes changed, read from the store's journal and checked against the store",
        m.journal_items.clone(),
    );
    for reason in REASONS {
        let _ = m.reconciliations.get_or_create(&ReasonLabels { reason });
    }
    for change in CHANGES {
        let _ = m.corrections.get_or_create(&ChangeLabels { change });
    }
}

impl Metrics {
    /// Says whether a reconciliation runs, and whether it builds the index
    /// from nothing.
    pub fn set_index_reconciling(&self, reconciling: bool, from_empty: bool) {
        self.index.reconciling.set(i64::from(reconciling));
        self.index.walking.set(i64::from(reconciling && from_empty));
    }

    /// Counts an ended reconciliation run for `reason` (one of
    /// [`REASONS`]), what it corrected (`added`, `dropped`, `resized`),
    /// and when it ended.
    pub fn index_reconciled(&self, reason: &'static str, corrected: [u64; 3], unix_secs: u64) {
        self.index
            .reconciliations
            .get_or_create(&ReasonLabels { reason })
            .inc();
        for (change, n) in CHANGES.into_iter().zip(corrected) {
            self.index
                .corrections
                .get_or_create(&ChangeLabels { change })
                .inc_by(n);
        }
        self.index
            .reconciled
            .set(i64::try_from(unix_secs).unwrap_or(i64::MAX));
    }

    /// Counts items the index held that the store did not, found outside
    /// a reconciliation (when eviction looked for them).
    pub fn index_dropped(&self, n: u64) {
        self.index
            .corrections
            .get_or_create(&ChangeLabels { change: "dropped" })
            .inc_by(n);
    }

    /// Counts items read from the store's journal.
    pub fn journal_items(&self, n: usize) {
        self.index.journal_items.inc_by(n as u64);
    }
}
