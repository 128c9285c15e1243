//! `tfmirror watch --once`: one pass of the configuration's `[watch]` from
//! the command line (what a cron job or a CI pipeline runs), with the
//! progress bar `sync` has; the daemon runs the same passes on its own
//! schedule, then fills each `[[watch.oci]]` registry.

use crate::config::Config;
use crate::site::fill::Freshness;

/// `tfmirror watch --once`.
pub fn command(config: &Config, once: bool, jobs: Option<usize>) -> anyhow::Result<()> {
    if !once {
        anyhow::bail!(
            "the daemon (tfmirror serve) watches on its own schedule; give --once for one pass now"
        );
    }
    if config.watch.is_empty() {
        anyhow::bail!("the configuration's [watch] lists no provider, module or release");
    }
    let selection = config.watch.selection()?;
    let registries = config.watch.oci_registries()?;
    let jobs = jobs.unwrap_or(config.watch.jobs);
    let mut summary = super::sync::run(config.clone(), &selection, jobs, Freshness::FromOrigin)?;
    for (target, registry) in &registries {
        println!("pushing to {target} ([[watch.oci]])");
        let pushed = super::push_oci::push_selection(config, registry, target, &selection)?;
        summary.failures.extend(pushed.failures);
    }
    if summary.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} failures", summary.failures.len())
    }
}
