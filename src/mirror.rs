//! The mirror itself: answers for a provider's versions, a version's
//! packages and a package's archive, from the cache when it can and from the
//! origin registry when it must, verifying everything it takes from the
//! origin before it is stored or its hashes are returned.
//!
//! Concurrent requests for the same thing share one piece of work: each of
//! the three in-memory caches below loads a missing entry once, however many
//! requests wait for it.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use futures_util::future::join_all;
use http_body_util::BodyExt;
use sha2::{Digest, Sha256};
use tokio::io::AsyncWriteExt;
use tracing::Instrument;

use crate::address::{Hostname, Platform, Provider, Version};
use crate::auth::Auth;
use crate::cache::health::DiskHealth;
use crate::cache::{
    atomic, inventory, IndexRecord, KeepError, PackageRecord, SignedSums, Store, VersionRecord,
};
use crate::config::Config;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome, Metrics, VerifyOutcome};
use crate::protocol::{IndexDocument, Rendered, VersionDocument};
use crate::upstream::{registry, Client, Credentials, Discovery, UpstreamError};
use crate::verify::{self, Sha256Sums, TrustPolicy};

/// How soon a stale or incomplete answer is retried against the origin.
const RETRY_AFTER_TROUBLE: Duration = Duration::from_secs(30);

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

/// A cached archive on disk.
#[derive(Debug, Clone)]
pub struct Archive {
    /// Where it is.
    pub path: PathBuf,
    /// Its size in bytes.
    pub size: u64,
    /// Its `h1:` hash.
    pub h1: String,
}

/// How far a download that clients are reading while it arrives has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// This many bytes are in the temporary file.
    Running(u64),
    /// All bytes are in and their SHA-256 is the signed one.
    Verified,
    /// The download failed or did not verify: no client may finish.
    Failed,
}

/// A download under way, announced with its size, that clients read from
/// its temporary file as it arrives. A reader never gets the last byte
/// before the whole archive has verified, so no client can accept one that
/// fails.
pub struct Arriving {
    /// The temporary file, opened for reading.
    pub file: std::fs::File,
    /// The size the origin announced.
    pub size: u64,
    /// Progress of the download.
    pub progress: tokio::sync::watch::Receiver<Progress>,
}

/// What [`Mirror::follow_archive`] found.
pub enum Following {
    /// The archive is cached.
    Cached(Arc<Archive>, Reading),
    /// It is arriving.
    Arriving(Arriving),
}

/// A registered download under way.
struct InFlight {
    path: PathBuf,
    size: u64,
    progress: tokio::sync::watch::Receiver<Progress>,
}

/// Publishes a download's progress; marks it failed and unregisters it
/// when dropped before it verified.
struct Publisher<'a> {
    mirror: &'a Mirror,
    key: ArchiveKey,
    tx: Option<tokio::sync::watch::Sender<Progress>>,
}

impl Publisher<'_> {
    fn advance(&self, written: u64) {
        if let Some(tx) = &self.tx {
            tx.send_replace(Progress::Running(written));
        }
    }

    fn verified(&self) {
        if let Some(tx) = &self.tx {
            tx.send_replace(Progress::Verified);
        }
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if let Some(tx) = self.tx.take() {
            if *tx.borrow() != Progress::Verified {
                tx.send_replace(Progress::Failed);
            }
            self.mirror
                .inflight
                .lock()
                .expect("in-flight lock")
                .remove(&self.key);
        }
    }
}

/// A value held in memory for a limited time.
#[derive(Debug)]
struct Timed<T> {
    value: Arc<T>,
    ttl: Option<Duration>,
}

impl<T> Clone for Timed<T> {
    fn clone(&self) -> Self {
        Timed {
            value: self.value.clone(),
            ttl: self.ttl,
        }
    }
}

/// Lets each entry say how long it stays.
struct PerEntryTtl;

impl<K, T> moka::Expiry<K, Timed<T>> for PerEntryTtl {
    fn expire_after_create(
        &self,
        _key: &K,
        value: &Timed<T>,
        _created_at: std::time::Instant,
    ) -> Option<Duration> {
        value.ttl
    }
}

/// Identifies one archive.
pub type ArchiveKey = (Provider, Version, Platform);

/// How many downloaded bytes are gathered before they are written out.
const WRITE_BATCH: usize = 1024 * 1024;

/// How long between two updates of an archive's last-use time on disk.
const TOUCH_EVERY: Duration = Duration::from_secs(3600);

/// The mirror's state, shared by every request.
pub struct Mirror {
    config: Config,
    store: Store,
    client: Client,
    discovery: Discovery,
    credentials: Credentials,
    trust: TrustPolicy,
    metrics: Arc<Metrics>,
    auth: Auth,
    draining: AtomicBool,
    /// Whether the cache can be written.
    disk: DiskHealth,
    /// Archives being sent to clients, with how many readers each: never evicted.
    readers: Mutex<HashMap<ArchiveKey, usize>>,
    /// When each archive's last use was last written to disk.
    touched: Mutex<HashMap<ArchiveKey, Instant>>,
    /// Bytes and number of cached archives.
    usage: Mutex<(u64, u64)>,
    /// Held while evicting.
    evicting: Mutex<()>,
    /// Downloads clients can read while they arrive.
    inflight: Mutex<HashMap<ArchiveKey, InFlight>>,
    /// Signalled when a download is registered there.
    inflight_added: tokio::sync::Notify,
    indexes: moka::future::Cache<Provider, Timed<IndexRecord>>,
    /// Providers the origin recently said do not exist, with its message.
    missing: moka::future::Cache<Provider, String>,
    versions: moka::future::Cache<(Provider, Version), Timed<VersionRecord>>,
    archives: moka::future::Cache<ArchiveKey, Arc<Archive>>,
    /// `index.json` as last rendered, with the record it rendered.
    rendered_indexes: moka::future::Cache<Provider, (Arc<IndexRecord>, Rendered)>,
    /// `:version.json` (unsigned links) as last rendered, with the record
    /// and whether every platform's `h1:` was in it.
    rendered_versions:
        moka::future::Cache<(Provider, Version), (Arc<VersionRecord>, bool, Rendered)>,
}

impl Mirror {
    /// Builds the daemon's mirror from its configuration, opening the cache
    /// and sweeping what an earlier run left unfinished in `tmp/`.
    pub fn new(config: Config) -> anyhow::Result<Mirror> {
        Self::build(config, true)
    }

    /// Builds a mirror for a command (such as `sync`) that may run beside a
    /// daemon using the same cache: `tmp/` is left alone.
    pub fn beside_daemon(config: Config) -> anyhow::Result<Mirror> {
        Self::build(config, false)
    }

    fn build(config: Config, sweep: bool) -> anyhow::Result<Mirror> {
        use anyhow::Context;
        let store = Store::open(&config.cache.dir)
            .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
        if sweep {
            store
                .sweep()
                .with_context(|| format!("sweeping {}", store.tmp_dir().display()))?;
        }
        let metrics = Arc::new(Metrics::new());
        let auth = Auth::new(&config.auth, &config.server.data_dir)?;
        let client = Client::new(&config.upstream, metrics.clone())?;
        let archives = inventory::archives(&store);
        let usage = (archives.iter().map(|a| a.size).sum(), archives.len() as u64);
        metrics.set_cache_size(usage.0, usage.1);
        let credentials = Credentials::load(&config.upstream, std::env::vars())?;
        let trust = TrustPolicy::new(&config.trust, config.upstream.reject_expired_keys)?;
        let discovery = Discovery::new(
            client.clone(),
            credentials.clone(),
            config.upstream.hosts.clone(),
            config.cache.index_ttl,
        );
        Ok(Mirror {
            disk: DiskHealth::new(store.tmp_dir().to_path_buf()),
            store,
            client,
            discovery,
            credentials,
            trust,
            metrics,
            auth,
            draining: AtomicBool::new(false),
            readers: Mutex::default(),
            touched: Mutex::default(),
            usage: Mutex::new(usage),
            evicting: Mutex::new(()),
            inflight: Mutex::default(),
            inflight_added: tokio::sync::Notify::new(),
            indexes: moka::future::Cache::builder()
                .max_capacity(10_000)
                .expire_after(PerEntryTtl)
                .build(),
            missing: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(config.cache.negative_ttl.max(Duration::from_millis(1)))
                .build(),
            versions: moka::future::Cache::builder()
                .max_capacity(20_000)
                .expire_after(PerEntryTtl)
                .build(),
            archives: moka::future::Cache::builder().max_capacity(100_000).build(),
            rendered_indexes: moka::future::Cache::builder().max_capacity(10_000).build(),
            rendered_versions: moka::future::Cache::builder().max_capacity(20_000).build(),
            config,
        })
    }

    /// The configuration in force.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The cache store.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Access control.
    pub fn auth(&self) -> &Auth {
        &self.auth
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Marks the mirror as shutting down: `/readyz` answers 503 from now on.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the mirror can serve: not shutting down, and the cache is
    /// writable (see [`DiskHealth`]). The reason when not.
    pub fn ready(&self) -> Result<(), String> {
        if self.draining.load(Ordering::SeqCst) {
            return Err("shutting down".into());
        }
        self.disk.check()
    }

    /// Cached bytes and archives.
    pub fn usage(&self) -> (u64, u64) {
        *self.usage.lock().expect("usage lock")
    }

    /// Whether the mirror never contacts origins (`upstream.offline`).
    pub fn offline(&self) -> bool {
        self.config.upstream.offline
    }

    fn not_held(&self, provider: &Provider) -> RequestError {
        RequestError::NotFound(format!(
            "{provider} is not held by this mirror, which is offline (upstream.offline)"
        ))
    }

    /// An archive already in the cache, if it is.
    pub fn cached_archive(&self, key: &ArchiveKey) -> Option<Archive> {
        self.stored_archive(key)
    }

    /// Counts a cache lookup and notes its outcome on the request's span.
    fn note(&self, kind: CacheKind, outcome: CacheOutcome) {
        self.metrics.cache(kind, outcome);
        let word = match outcome {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Stale => "stale",
        };
        tracing::Span::current().record("cache", word);
    }

    /// Refuses hostnames that are neither allowed nor configured, before any
    /// other work is done for them.
    pub fn check_host(&self, host: &Hostname) -> Result<(), RequestError> {
        let up = &self.config.upstream;
        if up.allowed_hosts.contains(host) || up.hosts.contains_key(host) {
            Ok(())
        } else {
            Err(RequestError::HostNotAllowed(host.to_string()))
        }
    }

    /// A provider's versions and platforms: from memory or disk while fresh,
    /// else from the origin; the stored copy when the origin is down.
    pub async fn index(&self, provider: &Provider) -> Result<Arc<IndexRecord>, RequestError> {
        self.check_host(&provider.hostname)?;
        if let Some(message) = self.missing.get(provider).await {
            return Err(RequestError::NotFound(message));
        }
        let entry = self
            .indexes
            .entry(provider.clone())
            .or_try_insert_with(self.load_index(provider))
            .await
            .map_err(|e| (*e).clone());
        let entry = match entry {
            Err(RequestError::NotFound(message)) => {
                // The origin's "no such provider" is remembered briefly;
                // failures are not. Offline, the answer is the cache's own,
                // and an import may change it at any time.
                if !self.config.cache.negative_ttl.is_zero() && !self.offline() {
                    self.missing.insert(provider.clone(), message.clone()).await;
                }
                return Err(RequestError::NotFound(message));
            }
            other => other?,
        };
        if !entry.is_fresh() {
            self.note(CacheKind::Index, CacheOutcome::Hit);
        }
        Ok(entry.into_value().value)
    }

    async fn load_index(&self, provider: &Provider) -> Result<Timed<IndexRecord>, RequestError> {
        let path = self.store.index_path(provider);
        let stored: Option<IndexRecord> = match self.store.read_json(&path) {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(%provider, error = %e, "ignoring unreadable stored version list");
                None
            }
        };
        let ttl = self.config.cache.index_ttl;
        if self.offline() {
            return match stored {
                Some(rec) => {
                    self.note(CacheKind::Index, CacheOutcome::Hit);
                    Ok(Timed {
                        value: Arc::new(rec),
                        // Read again soon: an import may add versions.
                        ttl: Some(ttl.min(RETRY_AFTER_TROUBLE)),
                    })
                }
                None => Err(self.not_held(provider)),
            };
        }
        if let Some(rec) = &stored {
            let age = Duration::from_millis(now_ms().saturating_sub(rec.fetched_at_ms));
            if age < ttl {
                self.note(CacheKind::Index, CacheOutcome::Hit);
                return Ok(Timed {
                    value: Arc::new(rec.clone()),
                    ttl: Some(ttl - age),
                });
            }
        }
        match self.fetch_index(provider).await {
            Ok(rec) => {
                self.note(CacheKind::Index, CacheOutcome::Miss);
                if stored.as_ref().map(|s| &s.versions) != Some(&rec.versions) {
                    tracing::info!(%provider, versions = rec.versions.len(), "version list updated");
                }
                match self.store.write_json(&path, &rec) {
                    Ok(()) => self.disk.succeeded(),
                    Err(e) => {
                        let refusal = self.disk.failed("storing a version list", &e);
                        if stored.is_none() {
                            return Err(refusal);
                        }
                        // A refresh of a list the cache holds: serve it,
                        // and try storing it again soon.
                        return Ok(Timed {
                            value: Arc::new(rec),
                            ttl: Some(ttl.min(RETRY_AFTER_TROUBLE)),
                        });
                    }
                }
                Ok(Timed {
                    value: Arc::new(rec),
                    ttl: Some(ttl),
                })
            }
            Err(e) if e.is_outage() && stored.is_some() => {
                self.note(CacheKind::Index, CacheOutcome::Stale);
                tracing::warn!(%provider, error = %e, "origin unavailable; serving the stored version list");
                Ok(Timed {
                    value: Arc::new(stored.expect("checked")),
                    ttl: Some(ttl.min(RETRY_AFTER_TROUBLE)),
                })
            }
            Err(UpstreamError::NotFound { .. }) => Err(RequestError::NotFound(format!(
                "provider {provider} does not exist at its origin registry"
            ))),
            Err(e) => Err(upstream_failure(
                e,
                format!("could not list the versions of {provider}"),
            )),
        }
    }

    async fn fetch_index(&self, provider: &Provider) -> Result<IndexRecord, UpstreamError> {
        let base = self.discovery.providers_base(&provider.hostname).await?;
        let token = self.credentials.token(&provider.hostname);
        let listed = registry::versions(&self.client, &base, token, provider).await?;
        Ok(IndexRecord {
            fetched_at_ms: now_ms(),
            versions: listed.usable(provider),
        })
    }

    /// A version's verified packages: from memory or disk when stored, else
    /// fetched from the origin and verified.
    pub async fn version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Arc<VersionRecord>, RequestError> {
        self.check_host(&provider.hostname)?;
        let key = (provider.clone(), version.clone());
        let entry = self
            .versions
            .entry(key)
            .or_try_insert_with(self.load_version(provider, version))
            .await
            .map_err(|e| (*e).clone())?;
        if !entry.is_fresh() {
            self.note(CacheKind::Version, CacheOutcome::Hit);
        }
        Ok(entry.into_value().value)
    }

    async fn load_version(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Timed<VersionRecord>, RequestError> {
        let path = self.store.version_path(provider, version);
        match self.store.read_json::<VersionRecord>(&path) {
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
                tracing::warn!(%provider, %version, error = %e, "ignoring unreadable stored version record")
            }
        }
        if self.offline() {
            return Err(RequestError::NotFound(format!(
                "{provider} {version} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        let index = self.index(provider).await?;
        let Some(platforms) = index.versions.get(version) else {
            return Err(RequestError::NotFound(format!(
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
        if complete {
            match self.store.write_json(&path, &record) {
                Ok(()) => self.disk.succeeded(),
                Err(e) => return Err(self.disk.failed("storing a version record", &e)),
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
            .discovery
            .providers_base(&provider.hostname)
            .await
            .map_err(|e| upstream_failure(e, format!("could not reach the registry of {what}")))?;
        let answers = join_all(platforms.iter().map(|platform| {
            let base = base.clone();
            async move {
                let token = self.credentials.token(&provider.hostname);
                let answer =
                    registry::package(&self.client, &base, token, provider, version, platform)
                        .await;
                (platform.clone(), answer)
            }
        }))
        .await;

        let mut complete = true;
        let mut refusals: Vec<String> = Vec::new();
        let mut outages: Vec<String> = Vec::new();
        let mut record = VersionRecord {
            provider: provider.clone(),
            version: version.clone(),
            packages: BTreeMap::new(),
            sums: Vec::new(),
            unsigned_import: false,
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
                Err(Failure::Refused(reason)) => {
                    tracing::error!(%provider, %version, %platform, %reason, "package failed verification");
                    refusals.push(format!("{platform}: {reason}"));
                }
            }
        }
        if !refusals.is_empty() {
            return Err(RequestError::BadGateway(format!(
                "{what} failed verification, nothing was stored: {}",
                refusals.join("; ")
            )));
        }
        if record.packages.is_empty() && !outages.is_empty() {
            return Err(RequestError::BadGateway(format!(
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
            return Err(Failure::Refused(format!(
                "the registry answered for {}_{} instead",
                pkg.os, pkg.arch
            )));
        }
        let resolve = |field: &str, value: &str| {
            final_url
                .join(value)
                .map_err(|e| Failure::Refused(format!("{field} {value:?} is not a URL: {e}")))
        };
        let download_url = resolve("download_url", &pkg.download_url)?;
        let sums_url = resolve("shasums_url", &pkg.shasums_url)?;
        let sig_url = resolve("shasums_signature_url", &pkg.shasums_signature_url)?;
        let keys: Vec<String> = pkg
            .signing_keys
            .gpg_public_keys
            .iter()
            .map(|k| k.ascii_armor.clone())
            .collect();

        // One SHA256SUMS serves all platforms of a version as a rule; fetch
        // and verify it once, and again only if another platform lists other
        // keys for it.
        let known = record
            .sums
            .iter()
            .position(|s| s.url == sums_url && s.keys == keys);
        let index = match known {
            Some(i) => i,
            None => {
                let signed = self
                    .fetch_signed_sums(&record.provider, &sums_url, &sig_url, keys)
                    .await?;
                record.sums.push(signed);
                record.sums.len() - 1
            }
        };
        let sums = Sha256Sums::parse(record.sums[index].document.as_bytes())
            .map_err(|e| Failure::Refused(e.to_string()))?;
        let listed = sums.get(&pkg.filename).ok_or_else(|| {
            Failure::Refused(format!(
                "the signed SHA256SUMS has no entry for {}",
                pkg.filename
            ))
        })?;
        if !listed.eq_ignore_ascii_case(&pkg.shasum) {
            return Err(Failure::Refused(format!(
                "the registry's shasum {} for {} differs from the signed SHA256SUMS ({listed})",
                pkg.shasum, pkg.filename
            )));
        }
        Ok(PackageRecord {
            filename: pkg.filename.clone(),
            download_url,
            sha256: listed.to_owned(),
            sums: index,
        })
    }

    /// Checks a stored version record's evidence against today's trust
    /// policy.
    fn recheck(&self, record: &VersionRecord) -> Result<(), String> {
        verify::evidence::check_record(&self.trust, record)
    }

    async fn fetch_signed_sums(
        &self,
        provider: &Provider,
        sums_url: &url::Url,
        sig_url: &url::Url,
        keys: Vec<String>,
    ) -> Result<SignedSums, Failure> {
        let (sums, sig) = tokio::join!(
            self.client.get_bytes(sums_url, None),
            self.client.get_bytes(sig_url, None)
        );
        let (sums, _) = sums.map_err(Failure::from_upstream)?;
        let (sig, _) = sig.map_err(Failure::from_upstream)?;
        let signed_by = self
            .trust
            .check(provider, &sums, &sig, &keys)
            .map_err(|e| {
                self.metrics.verification(VerifyOutcome::Invalid);
                Failure::Refused(e.to_string())
            })?;
        self.metrics.verification(VerifyOutcome::Valid);
        let document = String::from_utf8(sums.to_vec())
            .map_err(|_| Failure::Refused("SHA256SUMS is not text".into()))?;
        Ok(SignedSums {
            url: sums_url.clone(),
            document,
            signature: base64::engine::general_purpose::STANDARD.encode(&sig),
            signed_by,
            keys,
        })
    }

    /// A provider's `index.json`, rendered once per version list.
    pub async fn index_document(&self, provider: &Provider) -> Result<Rendered, RequestError> {
        let record = self.index(provider).await?;
        if let Some((seen, rendered)) = self.rendered_indexes.get(provider).await {
            if Arc::ptr_eq(&seen, &record) {
                return Ok(rendered);
            }
        }
        let rendered = Rendered::new(&IndexDocument::from_record(&record));
        self.rendered_indexes
            .insert(provider.clone(), (record, rendered.clone()))
            .await;
        Ok(rendered)
    }

    /// A version's `:version.json` with plain archive links, rendered once
    /// per record and set of cached archives.
    pub async fn version_document(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Rendered, RequestError> {
        let record = self.version(provider, version).await?;
        let key = (provider.clone(), version.clone());
        if let Some((seen, complete, rendered)) = self.rendered_versions.get(&key).await {
            // Complete: every archive's h1: is in it, so nothing can change.
            if complete && Arc::ptr_eq(&seen, &record) {
                return Ok(rendered);
            }
        }
        let h1 = self.cached_h1(&record).await;
        let complete = h1.len() == record.packages.len();
        let rendered = Rendered::new(&VersionDocument::from_record(&record, &h1, |_| None));
        self.rendered_versions
            .insert(key, (record, complete, rendered.clone()))
            .await;
        Ok(rendered)
    }

    /// The `h1:` hashes of the archives of `record` that are in the cache.
    pub async fn cached_h1(&self, record: &VersionRecord) -> BTreeMap<Platform, String> {
        let mut out = BTreeMap::new();
        for platform in record.packages.keys() {
            let key = (
                record.provider.clone(),
                record.version.clone(),
                platform.clone(),
            );
            if let Some(archive) = self.archives.get(&key).await {
                out.insert(platform.clone(), archive.h1.clone());
            } else if let Some(archive) = self.stored_archive(&key) {
                let archive = Arc::new(archive);
                out.insert(platform.clone(), archive.h1.clone());
                self.archives.insert(key, archive).await;
            }
        }
        out
    }

    /// The archive of a package, downloaded and verified on first use.
    /// Concurrent first requests share one download, which runs as its own
    /// task so that it completes (and is kept) even when every client that
    /// asked for it has gone away.
    pub async fn archive(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platform: &Platform,
    ) -> Result<Arc<Archive>, RequestError> {
        self.check_host(&provider.hostname)?;
        let key = (provider.clone(), version.clone(), platform.clone());
        for _ in 0..2 {
            let entry = self
                .archives
                .entry(key.clone())
                .or_try_insert_with(self.clone().stored_or_download(key.clone()))
                .await
                .map_err(|e| (*e).clone())?;
            if !entry.is_fresh() {
                self.note(CacheKind::Archive, CacheOutcome::Hit);
            }
            let archive = entry.into_value();
            if archive.path.exists() {
                return Ok(archive);
            }
            // Removed from disk behind the mirror's back: forget it, fetch again.
            self.archives.invalidate(&key).await;
        }
        Err(RequestError::Unavailable(format!(
            "{provider} {version} {platform}: the cached archive keeps disappearing from disk"
        )))
    }

    async fn stored_or_download(
        self: Arc<Self>,
        key: ArchiveKey,
    ) -> Result<Arc<Archive>, RequestError> {
        if let Some(a) = self.stored_archive(&key) {
            self.note(CacheKind::Archive, CacheOutcome::Hit);
            return Ok(Arc::new(a));
        }
        if self.offline() {
            let (p, v, platform) = &key;
            return Err(RequestError::NotFound(format!(
                "{p} {v} {platform} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        self.note(CacheKind::Archive, CacheOutcome::Miss);
        let task = tokio::spawn(async move {
            let (p, v, platform) = &key;
            let archive = self.download(p, v, platform).await?;
            self.stored(&key, archive.size).await;
            Ok(archive)
        });
        match task.await {
            Ok(result) => result.map(Arc::new),
            Err(e) => Err(RequestError::Unavailable(format!(
                "the download task failed: {e}"
            ))),
        }
    }

    /// Writes the downloaded bytes gathered so far and, for a download
    /// clients follow, tells them how far the file goes (`written`).
    async fn write_batch(
        &self,
        file: &mut tokio::fs::File,
        pending: &mut Vec<u8>,
        publisher: &Publisher<'_>,
        written: u64,
    ) -> Result<(), RequestError> {
        if pending.is_empty() {
            return Ok(());
        }
        file.write_all(pending)
            .await
            .map_err(|e| self.disk.failed("writing an archive", &e))?;
        pending.clear();
        if publisher.tx.is_some() {
            // Readers open the file by path: the bytes must have reached the
            // kernel before they are said to be there.
            file.flush()
                .await
                .map_err(|e| self.disk.failed("writing an archive", &e))?;
            publisher.advance(written);
        }
        Ok(())
    }

    /// Registers a download whose size is announced, so that clients can
    /// read it while it arrives.
    fn publish_download(&self, key: ArchiveKey, path: PathBuf, size: Option<u64>) -> Publisher<'_> {
        let Some(size) = size else {
            return Publisher {
                mirror: self,
                key,
                tx: None,
            };
        };
        let (tx, progress) = tokio::sync::watch::channel(Progress::Running(0));
        self.inflight.lock().expect("in-flight lock").insert(
            key.clone(),
            InFlight {
                path,
                size,
                progress,
            },
        );
        self.inflight_added.notify_waiters();
        Publisher {
            mirror: self,
            key,
            tx: Some(tx),
        }
    }

    /// The archive of a package for sending: the cached file, or, while it
    /// is being downloaded with an announced size, the download itself as
    /// it arrives (starting the download when no one has).
    pub async fn follow_archive(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platform: &Platform,
    ) -> Result<Following, RequestError> {
        self.check_host(&provider.hostname)?;
        let key = (provider.clone(), version.clone(), platform.clone());
        let cached = self.archives.contains_key(&key) || self.stored_archive(&key).is_some();
        if cached || self.offline() {
            let (archive, reading) = self.open_archive(provider, version, platform).await?;
            return Ok(Following::Cached(archive, reading));
        }
        let mut fetch = tokio::spawn(
            {
                let (this, p, v, pl) = (
                    self.clone(),
                    provider.clone(),
                    version.clone(),
                    platform.clone(),
                );
                async move { this.open_archive(&p, &v, &pl).await }
            }
            // Cache outcomes are noted on the request's span.
            .in_current_span(),
        );
        loop {
            let added = self.inflight_added.notified();
            tokio::pin!(added);
            added.as_mut().enable();
            if let Some(arriving) = self.arriving(&key) {
                // The task goes on: it keeps the archive once it is in.
                return Ok(Following::Arriving(arriving));
            }
            tokio::select! {
                done = &mut fetch => {
                    let (archive, reading) = done.map_err(|e| {
                        RequestError::Unavailable(format!("the download task failed: {e}"))
                    })??;
                    return Ok(Following::Cached(archive, reading));
                }
                () = &mut added => {}
            }
        }
    }

    /// Opens a registered download for reading, if there is one.
    fn arriving(&self, key: &ArchiveKey) -> Option<Arriving> {
        let inflight = self.inflight.lock().expect("in-flight lock");
        let entry = inflight.get(key)?;
        // Gone already (kept or refused): the caller waits for the outcome.
        let file = std::fs::File::open(&entry.path).ok()?;
        Some(Arriving {
            file,
            size: entry.size,
            progress: entry.progress.clone(),
        })
    }

    /// The archive of a package, with a guard that keeps it from being
    /// evicted while it is being sent. Also records its use.
    pub async fn open_archive(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        platform: &Platform,
    ) -> Result<(Arc<Archive>, Reading), RequestError> {
        let key = (provider.clone(), version.clone(), platform.clone());
        // Marked as being read before it is looked up, so that no eviction
        // can slip in between finding the file and opening it.
        *self
            .readers
            .lock()
            .expect("readers lock")
            .entry(key.clone())
            .or_default() += 1;
        let reading = Reading {
            mirror: self.clone(),
            key: key.clone(),
        };
        let archive = self.archive(provider, version, platform).await?;
        let due = {
            let mut touched = self.touched.lock().expect("touched lock");
            let due = touched.get(&key).is_none_or(|t| t.elapsed() >= TOUCH_EVERY);
            if due {
                touched.insert(key.clone(), Instant::now());
            }
            due
        };
        if due {
            tokio::task::spawn_blocking({
                let store = self.store.clone();
                move || inventory::touch(&store, &key)
            });
        }
        Ok((archive, reading))
    }

    /// Counts a newly stored archive and, when the cache has outgrown
    /// `cache.max_size`, evicts least recently used archives that no one is
    /// reading.
    async fn stored(self: &Arc<Self>, key: &ArchiveKey, size: u64) {
        let (bytes, count) = {
            let mut usage = self.usage.lock().expect("usage lock");
            usage.0 += size;
            usage.1 += 1;
            *usage
        };
        self.metrics.set_cache_size(bytes, count);
        let Some(max) = self.config.cache.max_size else {
            return;
        };
        if bytes <= max.as_u64() {
            return;
        }
        let (this, keep) = (self.clone(), key.clone());
        let removed = tokio::task::spawn_blocking(move || this.evict_to(max.as_u64(), Some(&keep)))
            .await
            .unwrap_or_default();
        for archive in removed {
            self.archives.invalidate(&archive.key()).await;
        }
    }

    /// Evicts down to `max_bytes` (skipping archives being read, and `keep`)
    /// and updates the usage figures. Returns what was removed.
    pub fn evict_to(
        &self,
        max_bytes: u64,
        keep: Option<&ArchiveKey>,
    ) -> Vec<inventory::CachedArchive> {
        // One eviction at a time; a later caller finds the work done.
        let _one = self.evicting.lock().expect("eviction lock");
        let removed = inventory::evict(&self.store, max_bytes, |a| {
            let key = a.key();
            keep == Some(&key)
                || self
                    .readers
                    .lock()
                    .expect("readers lock")
                    .get(&key)
                    .is_some_and(|n| *n > 0)
        });
        let remaining = inventory::archives(&self.store);
        let usage = (
            remaining.iter().map(|a| a.size).sum(),
            remaining.len() as u64,
        );
        *self.usage.lock().expect("usage lock") = usage;
        self.metrics.set_cache_size(usage.0, usage.1);
        removed
    }

    /// An archive already on disk, with its hash.
    fn stored_archive(&self, (p, v, platform): &ArchiveKey) -> Option<Archive> {
        let path = self.store.archive_path(p, v, platform);
        let size = std::fs::metadata(&path).ok()?.len();
        let h1 = std::fs::read_to_string(self.store.h1_path(p, v, platform)).ok()?;
        Some(Archive {
            path,
            size,
            h1: h1.trim().to_owned(),
        })
    }

    async fn download(
        &self,
        provider: &Provider,
        version: &Version,
        platform: &Platform,
    ) -> Result<Archive, RequestError> {
        let what = format!("{provider} {version} {platform}");
        let record = self.version(provider, version).await?;
        let Some(pkg) = record.packages.get(platform) else {
            return Err(RequestError::NotFound(format!(
                "{provider} {version} has no verified package for {platform}"
            )));
        };
        let tmp = atomic::temp_file(self.store.tmp_dir())
            .map_err(|e| self.disk.failed("creating a temporary file", &e))?;
        let (file, temp_path) = tmp.into_parts();
        let mut file = tokio::fs::File::from_std(file);

        let (resp, _) = self
            .client
            .get(&pkg.download_url, None)
            .await
            .map_err(|e| upstream_failure(e, format!("could not download {what}")))?;
        let _in_flight = self.metrics.download_started();
        let max_size = self.config.upstream.max_archive_size.as_u64();
        let announced = resp
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if announced.is_some_and(|n| n > max_size) {
            return Err(RequestError::BadGateway(format!(
                "{what}: the origin announces {} bytes, more than upstream.max_archive_size ({}); nothing was stored",
                announced.unwrap_or(0),
                bytesize::ByteSize(max_size).display().iec()
            )));
        }
        let key = (provider.clone(), version.clone(), platform.clone());
        let stream_above = self.config.upstream.stream_above.as_u64();
        let streamed = announced.filter(|n| *n > stream_above);
        let publisher = self.publish_download(key, temp_path.to_path_buf(), streamed);
        let mut body = resp.into_body();
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        // Network frames are small; the disk gets them in batches.
        let mut pending: Vec<u8> = Vec::with_capacity(WRITE_BATCH);
        let idle = self.client.request_timeout();
        loop {
            let frame = match tokio::time::timeout(idle, body.frame()).await {
                Err(_) => {
                    return Err(RequestError::GatewayTimeout(format!(
                        "downloading {what} stalled for {}s",
                        idle.as_secs()
                    )))
                }
                Ok(None) => break,
                Ok(Some(Err(e))) => {
                    return Err(RequestError::BadGateway(format!(
                        "downloading {what} failed: {}",
                        crate::upstream::client::error_chain(&e)
                    )))
                }
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                hasher.update(&data);
                size += data.len() as u64;
                if size > max_size {
                    return Err(RequestError::BadGateway(format!(
                        "{what}: the archive is larger than upstream.max_archive_size ({}); nothing was stored",
                        bytesize::ByteSize(max_size).display().iec()
                    )));
                }
                self.metrics.fetched(data.len() as u64);
                pending.extend_from_slice(&data);
                if pending.len() >= WRITE_BATCH {
                    self.write_batch(&mut file, &mut pending, &publisher, size)
                        .await?;
                }
            }
        }
        self.write_batch(&mut file, &mut pending, &publisher, size)
            .await?;
        if announced.is_some_and(|n| n != size) {
            return Err(RequestError::BadGateway(format!(
                "{what}: the origin announced {} bytes and sent {size}; nothing was stored",
                announced.unwrap_or(0)
            )));
        }
        let actual = verify::hex(&hasher.finalize());
        if actual != pkg.sha256 {
            tracing::error!(%provider, %version, %platform, expected = %pkg.sha256, %actual, "downloaded archive does not match the signed SHA256SUMS");
            return Err(RequestError::BadGateway(format!(
                "{what}: the downloaded archive's SHA-256 {actual} does not match the signed SHA256SUMS ({}); nothing was stored",
                pkg.sha256
            )));
        }
        // Readers may finish now; storing continues behind them.
        publisher.verified();
        file.sync_all()
            .await
            .map_err(|e| self.disk.failed("writing an archive", &e))?;
        drop(file);

        let store = self.store.clone();
        let (p, v, pl) = (provider.clone(), version.clone(), platform.clone());
        let what2 = what.clone();
        let disk = self.disk.clone();
        tokio::task::spawn_blocking(move || -> Result<Archive, RequestError> {
            let h1 = store.keep_archive(temp_path, &p, &v, &pl).map_err(|e| match e {
                KeepError::Disk(e) => disk.failed("storing an archive", &e),
                KeepError::NotAnArchive(e) => {
                    RequestError::BadGateway(format!("{what2}: {e}; nothing was stored"))
                }
            })?;
            disk.succeeded();
            Ok(Archive {
                path: store.archive_path(&p, &v, &pl),
                size,
                h1,
            })
        })
        .await
        .map_err(|e| RequestError::Unavailable(format!("storing {what} failed: {e}")))?
        .inspect(|a| tracing::info!(%provider, %version, %platform, bytes = a.size, h1 = %a.h1, "archive verified and stored"))
    }
}

/// Marks an archive as being read; dropping it ends that.
pub struct Reading {
    mirror: Arc<Mirror>,
    key: ArchiveKey,
}

impl Drop for Reading {
    fn drop(&mut self) {
        let mut readers = self.mirror.readers.lock().expect("readers lock");
        if let Some(n) = readers.get_mut(&self.key) {
            *n -= 1;
            if *n == 0 {
                readers.remove(&self.key);
            }
        }
    }
}

/// Why one package could not be verified.
enum Failure {
    /// The origin could not be asked; try again later.
    Outage(String),
    /// The origin's answer was checked and is not acceptable.
    Refused(String),
}

impl Failure {
    fn from_upstream(e: UpstreamError) -> Self {
        if e.is_outage() {
            Failure::Outage(e.to_string())
        } else {
            Failure::Refused(e.to_string())
        }
    }
}

/// Maps an upstream failure to the answer the client gets.
fn upstream_failure(e: UpstreamError, what: String) -> RequestError {
    match e {
        UpstreamError::Timeout { .. } => RequestError::GatewayTimeout(format!("{what}: {e}")),
        UpstreamError::Busy { .. } => RequestError::Unavailable(format!("{what}: {e}")),
        _ => RequestError::BadGateway(format!("{what}: {e}")),
    }
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}
