//! What rules by advisory (`[policy.rule.advisories]`) read: the
//! advisories against a provider version over the platforms the cache
//! holds, matched from their binaries' build records (made where missing)
//! against the database held. A version decides as a whole: when any
//! platform held is affected, every platform of it is refused, because
//! version lists and lock files name versions, not platforms. A version
//! none of whose binaries is held is not known to the advisory data yet:
//! rules by advisory pass it over until a platform's binary is fetched and
//! read, which its first download waits for before serving.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::super::advisories::AdvisedList;
use super::super::Mirror;
use crate::address::{Platform, Provider, Version};
use crate::advisories::Summary;

impl Mirror {
    /// Whether rules by advisory are configured and a database is held:
    /// only then is anything matched for the policy.
    pub(in crate::mirror) async fn advised(&self) -> bool {
        self.policy.has_advisory_rules() && self.advisories().await.db.is_some()
    }

    /// The advisories against each held version of `provider`, for the
    /// version lists; empty unless [`Mirror::advised`]. Kept per provider
    /// until a build record is kept or an archive evicted here, the
    /// database changes, a version asked for by name is found to differ,
    /// or [`super::super::advisories::ADVISORIES_TTL`] passes.
    pub(in crate::mirror) async fn advised_versions(
        self: &Arc<Self>,
        provider: &Provider,
    ) -> Arc<BTreeMap<Version, Summary>> {
        if !self.policy.has_advisory_rules() {
            return Arc::default();
        }
        let held = self.advisories().await;
        let Some(database) = held.current.as_ref().map(|c| c.sha256.clone()) else {
            return Arc::default();
        };
        if held.db.is_none() {
            return Arc::default();
        }
        let state = &self.advisories;
        let generation = state.generation.load(Ordering::Acquire);
        if let Some(kept) = self.kept_list(provider).await {
            return kept;
        }
        let mut out = BTreeMap::new();
        for (version, platforms) in self.held_versions(provider) {
            let platforms = parsed(&platforms, None);
            if let Some((_, summary)) = self
                .match_version(provider, &version, &platforms, true)
                .await
            {
                out.insert(version, summary);
            }
        }
        let versions = Arc::new(out);
        state.lists.insert(
            provider.clone(),
            Arc::new(AdvisedList {
                generation,
                database,
                versions: versions.clone(),
            }),
        );
        versions
    }

    /// Makes the version lists of rules by advisory match again: a build
    /// record was kept, or an archive evicted.
    pub(in crate::mirror) fn advised_lists_changed(&self) {
        self.advisories.generation.fetch_add(1, Ordering::Release);
    }

    /// The advisories against `version` over its held platforms and
    /// `also` (one just stored); `None` unless [`Mirror::advised`], or
    /// when no platform of it is held.
    pub(in crate::mirror) async fn advised_version(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        also: Option<&Platform>,
    ) -> Option<Summary> {
        if !self.advised().await {
            return None;
        }
        if also.is_none() {
            // The provider's list as kept, while it holds.
            if let Some(kept) = self.kept_list(provider).await {
                if let Some(summary) = kept.get(version) {
                    return Some(summary.clone());
                }
            }
        }
        self.held_advisories(provider, version, also).await
    }

    /// The summaries [`Mirror::advised_versions`] kept for `provider`,
    /// while they hold: made at this generation and for this database.
    async fn kept_list(&self, provider: &Provider) -> Option<Arc<BTreeMap<Version, Summary>>> {
        let held = self.advisories().await;
        let database = held.current.as_ref()?.sha256.as_str();
        let generation = self.advisories.generation.load(Ordering::Acquire);
        let kept = self.advisories.lists.get(provider)?;
        (kept.generation == generation && kept.database == database).then(|| kept.versions.clone())
    }

    /// The advisories against `version` over its held platforms and
    /// `also`; `None` when no database is imported or no platform of it
    /// is held.
    pub async fn held_advisories(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        also: Option<&Platform>,
    ) -> Option<Summary> {
        let held = self
            .held_versions(provider)
            .into_iter()
            .find(|(v, _)| v == version)
            .map(|(_, platforms)| platforms)
            .unwrap_or_default();
        let platforms = parsed(&held, also);
        if platforms.is_empty() {
            return None;
        }
        let summary = self
            .match_version(provider, version, &platforms, true)
            .await
            .map(|(_, summary)| summary);
        // A list kept before this version's platforms were read here (or
        // by another instance on the store) is matched again.
        if let Some(kept) = self.advisories.lists.get(provider) {
            if kept.versions.get(version) != summary.as_ref() {
                self.advisories.lists.invalidate(provider);
            }
        }
        summary
    }
}

/// Platforms by name, with `also` among them, in order.
fn parsed(names: &[String], also: Option<&Platform>) -> Vec<Platform> {
    let mut platforms: Vec<Platform> = names
        .iter()
        .filter_map(|p| Platform::parse(p).ok())
        .chain(also.cloned())
        .collect();
    platforms.sort();
    platforms.dedup();
    platforms
}
