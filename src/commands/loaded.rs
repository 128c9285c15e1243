//! The configuration as every command loads it: read and checked by
//! [`Config::load`], then compiled by each domain that reads a section of
//! it (the policy's rules, the watch list, the release sources), so that a
//! mistake anywhere is reported at once, naming its key.

use std::path::Path;

use crate::config::Config;

/// Loads the configuration and compiles what the domains read from it.
pub fn load_checked(file: Option<&Path>) -> anyhow::Result<Config> {
    let config = Config::load(file)?;
    check_sections(&config)?;
    Ok(config)
}

/// Compiles the sections the domains read: `[policy]`, `[watch]` and
/// `[releases]`.
pub fn check_sections(config: &Config) -> anyhow::Result<()> {
    crate::policy::Policy::new(&config.policy)?;
    config.watch.selection()?;
    config.watch.oci_registries()?;
    config.releases.sources()?;
    Ok(())
}
