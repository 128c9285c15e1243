//! Bundles: one file that carries cached providers across an air gap with
//! the evidence that verified them, and the import that checks everything
//! again before anything enters the receiving cache.
//!
//! A bundle is a tar file:
//!
//! ```text
//! tfmirror-bundle/manifest.json            format, contents, sizes, checksums
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/version.json
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/<archive>.zip
//! tfmirror-bundle/modules/<hostname>/<namespace>/<name>/<system>/<version>/module.json
//! tfmirror-bundle/modules/<hostname>/<namespace>/<name>/<system>/<version>/package.tar.gz
//! ```
//!
//! `version.json` is the version's record as the exporting cache keeps it:
//! the registry's package metadata, the SHA256SUMS documents, their
//! signatures and the signing keys the registry listed. Each record comes
//! before its archives, so an import can read a bundle in one pass.
//! `module.json` is a module version's pin (source, commit, tree hash),
//! before its package.

mod export;
mod import;
pub mod static_dir;

pub use export::{export, selected, Exported};
pub use import::{import, Imported};

use std::collections::BTreeMap;
use std::path::PathBuf;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::address::{Module, Platform, Provider, Version};
use crate::config::Config;

/// The top directory of every bundle entry.
const ROOT: &str = "tfmirror-bundle";
/// The bundle format this build writes and reads.
const FORMAT: u32 = 1;
/// The largest `version.json` or manifest read from a bundle.
const MAX_RECORD_BYTES: u64 = 8 * 1024 * 1024;

/// `manifest.json`: what a bundle holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The bundle format, `1`.
    pub format: u32,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// The versions in it.
    pub versions: Vec<ManifestVersion>,
    /// The module versions in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ManifestModule>,
}

/// One module version of a [`Manifest`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestModule {
    /// The module.
    pub module: Module,
    /// The version.
    pub version: Version,
    /// The package's size.
    pub size: u64,
}

/// The bundle directory of a module version.
fn module_entry_dir(m: &Module, v: &Version) -> String {
    format!(
        "{ROOT}/modules/{}/{}/{}/{}/{v}",
        m.hostname, m.namespace, m.name, m.system
    )
}

/// One version of a [`Manifest`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestVersion {
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// The archives included, by platform, with their sizes.
    pub archives: BTreeMap<Platform, u64>,
}

/// The bundle directory of a version.
fn entry_dir(p: &Provider, v: &Version) -> String {
    format!(
        "{ROOT}/providers/{}/{}/{}/{v}",
        p.hostname, p.namespace, p.kind
    )
}

/// Parses `--provider` values.
fn providers(sources: &[String]) -> anyhow::Result<Vec<crate::address::Provider>> {
    sources
        .iter()
        .map(|s| {
            crate::address::Provider::from_source(s).with_context(|| format!("--provider {s:?}"))
        })
        .collect()
}

/// `tfmirror export`.
pub fn export_command(
    config: &Config,
    output: Option<PathBuf>,
    static_dir: Option<PathBuf>,
    only: &[String],
) -> anyhow::Result<()> {
    let only = providers(only)?;
    match (output, static_dir) {
        (Some(output), _) => {
            // Straight from the store, whichever backend it is. A bucket is
            // read without its local tier: an export copies nothing to disk.
            let mut config = config.clone();
            if let Some(s3) = &mut config.storage.s3 {
                s3.local_cache = None;
            }
            let store = crate::store::open(&config, false)?;
            let runtime = super::runtime()?;
            let done = export(&store, runtime.handle(), &only, &output)?;
            println!(
                "wrote {}: {} versions, {} archives, {} module versions, {}",
                output.display(),
                done.versions,
                done.archives,
                done.modules,
                bytesize::ByteSize(done.bytes).display().iec()
            );
        }
        (None, Some(dir)) => {
            // The static layout is written with the disk cache's files (hard
            // links where it can): from a bucket, through a scratch copy.
            let (_scratch_dir, store) =
                if config.storage.backend == crate::config::StorageBackend::S3 {
                    let (dir, scratch) = super::scratch::open(config, "export-")?;
                    let bucket = crate::store::open(config, false)?;
                    super::runtime()?
                        .block_on(super::scratch::pull(bucket.as_ref(), &scratch))
                        .with_context(|| format!("copying from {}", bucket.location()))?;
                    (Some(dir), scratch)
                } else {
                    (None, super::open_store(config)?)
                };
            let done = static_dir::export(&store, &only, &dir)?;
            println!(
                "wrote {}: {} providers, {} versions, {} archives",
                dir.display(),
                done.providers,
                done.versions,
                done.archives
            );
        }
        (None, None) => anyhow::bail!("give --output FILE or --static DIR"),
    }
    Ok(())
}

/// `tfmirror import` into a bucket: the bundle (or static directory) is
/// imported, with every check, into a scratch cache under `cache.dir`, and
/// what that accepted is copied into the bucket.
fn import_into_bucket(
    config: &Config,
    bundle: Option<PathBuf>,
    static_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let (_scratch_dir, scratch) = super::scratch::open(config, "import-")?;
    let (report, bundle) = match (bundle, static_dir) {
        (Some(path), _) => {
            let trust = crate::verify::TrustPolicy::new(
                &config.trust,
                config.upstream.reject_expired_keys,
            )?;
            let max_unpacked = config.modules.max_unpacked_size.as_u64();
            (import(&scratch, &trust, &path, max_unpacked)?, path)
        }
        (None, Some(dir)) => (static_dir::import(&scratch, &dir)?, dir),
        (None, None) => anyhow::bail!("give a bundle file or --static DIR"),
    };
    let store = crate::store::open(config, false)?;
    let published = super::runtime()?
        .block_on(super::scratch::publish(&scratch, store.as_ref()))
        .with_context(|| format!("copying into {}", store.location()))?;
    for (item, reason) in report.rejected.iter().chain(&published.kept_theirs) {
        println!("REJECTED {item}: {reason}");
    }
    println!(
        "imported {} into {}: {} versions verified ({} new there), {} archives and packages stored, {} already there, {} rejected",
        bundle.display(),
        store.location(),
        report.versions,
        published.versions,
        published.stored,
        published.existed,
        report.rejected.len() + published.kept_theirs.len()
    );
    let rejected = report.rejected.len() + published.kept_theirs.len();
    if rejected == 0 {
        Ok(())
    } else {
        anyhow::bail!("{rejected} items were rejected; nothing else was changed")
    }
}

/// `tfmirror import`.
pub fn import_command(
    config: &Config,
    bundle: Option<PathBuf>,
    static_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    if config.storage.backend == crate::config::StorageBackend::S3 {
        return import_into_bucket(config, bundle, static_dir);
    }
    let store = super::open_store(config)?;
    let (report, source) = match (bundle, static_dir) {
        (Some(path), _) => {
            let trust = crate::verify::TrustPolicy::new(
                &config.trust,
                config.upstream.reject_expired_keys,
            )?;
            (
                import(
                    &store,
                    &trust,
                    &path,
                    config.modules.max_unpacked_size.as_u64(),
                )?,
                path,
            )
        }
        (None, Some(dir)) => (static_dir::import(&store, &dir)?, dir),
        (None, None) => anyhow::bail!("give a bundle file or --static DIR"),
    };
    for (item, reason) in &report.rejected {
        println!("REJECTED {item}: {reason}");
    }
    let modules = if report.modules > 0 {
        format!(
            ", {} module versions checked against their pins",
            report.modules
        )
    } else {
        String::new()
    };
    println!(
        "imported {}: {} versions verified, {} archives stored, {} already cached, {} rejected{modules}",
        source.display(),
        report.versions,
        report.archives,
        report.unchanged,
        report.rejected.len()
    );
    if report.rejected.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} items were rejected; nothing else was changed",
            report.rejected.len()
        )
    }
}
