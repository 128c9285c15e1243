//! `tfmirror gc`: evicts least recently used archives, module packages and
//! CLI release files until the cache, with the documentation it keeps,
//! fits `cache.max_size` (or `--max-size`), and says what it freed. Module pins stay, so a package fetched again is checked
//! against what was first seen. A daemon running beside it learns of each
//! removal through the store's journal.

use std::fmt::Write as _;

use anyhow::Context;

use crate::clock::Clock as _;
use crate::config::Config;
use crate::store::inventory;

/// `tfmirror gc`.
pub fn command(config: &Config, max_size: Option<bytesize::ByteSize>) -> anyhow::Result<()> {
    let max = max_size
        .or(config.cache.max_size)
        .context("no size to shrink to: set cache.max_size or pass --max-size")?;
    let runtime = super::runtime()?;
    let store = super::open_store(config)?;
    // Each removal is noted in the store's journal (a daemon beside gc
    // learns of it within seconds), and the change note is written before
    // the first one (so that a daemon started next does not trust its
    // snapshot).
    let journal = {
        let _runtime = runtime.enter();
        crate::store::journal::Journal::start(Box::new(store.place()), "gc", true)
    };
    let store = store.with_journal(journal.clone());
    // Documentation counts toward the limit and is not evicted: it goes
    // with its versions, at the daemon's next sweep or `docs sweep`.
    let docs = runtime
        .block_on(docs_bytes(&store))
        .with_context(|| format!("listing the documentation in {}", store.root().display()))?;
    let removed = inventory::evict(
        &store,
        max.as_u64().saturating_sub(docs),
        |_| false,
        |item| runtime.block_on(journal.changing(item)),
    );
    runtime.block_on(journal.close());
    let removed =
        removed.with_context(|| format!("noting a change in {}", store.root().display()))?;
    let now = crate::clock::SystemClock.unix_ms();
    for archive in &removed.archives {
        let path = store.version_path(&archive.provider, &archive.version);
        let noted = store
            .read_json::<crate::store::VersionRecord>(&path)
            .and_then(|record| match record {
                Some(mut record) => {
                    record.evicted_ms.insert(archive.platform.clone(), now);
                    store.write_json(&path, &record)
                }
                None => Ok(()),
            });
        if let Err(e) = noted {
            tracing::warn!(archive = %archive.key(), error = %e, "could not note the eviction in the version's record");
        }
    }
    let left = inventory::total_size(&store) + docs;
    let mut modules = if removed.modules.is_empty() {
        String::new()
    } else {
        format!(", {} module packages", removed.modules.len())
    };
    if !removed.releases.is_empty() {
        let _ = write!(modules, ", {} release files", removed.releases.len());
    }
    println!(
        "evicted {} archives{modules} ({}); the cache now holds {}, {} of it documentation (limit {})",
        removed.archives.len(),
        bytesize::ByteSize(removed.bytes()).display().iec(),
        bytesize::ByteSize(left).display().iec(),
        bytesize::ByteSize(docs).display().iec(),
        max.display().iec()
    );
    // What could not be removed is in the log; the command says it did
    // not reach its limit rather than succeed.
    if left > max.as_u64() {
        anyhow::bail!(
            "the cache still holds {}, over the limit of {}: what could not be removed is named in the log above",
            bytesize::ByteSize(left).display().iec(),
            max.display().iec()
        );
    }
    Ok(())
}

/// The bytes of the documentation `store` keeps: its versions' lists and
/// its pages.
async fn docs_bytes(store: &crate::store::DiskStore) -> Result<u64, crate::store::StoreError> {
    let lists = crate::store::docs::listed_versions(store).await?;
    let pages = crate::store::docs::kept_pages(store).await?;
    Ok(lists.iter().map(|(_, size)| size).sum::<u64>() + pages.iter().map(|p| p.size).sum::<u64>())
}
