//! The JSON records the cache keeps about providers and modules.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::address::{Module, Platform, Provider, Version};
use crate::verify::Verification;

/// A provider's versions and their platforms, as the origin last listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct IndexRecord {
    /// When the origin was asked, in milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// Each version with the platforms the origin lists for it.
    pub versions: BTreeMap<Version, Vec<Platform>>,
    /// The plugin protocol versions (`5.0`, `6.0`) the origin lists for
    /// each version, where it lists any.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub protocols: BTreeMap<Version, Vec<String>>,
    /// When the mirror first saw each version that appeared after its first
    /// listing of the provider, in milliseconds since the Unix epoch (the
    /// age `policy.min_age` counts from). A version without an entry was
    /// there at the first listing: its age is unknown, and it counts as
    /// old.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_seen_ms: BTreeMap<Version, u64>,
}

/// A provider version's verified package metadata, with the evidence that
/// verified it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VersionRecord {
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// The packages that passed verification, by platform.
    pub packages: BTreeMap<Platform, PackageRecord>,
    /// The signed SHA256SUMS documents the packages were checked against.
    pub sums: Vec<SignedSums>,
    /// Imported from a directory written by `terraform providers mirror`:
    /// the packages match the hashes that directory recorded, but no
    /// signature vouches for them (`sums` is empty). Served only when
    /// `cache.allow_unsigned_imports` is set.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unsigned_import: bool,
    /// When this cache evicted an archive of the version (to stay within
    /// `cache.max_size`), by platform, in milliseconds since the Unix
    /// epoch: `tfmirror check` says an archive was evicted rather than
    /// never fetched. An archive held again makes its entry moot. Not
    /// carried in bundles.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub evicted_ms: BTreeMap<Platform, u64>,
    /// When the record was made: its packages verified (or, for an
    /// unsigned import, taken in), in milliseconds since the Unix epoch; a
    /// bundle carries it from the mirror that verified it. 0 in records
    /// written before it was kept.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub verified_at_ms: u64,
}

/// Whether a time was not recorded.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes a reference
fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

impl VersionRecord {
    /// How the version was verified: the weakest label of its SHA256SUMS
    /// documents.
    pub fn verification(&self) -> Verification {
        self.sums
            .iter()
            .map(|s| s.verification)
            .reduce(Verification::weaker)
            .unwrap_or_default()
    }

    /// The key that signed the version's first SHA256SUMS, or empty.
    pub fn signed_by(&self) -> &str {
        self.sums.first().map_or("", |s| s.signed_by.as_str())
    }
}

/// What the mirror saw when it first accepted a keyless provider version:
/// the pin every later answer for that version must match, since nothing
/// else vouches for it (the registry promises that published versions
/// never change). Kept apart from the version record, so that it outlives
/// a record fetched again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct KeylessPin {
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// SHA-256 of the SHA256SUMS document (lowercase hex).
    pub sums_sha256: String,
    /// Where the document was read.
    pub sums_url: Url,
    /// Each platform's package as first seen.
    pub packages: BTreeMap<Platform, PinnedPackage>,
    /// When the version was first pinned, in milliseconds since the Unix
    /// epoch.
    pub pinned_at_ms: u64,
    /// An operator's leave to pin the version anew (`tfmirror approve
    /// --repin`): the next answer that differs replaces the pin.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repin: Option<Repin>,
    /// The SHA256SUMS digests replaced by re-pins, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub replaced: Vec<Repin>,
}

/// One platform of a [`KeylessPin`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PinnedPackage {
    /// The archive's file name.
    pub filename: String,
    /// Its SHA-256, as the registry's `shasum` and SHA256SUMS gave it.
    pub sha256: String,
    /// Its size, once known (from `packages`, or from the archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Its `h1:` hash, once known (from `packages`, or from the archive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub h1: Option<String>,
}

/// A re-pin an operator allowed: why, when, and (once done) what it
/// replaced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repin {
    /// Why, as given to `tfmirror approve --repin --reason`.
    pub reason: String,
    /// When it was allowed, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The SHA256SUMS digest it replaced (set once it is done).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub replaced_sums_sha256: String,
}

/// One verified package of a [`VersionRecord`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PackageRecord {
    /// The archive's name in SHA256SUMS.
    pub filename: String,
    /// Where the origin serves the archive.
    pub download_url: Url,
    /// The archive's SHA-256 (lowercase hex), as the signed SHA256SUMS says.
    pub sha256: String,
    /// Index into [`VersionRecord::sums`] of the document that lists it.
    pub sums: usize,
    /// The plugin protocol versions the registry gave for the package.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protocols: Vec<String>,
    /// The archive's size in bytes, when the mirror knows it without the
    /// archive: from the origin's `packages` field, or from the
    /// `Content-Length` of the origin's download URL. (A stored archive's
    /// own size counts over this one.)
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// The `h1:` hash the origin reported for the archive in its `packages`
    /// field, whose `zh:` there matched the signed checksum. Not checked
    /// against the archive until the archive is stored; the mirror's own
    /// hash of a stored archive counts over this one, and a disagreement
    /// drops it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reported_h1: Option<String>,
}

/// A SHA256SUMS document with its detached signature and the key that made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SignedSums {
    /// Where the document came from.
    pub url: Url,
    /// The document.
    pub document: String,
    /// The detached signature, base64.
    pub signature: String,
    /// The ID of the key that made the signature; empty for a keyless
    /// version, whose signature no key can check.
    pub signed_by: String,
    /// How the document was vouched for: signed by a key the registry
    /// listed (the default, and what records kept before labels read as),
    /// by a key a `[[trust]]` rule pinned, or keyless.
    #[serde(default, skip_serializing_if = "Verification::is_signed")]
    pub verification: Verification,
    /// The keys the registry listed, ASCII-armored.
    pub keys: Vec<String>,
    /// What the registry said about each of `keys`, in the same order,
    /// passed on to clients of the registry facade as it was given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_details: Vec<KeyDetails>,
}

/// What a registry says about one signing key besides the key itself.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyDetails {
    /// The key's ID, uppercase hex, as the registry gave it.
    #[serde(default)]
    pub key_id: String,
    /// A signature over the key by a key the client trusts (how partner
    /// providers are labelled), or empty.
    #[serde(default)]
    pub trust_signature: String,
    /// Who the key belongs to.
    #[serde(default)]
    pub source: String,
    /// Where to read about the key.
    #[serde(default)]
    pub source_url: String,
}

/// Versions an operator decided on by name (`tfmirror approve`, `tfmirror
/// deny`), which take effect in running instances without a restart and
/// come before the configured rules and the cooldown.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PolicyDecisions {
    /// The decisions, one per subject and version.
    pub decisions: Vec<PolicyDecision>,
    /// The advisories the site accepts (`tfmirror accept`, or from the
    /// pages), one per advisory, subject and version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acceptances: Vec<Acceptance>,
}

/// A site's acceptance of one advisory against a provider, or one of its
/// versions, until it expires: rules by advisory (`[policy.rule.advisories]`)
/// do not count the advisory there meanwhile.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Acceptance {
    /// The advisory, by the ID it was accepted under (any of its IDs
    /// names it).
    pub advisory: String,
    /// The provider (`host/namespace/type`).
    pub subject: String,
    /// The version; every version of the provider when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<Version>,
    /// Why, as given.
    pub reason: String,
    /// Who accepted it, as [`PolicyDecision::by`].
    pub by: String,
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// When it stops counting, in milliseconds since the Unix epoch.
    pub expires_ms: u64,
}

impl Acceptance {
    /// Whether it accepts, at `now_ms`, the advisory known by `ids`
    /// against `version` of `subject`.
    pub fn covers<'a>(
        &self,
        subject: &str,
        version: &Version,
        mut ids: impl Iterator<Item = &'a str>,
        now_ms: u64,
    ) -> bool {
        now_ms < self.expires_ms
            && self.subject == subject
            && self.version.as_ref().is_none_or(|v| v == version)
            && ids.any(|id| id.eq_ignore_ascii_case(&self.advisory))
    }

    /// Whether it has expired at `now_ms`.
    pub fn expired(&self, now_ms: u64) -> bool {
        now_ms >= self.expires_ms
    }
}

/// One decision of [`PolicyDecisions`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PolicyDecision {
    /// The provider (`host/namespace/type`) or module (`module
    /// host/namespace/name/system`).
    pub subject: String,
    /// The version.
    pub version: Version,
    /// `true`: approved (visible now, whatever the rules and the cooldown
    /// say); `false`: denied.
    pub approved: bool,
    /// Why, as given.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
    /// When it was decided, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// With an approval: the operator also allowed a keyless version to be
    /// pinned anew (`tfmirror approve --repin`), which running instances
    /// take up with the decision.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub repin: bool,
    /// Who decided: a person signed in to the pages (issuer, subject and
    /// the claims their rule read), or the command line and its user.
    /// Empty in decisions made before callers were named.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub by: String,
}

impl PolicyDecisions {
    /// The decision on `version` of `subject`, if there is one.
    pub fn get(&self, subject: &str, version: &Version) -> Option<&PolicyDecision> {
        self.decisions
            .iter()
            .find(|d| d.subject == subject && d.version == *version)
    }

    /// Records a decision, replacing an earlier one on the same version.
    pub fn set(&mut self, decision: PolicyDecision) {
        self.decisions
            .retain(|d| !(d.subject == decision.subject && d.version == decision.version));
        self.decisions.push(decision);
        self.decisions
            .sort_by(|a, b| (&a.subject, &a.version).cmp(&(&b.subject, &b.version)));
    }

    /// Records an acceptance, replacing an earlier one of the same
    /// advisory, subject and version.
    pub fn accept(&mut self, acceptance: Acceptance) {
        self.acceptances.retain(|a| {
            !(a.advisory.eq_ignore_ascii_case(&acceptance.advisory)
                && a.subject == acceptance.subject
                && a.version == acceptance.version)
        });
        self.acceptances.push(acceptance);
        self.acceptances.sort_by(|a, b| {
            (&a.subject, &a.version, &a.advisory).cmp(&(&b.subject, &b.version, &b.advisory))
        });
    }
}

/// A module's versions, as the origin last listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleIndexRecord {
    /// When the origin was asked, in milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// The versions that are semantic versions, in order.
    pub versions: Vec<Version>,
    /// When the mirror first saw each version that appeared after its first
    /// listing of the module, as [`IndexRecord::first_seen_ms`].
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub first_seen_ms: BTreeMap<Version, u64>,
}

/// What the mirror saw when it first fetched a module version: the pin
/// every later fetch of the same version must match.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleRecord {
    /// The module.
    pub module: Module,
    /// The version.
    pub version: Version,
    /// The download location the origin gave, resolved.
    pub location: String,
    /// `git` or `archive`.
    pub source_kind: String,
    /// The subdirectory of the tree that holds the module, handed on to
    /// clients.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdir: Option<String>,
    /// For git, the commit the reference resolved to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// The `h1:` hash of the packaged tree.
    pub h1: String,
    /// SHA-256 of the packaged `tar.gz`, lowercase hex.
    pub sha256: String,
    /// Size of the packaged `tar.gz` in bytes.
    pub size: u64,
    /// When it was first fetched, in milliseconds since the Unix epoch.
    pub pinned_at_ms: u64,
}

/// A product's released versions as its origin last listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseIndexRecord {
    /// The product.
    pub product: crate::address::Product,
    /// When the origin was asked, in milliseconds since the Unix epoch
    /// (zero: never; the list holds only what was imported or synced).
    pub fetched_at_ms: u64,
    /// Each version, with the files the origin lists for it where its
    /// list names them (OpenTofu's `api.json` does).
    pub versions: BTreeMap<Version, Vec<String>>,
}

/// A release whose checksum document verified: the SHA256SUMS as the
/// origin published it, the detached signatures that verified it, and
/// the other files published beside it, kept so that all of them are
/// served byte for byte while the origin is away.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReleaseRecord {
    /// The product.
    pub product: crate::address::Product,
    /// The version.
    pub version: Version,
    /// The checksum document's file name.
    pub sums_name: String,
    /// The checksum document, as published.
    pub sums: String,
    /// Each signature file over the checksum document that verified, by
    /// file name, base64.
    pub signatures: BTreeMap<String, String>,
    /// The files the origin publishes beside the checksum document that
    /// tfmirror passes on without checking them (OpenTofu's cosign `.sig`
    /// and `.pem`), by file name, base64.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub extras: BTreeMap<String, String>,
    /// The ID of the key that made the signatures, uppercase hex.
    pub key_id: String,
    /// When the release was verified, in milliseconds since the Unix epoch.
    pub verified_at_ms: u64,
}
