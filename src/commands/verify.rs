//! `tfmirror verify`: re-checks every cached archive against the evidence
//! kept with it. For each archive, the stored SHA256SUMS must still carry a
//! valid signature by a key that counts for it (the stored registry keys,
//! or the keys `[[trust]]` rules pin), must list the archive with the
//! recorded checksum, and the archive's SHA-256 must match it. Each module
//! package must match its pin: the package's SHA-256, and the `h1:` hash
//! of its tree computed afresh. What fails is moved to
//! `<cache.dir>/quarantine/`, where nothing serves it; a module's pin stays,
//! so the next fetch is checked against it.

use std::path::{Path, PathBuf};

use super::progress::Progress;
use super::Refusal;
use crate::store::{inventory, DiskStore, VersionRecord};
use anyhow::Context;

use crate::address::ArchiveKey;
use crate::config::Config;
use crate::verify::{self, TrustPolicy};

/// One archive that failed, and why.
#[derive(Debug, Clone)]
pub struct Finding {
    /// The archive, relative to the cache directory.
    pub archive: PathBuf,
    /// What is wrong.
    pub reason: String,
}

/// What a verification run found.
#[derive(Debug, Default)]
pub struct Report {
    /// Archives and module packages checked.
    pub checked: usize,
    /// Bytes read to check them.
    pub bytes: u64,
    /// Archives that failed and were quarantined.
    pub quarantined: Vec<Finding>,
}

/// Checks every cached archive and module package; quarantines those that
/// fail. On a terminal, a bar shows how far it got.
pub fn verify_cache(
    store: &DiskStore,
    trust: &TrustPolicy,
    max_unpacked: u64,
) -> std::io::Result<Report> {
    let mut report = Report::default();
    let pins: Vec<_> = store
        .module_pins()?
        .into_iter()
        .filter(|(_, held)| *held)
        .collect();
    let archives = inventory::archives(store);
    let mut progress = Progress::new();
    progress.start(
        (pins.len() + archives.len()) as u64,
        "archives and module packages",
    );
    for (pin, _) in pins {
        progress.tick();
        report.checked += 1;
        report.bytes += pin.size;
        let path = store.module_package_path(&pin.module, &pin.version);
        let problem = match verify::sha256_of_file(&path) {
            Err(e) => Some(format!("reading it failed: {e}")),
            Ok(actual) if actual != pin.sha256 => Some(format!(
                "its SHA-256 {actual} differs from its pin's {}",
                pin.sha256
            )),
            Ok(_) => match std::fs::File::open(&path)
                .map_err(crate::module_source::tree::TreeError::from)
                .and_then(|f| crate::module_source::tree::repack(f, store.tmp_dir(), max_unpacked))
            {
                Err(e) => Some(format!("its tree cannot be read: {e}")),
                Ok(packed) if packed.h1 != pin.h1 => Some(format!(
                    "its tree hashes to {} where its pin says {}",
                    packed.h1, pin.h1
                )),
                Ok(_) => None,
            },
        };
        if let Some(reason) = problem {
            let relative = path
                .strip_prefix(store.root())
                .unwrap_or(&path)
                .to_path_buf();
            quarantine(store, &path, None, &relative)?;
            tracing::error!(package = %relative.display(), %reason, "quarantined");
            progress.line(&format!("QUARANTINED {}: {reason}", relative.display()));
            report.quarantined.push(Finding {
                archive: relative,
                reason,
            });
        }
    }
    for archive in archives {
        progress.tick();
        report.checked += 1;
        report.bytes += archive.size;
        let ArchiveKey {
            provider: p,
            version: v,
            platform,
        } = archive.key();
        let problem = match store.read_json::<VersionRecord>(&store.version_path(&p, &v)) {
            Ok(Some(record)) => check(&record, &platform, &archive.path, trust)
                .err()
                .map(|r| r.to_string()),
            Ok(None) => Some("no verified metadata is stored for it".to_string()),
            Err(e) => Some(format!("its metadata cannot be read: {e}")),
        };
        if let Some(reason) = problem {
            let relative = archive
                .path
                .strip_prefix(store.root())
                .unwrap_or(&archive.path)
                .to_path_buf();
            quarantine(
                store,
                &archive.path,
                Some(&store.h1_path(&p, &v, &platform)),
                &relative,
            )?;
            tracing::error!(archive = %relative.display(), %reason, "quarantined");
            progress.line(&format!("QUARANTINED {}: {reason}", relative.display()));
            report.quarantined.push(Finding {
                archive: relative,
                reason,
            });
        }
    }
    progress.finish();
    Ok(report)
}

/// Checks one archive against its record.
fn check(
    record: &VersionRecord,
    platform: &crate::address::Platform,
    path: &Path,
    trust: &TrustPolicy,
) -> Result<(), Refusal> {
    let pkg = record
        .packages
        .get(platform)
        .ok_or("its version's metadata does not list this platform")?;
    // An unsigned import has no signature to check: the checksum recorded at
    // its import is all there is.
    let (checked, against) = if record.unsigned_import {
        ("recorded at its (unsigned) import", Ok(()))
    } else {
        (
            "signed",
            crate::store::evidence::check_record(trust, record),
        )
    };
    against?;
    let actual = verify::sha256_of_file(path).map_err(|e| format!("reading it failed: {e}"))?;
    if actual != pkg.sha256 {
        return Err(format!(
            "its SHA-256 {actual} differs from the {checked} {}",
            pkg.sha256
        )
        .into());
    }
    Ok(())
}

/// Moves an archive or package under `quarantine/`, and removes its hash
/// file when it has one.
fn quarantine(
    store: &DiskStore,
    archive: &Path,
    h1: Option<&Path>,
    relative: &Path,
) -> std::io::Result<()> {
    let dest = store.root().join("quarantine").join(relative);
    std::fs::create_dir_all(dest.parent().expect("has a parent"))?;
    std::fs::rename(archive, &dest)?;
    if let Some(h1) = h1 {
        let _ = std::fs::remove_file(h1);
    }
    Ok(())
}

/// `tfmirror verify` on a bucket: what it holds is copied into a scratch
/// cache under `cache.dir` and checked there; what fails is removed from
/// the bucket (module pins stay) and kept on this host under
/// `cache.dir/quarantine/`.
fn verify_bucket(config: &Config, trust: &TrustPolicy) -> anyhow::Result<()> {
    let (_dir, scratch) = super::scratch::open(config, "verify-")?;
    let bucket = crate::store::open(config, false)?;
    let runtime = super::runtime()?;
    let started = std::time::Instant::now();
    let pulled = runtime
        .block_on(super::scratch::pull(bucket.as_ref(), &scratch))
        .with_context(|| format!("copying from {}", bucket.location()))?;
    let report = verify_cache(&scratch, trust, config.modules.max_unpacked_size.as_u64())
        .context("verifying the copy")?;
    let relative = |path: PathBuf| path.strip_prefix(scratch.root()).map(Path::to_path_buf);
    for finding in &report.quarantined {
        let archive = pulled.archives.iter().find(|k| {
            relative(scratch.archive_path(&k.provider, &k.version, &k.platform))
                .is_ok_and(|p| p == finding.archive)
        });
        let package = pulled.packages.iter().find(|(m, v)| {
            relative(scratch.module_package_path(m, v)).is_ok_and(|p| p == finding.archive)
        });
        let removed = match (archive, package) {
            (Some(key), _) => runtime.block_on(bucket.remove_archive(key)),
            (None, Some((m, v))) => runtime.block_on(bucket.remove_module(m, v)),
            (None, None) => continue,
        };
        removed.with_context(|| {
            format!(
                "removing {} from {}",
                finding.archive.display(),
                bucket.location()
            )
        })?;
    }
    let kept = config.cache.dir.join("quarantine").join(format!(
        "{}-{}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        std::process::id()
    ));
    if !report.quarantined.is_empty() {
        std::fs::create_dir_all(kept.parent().expect("has a parent"))?;
        std::fs::rename(scratch.root().join("quarantine"), &kept)
            .with_context(|| format!("keeping the failed objects in {}", kept.display()))?;
    }
    summarize(&report, started, &kept)
}

/// Prints what a verification found; an error when anything failed.
fn summarize(report: &Report, started: std::time::Instant, kept: &Path) -> anyhow::Result<()> {
    let secs = started.elapsed().as_secs_f64();
    for f in &report.quarantined {
        println!("QUARANTINED {}: {}", f.archive.display(), f.reason);
    }
    #[allow(clippy::cast_precision_loss)] // a rate for people to read
    let rate = report.bytes as f64 / 1_048_576.0 / secs.max(1e-6);
    println!(
        "read {} in {secs:.1} s ({rate:.1} MiB/s)",
        bytesize::ByteSize(report.bytes).display().iec()
    );
    println!(
        "checked {} archives and module packages, quarantined {}",
        report.checked,
        report.quarantined.len()
    );
    if report.quarantined.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} cached archives failed verification and were moved to {}",
            report.quarantined.len(),
            kept.display()
        )
    }
}

/// `tfmirror verify`.
pub fn command(config: &Config) -> anyhow::Result<()> {
    let trust =
        crate::verify::TrustPolicy::new(&config.trust, config.upstream.reject_expired_keys)?;
    if config.storage.backend == crate::config::StorageBackend::S3 {
        return verify_bucket(config, &trust);
    }
    let store = super::open_store(config)?;
    let started = std::time::Instant::now();
    let report = verify_cache(&store, &trust, config.modules.max_unpacked_size.as_u64())
        .context("verifying the cache")?;
    summarize(&report, started, &store.root().join("quarantine"))
}
