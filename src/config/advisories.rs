//! `[advisories]`: where a connected mirror fetches its advisory database
//! from, and how often (read by [`crate::mirror`]'s advisory sync).

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[advisories]`: the OSV databases `tfmirror advisories sync` fetches,
/// and the daemon too when `sync_interval` is set.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdvisoriesConfig {
    /// `urls`: the databases to fetch, as zips of OSV entries (the Go
    /// vulnerability database's `https://vuln.go.dev/vulndb.zip`, osv.dev's
    /// `https://osv-vulnerabilities.storage.googleapis.com/Go/all.zip`).
    /// Several are merged into one database, a later one's entry winning
    /// over an earlier one's of the same ID. Default none.
    pub urls: Vec<url::Url>,
    /// `sync_interval`: how often the daemon fetches them; `0s` (the
    /// default) leaves it to `tfmirror advisories sync`.
    #[serde(with = "humantime_serde")]
    pub sync_interval: Duration,
    /// `max_size`: the largest zip fetched. Default `512 MiB`.
    pub max_size: bytesize::ByteSize,
}

impl Default for AdvisoriesConfig {
    fn default() -> Self {
        AdvisoriesConfig {
            urls: Vec::new(),
            sync_interval: Duration::ZERO,
            max_size: bytesize::ByteSize::mib(512),
        }
    }
}
