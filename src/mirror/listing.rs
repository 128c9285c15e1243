//! Version lists, a provider's and a module's alike: served from the store
//! while younger than `cache.index_ttl`, else asked of the origin and
//! stored again, and served stale while the origin is down. One loader for
//! both, so that the two never drift apart. A watch pass asks the origin
//! whatever the stored list's age, and learns of an outage instead of
//! being handed the stale copy.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use super::{Held, Mirror, Timed, RETRY_AFTER_TROUBLE};
use crate::address::Version;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome};
use crate::store::{IndexRecord, ModuleIndexRecord, StoreError};
use crate::upstream::UpstreamError;

/// A version list as the store keeps it.
pub(super) trait Listed: Send + Sync + 'static {
    /// When the origin was asked, in milliseconds since the Unix epoch.
    fn fetched_at_ms(&self) -> u64;
    /// How many versions it lists.
    fn count(&self) -> usize;
    /// Whether it lists the same versions as `other`.
    fn lists_the_same(&self, other: &Self) -> bool;
    /// The versions it lists.
    fn listed(&self) -> Vec<&Version>;
    /// When each version appeared after the first listing.
    fn first_seen_ms(&mut self) -> &mut BTreeMap<Version, u64>;
}

/// Carries first-seen times from the `previous` listing into a new one:
/// a version listed before keeps its time (none if it was there at the
/// first listing), a version new since then is first seen `now_ms`. With
/// no previous listing, every version counts as old.
fn carry_first_seen<T: Listed>(fresh: &mut T, previous: Option<&mut T>, now_ms: u64) {
    let Some(previous) = previous else {
        return;
    };
    let before: Vec<Version> = previous.listed().into_iter().cloned().collect();
    let known = previous.first_seen_ms().clone();
    let appeared: Vec<Version> = fresh
        .listed()
        .into_iter()
        .filter(|v| !before.contains(v))
        .cloned()
        .collect();
    let mut seen: BTreeMap<Version, u64> = known
        .into_iter()
        .filter(|(v, _)| fresh.listed().contains(&v))
        .collect();
    for v in appeared {
        seen.entry(v).or_insert(now_ms);
    }
    *fresh.first_seen_ms() = seen;
}

impl Listed for IndexRecord {
    fn fetched_at_ms(&self) -> u64 {
        self.fetched_at_ms
    }
    fn count(&self) -> usize {
        self.versions.len()
    }
    fn lists_the_same(&self, other: &Self) -> bool {
        self.versions == other.versions
    }
    fn listed(&self) -> Vec<&Version> {
        self.versions.keys().collect()
    }
    fn first_seen_ms(&mut self) -> &mut BTreeMap<Version, u64> {
        &mut self.first_seen_ms
    }
}

impl Listed for ModuleIndexRecord {
    fn fetched_at_ms(&self) -> u64 {
        self.fetched_at_ms
    }
    fn count(&self) -> usize {
        self.versions.len()
    }
    fn lists_the_same(&self, other: &Self) -> bool {
        self.versions == other.versions
    }
    fn listed(&self) -> Vec<&Version> {
        self.versions.iter().collect()
    }
    fn first_seen_ms(&mut self) -> &mut BTreeMap<Version, u64> {
        &mut self.first_seen_ms
    }
}

/// How fresh a loaded version list must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Freshness {
    /// The stored list while younger than `cache.index_ttl`; the stored
    /// list, stale, while the origin is down.
    Cached,
    /// The origin's list now; its failure is the answer.
    FromOrigin,
}

/// Whose list is loaded, for the metrics and the messages.
pub(super) struct About {
    /// The cache lookups it counts as.
    pub kind: CacheKind,
    /// The subject as messages name it: `registry.example/acme/widget`,
    /// `module registry.example/acme/net/aws`.
    pub subject: String,
    /// The subject as a 404 from the origin names it: `provider …`,
    /// `module …`.
    pub named: String,
    /// What the list is, for log lines: `version list`, `module version
    /// list`.
    pub noun: &'static str,
}

impl Mirror {
    /// Loads a version list: the `stored` one while fresh (and always when
    /// offline; one that cannot be read counts as none), else `fetch`ed
    /// from the origin and kept with `write`; the stored one again, stale,
    /// when the origin is down. A list that cannot be stored is still
    /// served, and held only briefly so that storing it is tried again
    /// soon. With [`Freshness::FromOrigin`], the origin is asked whatever
    /// the stored list's age, and its failure is returned.
    pub(super) async fn load_listing<T: Listed>(
        &self,
        about: &About,
        freshness: Freshness,
        stored: impl Future<Output = Result<Option<T>, StoreError>>,
        fetch: impl Future<Output = Result<T, UpstreamError>>,
        write: impl AsyncFnOnce(&T) -> Result<(), StoreError>,
    ) -> Result<Timed<T>, RequestError> {
        if freshness == Freshness::FromOrigin && self.offline() {
            return Err(RequestError::NotHeld(format!(
                "{} cannot be listed afresh: this mirror is offline (upstream.offline)",
                about.subject
            )));
        }
        let mut stored = stored.await.unwrap_or_else(|e| {
            tracing::warn!(subject = %about.subject, error = %e, "ignoring an unreadable stored {}", about.noun);
            None
        });
        let ttl = self.config.cache.index_ttl;
        let age =
            |r: &T| Duration::from_millis(self.clock.unix_ms().saturating_sub(r.fetched_at_ms()));
        match &stored {
            Some(r) if freshness == Freshness::Cached && (self.offline() || age(r) < ttl) => {
                self.note(about.kind, CacheOutcome::Hit);
                // Offline, read again soon: an import may add versions.
                let left = if self.offline() {
                    ttl.min(RETRY_AFTER_TROUBLE)
                } else {
                    ttl.saturating_sub(age(r))
                };
                let stored = stored.expect("matched");
                return Ok(Timed {
                    value: Arc::new(stored),
                    ttl: Some(left),
                });
            }
            None if self.offline() => {
                return Err(RequestError::NotHeld(format!(
                    "{} is not held by this mirror, which is offline (upstream.offline)",
                    about.subject
                )))
            }
            _ => {}
        }
        match fetch.await {
            Ok(mut record) => {
                carry_first_seen(&mut record, stored.as_mut(), self.clock.unix_ms());
                self.note(about.kind, CacheOutcome::Miss);
                if !stored.as_ref().is_some_and(|s| s.lists_the_same(&record)) {
                    tracing::info!(subject = %about.subject, versions = record.count(), "{} updated", about.noun);
                }
                let mut held_for = ttl;
                match write(&record).await {
                    Ok(()) => self.health.succeeded(),
                    Err(e) => {
                        let refusal = self.store_failed(&format!("storing a {}", about.noun), &e);
                        if stored.is_none() {
                            return Err(refusal);
                        }
                        // A refresh of a list the cache holds: serve it,
                        // and try storing it again soon.
                        held_for = ttl.min(RETRY_AFTER_TROUBLE);
                    }
                }
                Ok(Timed {
                    value: Arc::new(record),
                    ttl: Some(held_for),
                })
            }
            Err(e) if e.is_outage() && stored.is_some() && freshness == Freshness::Cached => {
                self.note(about.kind, CacheOutcome::Stale);
                tracing::warn!(subject = %about.subject, error = %e, "origin unavailable; serving the stored {}", about.noun);
                Ok(Timed {
                    value: Arc::new(stored.expect("checked")),
                    ttl: Some(ttl.min(RETRY_AFTER_TROUBLE)),
                })
            }
            Err(UpstreamError::NotFound { .. }) => Err(RequestError::NotAtOrigin(format!(
                "{} does not exist at its origin registry",
                about.named
            ))),
            Err(e) => Err(RequestError::upstream(
                &e,
                &format!("could not list the versions of {}", about.subject),
            )),
        }
    }

    /// Keeps a list just loaded from the origin where later requests look
    /// for it, in place of whatever was held.
    pub(super) async fn hold_listed<K, T, M>(
        &self,
        cache: &super::held::Cache<K, Held<T, M>>,
        key: K,
        loaded: Timed<T>,
    ) -> Arc<T>
    where
        K: std::hash::Hash + Eq + Clone + Send + Sync + 'static,
        T: Send + Sync + 'static,
        M: Send + Sync + 'static,
    {
        let value = loaded.value;
        let expires_ms = loaded.ttl.map(|ttl| {
            self.clock
                .unix_ms()
                .saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
        });
        cache
            .insert(key, Held::new(value.clone(), expires_ms))
            .await;
        value
    }
}
