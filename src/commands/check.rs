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
#[derive(Debug, Clone, clap::Args)]
pub struct CheckArgs {
    /// Configuration file (TOML).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// A configuration: its root module's directory, read as its client
    /// reads it, or a .terraform.lock.hcl file alone (repeatable; each is
    /// a configuration of its own).
    #[arg(long = "from", required = true, num_args = 1..)]
    pub from: Vec<PathBuf>,
    /// A platform to check (repeatable; default: this machine's).
    #[arg(long = "platform")]
    pub platforms: Vec<String>,
    /// Whose rules read the configurations.
    #[command(flatten)]
    pub client: super::ClientArg,
    /// Print JSON instead of lines.
    #[arg(long)]
    pub json: bool,
    /// Fetch what is missing first (on the connected side).
    #[arg(long)]
    pub fetch: bool,
    /// With --fetch: how many archives to download at once.
    #[arg(long, default_value_t = 4)]
    pub jobs: usize,
}

/// `tfmirror check`.
pub fn command(config: Config, args: &CheckArgs) -> anyhow::Result<()> {
    let platforms = super::platforms_or_current(&args.platforms)?;
    let selections: Vec<Selection> = args
        .from
        .iter()
        .map(|path| crate::site::selection::from_directory(path, &platforms, args.client.client))
        .collect::<anyhow::Result<_>>()?;
    if !args.json {
        for (path, selection) in args.from.iter().zip(&selections) {
            if let Some(rules) = &selection.rules {
                println!("{}: read by {rules}", path.display());
            }
        }
    }
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
            mirror.close().await;
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
        // Beside the report: whose rules read each configuration.
        let mut out = serde_json::to_value(&report)?;
        out["configurations"] = args
            .from
            .iter()
            .zip(&selections)
            .map(|(path, selection)| {
                serde_json::json!({
                    "from": path,
                    "client": selection.rules.map(|r| r.client.as_str()),
                })
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
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
