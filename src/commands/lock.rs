//! `tfmirror lock`: prints `.terraform.lock.hcl` provider blocks (for a
//! configuration, with the providers its registry modules require) with the
//! `h1:` and `zh:` hashes of every platform asked for, and says on standard
//! error which platforms it downloaded to hash and which `h1:` it took
//! from the origin's `packages` field.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::config::Config;
use crate::mirror::Mirror;
use crate::module_source::configuration::ReadOptions;
use crate::site::fill::{self, Freshness};
use crate::site::selection::Selection;

/// `tfmirror lock`.
pub fn command(
    config: Config,
    platforms: &[String],
    from: Option<(PathBuf, Option<crate::address::Product>)>,
    sources: &[String],
) -> anyhow::Result<()> {
    let platforms = super::platforms_or_current(platforms)?;
    let selection = match from {
        Some((dir, client)) => {
            let selection = crate::site::selection::from_directory(
                &dir,
                &platforms,
                &ReadOptions::client(client),
            )?;
            if let Some(rules) = &selection.rules {
                eprintln!("{}: read by {rules}", dir.display());
            }
            selection
        }
        None => Selection {
            providers: sources
                .iter()
                .map(|s| crate::site::selection::from_argument(s, &platforms))
                .collect::<anyhow::Result<Vec<_>>>()?,
            ..Selection::default()
        },
    };
    let text = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        // The journal's last entries are written whatever the outcome.
        let locked = async {
            // The providers the configuration's registry modules require are
            // locked too, as `terraform init` locks them.
            let progress = super::progress::Progress::new();
            let (requirements, failures) =
                fill::providers_needed(&mirror, &selection, Freshness::Cached, &progress).await;
            progress.finish();
            if !failures.is_empty() {
                anyhow::bail!("{}", failures.join("; "));
            }
            let mut entries = Vec::new();
            for req in &requirements {
                let versions = fill::select_versions(&mirror, req, Freshness::Cached)
                    .await
                    .map_err(|e| anyhow::anyhow!(e))?;
                // With several pinned versions, the newest is locked.
                let version = versions.last().expect("never empty");
                let constraints = Some(req.constraints.as_str().to_string());
                let entry = crate::mirror::lockfile::entry(
                    &mirror,
                    &req.provider,
                    version,
                    constraints,
                    &platforms,
                )
                .await
                .with_context(|| format!("locking {} {version}", req.provider))?;
                let names = |platforms: &[crate::address::Platform]| {
                    platforms
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                };
                if !entry.downloaded.is_empty() {
                    eprintln!(
                        "{} {version}: downloaded and hashed {}",
                        req.provider,
                        names(&entry.downloaded)
                    );
                }
                if !entry.reported.is_empty() {
                    eprintln!(
                        "{} {version}: h1: taken from the origin's packages field for {}",
                        req.provider,
                        names(&entry.reported)
                    );
                }
                entries.push(entry);
            }
            anyhow::Ok(crate::mirror::lockfile::render(&entries))
        }
        .await;
        mirror.close().await;
        locked
    })?;
    print!("{text}");
    Ok(())
}
