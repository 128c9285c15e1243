//! `tfmirror check`: will these configurations install from this mirror
//! alone? Reads each configuration (`--from`, as `sync --from` does) and
//! says, for every provider version, platform and module version it
//! needs, whether the cache holds it, and why not
//! ([`crate::site::readiness`]), and what its client would refuse. Each
//! `--from` gets its own verdict (ready, not ready, unreadable). `--fetch`
//! first fills the cache with what they need, on the connected side. Exit
//! status 0 only when every configuration is ready.

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

/// The verdict on one `--from`.
struct Verdict<'a> {
    from: &'a std::path::Path,
    /// How it was read, or why it could not be.
    read: Result<Selection, String>,
    report: Report,
    /// What each held provider package comes to against the advisory
    /// database, by its item's place in the report; empty without one.
    advisories: std::collections::BTreeMap<usize, crate::advisories::Reading>,
    /// What the mirror keeps of each held provider version's
    /// documentation, by the place of the version's first item.
    docs: std::collections::BTreeMap<usize, readiness::Documentation>,
}

impl Verdict<'_> {
    fn word(&self) -> &'static str {
        match &self.read {
            Err(_) => "unreadable",
            Ok(_) if !self.report.ready() => "not ready",
            Ok(_) => "ready",
        }
    }

    fn json(&self) -> serde_json::Value {
        let mut out = serde_json::json!({
            "from": self.from,
            "verdict": self.word(),
            "ready": self.word() == "ready",
        });
        match &self.read {
            Err(error) => out["error"] = error.clone().into(),
            Ok(selection) => {
                out["client"] = selection.rules.map(|r| r.client.as_str()).into();
                out["needs_nothing"] = selection.needs_nothing().into();
                if let Some(tests) = &selection.tests {
                    out["tests"] = serde_json::json!({
                        "read": tests.read,
                        "rule": tests.rule,
                        "files": tests.files,
                    });
                }
                let mut items = serde_json::to_value(&self.report.items).unwrap_or_default();
                for (i, found) in &self.advisories {
                    items[*i]["advisories"] =
                        serde_json::to_value(&found.findings).unwrap_or_default();
                    items[*i]["advisories_known"] = found.unknown.is_empty().into();
                    if !found.unknown.is_empty() {
                        items[*i]["advisories_unknown"] =
                            serde_json::to_value(&found.unknown).unwrap_or_default();
                    }
                }
                for (i, docs) in &self.docs {
                    items[*i]["documentation"] = serde_json::to_value(docs).unwrap_or_default();
                }
                out["items"] = items;
                if !self.report.hidden.is_empty() {
                    out["hidden"] = serde_json::to_value(&self.report.hidden).unwrap_or_default();
                }
            }
        }
        out
    }

    fn print(&self) {
        println!("{}:", self.from.display());
        let selection = match &self.read {
            Err(error) => {
                println!("  unreadable: {error}");
                return;
            }
            Ok(selection) => selection,
        };
        if let Some(rules) = &selection.rules {
            println!("  read by {rules}");
        }
        if let Some(tests) = &selection.tests {
            let files = match tests.files.len() {
                _ if !tests.read => "not read".to_owned(),
                0 => "none found".to_owned(),
                _ => tests.files.join(", "),
            };
            println!("  test files: {files} ({})", tests.rule);
        }
        for (i, item) in self.report.items.iter().enumerate() {
            println!("  {item}");
            if let Some(docs) = self.docs.get(&i) {
                println!("           {docs}");
            }
            let found = self.advisories.get(&i);
            for why in found.into_iter().flat_map(|r| &r.unknown) {
                println!("           advisories not known: {}", why.describe());
            }
            for f in found.into_iter().flat_map(|r| &r.findings) {
                println!(
                    "           advisory {} [{}] {} {}{}; {}: {}",
                    f.id,
                    f.severity
                        .map_or("unrated", crate::advisories::Severity::as_str),
                    f.module,
                    f.found,
                    f.fixed
                        .as_ref()
                        .map_or(String::new(), |x| format!(" (fixed in {x})")),
                    f.presence.describe(),
                    f.summary
                );
            }
        }
        for hidden in &self.report.hidden {
            println!("  {hidden}");
        }
        let (held, missing, mismatched) = self.report.counts();
        if selection.needs_nothing() && selection.refused.is_empty() {
            println!(
                "  ready: it needs no provider, module or CLI release; init has nothing to install"
            );
        } else {
            println!(
                "  {}: {held} held, {missing} missing, {mismatched} not matching their lock files",
                self.word()
            );
        }
    }
}

/// `tfmirror check`.
pub fn command(config: Config, args: &CheckArgs) -> anyhow::Result<()> {
    let platforms = super::platforms_or_current(&args.platforms)?;
    let options = args.client.options();
    // Each configuration is read on its own: one that cannot be read is
    // reported as such, and the others are still checked.
    let mut verdicts: Vec<Verdict> = args
        .from
        .iter()
        .map(|path| Verdict {
            from: path,
            read: crate::site::selection::from_directory(path, &platforms, &options)
                .map_err(|e| format!("{e:#}")),
            report: Report::default(),
            advisories: std::collections::BTreeMap::new(),
            docs: std::collections::BTreeMap::new(),
        })
        .collect();
    if args.fetch && config.upstream.offline {
        anyhow::bail!("--fetch fetches from origins; it cannot run with upstream.offline");
    }
    // What is held counts, not what an origin could give.
    let configured_offline = config.upstream.offline;
    let mut offline = config.clone();
    offline.upstream.offline = true;
    super::runtime()?.block_on(async {
        if args.fetch {
            let mirror = Arc::new(Mirror::beside_daemon(config).await?);
            let progress = super::progress::Progress::new();
            for selection in verdicts.iter().filter_map(|v| v.read.as_ref().ok()) {
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
            super::settle(&mirror).await;
            mirror.close().await;
        }
        let mirror = Arc::new(Mirror::beside_daemon(offline).await?);
        for verdict in &mut verdicts {
            if let Ok(selection) = &verdict.read {
                readiness::check(&mirror, selection, &mut verdict.report).await;
                verdict.advisories = readiness::advisories(&mirror, &verdict.report).await;
                verdict.docs =
                    readiness::documentation(&mirror, &verdict.report, configured_offline).await;
            }
        }
        anyhow::Ok(())
    })?;
    let mut all = Report::default();
    for verdict in &verdicts {
        all.extend(&verdict.report);
    }
    let ready = verdicts.iter().filter(|v| v.word() == "ready").count();
    let unreadable = verdicts.iter().filter(|v| v.read.is_err()).count();
    if args.json {
        let mut out = serde_json::to_value(&all)?;
        out["ready"] = (ready == verdicts.len()).into();
        out["configurations"] = verdicts.iter().map(Verdict::json).collect();
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        for verdict in &verdicts {
            verdict.print();
        }
        if verdicts.len() > 1 {
            println!(
                "{} of {} configurations ready, {} not ready, {unreadable} unreadable",
                ready,
                verdicts.len(),
                verdicts.len() - ready - unreadable
            );
        }
    }
    if ready == verdicts.len() {
        return Ok(());
    }
    let (_, missing, mismatched) = all.counts();
    anyhow::bail!(
        "not ready: {} of {} configurations would not install from this mirror ({} of {} items missing or not matching, {unreadable} configurations unreadable)",
        verdicts.len() - ready,
        verdicts.len(),
        missing + mismatched,
        all.items.len()
    )
}
