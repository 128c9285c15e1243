//! Prometheus metrics, served at `/metrics` in the text exposition format.
//!
//! Every metric is named `tfmirror_…`; `docs/production.md` lists them with the alerts
//! worth setting.

use std::time::Duration;

use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{exponential_buckets, Histogram};
use prometheus_client::registry::{Registry, Unit};

pub use labels::{
    CacheKind, CacheOutcome, Endpoint, PrefetchOutcome, UpstreamOutcome, VerifyOutcome,
};
use labels::{
    CacheLabels, EndpointLabels, HostLabels, KindLabels, OutcomeLabels, PolicyLabels,
    PrefetchLabels, RequestLabels, SourceLabels, UpstreamLabels, VerifyLabels,
};

use kept::Kept;

type HistogramFamily<L> = Family<L, Histogram, fn() -> Histogram>;

fn latency_histogram() -> Histogram {
    // 1 ms to about 33 s.
    Histogram::new(exponential_buckets(0.001, 2.0, 16))
}

/// All of tfmirror's metrics.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    request_seconds: HistogramFamily<EndpointLabels>,
    cache: Family<CacheLabels, Counter>,
    kept_requests: Kept<Counter, { kept::STATUS_SLOTS }>,
    kept_request_seconds: Kept<Histogram, { Endpoint::COUNT }>,
    kept_cache: Kept<Counter, { kept::CACHE_SLOTS }>,
    upstream: Family<UpstreamLabels, Counter>,
    upstream_seconds: HistogramFamily<HostLabels>,
    bytes_served: Counter,
    bytes_sent_from_file: Counter,
    bytes_fetched: Counter,
    downloads_in_flight: Gauge,
    archive_waiting: Gauge,
    cache_bytes: Gauge<i64, std::sync::atomic::AtomicI64>,
    cache_archives: Gauge,
    index: index::IndexMetrics,
    verifications: Family<VerifyLabels, Counter>,
    prefetches: Family<PrefetchLabels, Counter>,
    module_fetches: Family<SourceLabels, Counter>,
    pin_mismatches: Counter,
    release_files: Counter,
    archive_writes: Family<keyless::ArchiveWriteLabels, Counter>,
    keyless_pin_mismatches: Counter,
    keyless_versions: Gauge,
    tls_expiry: Gauge,
    evictions: Family<KindLabels, Counter>,
    build_records: Family<labels::OutcomeLabels, Counter>,
    advisory: builds::AdvisoryMetrics,
    docs: docs::DocsMetrics,
    cache_max_size: Gauge,
    cache_free: Gauge,
    cache_min_free: Gauge,
    store_write_failing: Gauge,
    ready: Gauge,
    download_claims: Family<OutcomeLabels, Counter>,
    policy_decisions: Family<PolicyLabels, Counter>,
    versions_held: Gauge,
    watch_runs: Family<OutcomeLabels, Counter>,
    watch_fetched: Family<KindLabels, Counter>,
    watch_last_success: Gauge,
    signins: signins::SigninMetrics,
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("tfmirror");
        let m = Metrics {
            requests: Family::default(),
            request_seconds: Family::new_with_constructor(latency_histogram),
            cache: Family::default(),
            kept_requests: Kept::new(),
            kept_request_seconds: Kept::new(),
            kept_cache: Kept::new(),
            upstream: Family::default(),
            upstream_seconds: Family::new_with_constructor(latency_histogram),
            bytes_served: Counter::default(),
            bytes_sent_from_file: Counter::default(),
            bytes_fetched: Counter::default(),
            downloads_in_flight: Gauge::default(),
            archive_waiting: Gauge::default(),
            cache_bytes: Gauge::default(),
            cache_archives: Gauge::default(),
            index: index::IndexMetrics::default(),
            verifications: Family::default(),
            prefetches: Family::default(),
            module_fetches: Family::default(),
            pin_mismatches: Counter::default(),
            release_files: Counter::default(),
            archive_writes: Family::default(),
            keyless_pin_mismatches: Counter::default(),
            keyless_versions: Gauge::default(),
            tls_expiry: Gauge::default(),
            evictions: Family::default(),
            build_records: Family::default(),
            advisory: builds::AdvisoryMetrics::default(),
            docs: docs::DocsMetrics::default(),
            cache_max_size: Gauge::default(),
            cache_free: Gauge::default(),
            cache_min_free: Gauge::default(),
            store_write_failing: Gauge::default(),
            ready: Gauge::default(),
            download_claims: Family::default(),
            policy_decisions: Family::default(),
            versions_held: Gauge::default(),
            watch_runs: Family::default(),
            watch_fetched: Family::default(),
            watch_last_success: Gauge::default(),
            signins: signins::SigninMetrics::default(),
            registry: Registry::default(),
        };
        registry.register(
            "http_requests",
            "Requests answered, by endpoint and status",
            m.requests.clone(),
        );
        registry.register_with_unit(
            "http_request_duration",
            "Time to answer a request (headers ready), by endpoint",
            Unit::Seconds,
            m.request_seconds.clone(),
        );
        registry.register(
            "cache_lookups",
            "Cache lookups by kind and outcome (hit, miss, stale)",
            m.cache.clone(),
        );
        registry.register(
            "upstream_requests",
            "Requests to origin registries and download hosts, by host and outcome",
            m.upstream.clone(),
        );
        registry.register_with_unit(
            "upstream_request_duration",
            "Time until an upstream answer's headers arrived, by host",
            Unit::Seconds,
            m.upstream_seconds.clone(),
        );
        registry.register_with_unit(
            "served",
            "Archive bytes sent to clients",
            Unit::Bytes,
            m.bytes_served.clone(),
        );
        registry.register_with_unit(
            "sent_from_file",
            "Archive bytes sent from the cached file by sendfile, on plain-HTTP connections (also in served)",
            Unit::Bytes,
            m.bytes_sent_from_file.clone(),
        );
        registry.register_with_unit(
            "fetched",
            "Archive bytes downloaded from origins",
            Unit::Bytes,
            m.bytes_fetched.clone(),
        );
        registry.register(
            "downloads_in_flight",
            "Archive downloads from origins under way",
            m.downloads_in_flight.clone(),
        );
        registry.register(
            "archive_requests_waiting",
            "Requests waiting for an archive's download, their own or another's",
            m.archive_waiting.clone(),
        );
        registry.register_with_unit(
            "cache_size",
            "Size of the cached archives",
            Unit::Bytes,
            m.cache_bytes.clone(),
        );
        registry.register(
            "cache_archives",
            "Number of cached archives",
            m.cache_archives.clone(),
        );
        index::register(&mut registry, &m.index);
        registry.register(
            "signature_verifications",
            "SHA256SUMS signature checks by outcome",
            m.verifications.clone(),
        );
        registry.register(
            "prefetches",
            "Background fetches of cache.prefetch_platforms archives, by outcome",
            m.prefetches.clone(),
        );
        registry.register(
            "module_fetches",
            "Fetches of module sources, by source type (git, archive) and outcome (packaged, failed)",
            m.module_fetches.clone(),
        );
        registry.register(
            "module_pin_mismatches",
            "Module sources refused because they no longer match what the mirror pinned",
            m.pin_mismatches.clone(),
        );
        registry.register(
            "release_files_stored",
            "Terraform and OpenTofu release files downloaded, checked against their signed SHA256SUMS and stored",
            m.release_files.clone(),
        );
        keyless::register(&mut registry, &m);
        signins::register(&mut registry, &m);
        operations::register(&mut registry, &m);
        builds::register(&mut registry, &m);
        docs::register(&mut registry, &m);
        registry.register(
            "download_claims",
            "Claims to download an archive from its origin, by outcome: granted, or (on a bucket) waited for another instance sharing it that was downloading it",
            m.download_claims.clone(),
        );
        registry.register(
            "policy_decisions",
            "Versions the policy decided on, by action (allow, deny) and the rule that decided (policy.rule[N], policy.default): versions asked for by name, and versions left out of lists; none while the policy has no rule and allows everything",
            m.policy_decisions.clone(),
        );
        registry.register(
            "versions_held",
            "Versions left out of the version lists the mirror last made, by a rule, an operator's decision or the cooldown (the status page lists them)",
            m.versions_held.clone(),
        );
        registry.register(
            "watch_runs",
            "Watch passes ([watch]) finished, by outcome: ok, or failed (something could not be listed, fetched or verified; tried again sooner)",
            m.watch_runs.clone(),
        );
        registry.register(
            "watch_fetched",
            "What watch passes fetched and stored before anyone asked, by kind (archive, module)",
            m.watch_fetched.clone(),
        );
        registry.register(
            "watch_last_success_timestamp_seconds",
            "When the last watch pass without a failure ended, in seconds since the Unix epoch (0: none yet)",
            m.watch_last_success.clone(),
        );
        let m = Metrics { registry, ..m };
        m.export_known_series();
        m
    }

    /// Counts a finished watch pass: `ok` or `failed`.
    pub fn watch_run(&self, outcome: &'static str) {
        self.watch_runs
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Counts what a watch pass stored: `count` of `kind` (`archive`,
    /// `module`).
    pub fn watch_fetched(&self, kind: &'static str, count: usize) {
        self.watch_fetched
            .get_or_create(&KindLabels { kind })
            .inc_by(count as u64);
    }

    /// Sets when the last watch pass without a failure ended.
    pub fn set_watch_last_success(&self, unix_secs: u64) {
        self.watch_last_success
            .set(i64::try_from(unix_secs).unwrap_or(i64::MAX));
    }

    /// Sets how many versions the policy holds back.
    pub fn set_versions_held(&self, count: usize) {
        self.versions_held
            .set(i64::try_from(count).unwrap_or(i64::MAX));
    }

    /// Counts a decision of the policy: `action` (`allow`, `deny`) by
    /// `rule`.
    pub fn policy_decision(&self, action: &'static str, rule: &str) {
        self.policy_decisions
            .get_or_create(&PolicyLabels {
                action,
                rule: rule.to_owned(),
            })
            .inc();
    }

    /// Counts a release file verified and stored.
    pub fn release_file_stored(&self) {
        self.release_files.inc();
    }

    /// Counts a claim to download an archive: `granted`, or `waited` for
    /// another instance.
    pub fn download_claim(&self, outcome: &'static str) {
        self.download_claims
            .get_or_create(&OutcomeLabels { outcome })
            .inc();
    }

    /// Counts a fetch of a module source of kind `source` (`git`,
    /// `archive`) that ended as `outcome` (`packaged`, `failed`).
    pub fn module_fetch(&self, source: &'static str, outcome: &'static str) {
        self.module_fetches
            .get_or_create(&SourceLabels { source, outcome })
            .inc();
    }

    /// Counts a module source refused for not matching its pin.
    pub fn pin_mismatch(&self) {
        self.pin_mismatches.inc();
    }

    /// Counts an answered request.
    pub fn request(&self, endpoint: Endpoint, status: u16, took: Duration) {
        let labels = RequestLabels { endpoint, status };
        match kept::status_slot(endpoint, status) {
            Some(slot) => self
                .kept_requests
                .get(slot, || self.requests.get_or_create_owned(&labels))
                .inc(),
            None => self.requests.get_or_create(&labels).inc(),
        };
        self.kept_request_seconds
            .get(endpoint as usize, || {
                self.request_seconds
                    .get_or_create_owned(&EndpointLabels { endpoint })
            })
            .observe(took.as_secs_f64());
    }

    /// Counts a cache lookup.
    pub fn cache(&self, kind: CacheKind, outcome: CacheOutcome) {
        self.kept_cache
            .get(kept::cache_slot(kind, outcome), || {
                self.cache
                    .get_or_create_owned(&CacheLabels { kind, outcome })
            })
            .inc();
    }

    /// Counts an upstream request.
    pub fn upstream(&self, host: &str, outcome: UpstreamOutcome, took: Duration) {
        self.upstream
            .get_or_create(&UpstreamLabels {
                host: host.to_owned(),
                outcome,
            })
            .inc();
        self.upstream_seconds
            .get_or_create(&HostLabels {
                host: host.to_owned(),
            })
            .observe(took.as_secs_f64());
    }

    /// Counts archive bytes sent to a client.
    pub fn served(&self, bytes: u64) {
        self.bytes_served.inc_by(bytes);
    }

    /// Counts archive bytes sent to a client from the cached file itself.
    pub fn sent_from_file(&self, bytes: u64) {
        self.bytes_served.inc_by(bytes);
        self.bytes_sent_from_file.inc_by(bytes);
    }

    /// Counts archive bytes downloaded.
    pub fn fetched(&self, bytes: u64) {
        self.bytes_fetched.inc_by(bytes);
    }

    /// The in-flight download gauge (a guard decrements it when dropped).
    pub fn download_started(&self) -> InFlight<'_> {
        self.downloads_in_flight.inc();
        InFlight(&self.downloads_in_flight)
    }

    /// The gauge of requests waiting for an archive's download (a guard
    /// decrements it when dropped).
    pub fn archive_wait(&self) -> InFlight<'_> {
        self.archive_waiting.inc();
        InFlight(&self.archive_waiting)
    }

    /// How many archive downloads are under way.
    pub fn downloads_in_flight(&self) -> i64 {
        self.downloads_in_flight.get()
    }

    /// Sets the cache size gauges.
    pub fn set_cache_size(&self, bytes: u64, archives: u64) {
        self.cache_bytes
            .set(i64::try_from(bytes).unwrap_or(i64::MAX));
        self.cache_archives
            .set(i64::try_from(archives).unwrap_or(i64::MAX));
    }

    /// Counts a signature check.
    pub fn verification(&self, outcome: VerifyOutcome) {
        self.verifications
            .get_or_create(&VerifyLabels { outcome })
            .inc();
    }

    /// Counts a finished background prefetch.
    pub fn prefetch(&self, outcome: PrefetchOutcome) {
        self.prefetches
            .get_or_create(&PrefetchLabels { outcome })
            .inc();
    }

    /// Hits and all lookups so far, over every kind: for the status page.
    pub fn hit_rate(&self) -> (u64, u64) {
        let mut hits = 0;
        let mut all = 0;
        for kind in [CacheKind::Index, CacheKind::Version, CacheKind::Archive] {
            for outcome in [CacheOutcome::Hit, CacheOutcome::Miss, CacheOutcome::Stale] {
                let n = self
                    .cache
                    .get(&CacheLabels { kind, outcome })
                    .map_or(0, |c| c.get());
                all += n;
                if outcome != CacheOutcome::Miss {
                    hits += n;
                }
            }
        }
        (hits, all)
    }

    /// The text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &self.registry)
            .expect("writing to a String cannot fail");
        out
    }
}

/// Decrements the in-flight download gauge when dropped.
pub struct InFlight<'a>(&'a Gauge<i64, std::sync::atomic::AtomicI64>);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.dec();
    }
}

mod builds;
mod docs;
pub mod index;
mod kept;
mod keyless;
mod known;
mod labels;
mod operations;
pub mod signins;
#[cfg(test)]
mod tests;
