//! The series exported at 0 from the start, so that the first event
//! after a start is an increase Prometheus sees and panels show 0 rather
//! than no data: those whose label values are known in advance, and those
//! the configuration decides.

use super::labels::{
    CacheKind, CacheLabels, CacheOutcome, KindLabels, OutcomeLabels, PolicyLabels, PrefetchLabels,
    PrefetchOutcome, SourceLabels, UpstreamLabels, UpstreamOutcome, VerifyLabels, VerifyOutcome,
};
use super::Metrics;

impl Metrics {
    /// Exports at 0, from the start, every series whose label values are
    /// known in advance, so that the first event after a start is an
    /// increase Prometheus sees (a series appearing at 1 has none) and
    /// panels show 0 rather than no data.
    pub(super) fn export_known_series(&self) {
        for outcome in [
            VerifyOutcome::Valid,
            VerifyOutcome::Keyless,
            VerifyOutcome::Invalid,
        ] {
            let _ = self.verifications.get_or_create(&VerifyLabels { outcome });
        }
        for outcome in [PrefetchOutcome::Fetched, PrefetchOutcome::Failed] {
            let _ = self.prefetches.get_or_create(&PrefetchLabels { outcome });
        }
        for kind in CacheKind::ALL {
            for outcome in [CacheOutcome::Hit, CacheOutcome::Miss, CacheOutcome::Stale] {
                let _ = self.cache.get_or_create(&CacheLabels { kind, outcome });
            }
        }
        for source in ["git", "archive"] {
            for outcome in ["packaged", "failed"] {
                let _ = self
                    .module_fetches
                    .get_or_create(&SourceLabels { source, outcome });
            }
        }
        for kind in ["archive", "module", "release"] {
            let _ = self.evictions.get_or_create(&KindLabels { kind });
        }
        for outcome in super::builds::OUTCOMES {
            let _ = self.build_records.get_or_create(&OutcomeLabels { outcome });
        }
        for kind in ["archive", "module"] {
            let _ = self.watch_fetched.get_or_create(&KindLabels { kind });
        }
        for outcome in ["ok", "failed"] {
            let _ = self.watch_runs.get_or_create(&OutcomeLabels { outcome });
        }
        for outcome in ["granted", "waited"] {
            let _ = self
                .download_claims
                .get_or_create(&OutcomeLabels { outcome });
        }
    }

    /// Exports at 0 the series whose label values the configuration
    /// decides: each origin host's request outcomes, and each policy
    /// decider's actions (`deciders`: none while the policy allows
    /// everything).
    pub fn export_configured_series(&self, hosts: &[String], deciders: &[String]) {
        for host in hosts {
            for outcome in UpstreamOutcome::ALL {
                let _ = self.upstream.get_or_create(&UpstreamLabels {
                    host: host.clone(),
                    outcome,
                });
            }
        }
        for rule in deciders {
            for action in ["allow", "deny"] {
                let _ = self.policy_decisions.get_or_create(&PolicyLabels {
                    action,
                    rule: rule.clone(),
                });
            }
        }
    }
}
