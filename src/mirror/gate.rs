//! The policy (`[policy]`, [`crate::policy`]) at every answer of both
//! domains: a denied version, or one still in its cooldown
//! (`policy.min_age`, counted from when the mirror first saw it in the
//! origin's list), is left out of the version lists clients resolve
//! constraints against (so they pick an allowed one, as they would if it
//! had never been published) and refused, with the rule's reason, when a
//! client asks for it by name. An operator's decisions on single versions
//! (`tfmirror approve`, `tfmirror deny`) are read from the store at most
//! every few seconds, so they reach a running daemon, and every instance
//! sharing a bucket, without a restart.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::Mirror;
use crate::address::{ArchiveKey, Module, Platform, Provider, Version};
use crate::advisories::Summary;
use crate::error::RequestError;
use crate::log_context::AUDIT_TARGET;
use crate::policy::{Denied, Facts, Subject};
use crate::store::{IndexRecord, ModuleIndexRecord, PolicyDecision, PolicyDecisions};

mod advised;

/// How long the operator's decisions are used before the store is read
/// again.
pub(super) const DECISIONS_TTL: Duration = Duration::from_secs(5);

impl Mirror {
    /// The operator's decisions, read from the store at most every
    /// [`DECISIONS_TTL`]. A record that cannot be read counts as none
    /// (logged at error) until it can.
    pub(super) async fn decisions(&self) -> Arc<PolicyDecisions> {
        // A live copy without preparing the load (see `Mirror::held`).
        if let Some(live) = self.decisions_now() {
            return live;
        }
        // Boxed, as `Mirror::held`'s load is: reading the store is a
        // large future that every reader's would otherwise carry.
        Box::pin(self.load_decisions()).await
    }

    /// The operator's decisions if a copy read within [`DECISIONS_TTL`]
    /// is held (see [`Mirror::decisions`]).
    pub(super) fn decisions_now(&self) -> Option<Arc<PolicyDecisions>> {
        self.decisions.live()
    }

    /// Whether a version asked for by name is let through without a
    /// decision (none counted, nothing read) by [`Mirror::permit`], and so
    /// by [`Mirror::permit_verified`]: no rule (of any kind) and no
    /// cooldown, and no operator's decision.
    pub(super) fn undecided(&self, decisions: &PolicyDecisions) -> bool {
        self.policy.allows_everything() && decisions.decisions.is_empty()
    }

    /// The operator's decisions read from the store, once however many
    /// requests ask at the same time.
    async fn load_decisions(&self) -> Arc<PolicyDecisions> {
        self.decisions
            .get_or_load(|| async {
                match self.store.read_decisions().await {
                    Ok(found) => {
                        let found = found.unwrap_or_default();
                        self.take_up_repins(&found).await;
                        Arc::new(found)
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "cannot read the policy decisions (tfmirror approve, tfmirror deny); applying the configured rules alone");
                        Arc::default()
                    }
                }
            })
            .await
    }

    /// Refuses a provider version that a rule naming its verification
    /// (`verification = "keyless"`) denies, once the version's record says
    /// how it was verified; counts the decision.
    pub(super) async fn permit_verified(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        verification: crate::verify::Verification,
    ) -> Result<(), RequestError> {
        if !self.policy.has_verification_rules() {
            return Ok(());
        }
        let decisions = self.decisions().await;
        let advisories = self.advised_version(provider, version, None).await;
        let facts = Facts {
            verification: Some(verification),
            advisories: advisories.as_ref(),
            now_ms: self.clock.unix_ms(),
        };
        let verdict =
            self.policy
                .decide_with(&decisions, Subject::Provider(provider), version, &facts);
        self.counted(&verdict.rule, verdict.outcome)
    }

    /// Refuses a version the policy denies or holds back; counts the
    /// decision.
    pub(super) async fn permit(
        self: &Arc<Self>,
        subject: Subject<'_>,
        version: &Version,
    ) -> Result<(), RequestError> {
        let Some((rule, outcome)) = self.judge(subject, version, None).await? else {
            return Ok(());
        };
        self.counted(&rule, outcome)
    }

    /// Refuses an archive, once it is stored and its binary read, whose
    /// version a rule by advisory denies now that the archive's platform
    /// counts too; counts the decision. Nothing to do without such rules.
    pub(super) async fn permit_read(
        self: &Arc<Self>,
        key: &ArchiveKey,
    ) -> Result<(), RequestError> {
        if !self.advised().await {
            return Ok(());
        }
        let subject = Subject::Provider(&key.provider);
        let Some((rule, outcome)) = self
            .judge(subject, &key.version, Some(&key.platform))
            .await?
        else {
            return Ok(());
        };
        self.counted(&rule, outcome)
    }

    /// Counts a decision on a version asked for by name; a refusal goes on
    /// the audit trail (`refused`, with the rule, the advisories and the
    /// reason) and becomes the request's error.
    fn counted(&self, rule: &str, outcome: Result<(), Denied>) -> Result<(), RequestError> {
        let Err(denied) = outcome else {
            self.metrics.policy_decision("allow", rule);
            return Ok(());
        };
        self.metrics.policy_decision("deny", &denied.rule);
        tracing::info!(
            target: AUDIT_TARGET,
            source = %denied.subject,
            version = %denied.version,
            rule = %denied.rule,
            advisories = %denied.advisories().join(", "),
            not_known = %denied.not_known().join("; "),
            reason = %denied.reason,
            "refused"
        );
        Err(RequestError::Denied(denied.to_string()))
    }

    /// What the policy says of one version now, as clients asking for it
    /// by name would be answered: allowed, denied (by a rule, the default
    /// or an operator), or held back by the cooldown (which reads the
    /// version list for when the version was first seen; a version approved
    /// by name has none). Nothing is counted.
    pub async fn verdict(
        self: &Arc<Self>,
        subject: Subject<'_>,
        version: &Version,
    ) -> Result<Result<(), Denied>, RequestError> {
        Ok(self
            .judge(subject, version, None)
            .await?
            .map_or(Ok(()), |(_, outcome)| outcome))
    }

    /// The operator's decisions as this instance holds them now (read
    /// from the store at most every few seconds).
    pub async fn decisions_held(&self) -> Arc<PolicyDecisions> {
        self.decisions().await
    }

    /// Records an operator's decision on one version in the store, as
    /// `tfmirror approve` and `tfmirror deny` do, and takes it up at once
    /// (other instances sharing the store within seconds).
    pub async fn record_decision(&self, decision: PolicyDecision) -> Result<(), RequestError> {
        let decisions = self.update_decisions(|d| d.set(decision)).await?;
        self.take_up_repins(&decisions).await;
        self.decisions.set(Arc::new(decisions));
        Ok(())
    }

    /// Records an acceptance of an advisory in the store, as `tfmirror
    /// accept` does, and takes it up at once (other instances sharing the
    /// store within seconds).
    pub async fn record_acceptance(
        &self,
        acceptance: crate::store::Acceptance,
    ) -> Result<(), RequestError> {
        let decisions = self.update_decisions(|d| d.accept(acceptance)).await?;
        self.decisions.set(Arc::new(decisions));
        Ok(())
    }

    /// Reads the stored decisions, changes them and stores them again.
    async fn update_decisions(
        &self,
        change: impl FnOnce(&mut PolicyDecisions),
    ) -> Result<PolicyDecisions, RequestError> {
        let mut decisions = self
            .store
            .read_decisions()
            .await
            .map_err(|e| {
                RequestError::DiskUnavailable(format!("reading the policy decisions: {e}"))
            })?
            .unwrap_or_default();
        change(&mut decisions);
        self.store.write_decisions(&decisions).await.map_err(|e| {
            RequestError::DiskUnavailable(format!("storing the policy decisions: {e}"))
        })?;
        Ok(decisions)
    }

    /// The deciding rule and the outcome; `None` when there is nothing to
    /// decide (no rule, no cooldown, no decision). A provider's advisories
    /// count over its platforms held, and `also`.
    async fn judge(
        self: &Arc<Self>,
        subject: Subject<'_>,
        version: &Version,
        also: Option<&Platform>,
    ) -> Result<Option<(String, Result<(), Denied>)>, RequestError> {
        let decisions = self.decisions().await;
        if self.undecided(&decisions) {
            return Ok(None);
        }
        let advisories = match subject {
            Subject::Provider(p) => self.advised_version(p, version, also).await,
            Subject::Module(_) => None,
        };
        let facts = Facts {
            advisories: advisories.as_ref(),
            now_ms: self.clock.unix_ms(),
            ..Facts::default()
        };
        let verdict = self
            .policy
            .decide_with(&decisions, subject, version, &facts);
        let outcome = match verdict.outcome {
            Ok(()) if !verdict.explicit && self.policy.has_cooldown() => {
                let seen = match subject {
                    Subject::Provider(p) => {
                        self.index(p).await?.first_seen_ms.get(version).copied()
                    }
                    Subject::Module(m) => self
                        .module_index(m)
                        .await?
                        .first_seen_ms
                        .get(version)
                        .copied(),
                };
                self.policy
                    .cooldown(subject, version, seen, self.clock.unix_ms())
            }
            other => other,
        };
        Ok(Some((verdict.rule, outcome)))
    }

    /// Why a listed version is left out, if it is; counted when it is.
    fn left_out(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
        first_seen_ms: &BTreeMap<Version, u64>,
        advised: &BTreeMap<Version, Summary>,
    ) -> Option<Denied> {
        let facts = Facts {
            advisories: advised.get(version),
            now_ms: self.clock.unix_ms(),
            ..Facts::default()
        };
        let verdict = self.policy.decide_with(decisions, subject, version, &facts);
        let denied = match verdict.outcome {
            Ok(()) if !verdict.explicit => {
                let seen = first_seen_ms.get(version).copied();
                self.policy
                    .cooldown(subject, version, seen, self.clock.unix_ms())
            }
            other => other,
        }
        .err()?;
        self.metrics.policy_decision("deny", &denied.rule);
        Some(denied)
    }

    /// A provider's version list as clients may see it, what was left out
    /// of it and why, and whether that can change while the list does not
    /// (a cooldown ends, an operator decides).
    pub async fn visible_index(
        self: &Arc<Self>,
        provider: &Provider,
        record: Arc<IndexRecord>,
    ) -> (Arc<IndexRecord>, Vec<Denied>, bool) {
        let decisions = self.decisions().await;
        let advised = self.advised_versions(provider).await;
        self.visible_index_by(&decisions, provider, record, &advised)
    }

    /// [`Mirror::visible_index`] by the operator's `decisions` and the
    /// advisories against the held versions (`advised`, empty without
    /// rules by advisory). A list whose visible versions can change
    /// while it does not (a cooldown, an operator's decision, a rule by
    /// advisory) says so.
    pub(super) fn visible_index_by(
        &self,
        decisions: &PolicyDecisions,
        provider: &Provider,
        record: Arc<IndexRecord>,
        advised: &BTreeMap<Version, Summary>,
    ) -> (Arc<IndexRecord>, Vec<Denied>, bool) {
        let subject = Subject::Provider(provider);
        let decided = decisions
            .decisions
            .iter()
            .any(|d| d.subject == subject.to_string());
        if self.policy.allows_everything() && !decided {
            return (record, Vec::new(), false);
        }
        let denied = self.left_out_of(
            decisions,
            subject,
            record.versions.keys(),
            &record.first_seen_ms,
            advised,
        );
        let changing = decided || self.policy.has_cooldown() || self.policy.has_advisory_rules();
        if denied.is_empty() {
            return (record, denied, changing);
        }
        let mut visible = (*record).clone();
        visible
            .versions
            .retain(|v, _| !denied.iter().any(|d| d.version == v.as_str()));
        visible
            .protocols
            .retain(|v, _| !denied.iter().any(|d| d.version == v.as_str()));
        (Arc::new(visible), denied, changing)
    }

    /// A module's version list as clients may see it.
    pub async fn visible_module_index(
        &self,
        module: &Module,
        record: Arc<ModuleIndexRecord>,
    ) -> Arc<ModuleIndexRecord> {
        let decisions = self.decisions().await;
        if self.policy.allows_everything() && decisions.decisions.is_empty() {
            return record;
        }
        let subject = Subject::Module(module);
        let denied = self.left_out_of(
            &decisions,
            subject,
            record.versions.iter(),
            &record.first_seen_ms,
            &BTreeMap::new(),
        );
        if denied.is_empty() {
            return record;
        }
        let mut visible = (*record).clone();
        visible
            .versions
            .retain(|v| !denied.iter().any(|d| d.version == v.as_str()));
        Arc::new(visible)
    }

    /// What the policy leaves out of `subject`'s list of `versions`, kept
    /// for the status page as the list's latest.
    fn left_out_of<'a>(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        versions: impl Iterator<Item = &'a Version>,
        first_seen_ms: &BTreeMap<Version, u64>,
        advised: &BTreeMap<Version, Summary>,
    ) -> Vec<Denied> {
        let denied: Vec<Denied> = versions
            .filter_map(|v| self.left_out(decisions, subject, v, first_seen_ms, advised))
            .collect();
        self.note_held_back(subject, &denied);
        denied
    }

    /// Keeps what the policy left out of `subject`'s list as made now.
    fn note_held_back(&self, subject: Subject<'_>, denied: &[Denied]) {
        let mut held = self.held_back.lock().expect("held-back lock");
        if denied.is_empty() {
            held.remove(&subject.to_string());
        } else {
            held.insert(subject.to_string(), denied.to_vec());
        }
        self.metrics
            .set_versions_held(held.values().map(Vec::len).sum());
    }

    /// What the policy left out of the version lists last made, for the
    /// status page.
    pub fn held_back(&self) -> Vec<Denied> {
        self.held_back
            .lock()
            .expect("held-back lock")
            .values()
            .flatten()
            .cloned()
            .collect()
    }
}
