//! Rules by advisory in the commands that move versions (`export`,
//! `import`): a version's advisories are matched from its platforms'
//! build records as the store keeps them, against the database the store
//! keeps, and decided as the daemon decides. A platform without a record
//! has not been read, and a version none of whose platforms has one is
//! passed over by rules by advisory, as the daemon passes it over until it
//! reads a binary.

use std::collections::BTreeMap;

use super::store::CommandStore;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::advisories::Summary;
use crate::clock::{Clock, SystemClock};
use crate::policy::{Denied, Gate, Subject};

/// What `gate` decides of `version` of `provider`, its advisories matched
/// over `platforms` where the store keeps their build records.
pub fn decide_held<'a>(
    store: &CommandStore,
    gate: &Gate,
    (provider, version): (&Provider, &Version),
    platforms: impl Iterator<Item = &'a Platform>,
) -> Result<(), Denied> {
    let summary = gate
        .advisories
        .as_deref()
        .and_then(|db| held_summary(store, db, provider, version, platforms));
    gate.check_advised(
        Subject::Provider(provider),
        version,
        summary.as_ref(),
        SystemClock.unix_ms(),
    )
}

/// The advisories against `version` over the `platforms` whose build
/// records the store keeps; `None` when it keeps none of them.
fn held_summary<'a>(
    store: &CommandStore,
    db: &crate::advisories::Database,
    provider: &Provider,
    version: &Version,
    platforms: impl Iterator<Item = &'a Platform>,
) -> Option<Summary> {
    let mut per_platform = BTreeMap::new();
    let mut not_read = Vec::new();
    for platform in platforms {
        let key = ArchiveKey::new(provider, version, platform);
        match store.wait(crate::store::builds::read(store.store(), &key)) {
            Ok(Some(record)) => {
                per_platform.insert(platform.to_string(), record.reading(db));
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(archive = %key, error = %e, "its build record cannot be read; the platform counts as not read");
                not_read.push(platform.to_string());
            }
        }
    }
    (!per_platform.is_empty()).then(|| Summary::of(&per_platform, not_read))
}
