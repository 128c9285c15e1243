//! The known advisories of what a readiness report found held: what
//! `tfmirror check` and "Will it install?" name beside each provider
//! package ([`crate::advisories`]).

use std::sync::Arc;

use super::Report;
use crate::mirror::Mirror;

/// What each held provider package of a report comes to against the
/// advisory database (the advisories it falls under, and what is not
/// known of its binary), by the item's place in it; none without an
/// advisory database.
pub async fn advisories(
    mirror: &Arc<Mirror>,
    report: &Report,
) -> std::collections::BTreeMap<usize, crate::advisories::Reading> {
    let mut out = std::collections::BTreeMap::new();
    let Some(db) = mirror.advisories().await.db.clone() else {
        return out;
    };
    for (i, item) in report.items.iter().enumerate() {
        let n = &item.needed;
        let (Some(version), Some(platform)) = (&n.version, &n.platform) else {
            continue;
        };
        if n.kind != "provider" || item.finding != super::Finding::Held {
            continue;
        }
        let Ok(provider) = crate::address::Provider::from_source(&n.source) else {
            continue;
        };
        let key = crate::address::ArchiveKey::new(&provider, version, platform);
        if let Ok(Some(found)) = mirror.package_findings(&db, &key).await {
            out.insert(i, found);
        }
    }
    out
}
