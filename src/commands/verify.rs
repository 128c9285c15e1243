//! `tfmirror verify`: re-checks every cached archive against the evidence
//! kept with it, through the store, whichever backend holds the cache. For
//! each archive, the stored SHA256SUMS must still carry a valid signature
//! by a key that counts for it (the stored registry keys, or the keys
//! `[[trust]]` rules pin), must list the archive with the recorded
//! checksum, and the archive's SHA-256 must match it. Each module package
//! must match its pin: the package's SHA-256, and the `h1:` hash of its
//! tree computed afresh. A file of a disk cache is checked where it lies;
//! an object of a bucket is read into one scratch file under `cache.dir`
//! (room for the largest object is all it needs), so the bytes checked are
//! the bucket's own. What fails is removed from the store and a copy kept
//! on this host under `<cache.dir>/quarantine/`, where nothing serves it;
//! a module's pin stays, so the next fetch is checked against it. Each
//! CLI release file must be listed in its release's checksum document,
//! whose signature must still verify with the `[releases]` keys, with the
//! SHA-256 the file has.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::Seek;
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::keyless;
use super::progress::Progress;
use super::store::CommandStore;
use super::Refusal;
use crate::address::{ArchiveKey, ArtifactName, Module, Product, ReleaseFile, Version};
use crate::config::Config;
use crate::releases::evidence::{check_record as check_release_record, listed_sha256};
use crate::releases::Source;
use crate::store::builds::{self, BuildRecord};
use crate::store::{ArchiveReader, ArchiveSource, ModuleRecord, VersionRecord};
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
    /// Build records made for archives that had none.
    pub builds_recorded: usize,
}

/// Where a verification reads and keeps what it checks.
struct Places {
    /// A scratch directory for objects read from a store that has no
    /// files, and for unpacking module packages.
    work: tempfile::TempDir,
    /// Where failures are kept, in the disk cache's layout.
    quarantine: PathBuf,
    /// The symbols the store's advisory database names, looked for in
    /// each binary read.
    wanted: crate::gobuild::Wanted,
}

impl Places {
    /// The file `opened` can be checked in: the store's own file, or the
    /// object copied into the scratch file.
    fn checkable(&self, store: &CommandStore, opened: ArchiveReader) -> std::io::Result<File> {
        match opened.source {
            ArchiveSource::File(file) => Ok(file),
            ArchiveSource::Reader(mut reader) => {
                let path = self.work.path().join("object");
                store.wait(async {
                    let mut out = tokio::fs::File::create(&path).await?;
                    tokio::io::copy(&mut reader, &mut out).await?;
                    out.sync_all().await
                })?;
                File::open(&path)
            }
        }
    }

    /// Keeps a copy of a failed file under `quarantine/<relative>`.
    fn keep(&self, file: &mut File, relative: &Path) -> anyhow::Result<()> {
        let dest = self.quarantine.join(relative);
        let dir = dest.parent().expect("has a parent");
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        file.rewind()?;
        let mut temp = crate::store::atomic::temp_file(dir)?;
        std::io::copy(file, &mut temp)?;
        temp.as_file().sync_all()?;
        crate::store::atomic::persist(temp.into_temp_path(), &dest)
            .with_context(|| format!("keeping {}", dest.display()))
    }
}

/// Checks every archive and module package the store holds; removes those
/// that fail from the store and keeps a copy under `quarantine`. On a
/// terminal, a bar shows how far it got.
fn verify_store(
    store: &CommandStore,
    trust: &TrustPolicy,
    sources: &[Source],
    max_unpacked: u64,
    places: &Places,
) -> anyhow::Result<Report> {
    let location = store.location();
    let pins: Vec<ModuleRecord> = store
        .wait(store.store().list_modules())
        .with_context(|| format!("listing the modules in {location}"))?
        .into_iter()
        .filter_map(|(pin, held)| held.then_some(pin))
        .collect();
    let archives = store
        .wait(store.store().list_archives())
        .with_context(|| format!("listing the archives in {location}"))?;
    let releases = store
        .wait(store.store().list_releases())
        .with_context(|| format!("listing the CLI releases in {location}"))?;
    let release_files: usize = releases.iter().map(|(_, files)| files.len()).sum();
    let mut report = Report::default();
    let progress = Progress::new();
    progress.start(
        (pins.len() + archives.len() + release_files) as u64,
        "archives, module packages and release files",
    );
    let failed = |relative: PathBuf, reason: String, report: &mut Report| {
        tracing::error!(object = %relative.display(), %reason, "quarantined");
        progress.line(&format!("QUARANTINED {}: {reason}", relative.display()));
        report.quarantined.push(Finding {
            archive: relative,
            reason,
        });
    };
    for pin in pins {
        progress.tick();
        report.checked += 1;
        report.bytes += pin.size;
        let (m, v) = (&pin.module, &pin.version);
        let Some(opened) = store.wait(store.store().open_module(m, v))? else {
            continue;
        };
        let mut file = places.checkable(store, opened)?;
        if let Err(Refusal(reason)) =
            check_package(&pin, &mut file, places.work.path(), max_unpacked)
        {
            let relative = package_relative(m, v);
            places.keep(&mut file, &relative)?;
            store
                .wait(store.store().remove_module(m, v))
                .with_context(|| format!("removing module {m} {v} from {location}"))?;
            failed(relative, reason, &mut report);
        }
    }
    // Each version's record, read once; a record that cannot be read
    // fails each of its archives.
    let mut records: BTreeMap<_, Result<Option<VersionRecord>, String>> = BTreeMap::new();
    for archive in archives {
        progress.tick();
        report.checked += 1;
        report.bytes += archive.size;
        let key = archive.key();
        let record = records
            .entry((key.provider.clone(), key.version.clone()))
            .or_insert_with(|| {
                store
                    .wait(store.store().read_version(&key.provider, &key.version))
                    .map_err(|e| format!("its metadata cannot be read: {e}"))
            });
        let Some(opened) = store.wait(store.store().open_archive(&key))? else {
            continue;
        };
        let mut file = places.checkable(store, opened)?;
        let checked =
            match record {
                Ok(record) => check_archive(record.as_ref(), &key.platform, &mut file, trust)
                    .and_then(|()| match record {
                        Some(r) if keyless::is_keyless(r) => {
                            check_keyless(store, r, &key, &mut file)
                        }
                        _ => Ok(()),
                    }),
                Err(unreadable) => Err(Refusal::from(unreadable.clone())),
            };
        if let (Ok(()), Ok(Some(record))) = (&checked, record) {
            if record_build(store, &key, record, &file, places)? {
                report.builds_recorded += 1;
            }
        }
        if let Err(Refusal(reason)) = checked {
            let relative = archive_relative(&key);
            places.keep(&mut file, &relative)?;
            store
                .wait(store.store().remove_archive(&key))
                .with_context(|| format!("removing {key} from {location}"))?;
            failed(relative, reason, &mut report);
        }
    }
    for (record, files) in releases {
        let checked_record = sources
            .iter()
            .find(|s| s.product == record.product)
            .ok_or_else(|| format!("no source for {}", record.product))
            .and_then(|source| check_release_record(source, record.clone()));
        for (name, size) in files {
            progress.tick();
            report.checked += 1;
            report.bytes += size;
            let Ok(name) = ArtifactName::parse(&name) else {
                continue;
            };
            let file = ReleaseFile {
                product: record.product,
                version: record.version.clone(),
                name,
            };
            let Some(opened) = store.wait(store.store().open_release_file(&file))? else {
                continue;
            };
            let mut bytes = places.checkable(store, opened)?;
            let checked = checked_record
                .as_ref()
                .map_err(|e| Refusal::from(format!("its release's record: {e}")))
                .and_then(|r| {
                    let listed = listed_sha256(r, &file.name)
                        .ok_or_else(|| format!("it is not listed in the signed {}", r.sums_name))?;
                    let actual = sha256_of(&mut bytes)?;
                    if actual == listed {
                        Ok(())
                    } else {
                        Err(format!("its SHA-256 {actual} differs from the signed {listed}").into())
                    }
                });
            if let Err(Refusal(reason)) = checked {
                let relative = release_relative(&file);
                places.keep(&mut bytes, &relative)?;
                store
                    .wait(store.store().remove_release_file(&file))
                    .with_context(|| format!("removing {file} from {location}"))?;
                failed(relative, reason, &mut report);
            }
        }
    }
    progress.finish();
    Ok(report)
}

/// Reads and keeps the build record ([`crate::store::builds`]) of an
/// archive that passed, when the store has none, an earlier reading made
/// its packages ([`builds::PACKAGES_READER`]) or it looked for other
/// symbols than the store's database names; whether it made one.
fn record_build(
    store: &CommandStore,
    key: &ArchiveKey,
    record: &VersionRecord,
    file: &File,
    places: &Places,
) -> anyhow::Result<bool> {
    let Some(pkg) = record.packages.get(&key.platform) else {
        return Ok(false);
    };
    match store.wait(builds::read(store.store(), key)) {
        Ok(Some(kept)) if kept.current_for(&places.wanted) => return Ok(false),
        // None kept, or one whose packages an earlier reading made: read
        // (again).
        Ok(None | Some(_)) => {}
        Err(e) => {
            tracing::warn!(archive = %key, error = %e, "a build record this build cannot read is left as it is");
            return Ok(false);
        }
    }
    let made = BuildRecord::from_archive(
        key,
        &pkg.sha256,
        file.try_clone()?,
        &builds::Unpacking {
            scratch: places.work.path(),
            max_size: crate::gobuild::MAX_EXECUTABLE_SIZE,
            read_at_ms: crate::clock::unix_ms_of(std::time::SystemTime::now()),
            wanted: &places.wanted,
        },
    );
    store
        .wait(builds::write(store.store(), &made))
        .with_context(|| format!("keeping the build record of {key}"))?;
    Ok(true)
}

/// Where a release file lies in the disk cache's layout, relative to its
/// root.
fn release_relative(file: &ReleaseFile) -> PathBuf {
    [
        "releases",
        file.product.as_str(),
        file.version.as_str(),
        "files",
        file.name.as_str(),
    ]
    .iter()
    .collect()
}

/// Where an archive lies in the disk cache's layout, relative to its root.
fn archive_relative(key: &ArchiveKey) -> PathBuf {
    let p = &key.provider;
    [
        "providers",
        p.hostname.as_str(),
        p.namespace.as_str(),
        p.kind.as_str(),
        key.version.as_str(),
    ]
    .iter()
    .collect::<PathBuf>()
    .join(p.archive_name(&key.version, &key.platform))
}

/// Where a module package lies in the disk cache's layout, relative to its
/// root.
fn package_relative(m: &Module, v: &Version) -> PathBuf {
    [
        "modules",
        m.hostname.as_str(),
        m.namespace.as_str(),
        m.name.as_str(),
        m.system.as_str(),
        v.as_str(),
        "package.tar.gz",
    ]
    .iter()
    .collect()
}

/// Checks one archive against its version's record.
fn check_archive(
    record: Option<&VersionRecord>,
    platform: &crate::address::Platform,
    file: &mut File,
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
            crate::store::evidence::check_record(trust, record).map(|_| ()),
        )
    };
    against?;
    let actual = sha256_of(file)?;
    if actual != pkg.sha256 {
        return Err(format!(
            "its SHA-256 {actual} differs from the {checked} {}",
            pkg.sha256
        )
        .into());
    }
    Ok(())
}

/// Checks one module package against its pin: its SHA-256, and the `h1:`
/// of its tree repacked (unpacking under `tmp`).
fn check_package(
    pin: &ModuleRecord,
    file: &mut File,
    tmp: &Path,
    max_unpacked: u64,
) -> Result<(), Refusal> {
    let actual = sha256_of(file)?;
    if actual != pin.sha256 {
        return Err(format!("its SHA-256 {actual} differs from its pin's {}", pin.sha256).into());
    }
    let packed = file
        .rewind()
        .and_then(|()| file.try_clone())
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

/// The SHA-256 (hex) of a file read from its start.
/// Holds a keyless version's record and archive to the version's pin:
/// the record's SHA256SUMS and checksums, the archive's size and `h1:`.
fn check_keyless(
    store: &CommandStore,
    record: &VersionRecord,
    key: &ArchiveKey,
    file: &mut File,
) -> Result<(), Refusal> {
    keyless::agrees_with_pin(store, record.clone())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    let h1 = file.rewind().map_err(|e| e.to_string()).and_then(|()| {
        verify::h1_of_zip(std::io::BufReader::new(&mut *file)).map_err(|e| e.to_string())
    })?;
    keyless::check_archive(store, record, &key.platform, (size, h1))
}

fn sha256_of(file: &mut File) -> Result<String, Refusal> {
    file.rewind()
        .and_then(|()| verify::sha256_of_reader(file))
        .map_err(|e| format!("reading it failed: {e}").into())
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
        "checked {} archives, module packages and release files, quarantined {}",
        report.checked,
        report.quarantined.len()
    );
    if report.builds_recorded > 0 {
        println!(
            "recorded the build information of {} archives that had none",
            report.builds_recorded
        );
    }
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
    let trust = config.trust_policy()?;
    let store = CommandStore::open(config)?;
    let started = std::time::Instant::now();
    let places = Places {
        work: tempfile::Builder::new()
            .prefix("verify-")
            .tempdir_in(&config.cache.dir)
            .with_context(|| {
                format!(
                    "making a scratch directory in {}",
                    config.cache.dir.display()
                )
            })?,
        quarantine: config.cache.dir.join("quarantine"),
        wanted: crate::commands::store::held_database(&store)?
            .map(|db| db.wanted.clone())
            .unwrap_or_default(),
    };
    let sources = Product::ALL
        .iter()
        .map(|&p| config.releases.source_for(p))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = verify_store(
        &store,
        &trust,
        &sources,
        config.modules.max_unpacked_size.as_u64(),
        &places,
    )
    .context("verifying the cache")?;
    summarize(&report, started, &places.quarantine)
}
