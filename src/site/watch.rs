//! Watching the origins: the providers and modules `[watch]` lists are
//! listed afresh every `watch.interval` (jittered, so that instances
//! sharing a bucket spread their passes), and the versions that match and
//! the cache lacks are fetched and verified for the listed platforms before
//! anyone asks, through the same fill as `tfmirror sync` (single-flight
//! downloads, the fetch limits, the policy's rules and cooldown). A pass
//! that fails in part is tried again sooner, backing off from a minute up
//! to the interval; nothing about it is fatal. The schedule runs on the
//! mirror's clock. After the fill, each `[[watch.oci]]` registry is given
//! what the watch selects that it lacks, as `tfmirror push-oci` gives it.
//!
//! What the passes did is kept for the status page, counted in the metrics
//! (`tfmirror_watch_runs_total{outcome}`, `tfmirror_watch_fetched_total{kind}`,
//! `tfmirror_watch_last_success_timestamp_seconds`) and logged under the
//! target `tfmirror::watch`.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::Serialize;

pub use crate::config::watch::WatchConfig;

use super::fill::{self, Freshness, Observer, Summary};
use super::oci_push::{self, auth, client::Registry, Target};
use super::selection::Selection;
use crate::mirror::Mirror;

/// The log target of the watch passes.
pub const WATCH_LOG: &str = "tfmirror::watch";

/// How soon a pass that failed is tried again, the first time; each further
/// failure in a row doubles it, up to `watch.interval`.
pub const FIRST_RETRY: Duration = Duration::from_secs(60);

/// How far a pass's time may move from its schedule either way, as a share
/// of the wait: a tenth.
const JITTER: f64 = 0.1;

impl WatchConfig {
    /// Whether anything is watched.
    pub fn is_empty(&self) -> bool {
        self.providers.is_empty() && self.modules.is_empty() && self.releases.is_empty()
    }

    /// The watched providers, modules and CLI releases; a mistake is named
    /// after its entry (`watch.provider 2 (…)`, `watch.release 1 (…)`).
    pub fn selection(&self) -> anyhow::Result<Selection> {
        if self.interval.is_zero() {
            anyhow::bail!("watch.interval must be longer than zero");
        }
        if self.jobs == 0 {
            anyhow::bail!("watch.jobs must be at least 1");
        }
        let platforms: Vec<String> = self.platforms.iter().map(ToString::to_string).collect();
        let mut selection = super::selection::from_entries(
            &platforms,
            &self.providers,
            &self.modules,
            self.client,
            "watch.",
        )?;
        selection.releases = super::selection::release_entries(&platforms, &self.releases)
            .map_err(|e| anyhow::anyhow!("watch.{e:#}"))?;
        Ok(selection)
    }
}

/// What one pass did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Pass {
    /// When it started, in milliseconds since the Unix epoch (the mirror's
    /// clock).
    pub started_ms: u64,
    /// When it ended.
    pub finished_ms: u64,
    /// What it fetched and stored: archives (`provider version platform`)
    /// and module versions.
    pub stored: Vec<String>,
    /// Archives and module versions it found cached already.
    pub cached: usize,
    /// What failed, and why.
    pub failures: Vec<String>,
}

/// The state of the watch, for the status page.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WatchStatus {
    /// When the pass under way started, if one is.
    pub running_since_ms: Option<u64>,
    /// The last finished pass.
    pub last: Option<Pass>,
    /// When the last pass without a failure ended.
    pub last_success_ms: Option<u64>,
    /// When the next pass is due; `None` while a pass runs.
    pub next_ms: Option<u64>,
    /// Passes that failed in a row, up to the last.
    pub failed_in_a_row: u32,
    /// Passes finished since start.
    pub passes: u64,
}

impl WatchConfig {
    /// The `[[watch.oci]]` registries, their credentials read; a mistake
    /// is named after its entry (`watch.oci 1 (…)`).
    pub fn oci_registries(&self) -> anyhow::Result<Vec<(Target, Registry)>> {
        let mut out = Vec::new();
        for (i, entry) in self.oci.iter().enumerate() {
            let named =
                |e: anyhow::Error| anyhow::anyhow!("watch.oci {} ({}): {e:#}", i + 1, entry.target);
            let target = Target::parse(&entry.target).map_err(named)?;
            let token = crate::upstream::credentials::configured_token(
                entry.token.as_deref(),
                entry.token_file.as_deref(),
                "token_file",
            )
            .map_err(named)?;
            let (credential, _) = auth::resolve(
                &target.registry,
                &target.prefix,
                entry.username.as_deref(),
                token,
            )
            .map_err(named)?;
            let registry = Registry::new(&target.registry, credential, entry.ca_file.as_deref())
                .map_err(named)?;
            out.push((target, registry));
        }
        Ok(out)
    }
}

/// The watch of a running daemon: what it watches, how often, and what
/// its passes did.
#[derive(Debug)]
pub struct Watch {
    selection: Selection,
    interval: Duration,
    jobs: usize,
    /// The `[[watch.oci]]` registries, each with its client.
    oci: Vec<(Target, Registry)>,
    status: Mutex<WatchStatus>,
}

impl std::fmt::Debug for Registry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Registry({})", self.host())
    }
}

impl Watch {
    /// The watch `[watch]` configures; `None` when it lists nothing.
    pub fn new(config: &WatchConfig) -> anyhow::Result<Option<Arc<Watch>>> {
        if config.is_empty() {
            return Ok(None);
        }
        Ok(Some(Arc::new(Watch {
            selection: config.selection()?,
            interval: config.interval,
            jobs: config.jobs,
            oci: config.oci_registries()?,
            status: Mutex::default(),
        })))
    }

    /// What the passes did so far.
    pub fn status(&self) -> WatchStatus {
        self.status.lock().expect("watch status lock").clone()
    }

    /// `watch.interval`.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// How many providers, modules and CLI release entries are watched.
    pub fn watched(&self) -> (usize, usize, usize) {
        (
            self.selection.providers.len(),
            self.selection.modules.len(),
            self.selection.releases.len(),
        )
    }

    /// Runs one pass now: lists every watched item afresh and fetches what
    /// the cache lacks; records and counts what it did.
    pub async fn pass(&self, mirror: &Arc<Mirror>) -> Summary {
        let clock = mirror.clock().clone();
        let started_ms = clock.unix_ms();
        {
            let mut status = self.status.lock().expect("watch status lock");
            status.running_since_ms = Some(started_ms);
            // Due now; the next one is set when this one is over.
            status.next_ms = None;
        }
        let (providers, modules, releases) = self.watched();
        tracing::info!(target: WATCH_LOG, providers, modules, releases, "watch pass started");
        let summary = fill::fill(
            mirror.clone(),
            &self.selection,
            self.jobs,
            Freshness::FromOrigin,
            &LogObserver,
        )
        .await;
        let mut summary = summary;
        self.push_oci(mirror, &mut summary).await;
        let finished_ms = clock.unix_ms();
        let metrics = mirror.metrics();
        let archives = summary.downloaded;
        let packaged = summary.modules_packaged;
        metrics.watch_fetched("archive", archives);
        metrics.watch_fetched("module", packaged);
        let ok = summary.failures.is_empty();
        metrics.watch_run(if ok { "ok" } else { "failed" });
        if ok {
            metrics.set_watch_last_success(finished_ms / 1000);
            tracing::info!(target: WATCH_LOG, archives, module_versions = packaged, "watch pass done: {summary}");
        } else {
            tracing::warn!(target: WATCH_LOG, archives, module_versions = packaged, failures = summary.failures.len(), "watch pass done with failures, to be tried again: {summary}");
        }
        let mut status = self.status.lock().expect("watch status lock");
        status.running_since_ms = None;
        status.passes += 1;
        if ok {
            status.failed_in_a_row = 0;
            status.last_success_ms = Some(finished_ms);
        } else {
            status.failed_in_a_row += 1;
        }
        status.last = Some(Pass {
            started_ms,
            finished_ms,
            stored: summary.stored.clone(),
            cached: summary.cached + (summary.module_versions - summary.modules_packaged),
            failures: summary.failures.clone(),
        });
        summary
    }

    /// Gives each `[[watch.oci]]` registry what the watch selects that it
    /// lacks; its failures become the pass's.
    async fn push_oci(&self, mirror: &Arc<Mirror>, summary: &mut Summary) {
        if self.oci.is_empty() {
            return;
        }
        // Selection failures are the fill's already.
        let (items, _) =
            oci_push::items_of_selection(mirror, &self.selection, &[], Freshness::Cached).await;
        for (target, registry) in &self.oci {
            let pushed = oci_push::push(mirror, registry, target, &items, &LogObserver).await;
            tracing::info!(target: WATCH_LOG, registry = %target, "pushed to the site's OCI registry: {pushed}");
            summary.failures.extend(
                pushed
                    .failures
                    .iter()
                    .map(|f| format!("watch.oci {target}: {f}")),
            );
        }
    }

    /// Passes, one now and then one every `watch.interval` (jittered), or
    /// sooner after a failure, until the task is stopped.
    pub async fn run(self: Arc<Self>, mirror: Arc<Mirror>) {
        loop {
            self.pass(&mirror).await;
            let failed = self.status().failed_in_a_row;
            let wait = jittered(self.wait_after(failed), random_unit());
            let clock = mirror.clock().clone();
            // Due at a whole millisecond, the time the status page shows.
            let next_ms = clock
                .unix_ms()
                .saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
            let next = crate::clock::from_unix_ms(next_ms);
            self.status.lock().expect("watch status lock").next_ms = Some(next_ms);
            tracing::info!(target: WATCH_LOG, next = %humantime::format_rfc3339_seconds(next), "next watch pass in {}", humantime::format_duration(Duration::from_secs(wait.as_secs())));
            clock.sleep_until(next).await;
        }
    }

    /// How long to wait after a pass: the interval, or after `failed`
    /// failures in a row, [`FIRST_RETRY`] doubled for each failure after
    /// the first, at most the interval.
    fn wait_after(&self, failed: u32) -> Duration {
        if failed == 0 {
            return self.interval;
        }
        let factor = 1u32.checked_shl(failed - 1).unwrap_or(u32::MAX);
        FIRST_RETRY
            .checked_mul(factor)
            .unwrap_or(self.interval)
            .min(self.interval)
    }
}

/// `wait` moved by up to [`JITTER`] of itself either way: `unit` in
/// `[0, 1)` picks where.
fn jittered(wait: Duration, unit: f64) -> Duration {
    wait.mul_f64(1.0 - JITTER + 2.0 * JITTER * unit)
}

/// A number in `[0, 1)` from the operating system's random source (0.5
/// when it cannot be read: the schedule itself).
fn random_unit() -> f64 {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 4];
    match ring::rand::SystemRandom::new().fill(&mut bytes) {
        Ok(()) => f64::from(u32::from_le_bytes(bytes)) / (f64::from(u32::MAX) + 1.0),
        Err(_) => 0.5,
    }
}

/// A pass's progress, in the log: what was stored at `info`, what failed
/// at `warn`, what was cached already at `debug`.
struct LogObserver;

impl Observer for LogObserver {
    fn line(&self, text: &str) {
        log_line(text);
    }

    fn start(&self, total: u64) {
        tracing::debug!(target: WATCH_LOG, archives = total, "watch pass: archives to make sure of");
    }

    fn advance(&self, text: &str) {
        log_line(text);
    }
}

fn log_line(text: &str) {
    if let Some(failed) = text.strip_prefix("FAILED ") {
        tracing::warn!(target: WATCH_LOG, "watch: {failed}");
    } else if text.starts_with("stored ") {
        tracing::info!(target: WATCH_LOG, "watch: {text}");
    } else {
        tracing::debug!(target: WATCH_LOG, "watch: {text}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn watch(interval: Duration) -> Watch {
        Watch {
            selection: Selection::default(),
            interval,
            jobs: 1,
            oci: Vec::new(),
            status: Mutex::default(),
        }
    }

    #[test]
    fn failures_back_off_from_a_minute_to_the_interval() {
        let w = watch(Duration::from_secs(6 * 3600));
        let waits: Vec<u64> = (0..12).map(|n| w.wait_after(n).as_secs()).collect();
        assert_eq!(
            waits,
            [21600, 60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 21600, 21600]
        );
        // Many failures in a row neither overflow nor exceed the interval.
        assert_eq!(w.wait_after(40).as_secs(), 21600);
        // An interval shorter than the first retry bounds it too.
        assert_eq!(watch(Duration::from_secs(30)).wait_after(1).as_secs(), 30);
    }

    #[test]
    fn jitter_stays_within_a_tenth_either_way() {
        let hour = Duration::from_secs(3600);
        assert_eq!(jittered(hour, 0.0), Duration::from_secs(3240));
        assert_eq!(jittered(hour, 0.5), hour);
        assert!(jittered(hour, 0.999_999) < Duration::from_secs(3960));
        for _ in 0..1000 {
            let u = random_unit();
            assert!((0.0..1.0).contains(&u), "{u}");
        }
    }

    #[test]
    fn the_watch_section_is_read_like_a_manifest() {
        let mut config: WatchConfig = toml::from_str(
            "interval = \"1h\"\njobs = 2\nplatforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"hashicorp/aws\"\nversions = \"~> 5.0\"\n[[module]]\nsource = \"acme/net/aws\"\n",
        )
        .unwrap();
        let selection = config.selection().unwrap();
        assert_eq!(selection.providers[0].platforms.len(), 1);
        assert_eq!(
            selection.modules[0].module.to_string(),
            "registry.terraform.io/acme/net/aws"
        );
        config.platforms.clear();
        let err = format!("{:#}", config.selection().unwrap_err());
        assert!(
            err.contains("watch.provider 1 (hashicorp/aws): no platforms"),
            "{err}"
        );
        config.providers[0].versions = "=> 1".into();
        config.providers[0].platforms = Some(vec!["linux_amd64".into()]);
        let err = format!("{:#}", config.selection().unwrap_err());
        assert!(err.contains("watch.provider 1"), "{err}");
        assert!(WatchConfig::default().is_empty());
        // Keys left out take their defaults.
        let sparse: WatchConfig =
            toml::from_str("[[module]]\nsource = \"acme/net/aws\"\n").unwrap();
        assert_eq!(sparse.interval, Duration::from_secs(6 * 3600));
        assert_eq!(sparse.jobs, 4);
        assert!(Watch::new(&WatchConfig::default()).unwrap().is_none());
    }
}
