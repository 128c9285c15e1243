//! `tfmirror inventory`: writes what this mirror's cache holds (the site's
//! inventory, documentation included unless `--no-docs`) for the
//! connected side's `export --missing-from`.

use std::path::Path;

use anyhow::Context;

use super::store::CommandStore;
use crate::config::Config;
use crate::site::inventory::SiteInventory;

/// `tfmirror inventory --output FILE`, listing no documentation where
/// `no_docs` says.
pub fn command(config: &Config, output: &Path, no_docs: bool) -> anyhow::Result<()> {
    let store = CommandStore::open(config)?;
    let mut inventory = store
        .wait(SiteInventory::of_store(store.store()))
        .with_context(|| format!("listing what {} holds", store.location()))?;
    if no_docs {
        inventory.docs = crate::site::inventory::HeldDocs::default();
    }
    inventory.write(output)?;
    let (archives, modules) = inventory.counts();
    let docs = &inventory.docs;
    let versions: usize = docs
        .versions
        .values()
        .map(std::collections::BTreeSet::len)
        .sum();
    println!(
        "wrote {}: {} providers, {archives} archives, {modules} module versions, {} release files, documentation of {versions} versions ({} pages) held in {}",
        output.display(),
        inventory.providers.len(),
        inventory.release_files(),
        docs.pages.len(),
        store.location()
    );
    Ok(())
}
