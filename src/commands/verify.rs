//! `tfmirror verify`: re-checks every cached archive against the evidence
//! kept with it. For each archive, the stored SHA256SUMS must still carry a
//! valid signature by a key that counts for it (the stored registry keys,
//! or the keys `[[trust]]` rules pin), must list the archive with the
//! recorded checksum, and the archive's SHA-256 must match it. Each module
//! package must match its pin: the package's SHA-256, and the `h1:` hash
//! of its tree computed afresh. What fails is moved to
//! `<cache.dir>/quarantine/`, where nothing serves it; a module's pin stays,
//! so the next fetch is checked against it.

use std::collections::btree_map::{BTreeMap, Entry};
use std::path::{Path, PathBuf};

use super::progress::Progress;
use super::Refusal;
use crate::store::{inventory, DiskStore, ModuleRecord, VersionRecord};
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
        let problem = check_package(&pin, &path, store.tmp_dir(), max_unpacked).err();
        if let Some(Refusal(reason)) = problem {
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
            Ok(record) => check_archive(record.as_ref(), &platform, &archive.path, trust)
                .err()
                .map(|r| r.to_string()),
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

/// Checks one archive, read from `path`, against its version's record.
fn check_archive(
    record: Option<&VersionRecord>,
    platform: &crate::address::Platform,
    path: &Path,
    trust: &TrustPolicy,
) -> Result<(), Refusal> {
    let record = record.ok_or("no verified metadata is stored for it")?;
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

/// Checks one module package, read from `path`, against its pin: its
/// SHA-256, and the `h1:` of its tree repacked (unpacking under `tmp`).
fn check_package(
    pin: &ModuleRecord,
    path: &Path,
    tmp: &Path,
    max_unpacked: u64,
) -> Result<(), Refusal> {
    let actual = verify::sha256_of_file(path).map_err(|e| format!("reading it failed: {e}"))?;
    if actual != pin.sha256 {
        return Err(format!("its SHA-256 {actual} differs from its pin's {}", pin.sha256).into());
    }
    let packed = std::fs::File::open(path)
        .map_err(crate::module_source::tree::TreeError::from)
        .and_then(|f| crate::module_source::tree::repack(f, tmp, max_unpacked))
        .map_err(|e| format!("its tree cannot be read: {e}"))?;
    if packed.h1 != pin.h1 {
        return Err(format!(
            "its tree hashes to {} where its pin says {}",
            packed.h1, pin.h1
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

/// `tfmirror verify` on a bucket, through the store: each object is read
/// into one scratch file under `cache.dir` (room for the largest object is
/// all it needs) and checked there; what fails is removed from the bucket
/// (module pins stay) and kept on this host under `cache.dir/quarantine/`.
/// The bucket is read without its local tier, so the bytes checked are the
/// bucket's own.
fn verify_bucket(config: &Config, trust: &TrustPolicy) -> anyhow::Result<()> {
    let mut direct = config.clone();
    if let Some(s3) = &mut direct.storage.s3 {
        s3.local_cache = None;
    }
    let bucket = crate::store::open(&direct, false)?;
    let runtime = super::runtime()?;
    let started = std::time::Instant::now();
    let max_unpacked = config.modules.max_unpacked_size.as_u64();
    std::fs::create_dir_all(&config.cache.dir)?;
    let work = tempfile::Builder::new()
        .prefix("verify-")
        .tempdir_in(&config.cache.dir)
        .with_context(|| {
            format!(
                "making a scratch directory in {}",
                config.cache.dir.display()
            )
        })?;
    // The disk layout, for the names findings are reported and kept under.
    let layout = DiskStore::open(work.path())?;
    let kept = config.cache.dir.join("quarantine").join(format!(
        "{}-{}",
        humantime::format_rfc3339_seconds(std::time::SystemTime::now()),
        std::process::id()
    ));
    let location = bucket.location();
    let pins: Vec<ModuleRecord> = runtime
        .block_on(bucket.list_modules())
        .with_context(|| format!("listing the modules in {location}"))?
        .into_iter()
        .filter_map(|(pin, held)| held.then_some(pin))
        .collect();
    let archives = runtime
        .block_on(bucket.list_archives())
        .with_context(|| format!("listing the archives in {location}"))?;
    let mut report = Report::default();
    let mut progress = Progress::new();
    progress.start(
        (pins.len() + archives.len()) as u64,
        "archives and module packages",
    );
    let scratch = work.path().join("object");
    let fail = |relative: PathBuf, reason: String, report: &mut Report| -> anyhow::Result<()> {
        let dest = kept.join(&relative);
        std::fs::create_dir_all(dest.parent().expect("has a parent"))?;
        std::fs::rename(&scratch, &dest)
            .with_context(|| format!("keeping {} in {}", relative.display(), kept.display()))?;
        tracing::error!(object = %relative.display(), %reason, "quarantined");
        progress.line(&format!("QUARANTINED {}: {reason}", relative.display()));
        report.quarantined.push(Finding {
            archive: relative,
            reason,
        });
        Ok(())
    };
    for pin in pins {
        progress.tick();
        report.checked += 1;
        report.bytes += pin.size;
        let relative = relative_to(
            &layout,
            layout.module_package_path(&pin.module, &pin.version),
        );
        let opened = runtime.block_on(bucket.open_module(&pin.module, &pin.version))?;
        let Some(opened) = opened else { continue };
        runtime.block_on(copy_into(opened, &scratch))?;
        if let Err(Refusal(reason)) = check_package(&pin, &scratch, layout.tmp_dir(), max_unpacked)
        {
            fail(relative, reason, &mut report)?;
            runtime
                .block_on(bucket.remove_module(&pin.module, &pin.version))
                .with_context(|| {
                    format!(
                        "removing module {} {} from {location}",
                        pin.module, pin.version
                    )
                })?;
        }
    }
    let mut records: BTreeMap<_, Option<VersionRecord>> = BTreeMap::new();
    for archive in archives {
        progress.tick();
        report.checked += 1;
        report.bytes += archive.size;
        let key = archive.key();
        let relative = relative_to(
            &layout,
            layout.archive_path(&key.provider, &key.version, &key.platform),
        );
        let record = match records.entry((key.provider.clone(), key.version.clone())) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) => e.insert(
                runtime
                    .block_on(bucket.read_version(&key.provider, &key.version))
                    .with_context(|| format!("reading the record of {key} from {location}"))?,
            ),
        };
        let Some(opened) = runtime.block_on(bucket.open_archive(&key))? else {
            continue;
        };
        runtime.block_on(copy_into(opened, &scratch))?;
        if let Err(Refusal(reason)) = check_archive(record.as_ref(), &key.platform, &scratch, trust)
        {
            fail(relative, reason, &mut report)?;
            runtime
                .block_on(bucket.remove_archive(&key))
                .with_context(|| format!("removing {key} from {location}"))?;
        }
    }
    progress.finish();
    summarize(&report, started, &kept)
}

/// Writes an opened object to `path`.
async fn copy_into(opened: crate::store::ArchiveReader, path: &Path) -> std::io::Result<()> {
    let mut file = tokio::fs::File::create(path).await?;
    tokio::io::copy(&mut opened.into_reader(), &mut file).await?;
    file.sync_all().await
}

/// A path of `layout`, relative to its root.
fn relative_to(layout: &DiskStore, path: PathBuf) -> PathBuf {
    path.strip_prefix(layout.root())
        .map(Path::to_path_buf)
        .unwrap_or(path)
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
