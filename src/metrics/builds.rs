//! Build records: how the Go build information of each stored archive
//! read, once it was kept.

use prometheus_client::registry::Registry;

use super::labels::OutcomeLabels;
use super::Metrics;

/// What reading an archive's build information can end in.
pub(super) const OUTCOMES: [&str; 4] = ["go", "nothing", "unreadable", "failed"];

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "build_records",
        "Build records made for stored archives, by outcome: go (a Go program's build information), nothing (none in the executable), unreadable (damaged), failed (the archive could not be read or the record kept; read again when next asked for)",
        m.build_records.clone(),
    );
}

impl Metrics {
    /// Counts one build record made, or one that failed: `go`, `nothing`,
    /// `unreadable` or `failed`.
    pub fn build_recorded(&self, outcome: &'static str) {
        self.build_records
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }
}
