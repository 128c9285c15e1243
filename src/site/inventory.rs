//! What a site holds, as one small, stable JSON document (`tfmirror
//! inventory`): every provider version with the platforms whose archives
//! it holds and their hashes, every module version with its pin, and every
//! CLI release file held with its SHA-256. The
//! connected side reads it to export only what the site lacks (`tfmirror
//! export --missing-from`); a bundle records what the receiving site holds
//! once it is imported (its manifest's `covers`), so that the next export
//! can carry only what came after it (`--since`).
//!
//! ```json
//! {
//!   "tfmirror_inventory": 2,
//!   "providers": {
//!     "registry.terraform.io/hashicorp/aws": {
//!       "5.0.0": { "linux_amd64": ["h1:…", "zh:…"] }
//!     }
//!   },
//!   "modules": {
//!     "registry.terraform.io/acme/net/aws": {
//!       "1.0.0": { "h1": "h1:…", "commit": "…" }
//!     }
//!   },
//!   "releases": {
//!     "terraform": {
//!       "1.9.5": { "terraform_1.9.5_linux_amd64.zip": "…" }
//!     }
//!   }
//! }
//! ```
//!
//! The same holdings always give the same bytes: maps are sorted, and no
//! time is recorded.

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::Context;
use serde::{Deserialize, Serialize};

use crate::address::{ArchiveKey, ArtifactName, Module, Platform, Product, Provider, Version};
use crate::store::{ModuleRecord, Store, StoreError};
pub use docs::HeldDocs;

/// The format this build writes where the inventory lists documentation
/// (`docs`, `doc_pages`), which format-2 readers refuse; one that lists
/// none is written in [`FORMAT_WITHOUT_DOCS`].
pub const FORMAT: u32 = 3;

/// The format of an inventory that lists no documentation: 2, since
/// inventories list CLI release files (`releases`), which format-1 readers
/// refuse.
pub const FORMAT_WITHOUT_DOCS: u32 = 2;

/// The formats this build reads.
pub const FORMATS: std::ops::RangeInclusive<u32> = 1..=FORMAT;

/// The largest inventory read: room for about 3.5 million pages of
/// documentation beside the rest.
const MAX_BYTES: u64 = 256 * 1024 * 1024;

/// What a site holds of one module version: its pin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeldModule {
    /// The `h1:` hash of the packaged tree; empty when not known (a bundle
    /// written before bundles recorded what they cover).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub h1: String,
    /// For git sources, the commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
}

impl From<&ModuleRecord> for HeldModule {
    fn from(pin: &ModuleRecord) -> Self {
        HeldModule {
            h1: pin.h1.clone(),
            commit: pin.commit.clone(),
        }
    }
}

/// The document as written: addresses as strings, so that they can be
/// keys.
#[derive(Debug, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Document {
    tfmirror_inventory: u32,
    #[serde(default)]
    providers: BTreeMap<String, BTreeMap<Version, BTreeMap<Platform, Vec<String>>>>,
    #[serde(default)]
    modules: BTreeMap<String, BTreeMap<Version, HeldModule>>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    releases: HeldReleases,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    docs: BTreeMap<String, std::collections::BTreeSet<Version>>,
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    doc_pages: std::collections::BTreeSet<String>,
}

/// A document's format, read past every other field.
#[derive(Deserialize)]
struct DocumentFormat {
    tfmirror_inventory: u32,
}

/// CLI release files, by product and version, each with its SHA-256.
pub type HeldReleases = BTreeMap<Product, BTreeMap<Version, BTreeMap<ArtifactName, String>>>;

impl From<SiteInventory> for Document {
    fn from(inv: SiteInventory) -> Self {
        let format = if inv.docs.is_empty() {
            FORMAT_WITHOUT_DOCS
        } else {
            FORMAT
        };
        Document {
            tfmirror_inventory: format,
            providers: inv
                .providers
                .into_iter()
                .map(|(p, v)| (p.to_string(), v))
                .collect(),
            modules: inv
                .modules
                .into_iter()
                .map(|(m, v)| (m.to_string(), v))
                .collect(),
            releases: inv.releases,
            docs: (inv.docs.versions.into_iter())
                .map(|(p, v)| (p.to_string(), v))
                .collect(),
            doc_pages: inv.docs.pages,
        }
    }
}

impl TryFrom<Document> for SiteInventory {
    type Error = String;

    fn try_from(doc: Document) -> Result<Self, String> {
        crate::store::format::check_readable(
            "the inventory",
            "inventory",
            doc.tfmirror_inventory,
            None,
            FORMATS,
        )?;
        let mut out = SiteInventory {
            releases: doc.releases,
            docs: HeldDocs {
                versions: docs::versions_of(doc.docs)?,
                pages: docs::pages_of(doc.doc_pages)?,
            },
            ..SiteInventory::default()
        };
        for (source, versions) in doc.providers {
            match Provider::from_source(&source) {
                Ok(p) if p.to_string() == source => {
                    out.providers.insert(p, versions);
                }
                Ok(_) => return Err(format!("providers.{source:?} is not a full provider address (hostname/namespace/type, in lower case)")),
                Err(e) => return Err(format!("providers.{source:?}: {e}")),
            }
        }
        for (source, versions) in doc.modules {
            match Module::from_source(&source) {
                Ok((m, None)) if m.to_string() == source => {
                    out.modules.insert(m, versions);
                }
                Ok(_) => return Err(format!("modules.{source:?} is not a full module address (hostname/namespace/name/system)")),
                Err(e) => return Err(format!("modules.{source:?}: {e}")),
            }
        }
        Ok(out)
    }
}

/// What a site holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "Document", into = "Document")]
pub struct SiteInventory {
    /// Provider versions, with the platforms whose archives are held and
    /// the hashes known for each (`h1:`, `zh:`; none when not known).
    pub providers: BTreeMap<Provider, BTreeMap<Version, BTreeMap<Platform, Vec<String>>>>,
    /// Module versions, with their pins.
    pub modules: BTreeMap<Module, BTreeMap<Version, HeldModule>>,
    /// CLI release files, with their SHA-256.
    pub releases: HeldReleases,
    /// The documentation kept: versions' lists and pages.
    pub docs: HeldDocs,
}

/// How an archive or module version of this cache stands against what a
/// site holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AtSite {
    /// The site lacks it.
    Lacks,
    /// The site holds it (with the same hash, where both are known).
    Holds,
    /// The site holds something else under the same name: another hash.
    Differs(String),
}

impl SiteInventory {
    /// Everything `store` holds: each archive with its `h1:` and the `zh:`
    /// of its signed checksum, each module version whose package is held
    /// with its pin, each CLI release file, and the documentation kept.
    pub async fn of_store(store: &dyn Store) -> Result<SiteInventory, StoreError> {
        let mut out = SiteInventory::default();
        let mut records: BTreeMap<(Provider, Version), Option<crate::store::VersionRecord>> =
            BTreeMap::new();
        for archive in store.list_archives().await? {
            let key = archive.key();
            let pair = (key.provider.clone(), key.version.clone());
            if !records.contains_key(&pair) {
                let record = store.read_version(&pair.0, &pair.1).await?;
                records.insert(pair.clone(), record);
            }
            let mut hashes = Vec::new();
            if let Some(stored) = store.archive(&key).await? {
                hashes.push(stored.h1);
            }
            if let Some(pkg) = records[&pair]
                .as_ref()
                .and_then(|r| r.packages.get(&key.platform))
            {
                hashes.push(format!("zh:{}", pkg.sha256));
            }
            out.add_archive(&key, hashes);
        }
        for (pin, held) in store.list_modules().await? {
            if held {
                out.add_module(&pin.module, &pin.version, HeldModule::from(&pin));
            }
        }
        for (record, files) in store.list_releases().await? {
            for (name, _) in files {
                let Ok(name) = ArtifactName::parse(&name) else {
                    continue;
                };
                if let Some(sha256) = crate::releases::evidence::listed_sha256(&record, &name) {
                    out.add_release_file(record.product, &record.version, name, sha256);
                }
            }
        }
        out.docs = HeldDocs::of_store(store).await?;
        Ok(out)
    }

    /// Adds an archive with the hashes known for it.
    pub fn add_archive(&mut self, key: &ArchiveKey, mut hashes: Vec<String>) {
        hashes.sort();
        hashes.dedup();
        self.providers
            .entry(key.provider.clone())
            .or_default()
            .entry(key.version.clone())
            .or_default()
            .insert(key.platform.clone(), hashes);
    }

    /// Adds a module version with its pin.
    pub fn add_module(&mut self, module: &Module, version: &Version, held: HeldModule) {
        self.modules
            .entry(module.clone())
            .or_default()
            .insert(version.clone(), held);
    }

    /// Adds a release file with its SHA-256.
    pub fn add_release_file(
        &mut self,
        product: Product,
        version: &Version,
        name: ArtifactName,
        sha256: String,
    ) {
        self.releases
            .entry(product)
            .or_default()
            .entry(version.clone())
            .or_default()
            .insert(name, sha256);
    }

    /// Whether the site holds the release file `name`, whose signed
    /// checksum here is `sha256`.
    pub fn release_file(
        &self,
        product: Product,
        version: &Version,
        name: &ArtifactName,
        sha256: &str,
    ) -> AtSite {
        match self
            .releases
            .get(&product)
            .and_then(|vs| vs.get(version))
            .and_then(|files| files.get(name))
        {
            None => AtSite::Lacks,
            Some(theirs) if !theirs.is_empty() && theirs != sha256 => {
                AtSite::Differs(theirs.clone())
            }
            Some(_) => AtSite::Holds,
        }
    }

    /// Adds what `other` holds; what both list keeps this one's hashes.
    pub fn merge(&mut self, other: &SiteInventory) {
        self.docs.merge(&other.docs);
        for (p, versions) in &other.providers {
            for (v, platforms) in versions {
                for (platform, hashes) in platforms {
                    let key = ArchiveKey::new(p, v, platform);
                    if self.hashes_of(&key).is_none_or(<[String]>::is_empty) {
                        self.add_archive(&key, hashes.clone());
                    }
                }
            }
        }
        for (m, versions) in &other.modules {
            for (v, held) in versions {
                let known = self
                    .modules
                    .get(m)
                    .and_then(|vs| vs.get(v))
                    .is_some_and(|h| !h.h1.is_empty());
                if !known {
                    self.add_module(m, v, held.clone());
                }
            }
        }
        for (product, versions) in &other.releases {
            for (v, files) in versions {
                for (name, sha256) in files {
                    let mine = self
                        .releases
                        .get(product)
                        .and_then(|vs| vs.get(v))
                        .and_then(|fs| fs.get(name));
                    if mine.is_none_or(String::is_empty) {
                        self.add_release_file(*product, v, name.clone(), sha256.clone());
                    }
                }
            }
        }
    }

    /// How many release files it lists.
    pub fn release_files(&self) -> usize {
        self.releases
            .values()
            .flat_map(BTreeMap::values)
            .map(BTreeMap::len)
            .sum()
    }

    /// How many archives and module versions it lists.
    pub fn counts(&self) -> (usize, usize) {
        let archives = self
            .providers
            .values()
            .flat_map(BTreeMap::values)
            .map(BTreeMap::len)
            .sum();
        let modules = self.modules.values().map(BTreeMap::len).sum();
        (archives, modules)
    }

    fn hashes_of(&self, key: &ArchiveKey) -> Option<&[String]> {
        self.providers
            .get(&key.provider)?
            .get(&key.version)?
            .get(&key.platform)
            .map(Vec::as_slice)
    }

    /// Whether the site holds the archive `key`, whose signed checksum here
    /// is `sha256`.
    pub fn archive(&self, key: &ArchiveKey, sha256: &str) -> AtSite {
        match self.hashes_of(key) {
            None => AtSite::Lacks,
            Some(hashes) => {
                let zh = format!("zh:{sha256}");
                match hashes.iter().find(|h| h.starts_with("zh:")) {
                    Some(theirs) if *theirs != zh => AtSite::Differs(theirs.clone()),
                    _ => AtSite::Holds,
                }
            }
        }
    }

    /// Whether the site holds a module version pinned here as `pin`.
    pub fn module(&self, pin: &ModuleRecord) -> AtSite {
        match self
            .modules
            .get(&pin.module)
            .and_then(|vs| vs.get(&pin.version))
        {
            None => AtSite::Lacks,
            Some(held) if !held.h1.is_empty() && held.h1 != pin.h1 => {
                AtSite::Differs(held.h1.clone())
            }
            Some(_) => AtSite::Holds,
        }
    }

    /// The document's JSON, pretty-printed.
    pub fn to_json(&self) -> Vec<u8> {
        let mut bytes = serde_json::to_vec_pretty(self).expect("inventories always serialize");
        bytes.push(b'\n');
        bytes
    }

    /// Reads a document; `what` names it in errors.
    pub fn from_json(bytes: &[u8], what: &str) -> anyhow::Result<SiteInventory> {
        // The format first, passing over every other field: a newer
        // inventory is refused for being newer, not for a field this build
        // does not know.
        if let Ok(f) = serde_json::from_slice::<DocumentFormat>(bytes) {
            crate::store::format::check_readable(
                what,
                "inventory",
                f.tfmirror_inventory,
                None,
                FORMATS,
            )
            .map_err(anyhow::Error::msg)?;
        }
        serde_json::from_slice(bytes)
            .with_context(|| format!("{what} is not a valid tfmirror inventory"))
    }

    /// Reads an inventory file.
    pub fn read(path: &Path) -> anyhow::Result<SiteInventory> {
        use std::io::Read;
        let what = path.display().to_string();
        let mut bytes = Vec::new();
        std::fs::File::open(path)
            .with_context(|| format!("opening {what}"))?
            .take(MAX_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading {what}"))?;
        if bytes.len() as u64 > MAX_BYTES {
            anyhow::bail!("{what} is larger than 256 MiB");
        }
        Self::from_json(&bytes, &what)
    }

    /// Writes the document to `path` atomically.
    pub fn write(&self, path: &Path) -> anyhow::Result<()> {
        let dir = crate::store::atomic::dir_of(path);
        crate::store::atomic::write(dir, path, &self.to_json())
            .with_context(|| format!("writing {}", path.display()))
    }
}

mod docs;
#[cfg(test)]
mod tests;
