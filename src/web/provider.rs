//! A provider's page (`/-/providers/:hostname/:namespace/:type`): its
//! versions held, newest first ([`PER_PAGE`] to a page), each with its
//! platforms, how it was verified and when first seen, what the policy
//! says of it, its `zh:` and `h1:` hashes and the `.terraform.lock.hcl`
//! block for every platform held (what `tfmirror lock` writes); a
//! `required_providers` entry to copy; and the versions the origin lists
//! that are not held, with what fetching one would take. Read from memory
//! and the store alone: a page asks no origin anything.

use std::collections::BTreeSet;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Provider, Version};
use crate::error::RequestError;
use crate::mirror::lockfile::{render, LockEntry};
use crate::policy::Subject;
use crate::store::VersionRecord;
use crate::verify::Verification;

/// How many versions one page shows in full.
pub const PER_PAGE: usize = 10;

/// How many versions not held the page lists.
const NOT_HELD_SHOWN: usize = 50;

/// A provider's page.
#[derive(Debug, Serialize)]
pub struct ProviderPage {
    /// The provider's address.
    pub provider: String,
    /// A `required_providers` entry for its newest version held.
    pub required_providers: String,
    /// This page's versions, newest first.
    pub versions: Vec<VersionView>,
    /// Versions held, in all.
    pub held: usize,
    /// This page (from 1).
    pub page: usize,
    /// How many pages there are.
    pub pages: usize,
    /// Versions the origin lists (as last stored) that are not held,
    /// newest first (the first 50).
    pub not_held: Vec<String>,
    /// How many versions are listed and not held, in all.
    pub not_held_count: usize,
    /// What fetching a version not held takes.
    pub fetching: String,
    /// The advisory database the versions were matched against, in a
    /// line; none when no database is imported.
    pub advisory_database: Option<String>,
}

/// One version held.
#[derive(Debug, Serialize)]
pub struct VersionView {
    /// The version.
    pub version: String,
    /// The platforms whose archives are held.
    pub platforms: Vec<String>,
    /// Each held platform's bill of materials: the platform, and the path
    /// of its CycloneDX document.
    pub boms: Vec<(String, String)>,
    /// How it was verified, for people.
    pub verification: String,
    /// `signed`, `pinned-key`, `keyless`, `unsigned-import`, or `unknown`
    /// (no record held).
    pub verified: &'static str,
    /// When its origin first listed it, as far as the mirror knows: a
    /// time (RFC 3339) for a version that appeared after the mirror's
    /// first listing of the provider; none for one listed then.
    pub first_listed: Option<String>,
    /// When the mirror verified it (RFC 3339); none in records written
    /// before the time was kept.
    pub verified_at: Option<String>,
    /// Whether the policy lets clients install it.
    pub allowed: bool,
    /// What the policy says, for people.
    pub policy: String,
    /// Its `zh:` hashes (every platform the signed checksums list) and
    /// the `h1:` of each archive held.
    pub hashes: Vec<String>,
    /// The lock file block for every platform held.
    pub lock: String,
    /// The known advisories it falls under, platform by platform; none
    /// when no advisory database is imported.
    pub advisories: Option<crate::advisories::Summary>,
    /// The path of its documentation page.
    pub docs: String,
    /// How many pages of its documentation are kept; none where none is
    /// (or the list kept cannot be read).
    pub docs_pages: Option<usize>,
}

#[derive(Template)]
#[template(path = "provider.html")]
struct Page<'a> {
    layout: &'a Layout,
    page: &'a ProviderPage,
}

/// `/-/providers/…`.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    provider: &Provider,
) -> Result<PageAnswer, RequestError> {
    let held = site.mirror.held_versions(provider);
    let listed = site.mirror.stored_index(provider).await;
    if held.is_empty() && listed.is_none() {
        return Err(RequestError::NoSuchPage(format!(
            "this mirror holds nothing of {provider}: a client's first request for it fetches it"
        )));
    }
    let pages = held.len().div_ceil(PER_PAGE).max(1);
    let wanted = req
        .param("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1)
        .clamp(1, pages);
    let mut versions = Vec::new();
    for (version, platforms) in held.iter().skip((wanted - 1) * PER_PAGE).take(PER_PAGE) {
        let first_seen = listed
            .as_ref()
            .and_then(|l| l.first_seen_ms.get(version).copied());
        versions.push(view(site, provider, version, platforms, first_seen).await);
    }
    let held_set: BTreeSet<&Version> = held.iter().map(|(v, _)| v).collect();
    let mut not_held: Vec<&Version> = listed
        .as_ref()
        .map(|l| {
            l.versions
                .keys()
                .filter(|v| !held_set.contains(v))
                .collect()
        })
        .unwrap_or_default();
    not_held.sort_by(|a, b| b.cmp(a));
    let data = ProviderPage {
        provider: provider.to_string(),
        required_providers: required_providers(provider, held.first().map(|(v, _)| v)),
        versions,
        held: held.len(),
        page: wanted,
        pages,
        not_held_count: not_held.len(),
        not_held: not_held
            .into_iter()
            .take(NOT_HELD_SHOWN)
            .map(ToString::to_string)
            .collect(),
        fetching: fetching(site, provider),
        advisory_database: (site.mirror.advisories().await.current.as_ref())
            .map(|c| super::advisory::describe(&c.source)),
    };
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &Page {
            layout,
            page: &data,
        },
    ))
}

/// One version held, with everything the page says of it.
async fn view(
    site: Site<'_>,
    provider: &Provider,
    version: &Version,
    platforms: &[String],
    first_seen: Option<u64>,
) -> VersionView {
    let record = site.mirror.stored_record(provider, version).await;
    let (verified, verification) = match &record {
        Some(r) => verification(r),
        None => (
            "unknown",
            "its record is not held or no longer passes verification: a client's next request checks it again".to_owned(),
        ),
    };
    let (allowed, policy) =
        policy_of(site, (provider, version), first_seen, record.as_deref()).await;
    let (hashes, lock) = match &record {
        Some(r) => {
            let hashes = hashes(site, r).await;
            let entry = LockEntry {
                provider: provider.clone(),
                version: version.clone(),
                constraints: None,
                hashes: hashes.iter().cloned().collect(),
                reported: Vec::new(),
                downloaded: Vec::new(),
            };
            (hashes, render(&[entry]))
        }
        None => (Vec::new(), String::new()),
    };
    let held_platforms: Vec<crate::address::Platform> = platforms
        .iter()
        .filter_map(|p| crate::address::Platform::parse(p).ok())
        .collect();
    let advisories = site
        .mirror
        .version_advisories(provider, version, &held_platforms)
        .await
        .map(|(_, summary)| summary);
    let docs_pages = crate::store::docs::version(site.mirror.store(), provider, version)
        .await
        .ok()
        .flatten()
        .map(|d| d.pages.len());
    VersionView {
        advisories,
        docs: super::routes::docs_path(provider, version),
        docs_pages,
        version: version.to_string(),
        platforms: platforms.to_vec(),
        boms: platforms
            .iter()
            .filter_map(|p| {
                let platform = crate::address::Platform::parse(p).ok()?;
                let key = crate::address::ArchiveKey::new(provider, version, &platform);
                Some((p.clone(), super::routes::bom_path(&key)))
            })
            .collect(),
        verification,
        verified,
        first_listed: first_seen.map(rfc3339),
        verified_at: (record.as_ref())
            .map(|r| r.verified_at_ms)
            .filter(|ms| *ms > 0)
            .map(rfc3339),
        allowed,
        policy,
        hashes,
        lock,
    }
}

/// Whether the policy lets clients install `version`, and what it says
/// of it, for people; `first_seen` and `record` as the mirror holds them.
pub(super) async fn policy_of(
    site: Site<'_>,
    (provider, version): (&Provider, &Version),
    first_seen: Option<u64>,
    record: Option<&VersionRecord>,
) -> (bool, String) {
    let decision = site
        .mirror
        .decision(
            Subject::Provider(provider),
            version,
            first_seen,
            record.map(VersionRecord::verification),
        )
        .await;
    match decision {
        Ok(rule) if rule.is_empty() => (true, "allowed: the policy has no rule".to_owned()),
        Ok(rule) => (true, format!("allowed by {rule}")),
        Err(denied) => (false, format!("not installable: {denied}")),
    }
}

/// A time in milliseconds since the Unix epoch, as RFC 3339 (seconds).
pub(super) fn rfc3339(ms: u64) -> String {
    humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(ms)).to_string()
}

/// How a record was verified, as a label and for people.
fn verification(record: &VersionRecord) -> (&'static str, String) {
    if record.unsigned_import {
        return (
            "unsigned-import",
            "imported from a terraform providers mirror directory: its hashes match what that directory recorded, and no signature vouches for it".into(),
        );
    }
    let key = record.signed_by();
    match record.verification() {
        Verification::Signed => (
            "signed",
            format!("signed by key {key}, which its registry lists for the provider"),
        ),
        Verification::PinnedKey => (
            "pinned-key",
            format!("signed by key {key}, which this mirror's trust rules pin"),
        ),
        Verification::Keyless => (
            "keyless",
            "published without a signing key: checksums, sizes and hashes checked, and pinned when first seen".into(),
        ),
    }
}

/// The `zh:` hash of every package the signed checksums list, then the
/// `h1:` of each archive held (and of those the origin reported).
async fn hashes(site: Site<'_>, record: &VersionRecord) -> Vec<String> {
    let zh: BTreeSet<String> = record
        .packages
        .values()
        .map(|pkg| crate::verify::zh(&pkg.sha256))
        .collect();
    let h1: BTreeSet<String> = site.mirror.cached_h1(record).await.into_values().collect();
    h1.into_iter().chain(zh).collect()
}

/// The `required_providers` entry for `version`.
fn required_providers(provider: &Provider, version: Option<&Version>) -> String {
    let source = if provider.hostname.as_str() == Provider::DEFAULT_HOSTNAME {
        format!("{}/{}", provider.namespace, provider.kind)
    } else {
        provider.to_string()
    };
    let version = version.map_or(String::new(), |v| format!("\n      version = \"{v}\""));
    format!(
        "terraform {{\n  required_providers {{\n    {} = {{\n      source  = \"{source}\"{version}\n    }}\n  }}\n}}",
        provider.kind
    )
}

/// What fetching a version that is not held takes.
fn fetching(site: Site<'_>, provider: &Provider) -> String {
    if site.mirror.offline() {
        "This mirror is offline: a version it does not hold comes in a bundle (tfmirror sync and export on the connected side, tfmirror import here).".into()
    } else {
        format!(
            "A client's first request for a version the mirror does not hold fetches it from {}, checks its signature and checksums, and keeps it; tfmirror sync fetches ahead of time.",
            provider.hostname
        )
    }
}
