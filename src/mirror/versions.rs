//! Provider metadata: a provider's version list (fresh for
//! `cache.index_ttl`, served stale while the origin is down) and each
//! version's verified package record, fetched once and checked against the
//! origin's signed SHA256SUMS before it is stored.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine;
use futures_util::future::join_all;

use super::listing::{About, Freshness};
use super::{Mirror, Timed, RETRY_AFTER_TROUBLE};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome, PrefetchOutcome, VerifyOutcome};
use crate::policy::Subject;
use crate::store::{IndexRecord, KeyDetails, PackageRecord, SignedSums, VersionRecord};
use crate::upstream::{registry, UpstreamError};
use crate::verify::{Sha256Sums, Verification};

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
        self.check_host(&provider.hostname)?;
        if let Some(message) = self.providers.missing.get(provider).await {
            return Err(RequestError::NotAtOrigin(message));
        }
        let held = self
            .held(&self.providers.indexes, provider.clone(), || {
                self.load_index(provider, Freshness::Cached)
            })
            .await;
        let (value, found) = match held {
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
        Ok(value)
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
        self.check_host(&provider.hostname)?;
        self.permit(Subject::Provider(provider), version).await?;
        let key = (provider.clone(), version.clone());
        let (value, found) = self
            .held(&self.providers.versions, key, || {
                self.load_version(provider, version)
            })
            .await?;
        self.permit_verified(provider, version, value.verification())
            .await?;
        if found {
            self.note(CacheKind::Version, CacheOutcome::Hit);
        } else {
            self.prefetch(&value);
        }
        Ok(value)
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

    /// Checks one package's metadata against its signed SHA256SUMS, fetching
    /// and verifying each SHA256SUMS document once per version.
    async fn verify_package(
        &self,
        record: &mut VersionRecord,
        platform: &Platform,
        pkg: &registry::PackageResponse,
        final_url: &url::Url,
    ) -> Result<PackageRecord, Failure> {
        if pkg.os != platform.os() || pkg.arch != platform.arch() {
            return Err(Failure::OtherPlatform(format!("{}_{}", pkg.os, pkg.arch)));
        }
        let resolve = |field: &'static str, value: &str| {
            final_url.join(value).map_err(|reason| Failure::NotAUrl {
                field,
                value: value.to_owned(),
                reason,
            })
        };
        let download_url = resolve("download_url", &pkg.download_url)?;
        let sums_url = resolve("shasums_url", &pkg.shasums_url)?;
        let sig_url = resolve("shasums_signature_url", &pkg.shasums_signature_url)?;
        let (keys, key_details): (Vec<String>, Vec<KeyDetails>) = pkg
            .signing_keys
            .gpg_public_keys
            .iter()
            .map(|k| (k.ascii_armor.clone(), k.details.clone()))
            .unzip();

        // One SHA256SUMS serves all platforms of a version as a rule; fetch
        // and verify it once, and again only if another platform lists other
        // keys for it.
        let known = record
            .sums
            .iter()
            .position(|s| s.url == sums_url && s.keys == keys);
        let index = if let Some(i) = known {
            i
        } else {
            let signed = self
                .fetch_signed_sums(&record.provider, &sums_url, &sig_url, keys, key_details)
                .await?;
            record.sums.push(signed);
            record.sums.len() - 1
        };
        let sums =
            Sha256Sums::parse(record.sums[index].document.as_bytes()).map_err(Failure::Sums)?;
        let listed =
            sums.get(&pkg.filename)
                .ok_or_else(|| match sums.malformed(&pkg.filename) {
                    Some(held) => Failure::NotAChecksum {
                        file: pkg.filename.clone(),
                        held: held.to_owned(),
                    },
                    None => Failure::NotListed(pkg.filename.clone()),
                })?;
        if !listed.eq_ignore_ascii_case(&pkg.shasum) {
            return Err(Failure::ShasumDiffers {
                given: pkg.shasum.clone(),
                file: pkg.filename.clone(),
                signed: listed,
            });
        }
        let (size, reported_h1) = reported(pkg, platform, &listed)?;
        Ok(PackageRecord {
            filename: pkg.filename.clone(),
            download_url,
            sha256: listed,
            sums: index,
            protocols: pkg.protocols.clone(),
            size,
            reported_h1,
        })
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
            .insert(
                key,
                super::Held {
                    value: value.clone(),
                    expires_ms,
                },
            )
            .await;
        value
    }

    /// Checks a stored version record's evidence against today's trust
    /// policy.
    fn recheck(&self, record: &VersionRecord) -> Result<(), crate::store::evidence::Rejected> {
        crate::store::evidence::check_record(&self.trust, record).map(|_| ())
    }

    async fn fetch_signed_sums(
        &self,
        provider: &Provider,
        sums_url: &url::Url,
        sig_url: &url::Url,
        keys: Vec<String>,
        key_details: Vec<KeyDetails>,
    ) -> Result<SignedSums, Failure> {
        let (sums, sig) = tokio::join!(
            self.origin.client.get_bytes(sums_url, None),
            self.origin.client.get_bytes(sig_url, None)
        );
        let (sums, _) = sums.map_err(|e| Failure::from_upstream(&e))?;
        let (sig, _) = sig.map_err(|e| Failure::from_upstream(&e))?;
        let vouched = self
            .trust
            .check(provider, &sums, &sig, &keys)
            .map_err(|e| {
                self.metrics.verification(VerifyOutcome::Invalid);
                Failure::Signature(e)
            })?;
        self.metrics
            .verification(if vouched.verification == Verification::Keyless {
                VerifyOutcome::Keyless
            } else {
                VerifyOutcome::Valid
            });
        let document = String::from_utf8(sums.to_vec())
            .map_err(|_| Failure::Sums(crate::verify::SumsError::NotText))?;
        Ok(SignedSums {
            url: sums_url.clone(),
            document,
            signature: base64::engine::general_purpose::STANDARD.encode(&sig),
            signed_by: vouched.key_id,
            verification: vouched.verification,
            keys,
            key_details,
        })
    }
}

/// What the origin's `packages` field says about the package of
/// `platform` (its size and `h1:`), once its `zh:` is checked against the
/// signed checksum `signed`: a `zh:` that differs fails the verification,
/// as a bad signature does; an entry without any `zh:` vouches for
/// nothing and is not used.
fn reported(
    pkg: &registry::PackageResponse,
    platform: &Platform,
    signed: &str,
) -> Result<(Option<u64>, Option<String>), Failure> {
    let Some(entry) = pkg.packages.get(platform) else {
        return Ok((None, None));
    };
    let mut matched = false;
    for zh in entry.with_scheme("zh:") {
        if !zh["zh:".len()..].eq_ignore_ascii_case(signed) {
            return Err(Failure::ReportedDiffers {
                reported: zh.to_owned(),
                signed: signed.to_owned(),
            });
        }
        matched = true;
    }
    if !matched {
        tracing::warn!(%platform, "the registry's packages entry has no zh: hash; not using it");
        return Ok((None, None));
    }
    let h1 = entry.with_scheme("h1:").next().map(str::to_owned);
    Ok((Some(entry.size), h1))
}

/// Why one package could not be verified: the origin is down for now
/// ([`Failure::Outage`], tried again later), or its answer was checked and
/// refused (every other cause, which fails the version's verification).
#[derive(Debug, thiserror::Error)]
enum Failure {
    /// The origin could not be asked.
    #[error("{0}")]
    Outage(UpstreamError),
    /// The origin's definite answer was unusable (404, a bad body).
    #[error("{0}")]
    Upstream(UpstreamError),
    /// The answer is for another platform than the one asked for.
    #[error("the registry answered for {0} instead")]
    OtherPlatform(String),
    /// A URL field that does not resolve.
    #[error("{field} {value:?} is not a URL: {reason}")]
    NotAUrl {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why it does not resolve.
        reason: url::ParseError,
    },
    /// The signature over SHA256SUMS does not hold.
    #[error(transparent)]
    Signature(crate::verify::SignatureError),
    /// SHA256SUMS cannot be read.
    #[error(transparent)]
    Sums(crate::verify::SumsError),
    /// The file's line holds something that is not a SHA-256 checksum.
    #[error("the signed SHA256SUMS lists {file} with {held:?}, which is not a SHA-256 checksum")]
    NotAChecksum {
        /// The archive's file name.
        file: String,
        /// What its line holds.
        held: String,
    },
    /// SHA256SUMS has no line for the file.
    #[error("the signed SHA256SUMS has no entry for {0}")]
    NotListed(String),
    /// The registry's `packages` field reports another checksum than the
    /// signed one.
    #[error("the registry's packages field reports {reported} where the signed SHA256SUMS says zh:{signed}")]
    ReportedDiffers {
        /// The reported `zh:` hash.
        reported: String,
        /// The signed checksum.
        signed: String,
    },
    /// The registry's `shasum` is not the signed one.
    #[error(
        "the registry's shasum {given} for {file} differs from the signed SHA256SUMS ({signed})"
    )]
    ShasumDiffers {
        /// The registry's `shasum`.
        given: String,
        /// The archive's file name.
        file: String,
        /// The signed checksum.
        signed: String,
    },
}

impl Failure {
    fn from_upstream(e: &UpstreamError) -> Self {
        if e.is_outage() {
            Failure::Outage(e.clone())
        } else {
            Failure::Upstream(e.clone())
        }
    }
}
