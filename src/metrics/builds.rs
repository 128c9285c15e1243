//! Build records: how the Go build information of each stored archive
//! read, once it was kept; and the advisory database matched against them.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
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
    registry.register(
        "advisory_database_entries",
        "Advisories in the advisory database this instance last read (0 while none is imported)",
        m.advisory.entries.clone(),
    );
    registry.register(
        "advisory_database_updated_timestamp_seconds",
        "When the advisory database was last brought up to date: its newest entry's modified time, or, where its entries carry none, when it was imported (0 while none is imported); what TfmirrorAdvisoryDatabaseStale watches",
        m.advisory.updated.clone(),
    );
    registry.register(
        "advisory_affected_versions",
        "Provider versions held that fall under a known advisory, by their worst advisory's severity (critical, high, moderate, low; unrated where the database rates none); counted again when the database changes or an archive arrives",
        m.advisory.affected.clone(),
    );
    registry.register(
        "advisory_affected_releases",
        "CLI releases held (a product's version with a platform zip held) that fall under a known advisory, by their worst advisory's severity; counted with the provider versions",
        m.advisory.affected_releases.clone(),
    );
    registry.register(
        "advisory_not_known_versions",
        "Provider versions held some of whose binaries were read and are not understood (no Go build information, unreadable build information, a toolchain not understood) or whose build records could not be read: what they fall under is not known",
        m.advisory.not_known.clone(),
    );
    registry.register(
        "advisory_not_known_releases",
        "CLI releases held some of whose binaries are not understood: what they fall under is not known",
        m.advisory.not_known_releases.clone(),
    );
    for worst in crate::advisories::WORST {
        let _ = m.advisory.affected.get_or_create(&WorstLabels { worst });
        let _ = (m.advisory.affected_releases).get_or_create(&WorstLabels { worst });
    }
}

/// The advisory database's gauges.
#[derive(Debug, Default)]
pub(super) struct AdvisoryMetrics {
    entries: Gauge,
    updated: Gauge,
    affected: Family<WorstLabels, Gauge>,
    affected_releases: Family<WorstLabels, Gauge>,
    not_known: Gauge,
    not_known_releases: Gauge,
}

/// An affected version's worst advisory.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct WorstLabels {
    worst: &'static str,
}

impl Metrics {
    /// Notes the advisory database read: its size and how up to date it is.
    pub fn advisory_database(&self, source: &crate::advisories::database::Source) {
        self.advisory
            .entries
            .set(i64::try_from(source.entries).unwrap_or(i64::MAX));
        self.advisory.updated.set(updated_seconds(source));
    }

    /// Notes how many held versions fall under advisories, by the worst.
    pub fn advisory_affected(
        &self,
        versions: &std::collections::BTreeMap<String, usize>,
        releases: &std::collections::BTreeMap<String, usize>,
    ) {
        for worst in crate::advisories::WORST {
            for (family, by_worst) in [
                (&self.advisory.affected, versions),
                (&self.advisory.affected_releases, releases),
            ] {
                let n = by_worst.get(worst).copied().unwrap_or(0);
                family
                    .get_or_create(&WorstLabels { worst })
                    .set(i64::try_from(n).unwrap_or(i64::MAX));
            }
        }
    }

    /// Notes how many held versions' and releases' advisories are not
    /// known.
    pub fn advisory_not_known(&self, versions: usize, releases: usize) {
        (self.advisory.not_known).set(i64::try_from(versions).unwrap_or(i64::MAX));
        (self.advisory.not_known_releases).set(i64::try_from(releases).unwrap_or(i64::MAX));
    }

    /// Counts one build record made, or one that failed: `go`, `nothing`,
    /// `unreadable` or `failed`.
    pub fn build_recorded(&self, outcome: &'static str) {
        self.build_records
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }
}

/// The newest entry's modified time in seconds since the Unix epoch, or
/// the import's time where no entry carries a real one (the Go database's
/// repository writes the zero time; its server fills them in).
fn updated_seconds(source: &crate::advisories::database::Source) -> i64 {
    let imported = i64::try_from(source.imported_at_ms / 1000).unwrap_or(i64::MAX);
    humantime::parse_rfc3339_weak(&source.newest_modified)
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .and_then(|d| i64::try_from(d.as_secs()).ok())
        .filter(|s| *s > 0)
        .unwrap_or(imported)
}
