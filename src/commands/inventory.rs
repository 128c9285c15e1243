//! `tfmirror inventory`: writes what this mirror's cache holds (the site's
//! inventory, documentation included unless `--no-docs`) for the
//! connected side's `export --missing-from`, and names the held versions
//! whose documentation it keeps none of, with why.

use std::path::Path;

use anyhow::Context;

use super::store::CommandStore;
use crate::address::{Provider, Version};
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
    if !no_docs {
        say_without_docs(config, &inventory);
    }
    Ok(())
}

/// The most held versions without documentation named one by one.
const NAMED: usize = 50;

/// Names the held versions whose documentation the site keeps none of,
/// with why.
fn say_without_docs(config: &Config, inventory: &SiteInventory) {
    let without: Vec<(&Provider, &Version)> = (inventory.providers.iter())
        .flat_map(|(p, versions)| versions.keys().map(move |v| (p, v)))
        .filter(|(p, v)| !inventory.docs.keeps(p, v))
        .collect();
    for (provider, version) in without.iter().take(NAMED) {
        let why = config.why_no_docs(provider, config.upstream.offline);
        println!("NO DOCS {provider} {version}: {why}");
    }
    if without.len() > NAMED {
        println!(
            "NO DOCS and {} more held versions (the inventory's `docs` lists the versions whose documentation is kept)",
            without.len() - NAMED
        );
    }
}
