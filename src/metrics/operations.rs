//! The metrics an operator is paged on besides traffic: whether the
//! instance is ready and its cache writable, how full the cache may get,
//! how much room its file system has left and what was evicted from it,
//! and when the server's certificate expires.

use prometheus_client::registry::Registry;

use super::labels::KindLabels;
use super::Metrics;

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "tls_certificate_expiry_timestamp_seconds",
        "When the TLS certificate the server presents stops being valid, in seconds since the Unix epoch (0 with server.tls = false; read at start and on SIGHUP)",
        m.tls_expiry.clone(),
    );
    registry.register(
        "evictions",
        "What the cache gave up to stay within cache.max_size, by kind (archive, module, release), least recently used first",
        m.evictions.clone(),
    );
    registry.register(
        "cache_max_size_bytes",
        "cache.max_size in bytes (0: unbounded)",
        m.cache_max_size.clone(),
    );
    registry.register(
        "cache_free_bytes",
        "Free space on the file system of cache.dir, where downloads are staged; read at each scrape",
        m.cache_free.clone(),
    );
    registry.register(
        "cache_min_free_bytes",
        "cache.min_free_space in bytes: archives that would leave less free are refused (507)",
        m.cache_min_free.clone(),
    );
    registry.register(
        "store_write_failing",
        "1 while the cache cannot be written (a disk full or read-only, a bucket refusing writes), else 0",
        m.store_write_failing.clone(),
    );
    registry.register(
        "ready",
        "1 when the instance answers /readyz with 200 (not draining, the cache writable), else 0; read at each scrape",
        m.ready.clone(),
    );
}

impl Metrics {
    /// Sets when the server's certificate expires (`None`: unknown, 0).
    pub fn set_tls_expiry(&self, unix_secs: Option<i64>) {
        self.tls_expiry.set(unix_secs.unwrap_or(0));
    }

    /// Counts one thing the cache evicted: `archive`, `module` or `release`.
    pub fn evicted(&self, kind: &'static str) {
        self.evictions.get_or_create(&KindLabels { kind }).inc();
    }

    /// Sets `cache.max_size` (`None`: unbounded, 0).
    pub fn set_cache_max_size(&self, bytes: Option<u64>) {
        self.cache_max_size
            .set(bytes.map_or(0, |b| i64::try_from(b).unwrap_or(i64::MAX)));
    }

    /// Sets the free space of the cache's file system (`None`: unknown, 0)
    /// and the reserve kept there.
    pub fn set_space(&self, free: Option<u64>, reserve: u64) {
        let gauge = |b: u64| i64::try_from(b).unwrap_or(i64::MAX);
        self.cache_free.set(free.map_or(0, gauge));
        self.cache_min_free.set(gauge(reserve));
    }

    /// Sets whether the instance is ready and its cache writable, as a
    /// scrape finds them.
    pub fn set_readiness(&self, ready: bool, write_failing: bool) {
        self.ready.set(i64::from(ready));
        self.store_write_failing.set(i64::from(write_failing));
    }
}
