//! `tfmirror sync`: fills the cache ahead of time with what a manifest or a
//! Terraform configuration asks for ([`crate::site::fill`]), with a
//! progress bar on a terminal, and says what it did.

use std::path::PathBuf;
use std::sync::Arc;

use super::progress::Progress;
use crate::address::Product;
use crate::config::Config;
use crate::mirror::Mirror;
use crate::module_source::configuration::ReadOptions;
use crate::site::fill::{self, Freshness, Summary};
use crate::site::selection::Selection;

/// Fills the cache with what `selection` asks for, on a mirror beside any
/// daemon using the same cache, showing progress; prints the summary and
/// each failure. `freshness` says how fresh the version lists must be.
pub fn run(
    config: Config,
    selection: &Selection,
    jobs: usize,
    freshness: Freshness,
) -> anyhow::Result<Summary> {
    if config.upstream.offline {
        anyhow::bail!("this command fetches from origins; it cannot run with upstream.offline");
    }
    let summary = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let summary =
            fill::fill(mirror.clone(), selection, jobs, freshness, &Progress::new()).await;
        super::settle(&mirror).await;
        mirror.close().await;
        anyhow::Ok(summary)
    })?;
    println!("{summary}");
    for refused in &summary.refused {
        println!("REFUSED {refused}");
    }
    for failure in &summary.failures {
        println!("FAILED {failure}");
    }
    Ok(summary)
}

/// `tfmirror sync`.
pub fn command(
    config: Config,
    manifest: Option<PathBuf>,
    from: Option<(PathBuf, Option<Product>)>,
    platforms: &[String],
    jobs: usize,
) -> anyhow::Result<()> {
    let selection = match (manifest, from) {
        (Some(path), _) => crate::site::selection::from_manifest(&path)?,
        (None, Some((dir, client))) => {
            let platforms = super::platforms_or_current(platforms)?;
            let selection = crate::site::selection::from_directory(
                &dir,
                &platforms,
                &ReadOptions::client(client),
            )?;
            say_what_is_skipped(&dir, &selection);
            selection
        }
        (None, None) => anyhow::bail!("give --manifest FILE or --from DIR"),
    };
    let summary = run(config, &selection, jobs, Freshness::Cached)?;
    if summary.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} failures", summary.failures.len())
    }
}

/// Says whose rules read the configuration at `dir`, and which of its
/// module sources are not fetched (the client fetches them itself).
fn say_what_is_skipped(dir: &std::path::Path, selection: &Selection) {
    if let Some(rules) = &selection.rules {
        println!("{}: read by {rules}", dir.display());
    }
    for u in &selection.unserved {
        println!(
            "skipped module source {} ({}): {}, which the client fetches itself, not through a mirror",
            u.source, u.at, u.kind
        );
    }
}
