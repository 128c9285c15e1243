//! `tfmirror check`: will these configurations install from this mirror
//! alone? Reads each configuration (`--from`, as `sync --from` does) and
//! says, for every provider version, platform and module version it
//! needs, whether the cache holds it, and why not
//! ([`crate::site::readiness`]). `--fetch` first fills the cache with what
//! they need, on the connected side. Exit status 0 only when everything is
//! held.

use std::path::PathBuf;
use std::sync::Arc;

use crate::config::Config;
use crate::mirror::Mirror;
use crate::site::fill::{self, Freshness};
use crate::site::readiness::{self, Report};
use crate::site::selection::Selection;

/// What `tfmirror check` was asked.
#[derive(Debug, Clone)]
pub struct CheckArgs {
    /// The configurations: directories, or single `.tf` and lock files.
    pub from: Vec<PathBuf>,
    /// The platforms (default: this machine's).
    pub platforms: Vec<String>,
    /// Print JSON.
    pub json: bool,
    /// Fetch what is missing first.
    pub fetch: bool,
    /// Downloads at once when fetching.
    pub jobs: usize,
}

/// `tfmirror check`.
pub fn command(config: Config, args: &CheckArgs) -> anyhow::Result<()> {
    let platforms = super::platforms_or_current(&args.platforms)?;
    let selections: Vec<Selection> = args
        .from
        .iter()
        .map(|path| crate::site::selection::from_directory(path, &platforms))
        .collect::<anyhow::Result<_>>()?;
    if args.fetch && config.upstream.offline {
        anyhow::bail!("--fetch fetches from origins; it cannot run with upstream.offline");
    }
    // What is held counts, not what an origin could give.
    let mut offline = config.clone();
    offline.upstream.offline = true;
    let report = super::runtime()?.block_on(async {
        if args.fetch {
            let mirror = Arc::new(Mirror::beside_daemon(config).await?);
            let progress = super::progress::Progress::new();
            for selection in &selections {
                let summary = fill::fill(
                    mirror.clone(),
                    selection,
                    args.jobs,
                    Freshness::Cached,
                    &progress,
                )
                .await;
                eprintln!("fetched: {summary}");
            }
        }
        let mirror = Mirror::beside_daemon(offline).await?;
        let mut report = Report::default();
        for selection in &selections {
            readiness::check(&mirror, selection, &mut report).await;
        }
        anyhow::Ok(report)
    })?;
    let (held, missing, mismatched) = report.counts();
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        for item in &report.items {
            println!("{item}");
        }
        println!(
            "{}: {held} held, {missing} missing, {mismatched} not matching their lock files",
            if report.ready() { "ready" } else { "not ready" }
        );
    }
    if report.ready() {
        Ok(())
    } else {
        anyhow::bail!(
            "not ready: {} of {} items would not install from this mirror",
            missing + mismatched,
            report.items.len()
        )
    }
}
