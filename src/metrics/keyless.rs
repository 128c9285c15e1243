//! The metrics that tell keyless provider versions apart: the stored
//! archive counter's `verification` label, the number of keyless versions
//! held, and the answers refused for differing from a keyless pin.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::registry::Registry;

use super::Metrics;
use crate::verify::Verification;

/// Labels of `tfmirror_store_archive_writes_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct ArchiveWriteLabels {
    outcome: &'static str,
    verification: &'static str,
}

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "store_archive_writes",
        "Verified archives this instance stored, by outcome (created: it wrote the object; existed: an instance sharing the bucket had written the same bytes first) and verification (signed, pinned-key, keyless)",
        m.archive_writes.clone(),
    );
    registry.register(
        "keyless_versions",
        "Keyless provider versions this mirror holds pins for (published without a signing key, accepted under upstream.hosts.\"registry.opentofu.org\".unsigned = \"checked\")",
        m.keyless_versions.clone(),
    );
    registry.register(
        "keyless_pin_mismatches",
        "Answers for a keyless provider version refused because they differ from what the mirror pinned on first sight (a re-published version: an incident)",
        m.keyless_pin_mismatches.clone(),
    );
}

impl Metrics {
    /// Counts a verified archive stored: `created` by this instance, or
    /// found created by another with the same bytes, with how its version
    /// was verified.
    pub fn archive_written(&self, created: bool, verification: Verification) {
        let outcome = if created { "created" } else { "existed" };
        self.archive_writes
            .get_or_create(&ArchiveWriteLabels {
                outcome,
                verification: verification.as_str(),
            })
            .inc();
    }

    /// Sets how many keyless versions the mirror holds pins for.
    pub fn set_keyless_versions(&self, count: usize) {
        self.keyless_versions
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Counts an answer refused for differing from a keyless pin.
    pub fn keyless_pin_mismatch(&self) {
        self.keyless_pin_mismatches.inc();
    }
}
