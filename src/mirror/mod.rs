//! The mirror itself: answers for a provider's versions, a version's
//! packages and a package's archive, from the store when it can and from
//! the origin registry when it must, verifying everything it takes from the
//! origin before it is stored or its hashes are returned.
//!
//! - [`versions`]: version lists and verified version records;
//! - [`documents`]: the protocol's JSON documents, rendered once;
//! - [`facade`]: the provider registry protocol in front of the cache;
//! - [`archive`]: archives, downloaded once and streamed to clients, also
//!   while they arrive; `builds`: what their Go build information says;
//!   `advisories`: the advisory database and what held versions fall under;
//! - [`residency`]: which archives are being read, their last use, and
//!   what to evict when the cache outgrows `cache.max_size`;
//! - `eviction`: removing what residency gave up from the store, each
//!   domain forgetting what it owned;
//! - `gate`: the policy applied to every answer (denied versions left out
//!   of lists and refused when asked for);
//! - [`keyless`]: versions published without a signing key, pinned on
//!   first sight and held to their pins;
//! - [`lockfile`]: lock file blocks with every platform's hashes;
//! - [`packages`]: every platform's hashes and size at once, for the
//!   facade's `packages` field (sizes learned from the origin once);
//! - `package_checks`: each platform's download answer checked against
//!   the signed SHA256SUMS;
//! - `listing`: loads each version list once; stale while the origin is down;
//! - [`module_proxy`]: the module registry protocol: version lists, download
//!   answers, and module sources packaged and pinned.
//!
//! Concurrent requests for the same thing share one piece of work: each of
//! the in-memory caches loads a missing entry once, however many requests
//! wait for it.

mod advisories;
pub mod archive;
mod builds;
pub mod doc_changes;
pub mod doc_search;
pub mod doc_sweep;
mod docs;
pub mod documents;
mod eviction;
pub mod facade;
mod gate;
mod held;
mod holdings;
pub mod keyless;
mod listing;
pub mod lockfile;
pub mod module_proxy;
pub mod oci;
mod package_checks;
pub mod packages;
mod recent;
mod refreshed;
pub mod residency;
mod starting;
pub mod upkeep;
pub mod versions;
mod view;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;

use crate::address::{Hostname, Provider, Version};
use crate::clock::SharedClock;
use crate::config::Config;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome, Metrics};
use crate::protocol::Rendered;
use crate::store::health::StoreHealth;
use crate::store::{IndexRecord, Store, VersionRecord};
use crate::upstream::Origin;
use crate::verify::TrustPolicy;

pub use archive::{Archive, ArchiveBody, FileOrStream, StoredFile};
use held::{Cache, Held, Timed};
pub use listing::Freshness;
pub use residency::Residency;

/// How soon a stale or incomplete answer is retried against the origin.
pub(crate) const RETRY_AFTER_TROUBLE: Duration = Duration::from_secs(30);

/// What the provider mirror keeps, apart from the module proxy's state:
/// version lists and records, archives known to be held, the documents as
/// last rendered, and the downloads clients read while they arrive.
struct ProviderState {
    /// Downloads clients can read while they arrive.
    arriving: archive::Arrivals,
    /// Version lists, as stored or fetched, each with its `index.json`
    /// once rendered.
    indexes: Cache<Provider, Held<IndexRecord, Rendered>>,
    /// Providers the origin recently said do not exist, with its message.
    missing: Cache<Provider, String>,
    /// Verified version records, each with its `:version.json` (unsigned
    /// links) once rendered with every platform's `h1:`.
    versions: Cache<(Provider, Version), Held<VersionRecord, Rendered>>,
    /// Archives known to be held, with their size and `h1:`.
    archives: Cache<crate::address::ArchiveKey, Arc<Archive>>,
    /// `:version.json` (unsigned links) as last rendered, while some
    /// platform's `h1:` is not known.
    rendered_versions: Cache<(Provider, Version), documents::RenderedVersion>,
    /// How many archives this mirror has stored since it started: a
    /// `:version.json` rendered before the last one may lack its `h1:`.
    archives_kept: AtomicU64,
    /// Versions whose archive sizes are being learned from the origin (one
    /// asking per version, however many requests wait for it).
    sizing: Cache<(Provider, Version), Arc<VersionRecord>>,
    /// Held while a version record is changed after it was made.
    amending: tokio::sync::Mutex<()>,
    /// Digests of stored records whose evidence the pages checked lately
    /// ([`view::CHECKED_FOR`]).
    checked: Cache<[u8; 32], ()>,
}

impl ProviderState {
    /// Empty, with `cache.negative_ttl` for providers the origin lacks.
    fn new(config: &Config) -> ProviderState {
        ProviderState {
            arriving: archive::Arrivals::default(),
            indexes: held::bounded(10_000),
            missing: held::bounded_for(
                10_000,
                config.cache.negative_ttl.max(Duration::from_millis(1)),
            ),
            versions: held::bounded(20_000),
            archives: held::bounded(100_000),
            rendered_versions: held::bounded(20_000),
            archives_kept: AtomicU64::new(0),
            sizing: held::bounded_for(1_000, RETRY_AFTER_TROUBLE),
            amending: tokio::sync::Mutex::new(()),
            checked: held::bounded_for(20_000, view::CHECKED_FOR),
        }
    }

    /// Forgets an archive that left the store.
    async fn forget_archive(&self, key: &crate::address::ArchiveKey) {
        self.archives.invalidate(key).await;
    }
}

/// The mirror's state, shared by every request.
pub struct Mirror {
    config: Config,
    clock: SharedClock,
    /// `cache.prefetch_platforms`, for the daemon; commands fetch what
    /// they need themselves.
    prefetch: Vec<crate::address::Platform>,
    store: Arc<dyn Store>,
    /// The client, credentials and discovery, shared with the module
    /// sources' fetcher.
    origin: Origin,
    trust: TrustPolicy,
    /// Which versions may be answered for (`[policy]`).
    policy: crate::policy::Policy,
    /// The operator's decisions on single versions, read from the store
    /// at most every few seconds.
    decisions: refreshed::Refreshed<crate::store::PolicyDecisions>,
    /// What the policy left out of the version lists last made, by
    /// provider or module, for the status page.
    held_back: std::sync::Mutex<std::collections::BTreeMap<String, Vec<crate::policy::Denied>>>,
    metrics: Arc<Metrics>,
    draining: AtomicBool,
    /// Whether the archive index knows the whole store: false until the
    /// daemon's first reconciliation ended and what it left over
    /// `cache.max_size` is removed.
    index_built: tokio::sync::watch::Sender<bool>,
    /// The daemon's upkeep of its archive index.
    upkeep: upkeep::Upkeep,
    /// What arrived in the cache lately.
    recent: recent::Recent,
    /// Whether the cache can be written.
    health: StoreHealth,
    /// Archives being read, last uses, usage and eviction.
    residency: Residency,
    /// What it does with the archive index at its start and end.
    role: starting::Role,
    /// Downloads under way, which run on after their clients leave.
    tasks: tokio_util::task::TaskTracker,
    /// The provider mirror's own state.
    providers: ProviderState,
    /// The module proxy's own state.
    modules: module_proxy::ModuleState,
    /// The CLI releases' own state.
    releases: crate::releases::state::ReleaseState,
    /// Keyless versions' pins and the answers that differed from them.
    keyless: keyless::KeylessState,
    /// The advisory database as last read, and versions' summaries.
    advisories: advisories::AdvisoryState,
    /// Which version each OCI digest answered belongs to.
    oci: oci::OciState,
    /// The versions whose documentation is being captured.
    docs: docs::DocsState,
}

impl Mirror {
    /// Builds the daemon's mirror on the configured store, sweeping what an
    /// earlier run left unfinished in `tmp/`. It prefetches
    /// `cache.prefetch_platforms`.
    pub async fn new(config: Config) -> anyhow::Result<Mirror> {
        let store = crate::store::open(&config, true).await?;
        let prefetch = config.cache.prefetch_platforms.clone();
        let mut mirror = Box::pin(Self::build(config, store, true)).await?;
        mirror.prefetch = prefetch;
        Ok(mirror)
    }

    /// Builds a mirror for a command (such as `sync`) that may run beside a
    /// daemon using the same cache: `tmp/` is left alone.
    pub async fn beside_daemon(config: Config) -> anyhow::Result<Mirror> {
        let store = crate::store::open(&config, false).await?;
        Self::on(config, store).await
    }

    /// Builds a mirror on `store`, as [`crate::store::open`] opened it
    /// (usable, and in a format this build reads).
    pub async fn on(config: Config, store: Arc<dyn Store>) -> anyhow::Result<Mirror> {
        Box::pin(Self::build(config, store, false)).await
    }

    /// Builds the daemon's mirror (`daemon`) or a command's on `store`.
    async fn build(config: Config, store: Arc<dyn Store>, daemon: bool) -> anyhow::Result<Mirror> {
        let metrics = Arc::new(Metrics::new());
        let origin = Origin::new(&config, metrics.clone())?;
        let (held, role) = starting::archives(&config, store.as_ref(), daemon).await?;
        let pins = store
            .list_modules()
            .await
            .with_context(|| format!("listing the modules in {}", store.location()))?;
        // A package's last use before a restart is not recorded: its
        // pinning time stands for it.
        let packages = pins
            .iter()
            .filter(|(_, held)| *held)
            .map(|(pin, _)| {
                (
                    (pin.module.clone(), pin.version.clone()),
                    pin.size,
                    pin.pinned_at_ms / 1000,
                )
            })
            .collect();
        // Nor a release file's: its release's verification time stands for it.
        let release_files = store
            .list_releases()
            .await
            .with_context(|| format!("listing the CLI releases in {}", store.location()))?
            .into_iter()
            .flat_map(|(record, files)| {
                files.into_iter().filter_map(move |(name, size)| {
                    let name = crate::address::ArtifactName::parse(&name).ok()?;
                    let file = crate::address::ReleaseFile {
                        product: record.product,
                        version: record.version.clone(),
                        name,
                    };
                    Some((file, size, record.verified_at_ms / 1000))
                })
            })
            .collect();
        let walk = held.is_none();
        let residency = Residency::new(
            held.unwrap_or_default(),
            packages,
            release_files,
            config.cache.max_size,
            metrics.clone(),
        );
        if daemon {
            residency.reconcile_begins(walk);
        }
        let trust = config.trust_policy()?;
        let keyless = crate::store::pins::list(store.as_ref())
            .await
            .with_context(|| format!("listing the keyless pins in {}", store.location()))?;
        metrics.set_keyless_versions(keyless.len());
        metrics.set_cache_max_size(config.cache.max_size.map(|s| s.as_u64()));
        let policy = crate::policy::Policy::new(&config.policy)?;
        let hosts: Vec<String> = (config.upstream.allowed_hosts.iter())
            .chain(config.upstream.hosts.keys())
            .map(ToString::to_string)
            .collect();
        metrics.export_configured_series(&hosts, &policy.deciders());
        let fetcher = crate::module_source::Fetcher::new(
            &config,
            origin.client.clone(),
            origin.credentials.clone(),
            metrics.clone(),
        );

        let releases = crate::releases::state::ReleaseState::new(&config.releases)?;
        Ok(Mirror {
            keyless: keyless::KeylessState::new(keyless),
            advisories: advisories::AdvisoryState::new(),
            oci: oci::OciState::new(),
            docs: docs::DocsState::default(),
            releases,
            modules: module_proxy::ModuleState::new(fetcher, pins),
            health: StoreHealth::new(),
            store,
            origin,
            trust,
            policy,
            decisions: refreshed::Refreshed::new(gate::DECISIONS_TTL),
            held_back: std::sync::Mutex::default(),
            metrics,
            draining: AtomicBool::new(false),
            index_built: tokio::sync::watch::Sender::new(!daemon),
            upkeep: upkeep::Upkeep::default(),
            recent: recent::Recent::default(),
            residency,
            role,
            tasks: tokio_util::task::TaskTracker::new(),
            providers: ProviderState::new(&config),
            clock: crate::clock::system(),
            prefetch: Vec::new(),
            config,
        })
    }

    /// The same mirror, with expiry read from `clock`.
    #[must_use]
    pub fn with_clock(mut self, clock: SharedClock) -> Mirror {
        self.clock = clock;
        self
    }

    /// The CLI releases' state: the enabled products and their sources.
    pub fn release_state(&self) -> &crate::releases::state::ReleaseState {
        &self.releases
    }

    /// The client that fetches from origins.
    pub(crate) fn origin_client(&self) -> &crate::upstream::Client {
        &self.origin.client
    }

    /// The clock by which lists and links expire and schedules run.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
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

    /// The metrics, shared with the parts beside the mirror (access
    /// control counts sign-ins in them).
    pub fn shared_metrics(&self) -> Arc<Metrics> {
        self.metrics.clone()
    }

    /// Marks the mirror as shutting down: `/readyz` answers 503 from now on.
    pub fn set_draining(&self) {
        self.draining.store(true, Ordering::SeqCst);
    }

    /// Whether the cache is known to be unwritable now (no probe).
    pub fn store_write_failing(&self) -> bool {
        self.health.is_failing()
    }

    /// Whether the mirror can serve: not shutting down, the store writable
    /// (probed; see [`StoreHealth`]), and `cache.min_free_space` free.
    pub async fn ready(&self) -> Result<(), RequestError> {
        if self.draining.load(Ordering::SeqCst) {
            return Err(RequestError::NotReady("shutting down".into()));
        }
        self.health
            .check(self.store.as_ref())
            .await
            .map_err(|e| RequestError::NotReady(e.to_string()))?;
        self.room_for(0).map_err(|no| {
            RequestError::NotReady(format!(
                "the cache's file system is low on space ({}): new archives are refused; what is cached is still served",
                no.describe()
            ))
        })
    }

    /// Free space on the file system of `cache.dir`, where downloads are
    /// staged; `None` when it cannot be read.
    pub fn free_space(&self) -> Option<u64> {
        crate::store::space::free_space(&self.config.cache.dir).ok()
    }

    /// Whether `size` more bytes fit while keeping `cache.min_free_space`
    /// free (always, when the free space cannot be read).
    pub fn room_for(&self, size: u64) -> Result<(), crate::store::space::NoRoom> {
        self.room().fits(size)
    }

    /// `cache.min_free_space` on the file system of `cache.dir`, which
    /// every write that grows the store keeps free.
    pub fn room(&self) -> crate::store::space::Room {
        crate::store::space::Room::of(&self.config)
    }

    /// Waits, at most `grace`, for the downloads under way to end; false
    /// when some were still running.
    pub async fn drain(&self, grace: Duration) -> bool {
        self.tasks.close();
        tokio::time::timeout(grace, self.tasks.wait()).await.is_ok()
    }

    /// Whether the mirror never contacts origins (`upstream.offline`), or
    /// not for the work under way ([`Mirror::held_only`]).
    pub fn offline(&self) -> bool {
        self.config.upstream.offline || view::held_only_now()
    }

    /// Counts a cache lookup and notes its outcome on the request's span,
    /// or on its context where the log's lines show one instead.
    pub(crate) fn note(&self, kind: CacheKind, outcome: CacheOutcome) {
        self.metrics.cache(kind, outcome);
        let word = match outcome {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Stale => "stale",
        };
        if crate::log_context::shown_in_lines() {
            crate::log_context::note_cache(word);
            return;
        }
        // What `Span::current().record("cache", word)` does, without
        // taking (and then releasing) a handle on the span.
        tracing::dispatcher::get_default(|dispatch| {
            if let Some((id, meta)) = dispatch.current_span().into_inner() {
                if let Some(field) = meta.fields().field("cache") {
                    let value: &dyn tracing::field::Value = &word;
                    let values = [(&field, Some(value))];
                    let values = meta.fields().value_set(&values);
                    dispatch.record(&id, &tracing::span::Record::new(&values));
                }
            }
        });
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
}
