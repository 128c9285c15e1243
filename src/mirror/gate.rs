//! The policy (`[policy]`, [`crate::policy`]) at every answer of both
//! domains: a denied version is left out of the version lists clients
//! resolve constraints against (so they pick an allowed one, as they would
//! if it had never been published) and refused, with the rule's reason,
//! when a client asks for it by name.

use std::sync::Arc;

use super::Mirror;
use crate::address::{Module, Provider, Version};
use crate::error::RequestError;
use crate::policy::{Denied, Subject};
use crate::store::{IndexRecord, ModuleIndexRecord};

impl Mirror {
    /// Refuses a version the policy denies.
    pub(super) fn permit(
        &self,
        subject: Subject<'_>,
        version: &Version,
    ) -> Result<(), RequestError> {
        self.policy
            .check(subject, version)
            .map_err(|denied| RequestError::Denied(denied.to_string()))
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
            .filter_map(|v| self.policy.check(Subject::Provider(provider), v).err())
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
        let allowed = |v: &Version| self.policy.check(Subject::Module(module), v).is_ok();
        if record.versions.iter().all(allowed) {
            return record;
        }
        let mut visible = (*record).clone();
        visible.versions.retain(allowed);
        Arc::new(visible)
    }
}
