//! CLI releases in bundles: each held release's record (its signed
//! checksum document and signatures), then the files held of it. An
//! import checks the record's signatures with this site's `[releases]`
//! keys and each file's SHA-256 against the signed document before it is
//! kept.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;

use super::staging::{read_small, stage, Imported};
use super::{ManifestRelease, ROOT};
use crate::address::{ArtifactName, Product, ReleaseFile, Version};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::releases::evidence::{check_record, listed_sha256};
use crate::releases::Source;
use crate::site::inventory::SiteInventory;
use crate::store::release_builds::{self, ReleaseBuildRecord};
use crate::store::{ReleaseRecord, Store, StoreError};

/// The name of a release's record in its bundle directory.
const RECORD: &str = "release.json";

/// The bundle directory of a release.
pub(super) fn release_entry_dir(product: Product, version: &Version) -> String {
    format!("{ROOT}/releases/{product}/{version}")
}

/// A held release chosen for a bundle: its record and the files to carry,
/// with their sizes.
pub(super) type Chosen = (ReleaseRecord, BTreeMap<ArtifactName, u64>);

/// The releases `store` holds, each with the files it holds that its
/// signed checksum document lists (a record without such files is left
/// out). For a delta, the files `keep` says the site holds are left out.
pub(super) async fn held(
    store: &dyn Store,
    mut keep: impl FnMut(&ReleaseRecord, &ArtifactName, &str) -> bool,
) -> Result<Vec<Chosen>, StoreError> {
    let mut out = Vec::new();
    for (record, files) in store.list_releases().await? {
        let mut chosen = BTreeMap::new();
        for (name, size) in files {
            let Ok(name) = ArtifactName::parse(&name) else {
                continue;
            };
            let Some(sha256) = listed_sha256(&record, &name) else {
                continue;
            };
            if keep(&record, &name, &sha256) {
                chosen.insert(name, size);
            }
        }
        if !chosen.is_empty() {
            out.push((record, chosen));
        }
    }
    Ok(out)
}

/// Records the chosen releases' files in what the site holds once the
/// bundle is imported.
pub(super) fn cover(covers: &mut SiteInventory, chosen: &[Chosen]) {
    for (record, files) in chosen {
        for name in files.keys() {
            if let Some(sha256) = listed_sha256(record, name) {
                covers.add_release_file(record.product, &record.version, name.clone(), sha256);
            }
        }
    }
}

/// Splits `tfmirror-bundle/releases/<product>/<version>/<leaf>` into
/// validated parts, each in its one normal spelling.
pub(super) fn parse_release_path(path: &str) -> Option<(Product, Version, String)> {
    let rest = path.strip_prefix(ROOT)?.strip_prefix("/releases/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [product, version, leaf] = parts.as_slice() else {
        return None;
    };
    let parsed: Product = product.parse().ok()?;
    if parsed.as_str() != *product {
        return None;
    }
    let v = Version::parse(version).ok()?;
    if v.as_str() != *version {
        return None;
    }
    Some((parsed, v, (*leaf).to_owned()))
}

/// The release entries of a bundle, as they are read.
pub(super) struct Releases {
    /// This site's enabled products' sources (with their keys).
    sources: Vec<Source>,
    /// Records verified here, waiting for their files.
    records: BTreeMap<(Product, Version), ReleaseRecord>,
    /// Releases refused.
    refused: BTreeSet<(Product, Version)>,
    /// Files checked and kept (or held already).
    delivered: BTreeSet<ReleaseFile>,
}

impl Releases {
    /// Ready to read the release entries of a bundle, checked against
    /// `sources`.
    pub(super) fn new(sources: Vec<Source>) -> Releases {
        Releases {
            sources,
            records: BTreeMap::new(),
            refused: BTreeSet::new(),
            delivered: BTreeSet::new(),
        }
    }

    /// Handles one release entry: a record, or a file after it.
    pub(super) fn entry(
        &mut self,
        store: &CommandStore,
        report: &mut Imported,
        (product, version, leaf): (Product, Version, String),
        entry: &mut impl Read,
    ) {
        let key = (product, version);
        if leaf == RECORD {
            let item = format!("{} {}", product.title(), key.1);
            match self.record(store, &key, entry) {
                Ok(record) => {
                    self.records.insert(key, record);
                }
                Err(reason) => {
                    self.refused.insert(key);
                    report.rejected.push((item, reason.to_string()));
                }
            }
            return;
        }
        let item = format!("{} {} {leaf}", product, key.1);
        let outcome = ArtifactName::parse(&leaf)
            .map_err(|e| Refusal::from(e.to_string()))
            .and_then(|name| self.file(store, &key, name, entry));
        match outcome {
            Ok(true) => report.archives += 1,
            Ok(false) => report.unchanged += 1,
            Err(reason) => report.rejected.push((item, reason.to_string())),
        }
    }

    /// Reads and checks a release's record: this site must serve the
    /// product and the version, the signatures must verify with its keys,
    /// and a record the cache holds must name the same checksums.
    fn record(
        &self,
        store: &CommandStore,
        (product, version): &(Product, Version),
        entry: &mut impl Read,
    ) -> Result<ReleaseRecord, Refusal> {
        let source = self.source(*product)?;
        if !source.serves_version(version) {
            return Err(format!("{version} is outside releases.{product}.versions here").into());
        }
        let bytes = read_small(entry).map_err(|e| Refusal::from(e.to_string()))?;
        let record: ReleaseRecord =
            serde_json::from_slice(&bytes).map_err(|e| format!("its record is not valid: {e}"))?;
        if record.product != *product || record.version != *version {
            return Err(format!(
                "its record is for {} {} instead",
                record.product, record.version
            )
            .into());
        }
        let record = check_record(source, record)?;
        let held = store
            .wait(store.store().read_release(*product, version))
            .map_err(|e| format!("the record this cache holds cannot be read: {e}"))?;
        match held {
            Some(h) if h.sums != record.sums => Err(format!(
                "its {} differs from the one this cache holds",
                record.sums_name
            )
            .into()),
            _ => Ok(record),
        }
    }

    /// Checks one file against its release's verified record and keeps
    /// it; `Ok(false)` when the cache holds it already.
    fn file(
        &mut self,
        store: &CommandStore,
        key: &(Product, Version),
        name: ArtifactName,
        entry: &mut impl Read,
    ) -> Result<bool, Refusal> {
        let (product, version) = key;
        let Some(record) = self.records.get(key) else {
            return Err(if self.refused.contains(key) {
                "its release's record was refused"
            } else {
                "its release's record does not come before it"
            }
            .into());
        };
        let sha256 = listed_sha256(record, &name)
            .ok_or_else(|| format!("it is not listed in the signed {}", record.sums_name))?;
        if let Some(platform) = product.platform_of(version, &name) {
            if !self.source(*product)?.serves_platform(&platform) {
                return Err(
                    format!("{platform} is outside releases.{product}.platforms here").into(),
                );
            }
        }
        let file = ReleaseFile {
            product: *product,
            version: version.clone(),
            name,
        };
        let held = store
            .wait(store.store().open_release_file(&file))
            .map_err(|e| format!("the cache cannot be read: {e}"))?
            .is_some();
        if held {
            self.delivered.insert(file);
            return Ok(false);
        }
        let (staged, actual) = stage(store, entry)?;
        if actual != sha256 {
            return Err(format!(
                "its SHA-256 {actual} does not match the signed {} ({sha256})",
                record.sums_name
            )
            .into());
        }
        // The build record is read here, from the file just checked: it
        // is the file's own word, not the bundle's.
        let build = release_build_record(&file, &sha256, &staged);
        store
            .wait(store.store().keep_release_file(staged, &file, &sha256))
            .map_err(|e| format!("storing it failed: {e}"))?;
        if let Some(build) = build {
            if let Err(e) = store.wait(release_builds::write(store.store(), &build)) {
                tracing::warn!(%file, error = %e, "could not keep a build record; it is read again when next asked for");
            }
        }
        self.delivered.insert(file);
        Ok(true)
    }

    /// The source of a product this site serves.
    fn source(&self, product: Product) -> Result<&Source, Refusal> {
        self.sources
            .iter()
            .find(|s| s.product == product)
            .ok_or_else(|| {
                format!(
                    "this site does not serve {} releases: add \"{product}\" to releases.products",
                    product.title()
                )
                .into()
            })
    }

    /// Stores the verified records the cache lacks, lists their versions,
    /// and reports what the manifest names that did not arrive.
    pub(super) fn finish(
        self,
        store: &CommandStore,
        manifest: &[ManifestRelease],
        report: &mut Imported,
    ) {
        let mut by_product: BTreeMap<Product, Vec<Version>> = BTreeMap::new();
        for ((product, version), record) in &self.records {
            let stored = store.wait(async {
                if store
                    .store()
                    .read_release(*product, version)
                    .await?
                    .is_none()
                {
                    store.store().write_release(record).await?;
                }
                Ok::<_, StoreError>(())
            });
            match stored {
                Ok(()) => {
                    report.releases += 1;
                    by_product
                        .entry(*product)
                        .or_default()
                        .push(version.clone());
                }
                Err(e) => report.rejected.push((
                    format!("{} {version}", product.title()),
                    format!("storing its record failed: {e}"),
                )),
            }
        }
        for (product, versions) in by_product {
            let listed = crate::releases::list_held_versions(store.store(), product, versions);
            if let Err(e) = store.wait(listed) {
                report.rejected.push((
                    format!("{} releases", product.title()),
                    format!("listing their versions failed: {e}"),
                ));
            }
        }
        for mr in manifest {
            let key = (mr.product, mr.version.clone());
            if self.refused.contains(&key) {
                continue;
            }
            for name in mr.files.keys() {
                let file = ReleaseFile {
                    product: mr.product,
                    version: mr.version.clone(),
                    name: name.clone(),
                };
                if !self.delivered.contains(&file) && !report_names(report, &file) {
                    report.rejected.push((
                        file.to_string(),
                        "missing from the bundle (truncated?)".into(),
                    ));
                }
            }
        }
    }
}

/// Whether the report already says why `file` was refused.
fn report_names(report: &Imported, file: &ReleaseFile) -> bool {
    let item = file.to_string();
    report.rejected.iter().any(|(i, _)| *i == item)
}

/// The build record of a staged release zip whose SHA-256 was checked;
/// `None` for a file that is no platform's zip.
fn release_build_record(
    file: &ReleaseFile,
    sha256: &str,
    staged: &std::path::Path,
) -> Option<ReleaseBuildRecord> {
    let platform = file.zip_platform()?;
    let archive = std::fs::File::open(staged).ok()?;
    let now = crate::clock::unix_ms_of(std::time::SystemTime::now());
    // Without the site's database's symbols, as a provider archive's.
    Some(ReleaseBuildRecord::from_archive(
        file,
        &platform,
        sha256,
        archive,
        &crate::store::builds::Unpacking {
            scratch: staged.parent()?,
            max_size: crate::gobuild::MAX_EXECUTABLE_SIZE,
            read_at_ms: now,
            wanted: &crate::gobuild::Wanted::default(),
        },
    ))
}
