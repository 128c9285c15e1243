//! `tfmirror docs backfill`: the documentation of every provider version
//! the cache holds and keeps none of, fetched now on a mirror beside any
//! daemon using the same cache ([`crate::mirror::Mirror::backfill_docs`]),
//! and what came of it. `tfmirror docs sweep`: what no held version lists
//! removed now ([`crate::mirror::Mirror::sweep_docs`]).

use std::sync::Arc;
use std::time::Duration;

use crate::config::Config;
use crate::mirror::Mirror;

/// `tfmirror docs backfill`: fails where any version's documentation
/// could not be kept, after trying them all.
pub fn backfill(config: Config) -> anyhow::Result<()> {
    if config.upstream.offline {
        anyhow::bail!(
            "this command fetches from registries; it cannot run with upstream.offline (documentation comes in bundles)"
        );
    }
    if !config.docs.enabled {
        anyhow::bail!("documentation capture is off (docs.enabled = false)");
    }
    let done = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let done = mirror.backfill_docs(Duration::ZERO).await;
        super::settle(&mirror).await;
        mirror.close().await;
        anyhow::Ok(done)
    })?;
    for failed in &done.failed {
        println!("FAILED {failed}");
    }
    println!(
        "versions held: {}; documentation kept now: {}, kept already: {}, no source for their host: {}, denied by the policy: {}, failed: {}",
        done.held,
        done.kept,
        done.already,
        done.no_source,
        done.denied,
        done.failed.len()
    );
    if done.failed.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "the documentation of {} versions could not be kept",
            done.failed.len()
        )
    }
}

/// `tfmirror docs sweep`: prints what the sweep found and removed.
pub fn sweep(config: Config) -> anyhow::Result<()> {
    let swept = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let swept = mirror.sweep_docs().await;
        super::settle(&mirror).await;
        mirror.close().await;
        anyhow::Ok(swept?)
    })?;
    println!(
        "documentation lists: {}, removed (version no longer held): {}, removed to be fetched again (a page missing): {}, not readable by this build: {}",
        swept.lists, swept.lists_removed, swept.lists_broken, swept.lists_unread
    );
    println!(
        "pages: {}, removed: {}, listed by no version but written within a day (left): {}; bytes left: {}",
        swept.pages, swept.pages_removed, swept.pages_young, swept.bytes
    );
    Ok(())
}
