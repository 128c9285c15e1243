//! Provider documentation: the captures of versions' documentation, by
//! how they ended, and how long searches of it take.

use prometheus_client::metrics::family::Family;
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
}

impl Default for DocsMetrics {
    fn default() -> Self {
        DocsMetrics {
            captures: Family::default(),
            search_seconds: super::latency_histogram(),
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

    /// Notes a documentation search that took `seconds`.
    pub fn docs_searched(&self, seconds: f64) {
        self.docs.search_seconds.observe(seconds);
    }
}
