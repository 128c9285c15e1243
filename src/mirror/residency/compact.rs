//! The residency index's name for an archive: its address in one string,
//! made from the parts and parsed back only when the archive is evicted.

use std::sync::Arc;

use crate::address::{ArchiveKey, Platform, Provider, Version};

/// An archive as the index holds it: its address in one string,
/// `hostname/namespace/type/version/platform` (no part can hold a `/`).
/// At a hundred thousand archives this is a third of what the parsed key
/// would take.
pub(super) type Compact = Arc<str>;

/// The compact form of `key`.
pub(super) fn compact(key: &ArchiveKey) -> String {
    compact_of(&key.provider, &key.version, &key.platform)
}

/// The compact form of an archive named by its parts.
pub(super) fn compact_of(provider: &Provider, version: &Version, platform: &Platform) -> String {
    format!("{provider}/{version}/{platform}")
}

/// The parts of a compact key: the provider as written, the version, the
/// platform.
pub(super) fn parts(compact: &str) -> (&str, &str, &str) {
    let (rest, platform) = compact.rsplit_once('/').unwrap_or(("", compact));
    let (provider, version) = rest.rsplit_once('/').unwrap_or(("", rest));
    (provider, version, platform)
}

/// The key a compact form was made from (always, for the forms the index
/// makes: each part is written in its normalized form, which parses back
/// to itself).
pub(super) fn expand(compact: &str) -> Option<ArchiveKey> {
    let (provider, version, platform) = parts(compact);
    Some(ArchiveKey {
        provider: crate::address::Provider::from_source(provider).ok()?,
        version: Version::parse(version).ok()?,
        platform: crate::address::Platform::parse(platform).ok()?,
    })
}
