//! The policy (`[policy]`, [`crate::policy`]) at every answer of both
//! domains: a denied version, or one still in its cooldown
//! (`policy.min_age`, counted from when the mirror first saw it in the
//! origin's list), is left out of the version lists clients resolve
//! constraints against (so they pick an allowed one, as they would if it
//! had never been published) and refused, with the rule's reason, when a
//! client asks for it by name.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Mirror;
use crate::address::{Module, Provider, Version};
use crate::error::RequestError;
use crate::policy::{Denied, Subject};
use crate::store::{IndexRecord, ModuleIndexRecord};

impl Mirror {
    /// Refuses a version the policy denies or holds back; counts the
    /// decision. The cooldown reads the version list for when the version
    /// was first seen.
    pub(super) async fn permit(
        &self,
        subject: Subject<'_>,
        version: &Version,
    ) -> Result<(), RequestError> {
        if self.policy.allows_everything() {
            return Ok(());
        }
        let (rule, decision) = self.policy.decide(subject, version);
        let decision = match decision {
            Ok(()) if self.policy.has_cooldown() => {
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
        let (action, rule) = match &decision {
            Ok(()) => ("allow", rule),
            Err(denied) => ("deny", denied.rule.as_str()),
        };
        self.metrics.policy_decision(action, rule);
        decision.map_err(|denied| RequestError::Denied(denied.to_string()))
    }

    /// Why a listed version is left out, if it is; counted when it is.
    fn left_out(
        &self,
        subject: Subject<'_>,
        version: &Version,
        first_seen_ms: &BTreeMap<Version, u64>,
    ) -> Option<Denied> {
        let denied = self
            .policy
            .check(subject, version)
            .and_then(|()| {
                let seen = first_seen_ms.get(version).copied();
                self.policy
                    .cooldown(subject, version, seen, self.clock.unix_ms())
            })
            .err()?;
        self.metrics.policy_decision("deny", &denied.rule);
        Some(denied)
    }

    /// A provider's version list as clients may see it, and what was left
    /// out of it and why.
    pub fn visible_index(
        &self,
        provider: &Provider,
        record: Arc<IndexRecord>,
    ) -> (Arc<IndexRecord>, Vec<Denied>) {
        if self.policy.allows_everything() {
            return (record, Vec::new());
        }
        let denied: Vec<Denied> = record
            .versions
            .keys()
            .filter_map(|v| self.left_out(Subject::Provider(provider), v, &record.first_seen_ms))
            .collect();
        if denied.is_empty() {
            return (record, denied);
        }
        let mut visible = (*record).clone();
        visible
            .versions
            .retain(|v, _| !denied.iter().any(|d| d.version == v.as_str()));
        visible
            .protocols
            .retain(|v, _| !denied.iter().any(|d| d.version == v.as_str()));
        (Arc::new(visible), denied)
    }

    /// A module's version list as clients may see it.
    pub(super) fn visible_module_index(
        &self,
        module: &Module,
        record: Arc<ModuleIndexRecord>,
    ) -> Arc<ModuleIndexRecord> {
        if self.policy.allows_everything() {
            return record;
        }
        let denied: Vec<Version> = record
            .versions
            .iter()
            .filter(|v| {
                self.left_out(Subject::Module(module), v, &record.first_seen_ms)
                    .is_some()
            })
            .cloned()
            .collect();
        if denied.is_empty() {
            return record;
        }
        let mut visible = (*record).clone();
        visible.versions.retain(|v| !denied.contains(v));
        Arc::new(visible)
    }
}
