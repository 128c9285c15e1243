//! Provider documentation: the captures of versions' documentation, by
//! how they ended, and how long searches of it take.

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::labels::OutcomeLabels;
use super::Metrics;

/// How a capture of a version's documentation can end.
pub(super) const OUTCOMES: [&str; 2] = ["kept", "failed"];

/// The documentation's metrics.
#[derive(Debug)]
pub(super) struct DocsMetrics {
    captures: Family<OutcomeLabels, prometheus_client::metrics::counter::Counter>,
    search_seconds: Histogram,
    sweeps: Counter,
    backfills: Counter,
    lists_removed: Counter,
    pages_removed: Counter,
    bytes: Gauge,
}

impl Default for DocsMetrics {
    fn default() -> Self {
        DocsMetrics {
            captures: Family::default(),
            search_seconds: super::latency_histogram(),
            sweeps: Counter::default(),
            backfills: Counter::default(),
            lists_removed: Counter::default(),
            pages_removed: Counter::default(),
            bytes: Gauge::default(),
        }
    }
}

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "docs_captures",
        "Captures of a provider version's documentation from its source, by outcome: kept (its list and pages kept), failed (fetched again when an archive of the version is next kept, or by the backfill)",
        m.docs.captures.clone(),
    );
    registry.register(
        "docs_search_seconds",
        "Time each documentation search took, reading the index and gathering its hits into pages",
        m.docs.search_seconds.clone(),
    );
    registry.register(
        "docs_sweeps",
        "Sweeps of the documentation kept, done: each removes what no held version lists and counts the rest",
        m.docs.sweeps.clone(),
    );
    registry.register(
        "docs_backfills",
        "Backfills of documentation done: each fetches what the versions held lack, once the daemon started and then every docs.backfill_every",
        m.docs.backfills.clone(),
    );
    registry.register(
        "docs_lists_removed",
        "Versions' lists of documentation pages removed by sweeps: their version no longer held, or a page they name no longer kept (captured again)",
        m.docs.lists_removed.clone(),
    );
    registry.register(
        "docs_pages_removed",
        "Documentation pages removed by sweeps: no held version lists them",
        m.docs.pages_removed.clone(),
    );
    registry.register(
        "docs_bytes",
        "Bytes of documentation counted toward cache.max_size: the lists and pages kept as the last sweep counted them, and each version's list and pages captured since, counted whole",
        m.docs.bytes.clone(),
    );
    for outcome in OUTCOMES {
        let _ = m.docs.captures.get_or_create(&OutcomeLabels { outcome });
    }
}

impl Metrics {
    /// Notes a capture of a version's documentation ended, `kept` or
    /// `failed`.
    pub fn docs_captured(&self, outcome: &'static str) {
        self.docs
            .captures
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Notes a sweep of the documentation kept: how many lists and pages
    /// it removed.
    pub fn docs_swept(&self, lists_removed: usize, pages_removed: usize) {
        let d = &self.docs;
        d.sweeps.inc();
        d.lists_removed.inc_by(lists_removed as u64);
        d.pages_removed.inc_by(pages_removed as u64);
    }

    /// Notes a backfill of documentation done.
    pub fn docs_backfilled(&self) {
        self.docs.backfills.inc();
    }

    /// Sets the bytes documentation is counted as taking toward
    /// `cache.max_size`.
    pub fn set_docs_bytes(&self, bytes: u64) {
        self.docs
            .bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
    }

    /// Notes a documentation search that took `seconds`.
    pub fn docs_searched(&self, seconds: f64) {
        self.docs.search_seconds.observe(seconds);
    }
}
