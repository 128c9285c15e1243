//! `tfmirror inventory`: writes what this mirror's cache holds (the site's
//! inventory) for the connected side's `export --missing-from`.

use std::path::Path;

use anyhow::Context;

use super::store::CommandStore;
use crate::config::Config;
use crate::site::inventory::SiteInventory;

/// `tfmirror inventory --output FILE`.
pub fn command(config: &Config, output: &Path) -> anyhow::Result<()> {
    let store = CommandStore::open(config)?;
    let inventory = store
        .wait(SiteInventory::of_store(store.store()))
        .with_context(|| format!("listing what {} holds", store.location()))?;
    inventory.write(output)?;
    let (archives, modules) = inventory.counts();
    println!(
        "wrote {}: {} providers, {archives} archives, {modules} module versions, {} release files held in {}",
        output.display(),
        inventory.providers.len(),
        inventory.release_files(),
        store.location()
    );
    Ok(())
}
