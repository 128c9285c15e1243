//! `tfmirror gc`: evicts least recently used archives until the cache fits
//! `cache.max_size` (or `--max-size`), and says what it freed.

use anyhow::Context;

use crate::config::Config;
use crate::store::inventory;

/// `tfmirror gc`.
pub fn command(config: &Config, max_size: Option<bytesize::ByteSize>) -> anyhow::Result<()> {
    let max = max_size
        .or(config.cache.max_size)
        .context("no size to shrink to: set cache.max_size or pass --max-size")?;
    let store = super::open_store(config)?;
    let removed = inventory::evict(&store, max.as_u64(), |_| false);
    let freed: u64 = removed.iter().map(|a| a.size).sum();
    let left: u64 = inventory::archives(&store).iter().map(|a| a.size).sum();
    println!(
        "evicted {} archives ({}); the cache now holds {} (limit {})",
        removed.len(),
        bytesize::ByteSize(freed).display().iec(),
        bytesize::ByteSize(left).display().iec(),
        max.display().iec()
    );
    Ok(())
}
