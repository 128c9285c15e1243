//! What the pages read: a provider's stored version list, a held
//! version's record and what the policy says of a version, each from
//! memory or the store alone. Nothing here asks an origin, counts a
//! decision, or refuses for the policy: a page shows a denied version and
//! says why. And [`Mirror::held_only`], which runs other work (a page's
//! readiness check) with the mirror answering as an offline one does.

use std::sync::Arc;

use super::Mirror;
use crate::address::{Provider, Version};
use crate::policy::{Denied, Subject};
use crate::store::{IndexRecord, VersionRecord};
use crate::verify::Verification;

/// How long a record's bytes that passed the check are known to: the
/// longest a page goes on saying a record is verified after its signing
/// key expired (where `upstream.reject_expired_keys` refuses such keys).
pub const CHECKED_FOR: std::time::Duration = std::time::Duration::from_secs(600);

tokio::task_local! {
    /// Set while work runs that must answer from what the mirror holds.
    static HELD_ONLY: ();
}

/// Whether the work under way answers from what the mirror holds alone.
pub(super) fn held_only_now() -> bool {
    HELD_ONLY.try_with(|()| ()).is_ok()
}

impl Mirror {
    /// Runs `work` with the mirror answering from what it holds alone, as
    /// with `upstream.offline`: nothing is asked of an origin. (A list it
    /// loads meanwhile is held as briefly as an offline mirror holds one,
    /// so others asking for it soon after see the origin's again.)
    pub async fn held_only<F: std::future::Future>(work: F) -> F::Output {
        HELD_ONLY.scope((), work).await
    }

    /// A provider's version list as last stored (the origin's, with when
    /// each version was first seen), held in memory or read from the store.
    pub async fn stored_index(&self, provider: &Provider) -> Option<Arc<IndexRecord>> {
        if let Some(held) = self.live(&self.providers.indexes, provider) {
            return Some(held.value);
        }
        self.store
            .read_index(provider)
            .await
            .ok()
            .flatten()
            .map(Arc::new)
    }

    /// A version's record as the cache holds it, checked again as it is
    /// before it serves (an unsigned import only where they are allowed).
    /// The same bytes read again within 10 minutes are not checked
    /// again.
    pub async fn stored_record(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Option<Arc<VersionRecord>> {
        let key = (provider.clone(), version.clone());
        if let Some(held) = self.live(&self.providers.versions, &key) {
            return Some(held.value);
        }
        let record = self.store.read_version(provider, version).await.ok()??;
        if record.unsigned_import {
            return self
                .config
                .cache
                .allow_unsigned_imports
                .then(|| Arc::new(record));
        }
        // A record whose bytes passed the check lately is not checked
        // again: the digest covers every byte the check reads.
        let digest = record_digest(&record)?;
        if self.providers.checked.get(&digest).await.is_none() {
            self.recheck(&record).ok()?;
            self.providers.checked.insert(digest, ()).await;
        }
        Some(Arc::new(record))
    }

    /// What the policy says of `version` now, as a client asking for it by
    /// name would be answered: allowed (by the deciding rule, empty when
    /// nothing decides), or denied (by a rule, an operator's decision or
    /// the cooldown, counted from `first_seen_ms`). Nothing is counted.
    pub async fn decision(
        self: &Arc<Self>,
        subject: Subject<'_>,
        version: &Version,
        first_seen_ms: Option<u64>,
        verification: Option<Verification>,
    ) -> Result<String, Denied> {
        let decisions = self.decisions().await;
        if self.undecided(&decisions) {
            return Ok(String::new());
        }
        let advisories = match subject {
            Subject::Provider(p) => self.advised_version(p, version, None).await,
            Subject::Module(_) => None,
        };
        let facts = crate::policy::Facts {
            verification,
            advisories: advisories.as_ref(),
            now_ms: self.clock.unix_ms(),
        };
        let verdict = self
            .policy
            .decide_with(&decisions, subject, version, &facts);
        let allowed = if verdict.accepted.is_empty() {
            verdict.rule
        } else {
            format!("{}; {}", verdict.rule, verdict.accepted.join("; "))
        };
        match verdict.outcome {
            Ok(()) if !verdict.explicit && self.policy.has_cooldown() => self
                .policy
                .cooldown(subject, version, first_seen_ms, self.clock.unix_ms())
                .map(|()| allowed),
            Ok(()) => Ok(allowed),
            Err(denied) => Err(denied),
        }
    }
}

/// The SHA-256 of a version record's stored form: its signed checksums,
/// their signatures and keys, and its packages, all that
/// [`crate::store::evidence::check_record`] reads.
fn record_digest(record: &VersionRecord) -> Option<[u8; 32]> {
    let bytes = serde_json::to_vec(record).ok()?;
    Some(crate::verify::Sha256::digest(&bytes))
}
