//! The label values and label sets of tfmirror's metrics. Label values are
//! closed enums (never a raw path or name a client chose), so no client can
//! create unbounded label sets.

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};

/// Which kind of request, for labels (never the raw path: that would let
/// clients create unbounded label sets).
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum Endpoint {
    /// `index.json`.
    Index,
    /// `:version.json`.
    Version,
    /// Archive downloads.
    Archive,
    /// Lock file blocks (`:version.lock.hcl`).
    Lock,
    /// The provider registry facade (`/v1/providers/…`).
    Registry,
    /// The module registry proxy (`/v1/modules/…`).
    Module,
    /// CLI releases (`/terraform/…`, `/tofu/…`, `/opentofu/…`).
    Release,
    /// OpenTofu's `oci_mirror` paths (`/v2/…`).
    Oci,
    /// The pages for people (`/` and `/-/…`, with their JSON).
    Home,
    /// `/healthz`, `/readyz`, `/metrics`.
    Operations,
    /// Paths that did not parse.
    Invalid,
}

impl Endpoint {
    /// How many endpoints there are (`Invalid` is the last).
    pub(super) const COUNT: usize = Endpoint::Invalid as usize + 1;
}

/// What the cache held for a request.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum CacheOutcome {
    /// Answered from memory or disk.
    Hit,
    /// Fetched from the origin.
    Miss,
    /// The origin was down; the stored copy was served.
    Stale,
}

impl CacheOutcome {
    /// How many outcomes there are (`Stale` is the last).
    pub(super) const COUNT: usize = CacheOutcome::Stale as usize + 1;
}

/// What kind of cached thing.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum CacheKind {
    /// Version lists.
    Index,
    /// Version records.
    Version,
    /// Archives.
    Archive,
    /// Module version lists.
    ModuleIndex,
    /// Module packages.
    ModulePackage,
    /// CLI release lists.
    ReleaseList,
    /// Verified CLI release records.
    ReleaseRecord,
    /// CLI release files.
    ReleaseFile,
}

impl CacheKind {
    /// How many kinds there are (`ReleaseFile` is the last).
    pub(super) const COUNT: usize = CacheKind::ReleaseFile as usize + 1;

    /// Every kind.
    pub(super) const ALL: [CacheKind; CacheKind::COUNT] = [
        CacheKind::Index,
        CacheKind::Version,
        CacheKind::Archive,
        CacheKind::ModuleIndex,
        CacheKind::ModulePackage,
        CacheKind::ReleaseList,
        CacheKind::ReleaseRecord,
        CacheKind::ReleaseFile,
    ];
}

/// How an upstream request ended.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum UpstreamOutcome {
    /// 2xx (after redirects).
    Ok,
    /// 404.
    NotFound,
    /// Another status.
    Error,
    /// No answer in time.
    Timeout,
    /// No connection.
    Unreachable,
}

impl UpstreamOutcome {
    /// Every outcome.
    pub(super) const ALL: [UpstreamOutcome; 5] = [
        UpstreamOutcome::Ok,
        UpstreamOutcome::NotFound,
        UpstreamOutcome::Error,
        UpstreamOutcome::Timeout,
        UpstreamOutcome::Unreachable,
    ];
}

/// How a background fetch of `cache.prefetch_platforms` ended.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum PrefetchOutcome {
    /// The archive was fetched and verified (or was already cached).
    Fetched,
    /// It could not be fetched or failed verification.
    Failed,
}

/// How a signature check ended.
#[derive(Debug, Clone, Copy, Hash, PartialEq, Eq)]
pub enum VerifyOutcome {
    /// Valid, by a listed or pinned key.
    Valid,
    /// Keyless: the registry lists no key, and the host is opted in; no
    /// signature was checked.
    Keyless,
    /// Refused.
    Invalid,
}

/// Label values are the variant names in snake case.
macro_rules! snake_label {
    ($t:ty) => {
        impl EncodeLabelValue for $t {
            fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> Result<(), std::fmt::Error> {
                use std::fmt::Write;
                let name = format!("{self:?}");
                let mut out = String::with_capacity(name.len() + 4);
                for (i, c) in name.chars().enumerate() {
                    if c.is_ascii_uppercase() {
                        if i > 0 {
                            out.push('_');
                        }
                        out.push(c.to_ascii_lowercase());
                    } else {
                        out.push(c);
                    }
                }
                encoder.write_str(&out)
            }
        }
    };
}
snake_label!(Endpoint);
snake_label!(CacheOutcome);
snake_label!(CacheKind);
snake_label!(UpstreamOutcome);
snake_label!(VerifyOutcome);
snake_label!(PrefetchOutcome);

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct RequestLabels {
    pub(super) endpoint: Endpoint,
    pub(super) status: u16,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct EndpointLabels {
    pub(super) endpoint: Endpoint,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct CacheLabels {
    pub(super) kind: CacheKind,
    pub(super) outcome: CacheOutcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct UpstreamLabels {
    pub(super) host: String,
    pub(super) outcome: UpstreamOutcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct HostLabels {
    pub(super) host: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct VerifyLabels {
    pub(super) outcome: VerifyOutcome,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SourceLabels {
    pub(super) source: &'static str,
    pub(super) outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct OutcomeLabels {
    pub(super) outcome: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct KindLabels {
    pub(super) kind: &'static str,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PolicyLabels {
    pub(super) action: &'static str,
    pub(super) rule: String,
}

#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct PrefetchLabels {
    pub(super) outcome: PrefetchOutcome,
}
