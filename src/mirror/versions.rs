//! Provider metadata: a provider's version list (fresh for
//! `cache.index_ttl`, served stale while the origin is down) and each
//! version's verified package record, fetched once and checked against the
//! origin's signed SHA256SUMS before it is stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::future::join_all;

use super::listing::{About, Freshness};
use super::package_checks::Failure;
use super::{Held, Mirror, Timed, RETRY_AFTER_TROUBLE};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome, PrefetchOutcome};
use crate::policy::Subject;
use crate::protocol::Rendered;
use crate::store::{IndexRecord, VersionRecord};
use crate::upstream::{registry, UpstreamError};
use crate::verify::Verification;

/// The platforms asked for when a registry does not list a version's
/// platforms: those Terraform and OpenTofu are released for.
const COMMON_PLATFORMS: &[&str] = &[
    "darwin_amd64",
    "darwin_arm64",
    "freebsd_386",
    "freebsd_amd64",
    "freebsd_arm",
    "linux_386",
    "linux_amd64",
    "linux_arm",
    "linux_arm64",
    "openbsd_386",
    "openbsd_amd64",
    "solaris_amd64",
    "windows_386",
    "windows_amd64",
    "windows_arm64",
];

impl Mirror {
    /// A provider's versions and platforms: from memory or disk while fresh,
    /// else from the origin; the stored copy when the origin is down.
    pub async fn index(&self, provider: &Provider) -> Result<Arc<IndexRecord>, RequestError> {
        Ok(self.held_index(provider).await?.value)
    }

    /// [`Mirror::index`] as it is held, with its `index.json` once
    /// rendered (see [`Mirror::index_document`]).
    pub(super) async fn held_index(
        &self,
        provider: &Provider,
    ) -> Result<Held<IndexRecord, Rendered>, RequestError> {
        self.check_host(&provider.hostname)?;
        // A live list answers at once: the origin's "no such provider" is
        // only remembered while none is held (and forgotten when one is
        // listed again).
        if let Some(held) = self.live(&self.providers.indexes, provider) {
            self.note(CacheKind::Index, CacheOutcome::Hit);
            return Ok(held);
        }
        // Checked without a read (nearly always absent) before the value
        // is taken.
        if self.providers.missing.contains_key(provider) {
            if let Some(message) = self.providers.missing.get(provider).await {
                return Err(RequestError::NotAtOrigin(message));
            }
        }
        let held = self
            .held(&self.providers.indexes, provider, || {
                self.load_index(provider, Freshness::Cached)
            })
            .await;
        let (held, found) = match held {
            Err(RequestError::NotAtOrigin(message)) => {
                // The origin's "no such provider" is remembered briefly;
                // failures are not. Offline, the answer is the cache's own,
                // and an import may change it at any time.
                if !self.config.cache.negative_ttl.is_zero() && !self.offline() {
                    self.providers
                        .missing
                        .insert(provider.clone(), message.clone())
                        .await;
                }
                return Err(RequestError::NotAtOrigin(message));
            }
            other => other?,
        };
        if found {
            self.note(CacheKind::Index, CacheOutcome::Hit);
        }
        Ok(held)
    }

    /// A provider's version list asked of the origin now, whatever the
    /// stored list's age, and kept for later requests; an origin that cannot
    /// answer is an error, not the stale copy (a watch pass must learn of
    /// it).
    pub async fn relist(&self, provider: &Provider) -> Result<Arc<IndexRecord>, RequestError> {
        self.check_host(&provider.hostname)?;
        let loaded = self.load_index(provider, Freshness::FromOrigin).await?;
        self.providers.missing.invalidate(provider).await;
        Ok(self
            .hold_listed(&self.providers.indexes, provider.clone(), loaded)
            .await)
    }

    async fn load_index(
        &self,
        provider: &Provider,
        freshness: Freshness,
    ) -> Result<Timed<IndexRecord>, RequestError> {
        let about = About {
            kind: CacheKind::Index,
            subject: provider.to_string(),
            named: format!("provider {provider}"),
            noun: "version list",
        };
        let stored = self.store.read_index(provider);
        self.load_listing(
            &about,
            freshness,
            stored,
            self.fetch_index(provider),
            async |record| self.store.write_index(provider, record).await,
        )
        .await
    }

    async fn fetch_index(&self, provider: &Provider) -> Result<IndexRecord, UpstreamError> {
        let base = self
            .origin
            .discovery
            .providers_base(&provider.hostname)
            .await?;
        let token = self.origin.credentials.token(&provider.hostname);
        let listed = registry::versions(&self.origin.client, &base, token, provider).await?;
        Ok(IndexRecord {
            fetched_at_ms: self.clock.unix_ms(),
            versions: listed.usable(provider),
            protocols: listed.protocols(),
            first_seen_ms: std::collections::BTreeMap::new(),
        })
    }

    /// A version's verified packages: from memory or disk when stored, else
    /// fetched from the origin and verified.
    pub async fn version(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
    ) -> Result<Arc<VersionRecord>, RequestError> {
        self.version_at(&(provider.clone(), version.clone())).await
    }

    /// [`Mirror::version`] by the key of the caches of versions, for a
    /// caller that looks up more by the same key.
    pub(super) async fn version_at(
        self: &Arc<Self>,
        key: &(Provider, Version),
    ) -> Result<Arc<VersionRecord>, RequestError> {
        Ok(self.held_version_at(key).await?.value)
    }

    /// [`Mirror::version_at`] as it is held, with its `:version.json`
    /// once rendered complete (see [`Mirror::version_document`]).
    pub(super) async fn held_version_at(
        self: &Arc<Self>,
        key: &(Provider, Version),
    ) -> Result<Held<VersionRecord, Rendered>, RequestError> {
        let (provider, version) = (&key.0, &key.1);
        self.check_host(&provider.hostname)?;
        self.permit(Subject::Provider(provider), version).await?;
        let (held, found) = self
            .held(&self.providers.versions, key, || {
                self.load_version(provider, version)
            })
            .await?;
        self.permit_verified(provider, version, held.value.verification())
            .await?;
        if found {
            self.note(CacheKind::Version, CacheOutcome::Hit);
        } else {
            self.prefetch(&held.value);
        }
        Ok(held)
    }

    /// Starts fetching, in the background, the archives of
    /// `cache.prefetch_platforms` that `record` has and the cache lacks.
    /// Each shares its download with any client that asks meanwhile.
    fn prefetch(self: &Arc<Self>, record: &VersionRecord) {
        for platform in &self.prefetch {
            if !record.packages.contains_key(platform) {
                continue;
            }
            let key = ArchiveKey::new(&record.provider, &record.version, platform);
            let this = self.clone();
            self.tasks.spawn(async move {
                match this.archive(&key).await {
                    Ok(archive) => {
                        this.metrics.prefetch(PrefetchOutcome::Fetched);
                        tracing::info!(archive = %key, h1 = %archive.h1, "prefetched");
                    }
                    Err(e) => {
                        this.metrics.prefetch(PrefetchOutcome::Failed);
                        tracing::warn!(archive = %key, error = %e, "prefetch failed");
                    }
                }
            });
        }
    }

    async fn load_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Timed<VersionRecord>, RequestError> {
        match self.store.read_version(provider, version).await {
            Ok(Some(rec)) if rec.unsigned_import && !self.config.cache.allow_unsigned_imports => {
                tracing::info!(%provider, %version, "the cache holds this version only as an unsigned import, and cache.allow_unsigned_imports is off");
            }
            Ok(Some(rec)) if rec.unsigned_import => {
                self.note(CacheKind::Version, CacheOutcome::Hit);
                return Ok(Timed {
                    value: Arc::new(rec),
                    ttl: None,
                });
            }
            Ok(Some(rec)) if self.repin_pending(&rec) && !self.offline() => {
                tracing::info!(%provider, %version, "a re-pin of this keyless version was approved; fetching it again");
            }
            Ok(Some(rec)) => match self.recheck(&rec) {
                Ok(()) => {
                    self.note(CacheKind::Version, CacheOutcome::Hit);
                    return Ok(Timed {
                        value: Arc::new(rec),
                        ttl: None,
                    });
                }
                Err(reason) => {
                    // Trust rules changed, a key was revoked or a signature
                    // expired since it was stored: verify afresh.
                    tracing::warn!(%provider, %version, %reason, "stored version record no longer passes verification; fetching it again");
                }
            },
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(%provider, %version, error = %e, "ignoring unreadable stored version record");
            }
        }
        if self.offline() {
            return Err(RequestError::NotHeld(format!(
                "{provider} {version} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        let index = self.index(provider).await?;
        let Some(platforms) = index.versions.get(version) else {
            return Err(RequestError::NotAtOrigin(format!(
                "provider {provider} has no version {version}"
            )));
        };
        let probed;
        let platforms = if platforms.is_empty() {
            // `platforms` is optional in the registry protocol: ask for the
            // usual ones; those the registry has no package for are left out.
            probed = COMMON_PLATFORMS
                .iter()
                .map(|p| Platform::parse(p).expect("valid built-in platform"))
                .collect::<Vec<_>>();
            &probed
        } else {
            platforms
        };
        self.note(CacheKind::Version, CacheOutcome::Miss);
        let (record, complete) = self.fetch_version(provider, version, platforms).await?;
        if record.verification() == Verification::Keyless {
            // Pinned on first sight, complete or not; refused when it
            // differs from the pin.
            self.pin_keyless(&record).await?;
        }
        if complete {
            match self.store.write_version(&record).await {
                Ok(()) => self.health.succeeded(),
                Err(e) => return Err(self.store_failed("storing a version record", &e)),
            }
        }
        Ok(Timed {
            value: Arc::new(record),
            ttl: if complete {
                None
            } else {
                Some(RETRY_AFTER_TROUBLE)
            },
        })
    }

    /// Fetches every platform's package metadata concurrently, then each
    /// distinct SHA256SUMS document and signature once, and verifies. Returns
    /// the record and whether every platform got a definite answer.
    async fn fetch_version(
        &self,
        provider: &Provider,
        version: &Version,
        platforms: &[Platform],
    ) -> Result<(VersionRecord, bool), RequestError> {
        let what = format!("{provider} {version}");
        let base = self
            .origin
            .discovery
            .providers_base(&provider.hostname)
            .await
            .map_err(|e| {
                RequestError::upstream(&e, &format!("could not reach the registry of {what}"))
            })?;
        let answers = join_all(platforms.iter().map(|platform| {
            let base = base.clone();
            async move {
                let token = self.origin.credentials.token(&provider.hostname);
                let answer = registry::package(
                    &self.origin.client,
                    &base,
                    token,
                    provider,
                    version,
                    platform,
                )
                .await;
                (platform.clone(), answer)
            }
        }))
        .await;

        let mut complete = true;
        // The same reason for several platforms is said once.
        let mut refusals: BTreeMap<String, Vec<Platform>> = BTreeMap::new();
        let mut outages: Vec<String> = Vec::new();
        let mut record = VersionRecord {
            provider: provider.clone(),
            version: version.clone(),
            packages: BTreeMap::new(),
            sums: Vec::new(),
            unsigned_import: false,
            evicted_ms: BTreeMap::new(),
            verified_at_ms: self.clock.unix_ms(),
        };
        for (platform, answer) in answers {
            let (pkg, final_url) = match answer {
                Ok(a) => a,
                Err(UpstreamError::NotFound { .. }) => {
                    tracing::warn!(%provider, %version, %platform, "origin lists the platform but has no package for it; leaving it out");
                    continue;
                }
                Err(e) => {
                    complete = false;
                    tracing::warn!(%provider, %version, %platform, error = %e, "could not read package metadata; leaving the platform out for now");
                    outages.push(format!("{platform}: {e}"));
                    continue;
                }
            };
            match self
                .verify_package(&mut record, &platform, &pkg, &final_url)
                .await
            {
                Ok(package) => {
                    record.packages.insert(platform, package);
                }
                Err(Failure::Outage(reason)) => {
                    complete = false;
                    tracing::warn!(%provider, %version, %platform, %reason, "could not fetch SHA256SUMS; leaving the platform out for now");
                    outages.push(format!("{platform}: {reason}"));
                }
                Err(refused) => {
                    refusals
                        .entry(refused.to_string())
                        .or_default()
                        .push(platform);
                }
            }
        }
        if !refusals.is_empty() {
            let said: Vec<String> = refusals
                .iter()
                .map(|(reason, platforms)| {
                    let names: Vec<&str> = platforms.iter().map(Platform::as_str).collect();
                    format!("{}: {reason}", names.join(", "))
                })
                .collect();
            return Err(RequestError::VerificationFailed(format!(
                "{what} failed verification, nothing was stored: {}",
                said.join("; ")
            )));
        }
        if record.packages.is_empty() && !outages.is_empty() {
            return Err(RequestError::UpstreamUnreachable(format!(
                "could not fetch the packages of {what}: {}",
                outages.join("; ")
            )));
        }
        Ok((record, complete))
    }

    /// Changes what a version's record says (sizes learned, an `h1:` the
    /// origin reported dropped): the record held in memory (else
    /// `record`) is changed, one change at a time, and kept in memory and,
    /// when it is a complete record, in the store.
    pub(super) async fn amend_version(
        &self,
        record: &VersionRecord,
        change: impl FnOnce(&mut VersionRecord),
    ) -> Arc<VersionRecord> {
        let _one_at_a_time = self.providers.amending.lock().await;
        let key = (record.provider.clone(), record.version.clone());
        let held = self.providers.versions.get(&key).await;
        let expires_ms = held.as_ref().and_then(|h| h.expires_ms);
        let mut amended = held.map_or_else(|| record.clone(), |h| (*h.value).clone());
        change(&mut amended);
        if expires_ms.is_none() {
            match self.store.write_version(&amended).await {
                Ok(()) => self.health.succeeded(),
                Err(e) => {
                    tracing::warn!(provider = %amended.provider, version = %amended.version, error = %e, "could not store the amended version record; it is kept in memory");
                }
            }
        }
        let value = Arc::new(amended);
        self.providers
            .versions
            .insert(key, Held::new(value.clone(), expires_ms))
            .await;
        value
    }

    /// Checks a stored version record's evidence against today's trust
    /// policy.
    pub(super) fn recheck(
        &self,
        record: &VersionRecord,
    ) -> Result<(), crate::store::evidence::Rejected> {
        crate::store::evidence::check_record(&self.trust, record).map(|_| ())
    }
}
