//! Filling the cache with what a [`Selection`] asks for, through the same
//! code path (and the same verification, single-flight downloads and fetch
//! limits) as the daemon's requests: every archive of the selected provider
//! versions for the platforms asked for, and every selected registry module
//! version, packaged and pinned, together with the registry modules those
//! modules call in turn, and the selected CLI releases' archives, their
//! checksums verified with the vendor's key. Archives and packages already cached are not
//! fetched again, so a second fill transfers nothing and an interrupted one
//! picks up where it stopped.
//!
//! `tfmirror sync`, `tfmirror watch --once`, `tfmirror check --fetch` and
//! the daemon's watch passes all fill through [`fill`]; they differ in how
//! fresh the version lists must be ([`Freshness`]) and in who hears of the
//! progress ([`Observer`]).

use std::collections::{BTreeSet, VecDeque};
use std::sync::Arc;

use super::module_providers::{self, ModuleProvider};
use super::selection::{ModuleRequirement, ReleaseRequirement, Requirement, Selection};
use crate::address::{ArchiveKey, ArtifactName, Module, Platform, Product, ReleaseFile, Version};
use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::module_source::calls::{CallsError, Needs};
use crate::releases::ReleaseBody;

pub use super::choose::{select_module_versions, select_versions, SelectError};

mod download;
pub use crate::mirror::Freshness;

/// Who hears how a fill goes: a progress bar on a terminal, the log.
pub trait Observer: Send + Sync {
    /// Something happened that is not one of the counted archives (a
    /// module packaged, a version that could not be had).
    fn line(&self, text: &str);
    /// The archives are known: `total` of them.
    fn start(&self, total: u64);
    /// One archive is done; `text` says how.
    fn advance(&self, text: &str);
    /// The fill is over.
    fn finish(&self) {}
}

/// What a fill did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Providers asked for.
    pub providers: usize,
    /// Versions selected.
    pub versions: usize,
    /// Archives wanted.
    pub archives: usize,
    /// Archives downloaded by this fill.
    pub downloaded: usize,
    /// Archives that were cached already.
    pub cached: usize,
    /// Bytes downloaded by this fill.
    pub bytes: u64,
    /// Module versions wanted (those asked for and those they call).
    pub module_versions: usize,
    /// Module versions packaged by this fill.
    pub modules_packaged: usize,
    /// CLI release files wanted.
    pub release_files: usize,
    /// CLI release files downloaded by this fill.
    pub release_files_downloaded: usize,
    /// What this fill stored, one name each (`provider version platform`,
    /// `module … version`).
    pub stored: Vec<String>,
    /// What failed, one line each.
    pub failures: Vec<String>,
    /// Archives the policy refused once their binaries were read (a rule
    /// by advisory), one line each: their versions are left out from then
    /// on, and the next allowed version is fetched in their place.
    pub refused: Vec<String>,
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "providers: {}, versions: {}, archives: {} ({} downloaded, {} already cached), bytes downloaded: {}, failures: {}",
            self.providers,
            self.versions,
            self.archives,
            self.downloaded,
            self.cached,
            bytesize::ByteSize(self.bytes).display().iec(),
            self.failures.len()
        )?;
        if !self.refused.is_empty() {
            write!(
                f,
                ", refused by the policy once read: {}",
                self.refused.len()
            )?;
        }
        if self.module_versions > 0 {
            write!(
                f,
                ", module versions: {} ({} packaged, {} already cached)",
                self.module_versions,
                self.modules_packaged,
                self.module_versions - self.modules_packaged
            )?;
        }
        if self.release_files > 0 {
            write!(
                f,
                ", release files: {} ({} downloaded, {} already cached)",
                self.release_files,
                self.release_files_downloaded,
                self.release_files - self.release_files_downloaded
            )?;
        }
        Ok(())
    }
}

/// One fill's bookkeeping and its observer.
struct Fill<'a> {
    summary: Summary,
    observer: &'a dyn Observer,
    freshness: Freshness,
    /// Whose rules read the registry modules' own files.
    client: Product,
}

impl Fill<'_> {
    fn failed(&mut self, line: String) {
        self.observer.line(&format!("FAILED {line}"));
        self.summary.failures.push(line);
    }

    /// Packages every module version `requirements` select, and the
    /// registry modules each one calls, recursively (each version once, so
    /// cycles end); returns the providers their packages require.
    async fn modules(
        &mut self,
        mirror: &Arc<Mirror>,
        requirements: &[ModuleRequirement],
    ) -> Vec<ModuleProvider> {
        let mut found = Vec::new();
        let mut queue: VecDeque<ModuleRequirement> = requirements.iter().cloned().collect();
        let mut seen: BTreeSet<(Module, Version)> = BTreeSet::new();
        let mut read = super::selection::ReadDirs::new();
        while let Some(req) = queue.pop_front() {
            let versions = match select_module_versions(mirror, &req, self.freshness).await {
                Ok(v) => v,
                Err(line) => {
                    self.failed(line);
                    continue;
                }
            };
            for version in versions {
                let fresh = req.unread(&version, &mut read);
                if fresh.is_empty() {
                    continue;
                }
                let first = seen.insert((req.module.clone(), version.clone()));
                let (module, what) = (&req.module, format!("module {} {version}", req.module));
                let held = matches!(
                    mirror.store().open_module(module, &version).await,
                    Ok(Some(_))
                );
                let needs = match package_needs(mirror, module, &version, fresh, self.client).await
                {
                    Ok(needs) => needs,
                    Err(e) => {
                        self.failed(format!("{what}: {e}"));
                        continue;
                    }
                };
                if first {
                    self.summary.module_versions += 1;
                    if held {
                        self.observer.line(&format!("cached {what}"));
                    } else {
                        self.summary.modules_packaged += 1;
                        self.observer.line(&format!("stored {what}"));
                        self.summary.stored.push(what.clone());
                    }
                }
                for u in &needs.unserved {
                    self.observer.line(&format!(
                        "skipped module source {} ({what}: {}): {}, which the client fetches itself, not through a mirror",
                        u.source, u.at, u.kind
                    ));
                }
                found.extend(module_providers::of_module(
                    module,
                    &version,
                    needs.providers,
                    &req.platforms,
                ));
                match super::selection::module_requirements(needs.modules, &req.platforms) {
                    Ok(more) => queue.extend(more),
                    Err(e) => self.failed(format!("{what}: {e:#}")),
                }
            }
        }
        found
    }

    /// Walks the selection's modules, then merges the providers they
    /// require into its own.
    async fn providers(&mut self, mirror: &Arc<Mirror>, selection: &Selection) -> Vec<Requirement> {
        let found = self.modules(mirror, &selection.modules).await;
        let (providers, unmergeable) = selection.providers_with(&found);
        for problem in unmergeable {
            self.failed(problem.to_string());
        }
        providers
    }

    /// Fetches the CLI release files `requirements` select: each version's
    /// checksums, verified, then its archive for each platform asked for.
    async fn releases(&mut self, mirror: &Arc<Mirror>, requirements: &[ReleaseRequirement]) {
        for req in requirements {
            let product = req.product;
            let listed = match self.freshness {
                Freshness::Cached => mirror.release_list(product).await,
                Freshness::FromOrigin => mirror.relist_releases(product).await,
            };
            let list = match listed {
                Ok(list) => list,
                Err(e) => {
                    self.failed(format!("{} releases: {e}", product.title()));
                    continue;
                }
            };
            let mut versions: Vec<&Version> = list
                .versions
                .keys()
                .filter(|v| req.constraints.allows(v.semver()))
                .collect();
            if req.newest_only && versions.len() > 1 {
                versions = versions.split_off(versions.len() - 1);
            }
            if versions.is_empty() {
                self.failed(format!(
                    "{} releases: no version listed meets {}",
                    product.title(),
                    req.constraints
                ));
            }
            for version in versions {
                for platform in &req.platforms {
                    self.summary.release_files += 1;
                    self.release_file(mirror, product, version, platform).await;
                }
            }
        }
    }

    /// Fetches one release archive unless the store holds it.
    async fn release_file(
        &mut self,
        mirror: &Arc<Mirror>,
        product: Product,
        version: &Version,
        platform: &Platform,
    ) {
        let zip = product.zip_name(version, platform);
        let what = format!("{product} {version} {zip}");
        let name = match ArtifactName::parse(&zip) {
            Ok(name) => name,
            Err(e) => return self.failed(format!("{what}: {e}")),
        };
        let file = ReleaseFile {
            product,
            version: version.clone(),
            name: name.clone(),
        };
        let held = matches!(mirror.store().open_release_file(&file).await, Ok(Some(_)));
        match mirror.release_file(product, version, &name).await {
            Ok(_) if held => self.observer.line(&format!("cached {what}")),
            Ok(body) => {
                if let ReleaseBody::Stored(reader) = body {
                    self.summary.bytes += reader.size;
                }
                self.summary.release_files_downloaded += 1;
                self.observer.line(&format!("stored {what}"));
                self.summary.stored.push(what);
            }
            Err(e) => self.failed(format!("{what}: {e}")),
        }
    }

    /// The archives `requirements` select, for their platforms.
    async fn archives(
        &mut self,
        mirror: &Arc<Mirror>,
        requirements: &[Requirement],
    ) -> Vec<ArchiveKey> {
        let mut work = Vec::new();
        let mut seen = BTreeSet::new();
        for req in requirements {
            let by = required_by(req);
            let versions = match select_versions(mirror, req, self.freshness).await {
                Ok(v) => v,
                Err(e) => {
                    self.failed(format!("provider {e}{by}"));
                    continue;
                }
            };
            for version in versions {
                self.summary.versions += 1;
                let record = match mirror.version(&req.provider, &version).await {
                    Ok(r) => r,
                    Err(e) => {
                        self.failed(format!("version {} {version}: {e}{by}", req.provider));
                        continue;
                    }
                };
                for platform in &req.platforms {
                    let key = ArchiveKey::new(&req.provider, &version, platform);
                    if !record.packages.contains_key(platform) {
                        self.failed(format!(
                            "platform {} {version} {platform}: the origin offers no verified package for it{by}",
                            req.provider
                        ));
                    } else if seen.insert(key.clone()) {
                        work.push(key);
                    }
                }
            }
        }
        work
    }
}

/// The providers `selection` needs, with those its registry modules
/// require at any depth (their packages fetched and pinned when the cache
/// lacks them), and what could not be had, one line each.
pub async fn providers_needed(
    mirror: &Arc<Mirror>,
    selection: &Selection,
    freshness: Freshness,
    observer: &dyn Observer,
) -> (Vec<Requirement>, Vec<String>) {
    let mut fill = Fill {
        summary: Summary::default(),
        observer,
        freshness,
        client: selection.client(),
    };
    let providers = fill.providers(mirror, selection).await;
    (providers, fill.summary.failures)
}

/// ` (required by module …)` when modules' own `required_providers` ask
/// for `req`, for the lines that name it.
fn required_by(req: &Requirement) -> String {
    if req.required_by.is_empty() {
        String::new()
    } else {
        format!(" (required by {})", req.required_by.join(", "))
    }
}

/// What a module version's package asks for (fetched and pinned first
/// when the cache lacks it).
async fn package_needs(
    mirror: &Arc<Mirror>,
    module: &Module,
    version: &Version,
    subdirs: BTreeSet<String>,
    client: Product,
) -> Result<Needs, RequestError> {
    let package = mirror.module_package(module, version).await?;
    crate::module_source::calls::needs_in_stored(package, subdirs, client)
        .await
        .map_err(|e| match e {
            CallsError::Read(_) => RequestError::DiskUnavailable(e.to_string()),
            CallsError::Unpack(_) | CallsError::Invalid(_) => {
                RequestError::UpstreamInvalid(e.to_string())
            }
        })
}

/// Fills the cache with what `selection` asks for, with at most `jobs`
/// downloads at once, version lists read as `freshness` says.
pub async fn fill(
    mirror: Arc<Mirror>,
    selection: &Selection,
    jobs: usize,
    freshness: Freshness,
    observer: &dyn Observer,
) -> Summary {
    let mut fill = Fill {
        summary: Summary::default(),
        observer,
        freshness,
        client: selection.client(),
    };
    fill.releases(&mirror, &selection.releases).await;
    if let Some(cli) = &selection.cli {
        // A configuration's `required_version`: the newest CLI that meets
        // it, where `[releases]` serves that CLI.
        if mirror.release_source(cli.product).is_ok() {
            fill.releases(&mirror, std::slice::from_ref(cli)).await;
        } else {
            observer.line(&format!(
                "{} releases: not fetched for required_version {}: [releases] does not serve them",
                cli.product.title(),
                cli.constraints
            ));
        }
    }
    let providers = fill.providers(&mirror, selection).await;
    fill.summary.providers = providers.len();
    let mut work = fill.archives(&mirror, &providers).await;
    let mut done: BTreeSet<ArchiveKey> = BTreeSet::new();
    // A version none of whose binaries was read is offered until one is;
    // when reading one makes a rule by advisory refuse it, the versions are
    // chosen again, without it.
    for _ in 0..REFUSAL_ROUNDS {
        work.retain(|key| !done.contains(key));
        if work.is_empty() {
            break;
        }
        done.extend(work.iter().cloned());
        let refused = fill
            .download(&mirror, std::mem::take(&mut work), jobs)
            .await;
        if refused == 0 {
            break;
        }
        let versions = fill.summary.versions;
        work = fill.archives(&mirror, &providers).await;
        fill.summary.versions = versions
            + work
                .iter()
                .filter(|k| {
                    !done
                        .iter()
                        .any(|d| d.provider == k.provider && d.version == k.version)
                })
                .map(|k| (&k.provider, &k.version))
                .collect::<BTreeSet<_>>()
                .len();
    }
    fill.summary
}

/// How many times the versions are chosen again after the policy refused
/// some once they were read.
const REFUSAL_ROUNDS: usize = 4;
