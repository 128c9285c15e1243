//! The policy as a command that moves versions (`export`, `import`,
//! static directories) applies it: read once, with the operator's
//! decisions and, for rules by advisory, the advisory database.

use super::{Denied, Facts, Policy, Subject, Summary};
use crate::address::Version;
use crate::store::PolicyDecisions;

/// The policy with the operator's decisions (and, for rules by advisory,
/// the advisory database), as a command that moves versions (`export`,
/// `import`) reads them once.
#[derive(Debug, Clone, Default)]
pub struct Gate {
    /// The configured rules.
    pub policy: Policy,
    /// The operator's decisions, from the store.
    pub decisions: PolicyDecisions,
    /// The advisory database the store keeps, read only when a rule reads
    /// advisories.
    pub advisories: Option<std::sync::Arc<crate::advisories::Database>>,
}

impl Gate {
    /// Decides one version as [`Policy::check`] does.
    pub fn check(&self, subject: Subject<'_>, version: &Version) -> Result<(), Denied> {
        self.policy.check(&self.decisions, subject, version)
    }

    /// Decides one version with what is known of the advisories against
    /// it (`None`: no binary of it read) at `now_ms`.
    pub fn check_advised(
        &self,
        subject: Subject<'_>,
        version: &Version,
        advisories: Option<&Summary>,
        now_ms: u64,
    ) -> Result<(), Denied> {
        let facts = Facts {
            advisories,
            now_ms,
            ..Facts::default()
        };
        self.policy
            .decide_with(&self.decisions, subject, version, &facts)
            .outcome
    }
}
