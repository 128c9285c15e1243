//! The mirror itself: answers for a provider's versions, a version's
//! packages and a package's archive, from the store when it can and from
//! the origin registry when it must, verifying everything it takes from the
//! origin before it is stored or its hashes are returned.
//!
//! - [`versions`]: version lists and verified version records;
//! - [`documents`]: the protocol's JSON documents, rendered once;
//! - [`archive`]: archives, downloaded once and streamed to clients, also
//!   while they arrive;
//! - [`residency`]: which archives are being read, their last use, and
//!   eviction when the cache outgrows `cache.max_size`;
//! - [`lockfile`]: lock file blocks with every platform's hashes.
//!
//! Concurrent requests for the same thing share one piece of work: each of
//! the in-memory caches loads a missing entry once, however many requests
//! wait for it.

pub mod archive;
pub mod documents;
pub mod lockfile;
pub mod residency;
pub mod versions;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;

use crate::address::{Hostname, Provider, Version};
use crate::config::Config;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome, Metrics};
use crate::protocol::Rendered;
use crate::store::health::StoreHealth;
use crate::store::{DiskStore, IndexRecord, Store, VersionRecord};
use crate::upstream::{Client, Credentials, Discovery};
use crate::verify::TrustPolicy;

pub use archive::{Archive, ArchiveBody};
pub use residency::Residency;

/// How soon a stale or incomplete answer is retried against the origin.
const RETRY_AFTER_TROUBLE: Duration = Duration::from_secs(30);

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

/// The mirror's state, shared by every request.
pub struct Mirror {
    config: Config,
    store: Arc<dyn Store>,
    client: Client,
    discovery: Discovery,
    credentials: Credentials,
    trust: TrustPolicy,
    metrics: Arc<Metrics>,
    draining: AtomicBool,
    /// Whether the cache can be written.
    health: StoreHealth,
    /// Archives being read, last uses, usage and eviction.
    residency: Residency,
    /// Downloads clients can read while they arrive.
    arriving: archive::Arrivals,
    /// Downloads under way, which run on after their clients leave.
    tasks: tokio_util::task::TaskTracker,
    indexes: moka::future::Cache<Provider, Timed<IndexRecord>>,
    /// Providers the origin recently said do not exist, with its message.
    missing: moka::future::Cache<Provider, String>,
    versions: moka::future::Cache<(Provider, Version), Timed<VersionRecord>>,
    archives: moka::future::Cache<crate::address::ArchiveKey, Arc<Archive>>,
    /// `index.json` as last rendered, with the record it rendered.
    rendered_indexes: moka::future::Cache<Provider, (Arc<IndexRecord>, Rendered)>,
    /// `:version.json` (unsigned links) as last rendered, with the record
    /// and whether every platform's `h1:` was in it.
    rendered_versions:
        moka::future::Cache<(Provider, Version), (Arc<VersionRecord>, bool, Rendered)>,
}

impl Mirror {
    /// Builds the daemon's mirror on the local-disk store under
    /// `cache.dir`, sweeping what an earlier run left unfinished in `tmp/`.
    pub async fn new(config: Config) -> anyhow::Result<Mirror> {
        let store = open_disk(&config)?;
        store
            .sweep()
            .with_context(|| format!("sweeping {}", store.tmp_dir().display()))?;
        Self::on(config, Arc::new(store)).await
    }

    /// Builds a mirror for a command (such as `sync`) that may run beside a
    /// daemon using the same cache: `tmp/` is left alone.
    pub async fn beside_daemon(config: Config) -> anyhow::Result<Mirror> {
        let store = open_disk(&config)?;
        Self::on(config, Arc::new(store)).await
    }

    /// Builds a mirror on `store`.
    pub async fn on(config: Config, store: Arc<dyn Store>) -> anyhow::Result<Mirror> {
        let metrics = Arc::new(Metrics::new());
        let client = Client::new(&config.upstream, metrics.clone())?;
        let held = store
            .list_archives()
            .await
            .with_context(|| format!("listing the archives in {}", store.location()))?;
        let residency = Residency::new(held, config.cache.max_size, metrics.clone());
        let credentials = Credentials::load(&config.upstream, std::env::vars())?;
        let trust = TrustPolicy::new(&config.trust, config.upstream.reject_expired_keys)?;
        let discovery = Discovery::new(
            client.clone(),
            credentials.clone(),
            config.upstream.hosts.clone(),
            config.cache.index_ttl,
        );
        Ok(Mirror {
            health: StoreHealth::new(),
            store,
            client,
            discovery,
            credentials,
            trust,
            metrics,
            draining: AtomicBool::new(false),
            residency,
            arriving: archive::Arrivals::default(),
            tasks: tokio_util::task::TaskTracker::new(),
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

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// The metrics.
    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Marks the mirror as shutting down: `/readyz` answers 503 from now on.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the mirror can serve: not shutting down, and the store is
    /// writable (see [`StoreHealth`]).
    pub async fn ready(&self) -> Result<(), RequestError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(RequestError::NotReady("shutting down".into()));
        }
        self.health
            .check(self.store.as_ref())
            .await
            .map_err(|e| RequestError::NotReady(e.to_string()))
    }

    /// Waits, at most `grace`, for the downloads under way to end; false
    /// when some were still running.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }

    /// Cached bytes and archives.
    pub fn usage(&self) -> (u64, u64) {
        self.residency.usage()
    }

    /// Whether the mirror never contacts origins (`upstream.offline`).
    pub fn offline(&self) -> bool {
        self.config.upstream.offline
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

    /// Records a failed store write and gives the answer for the request
    /// that needed it.
    fn store_failed(&self, what: &str, e: &crate::store::StoreError) -> RequestError {
        self.health.failed(what, e).into()
    }
}

/// Opens the local-disk store under `cache.dir`.
fn open_disk(config: &Config) -> anyhow::Result<DiskStore> {
    DiskStore::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))
}

/// Milliseconds since the Unix epoch.
fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}
