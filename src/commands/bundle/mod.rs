//! Bundles: one file that carries cached providers across an air gap with
//! the evidence that verified them, and the import that checks everything
//! again before anything enters the receiving cache.
//!
//! A bundle is a tar file:
//!
//! ```text
//! tfmirror-bundle/manifest.json            format, contents, sizes, checksums
//! tfmirror-bundle/advisories/database.json the advisory database (format 3)
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/version.json
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/<archive>.zip
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/docs.json (format 4)
//! tfmirror-bundle/providers/<hostname>/<namespace>/<type>/<version>/docs/<sha256>.md (its pages)
//! tfmirror-bundle/modules/<hostname>/<namespace>/<name>/<system>/<version>/module.json
//! tfmirror-bundle/modules/<hostname>/<namespace>/<name>/<system>/<version>/package.tar.gz
//! tfmirror-bundle/releases/<product>/<version>/release.json
//! tfmirror-bundle/releases/<product>/<version>/<file>
//! ```
//!
//! `version.json` is the version's record as the exporting cache keeps it:
//! the registry's package metadata, the SHA256SUMS documents, their
//! signatures and the signing keys the registry listed. Each record comes
//! before its archives, so an import can read a bundle in one pass.
//! `module.json` is a module version's pin (source, commit, tree hash),
//! before its package. `release.json` is a CLI release's record (its
//! checksum document and signatures), before the files held of it.
//!
//! A bundle can carry only what the receiving site lacks (a delta): what
//! the site holds comes from its inventory (`export --missing-from`) or
//! from an earlier bundle (`export --since`). Every bundle's manifest says
//! what the site holds once it has imported it and those it builds on
//! (`covers`), which is what the next `--since` leaves out.

mod advisories;
mod docs;
mod export;
mod import;
mod import_modules;
mod import_providers;
mod releases;
mod staging;
pub mod static_dir;

pub use export::{export, selected, Exported};
pub use import::{import, Checks};
pub use staging::Imported;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::address::{ArtifactName, Module, Platform, Product, Provider, Version};
use crate::commands::store::CommandStore;
use crate::config::Config;
use crate::site::inventory::SiteInventory;

/// The top directory of every bundle entry.
const ROOT: &str = "tfmirror-bundle";
/// The bundle format this build writes: 2, since manifests say what the
/// site holds once imported (`covers`), which format-1 readers refuse.
const FORMAT: u32 = 2;
/// The format of a bundle that carries the advisory database, which
/// format-2 readers refuse.
const FORMAT_WITH_ADVISORIES: u32 = 3;
/// The bundle formats this build reads.
const FORMATS: std::ops::RangeInclusive<u32> = 1..=docs::FORMAT_WITH_DOCS;
/// The largest `version.json` or manifest read from a bundle.
const MAX_RECORD_BYTES: u64 = 8 * 1024 * 1024;

/// `manifest.json`: what a bundle holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The bundle format: 2 as written by this build (3 when it carries
    /// the advisory database, 4 when it carries documentation), 1 from
    /// builds before the first release.
    pub format: u32,
    /// The tfmirror version that wrote it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub written_by: Option<String>,
    /// When it was written, in milliseconds since the Unix epoch.
    pub created_ms: u64,
    /// The versions in it.
    pub versions: Vec<ManifestVersion>,
    /// The module versions in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub modules: Vec<ManifestModule>,
    /// The CLI releases in it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub releases: Vec<ManifestRelease>,
    /// What the receiving site holds once it has imported this bundle and
    /// the ones it builds on: its own contents, and for a delta, what the
    /// site held before (the inventory, or the earlier bundle's `covers`),
    /// in the form of an inventory document.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub covers: Option<SiteInventory>,
    /// The advisory database it carries (format 3).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisories: Option<advisories::ManifestAdvisories>,
}

impl Manifest {
    /// What the receiving site holds once it has imported this bundle:
    /// its `covers`, or, for a bundle that does not say, what it carries
    /// (hashes unknown).
    pub fn coverage(&self) -> SiteInventory {
        if let Some(covers) = &self.covers {
            return covers.clone();
        }
        let mut out = SiteInventory::default();
        for mv in &self.versions {
            for platform in mv.archives.keys() {
                out.add_archive(
                    &crate::address::ArchiveKey::new(&mv.provider, &mv.version, platform),
                    Vec::new(),
                );
            }
        }
        for mm in &self.modules {
            out.add_module(
                &mm.module,
                &mm.version,
                crate::site::inventory::HeldModule {
                    h1: String::new(),
                    commit: None,
                },
            );
        }
        for mr in &self.releases {
            for name in mr.files.keys() {
                out.add_release_file(mr.product, &mr.version, name.clone(), String::new());
            }
        }
        out
    }
}

/// Reads a bundle's manifest (its first entry), and nothing else of it.
pub fn read_manifest(bundle: &Path) -> anyhow::Result<Manifest> {
    let file =
        std::fs::File::open(bundle).with_context(|| format!("opening {}", bundle.display()))?;
    let mut tar = tar::Archive::new(std::io::BufReader::new(file));
    let mut entries = tar
        .entries()
        .with_context(|| format!("{} is not a tar file", bundle.display()))?;
    let mut first = entries
        .next()
        .with_context(|| format!("{} is empty", bundle.display()))?
        .with_context(|| format!("{} is not a tar file", bundle.display()))?;
    let path = first.path()?.to_string_lossy().into_owned();
    if path != format!("{ROOT}/manifest.json") {
        anyhow::bail!(
            "{} is not a tfmirror bundle: it starts with {path:?}, not its manifest",
            bundle.display()
        );
    }
    let mut bytes = Vec::new();
    (&mut first)
        .take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .context("reading the manifest")?;
    parse_manifest(&bytes, bundle)
}

/// A manifest's format and writer, read past every other field.
#[derive(Deserialize)]
struct ManifestFormat {
    format: u32,
    #[serde(default)]
    written_by: Option<String>,
}

/// Reads the manifest of `bundle`, in a format this build reads.
fn parse_manifest(bytes: &[u8], bundle: &Path) -> anyhow::Result<Manifest> {
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        anyhow::bail!("the manifest is larger than 8 MiB");
    }
    // The format first, from a reading that passes over every other
    // field: a newer bundle is refused for being newer, not for a field
    // this build does not know.
    let f: ManifestFormat = serde_json::from_slice(bytes).context("the manifest is not valid")?;
    crate::store::format::check_readable(
        format!("bundle {}", bundle.display()),
        "bundle",
        f.format,
        f.written_by,
        FORMATS,
    )
    .map_err(anyhow::Error::msg)?;
    serde_json::from_slice(bytes).context("the manifest is not valid")
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

/// One CLI release of a [`Manifest`].
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ManifestRelease {
    /// The product.
    pub product: Product,
    /// The version.
    pub version: Version,
    /// The files included, with their sizes.
    pub files: BTreeMap<ArtifactName, u64>,
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
    /// When the exporting mirror first saw the version in its origin's
    /// list, if it appeared after the first listing (milliseconds since
    /// the Unix epoch): an importing site's `policy.min_age` counts from
    /// it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_seen_ms: Option<u64>,
    /// Its documentation, where the bundle carries it (format 4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub docs: Option<docs::ManifestDocs>,
}

/// Appends an entry of `bytes`.
fn append_bytes<W: std::io::Write>(
    tar: &mut tar::Builder<W>,
    path: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    use crate::clock::{Clock, SystemClock};
    let mut header = tar::Header::new_gnu();
    header.set_size(bytes.len() as u64);
    header.set_mode(0o644);
    header.set_mtime(SystemClock.unix_ms() / 1000);
    tar.append_data(&mut header, path, bytes)
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

/// What the receiving site of a delta holds: the inventory it sent
/// (`--missing-from`), or what an earlier bundle left it holding
/// (`--since`).
#[derive(Debug, Clone, Default)]
pub struct DeltaBase {
    /// `--missing-from`: the site's inventory.
    pub missing_from: Option<PathBuf>,
    /// `--since`: an earlier bundle.
    pub since: Option<PathBuf>,
}

impl DeltaBase {
    /// What the site holds, when a delta is asked for.
    fn read(&self) -> anyhow::Result<Option<SiteInventory>> {
        match (&self.missing_from, &self.since) {
            (Some(inventory), _) => SiteInventory::read(inventory).map(Some),
            (None, Some(bundle)) => Ok(Some(read_manifest(bundle)?.coverage())),
            (None, None) => Ok(None),
        }
    }
}

/// `tfmirror export`: straight from the store, whichever backend it is
/// (a bucket is read without its local tier, so an export copies nothing
/// to this host's disk but the bundle or directory it writes).
pub fn export_command(
    config: &Config,
    output: Option<PathBuf>,
    static_dir: Option<PathBuf>,
    only: &[String],
    delta: &DeltaBase,
    (with_advisories, with_docs): (bool, bool),
) -> anyhow::Result<()> {
    let only = providers(only)?;
    match (output, static_dir) {
        (Some(output), _) => {
            let site = delta.read()?;
            let store = CommandStore::open(config)?;
            let policy = super::store::gate(config, &store)?;
            let done = export(
                &store,
                &policy,
                &only,
                &output,
                site.as_ref(),
                (with_advisories, with_docs),
            )?;
            for denied in &done.denied {
                println!("LEFT OUT {denied}");
            }
            for conflict in &done.conflicts {
                println!("CONFLICT {conflict}; left out");
            }
            for why in &done.docs_left_out {
                println!("DOCS LEFT OUT {why}");
            }
            if done.docs > 0 {
                println!(
                    "DOCS the documentation of {} versions is carried, {} pages (bundle format 4)",
                    done.docs, done.doc_pages
                );
            }
            if let Some(entries) = done.advisories {
                println!("ADVISORIES the advisory database of {entries} advisories is carried (bundle format 3)");
            }
            let delta_note = if site.is_some() {
                format!(
                    " (a delta: {} archives and module versions the site holds left out)",
                    done.held_there
                )
            } else {
                String::new()
            };
            println!(
                "wrote {}: {} versions, {} archives, {} module versions, {} release files, {}{delta_note}",
                output.display(),
                done.versions,
                done.archives,
                done.modules,
                done.release_files,
                bytesize::ByteSize(done.bytes).display().iec()
            );
        }
        (None, Some(dir)) => {
            if delta.missing_from.is_some() || delta.since.is_some() {
                anyhow::bail!(
                    "--missing-from and --since make a bundle (--output), not a static directory"
                );
            }
            let store = CommandStore::open(config)?;
            let policy = super::store::gate(config, &store)?;
            let done = static_dir::export(&store, &policy, &only, &dir)?;
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

/// `tfmirror import`: into the store, whichever backend it is, with every
/// check; each archive and package is staged on this host's disk only
/// while it is checked.
pub fn import_command(
    config: &Config,
    bundle: Option<PathBuf>,
    static_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let whole = bundle.is_some();
    let (report, source, location) = match (bundle, static_dir) {
        (Some(path), _) => {
            let trust = config.trust_policy()?;
            let store = CommandStore::open(config)?;
            let checks = Checks {
                trust,
                policy: super::store::gate(config, &store)?,
                releases: config.releases.sources()?,
                max_unpacked: config.modules.max_unpacked_size.as_u64(),
            };
            let report = import(&store, checks, &path)?;
            (report, path, store.location())
        }
        (None, Some(dir)) => {
            let store = CommandStore::open(config)?;
            let policy = super::store::gate(config, &store)?;
            (
                static_dir::import(&store, &policy, &dir)?,
                dir,
                store.location(),
            )
        }
        (None, None) => anyhow::bail!("give a bundle file or --static DIR"),
    };
    for (item, reason) in &report.rejected {
        println!("REJECTED {item}: {reason}");
    }
    for (item, reason) in &report.refused {
        println!("REFUSED {item}: {reason} (kept in the cache; not served)");
    }
    if let Some(advisories) = &report.advisories {
        println!("ADVISORIES {advisories}");
    }
    if report.docs + report.docs_unchanged > 0 {
        println!(
            "DOCS the documentation of {} versions kept, {} kept already (or fetched later here)",
            report.docs, report.docs_unchanged
        );
    }
    for item in &report.not_held {
        println!(
            "NOT HELD {item}: this bundle builds on it, but this site does not hold it (did an earlier transfer not arrive?)"
        );
    }
    let mut modules = if report.modules > 0 {
        format!(
            ", {} module versions checked against their pins",
            report.modules
        )
    } else {
        String::new()
    };
    if report.releases > 0 {
        let _ = write!(
            modules,
            ", {} CLI releases verified with the [releases] keys",
            report.releases
        );
    }
    println!(
        "imported {} into {location}: {} versions verified, {} archives stored, {} already cached, {} rejected{modules}",
        source.display(),
        report.versions,
        report.archives,
        report.unchanged,
        report.rejected.len()
    );
    if report.rejected.is_empty() {
        Ok(())
    } else {
        // A bundle goes in whole or not at all; a static directory's
        // versions go in one by one.
        anyhow::bail!(
            "{} items were rejected; {}",
            report.rejected.len(),
            if whole {
                "nothing else was changed"
            } else {
                "the rest was imported as the summary counts"
            }
        )
    }
}
