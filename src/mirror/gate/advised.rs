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
use std::sync::Arc;

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
    /// version lists; empty unless [`Mirror::advised`].
    pub(in crate::mirror) async fn advised_versions(
        self: &Arc<Self>,
        provider: &Provider,
    ) -> BTreeMap<Version, Summary> {
        let mut out = BTreeMap::new();
        if !self.advised().await {
            return out;
        }
        for (version, platforms) in self.held_versions(provider) {
            let platforms = parsed(&platforms, None);
            if let Some((_, summary)) = self
                .match_version(provider, &version, &platforms, true)
                .await
            {
                out.insert(version, summary);
            }
        }
        out
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
        self.held_advisories(provider, version, also).await
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
        self.match_version(provider, version, &platforms, true)
            .await
            .map(|(_, summary)| summary)
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
