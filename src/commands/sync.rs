//! `tfmirror sync`: fills the cache ahead of time with every archive a list
//! of requirements asks for, through the same code path (and the same
//! verification) as the daemon, and with every registry module version it
//! asks for, packaged and pinned, together with the registry modules those
//! modules call in turn. Archives and packages already cached are not
//! fetched again, so a second run transfers nothing and an interrupted run
//! picks up where it stopped.

use std::path::PathBuf;
use std::sync::Arc;

use futures_util::stream::{self, StreamExt};

use super::progress::Progress;
use super::selection::{ModuleRequirement, Requirement, Selection};
use crate::address::{ArchiveKey, Module, Provider, Version};
use crate::config::Config;
use crate::error::RequestError;
use crate::mirror::Mirror;

/// What a sync did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Summary {
    /// Providers asked for.
    pub providers: usize,
    /// Versions selected.
    pub versions: usize,
    /// Archives wanted.
    pub archives: usize,
    /// Archives downloaded by this run.
    pub downloaded: usize,
    /// Archives that were cached already.
    pub cached: usize,
    /// Bytes downloaded by this run.
    pub bytes: u64,
    /// Module versions wanted (those asked for and those they call).
    pub module_versions: usize,
    /// Module versions packaged by this run.
    pub modules_packaged: usize,
    /// What failed, one line each.
    pub failures: Vec<String>,
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
        if self.module_versions > 0 {
            write!(
                f,
                ", module versions: {} ({} packaged, {} already cached)",
                self.module_versions,
                self.modules_packaged,
                self.module_versions - self.modules_packaged
            )?;
        }
        Ok(())
    }
}

/// Why no version of a requirement could be selected.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The provider's version list could not be had.
    #[error("{provider}: {source}")]
    Unlisted {
        /// The provider.
        provider: Provider,
        /// Why.
        source: RequestError,
    },
    /// No listed version meets the constraints.
    #[error("{provider}: no version meets {constraints:?} (the origin lists {listed})")]
    NoneMeets {
        /// The provider.
        provider: Provider,
        /// The constraints, as written.
        constraints: String,
        /// How many versions the origin lists.
        listed: usize,
    },
}

/// The versions of a requirement: those its lock files pin, else those that
/// meet its constraints (only the newest when it asks for that).
pub async fn select_versions(
    mirror: &Mirror,
    req: &Requirement,
) -> Result<Vec<Version>, SelectError> {
    if !req.pinned.is_empty() {
        return Ok(req.pinned.clone());
    }
    let listed = mirror
        .index(&req.provider)
        .await
        .map_err(|source| SelectError::Unlisted {
            provider: req.provider.clone(),
            source,
        })?;
    // Versions the policy denies are not candidates.
    let (index, _, _) = mirror.visible_index(&req.provider, listed).await;
    let mut matching: Vec<Version> = index
        .versions
        .keys()
        .filter(|v| req.constraints.allows(v.semver()))
        .cloned()
        .collect();
    if matching.is_empty() {
        return Err(SelectError::NoneMeets {
            provider: req.provider.clone(),
            constraints: req.constraints.as_str().to_owned(),
            listed: index.versions.len(),
        });
    }
    if req.newest_only {
        matching = matching.split_off(matching.len() - 1);
    }
    Ok(matching)
}

/// One archive to make sure of.
type Job = ArchiveKey;

/// The versions of a module requirement that meet its constraints (only
/// the newest when it asks for that).
pub async fn select_module_versions(
    mirror: &Mirror,
    req: &ModuleRequirement,
) -> Result<Vec<Version>, String> {
    let index = mirror
        .module_index(&req.module)
        .await
        .map_err(|e| format!("module {}: {e}", req.module))?;
    let mut matching: Vec<Version> = index
        .versions
        .iter()
        .filter(|v| req.constraints.allows(v.semver()))
        .cloned()
        .collect();
    if matching.is_empty() {
        return Err(format!(
            "module {}: no version meets {:?} (the origin lists {})",
            req.module,
            req.constraints.as_str(),
            index.versions.len()
        ));
    }
    if req.newest_only {
        matching = matching.split_off(matching.len() - 1);
    }
    Ok(matching)
}

/// Packages every module version `requirements` select, and the registry
/// modules each one calls, recursively (each version once, so cycles end).
async fn sync_modules(
    mirror: &Arc<Mirror>,
    requirements: &[ModuleRequirement],
    progress: &Progress,
    summary: &mut Summary,
) {
    let mut queue: std::collections::VecDeque<ModuleRequirement> =
        requirements.iter().cloned().collect();
    let mut seen: std::collections::BTreeSet<(Module, Version)> = std::collections::BTreeSet::new();
    while let Some(req) = queue.pop_front() {
        let versions = match select_module_versions(mirror, &req).await {
            Ok(v) => v,
            Err(line) => {
                progress.line(&format!("FAILED {line}"));
                summary.failures.push(line);
                continue;
            }
        };
        for version in versions {
            if !seen.insert((req.module.clone(), version.clone())) {
                continue;
            }
            summary.module_versions += 1;
            let (module, what) = (&req.module, format!("module {} {version}", req.module));
            let held = matches!(
                mirror.store().open_module(module, &version).await,
                Ok(Some(_))
            );
            let calls = match package_calls(mirror, module, &version).await {
                Ok(calls) => calls,
                Err(e) => {
                    let line = format!("{what}: {e}");
                    progress.line(&format!("FAILED {line}"));
                    summary.failures.push(line);
                    continue;
                }
            };
            if held {
                progress.line(&format!("cached {what}"));
            } else {
                summary.modules_packaged += 1;
                progress.line(&format!("stored {what}"));
            }
            let mut called: std::collections::BTreeMap<Module, Vec<String>> =
                std::collections::BTreeMap::new();
            for (callee, constraint) in calls {
                called.entry(callee).or_default().extend(constraint);
            }
            match super::selection::module_requirements(called) {
                Ok(more) => queue.extend(more),
                Err(e) => {
                    let line = format!("{what}: {e:#}");
                    progress.line(&format!("FAILED {line}"));
                    summary.failures.push(line);
                }
            }
        }
    }
}

/// The registry module calls inside a module version's package (fetched
/// and pinned first when the cache lacks it).
async fn package_calls(
    mirror: &Arc<Mirror>,
    module: &Module,
    version: &Version,
) -> Result<Vec<(Module, Option<String>)>, RequestError> {
    use tokio::io::AsyncReadExt;
    let package = mirror.module_package(module, version).await?;
    let mut bytes = Vec::with_capacity(usize::try_from(package.size).unwrap_or(0));
    package
        .into_reader()
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| RequestError::DiskUnavailable(format!("reading the package: {e}")))?;
    tokio::task::spawn_blocking(move || crate::module_source::calls::calls_in_package(&bytes[..]))
        .await
        .map_err(|e| RequestError::Internal(e.to_string()))?
        .map_err(|e| RequestError::UpstreamInvalid(format!("the package cannot be read: {e}")))
}

/// Runs a sync with at most `jobs` downloads at once.
pub async fn run(mirror: Arc<Mirror>, selection: &Selection, jobs: usize) -> Summary {
    let requirements = &selection.providers;
    let mut summary = Summary {
        providers: requirements.len(),
        ..Summary::default()
    };
    let mut progress = Progress::new();
    sync_modules(&mirror, &selection.modules, &progress, &mut summary).await;
    let mut work: Vec<Job> = Vec::new();
    for req in requirements {
        let versions = match select_versions(&mirror, req).await {
            Ok(v) => v,
            Err(e) => {
                progress.line(&format!("FAILED {e}"));
                summary.failures.push(format!("provider {e}"));
                continue;
            }
        };
        for version in versions {
            summary.versions += 1;
            let record = match mirror.version(&req.provider, &version).await {
                Ok(r) => r,
                Err(e) => {
                    let line = format!("version {} {version}: {e}", req.provider);
                    progress.line(&format!("FAILED {line}"));
                    summary.failures.push(line);
                    continue;
                }
            };
            for platform in &req.platforms {
                if record.packages.contains_key(platform) {
                    work.push(ArchiveKey::new(&req.provider, &version, platform));
                } else {
                    let line = format!(
                        "platform {} {version} {platform}: the origin offers no verified package for it",
                        req.provider
                    );
                    progress.line(&format!("FAILED {line}"));
                    summary.failures.push(line);
                }
            }
        }
    }
    summary.archives = work.len();
    progress.start(work.len() as u64, "archives");
    let results: Vec<(Job, Result<Option<u64>, RequestError>)> = stream::iter(work)
        .map(|job| {
            let mirror = mirror.clone();
            async move {
                if mirror.store().archive(&job).await.ok().flatten().is_some() {
                    return (job, Ok(None));
                }
                let fetched = mirror.archive(&job).await.map(|a| Some(a.size));
                (job, fetched)
            }
        })
        .buffer_unordered(jobs.max(1))
        .inspect(|(key, result)| {
            let line = match result {
                Ok(Some(size)) => format!(
                    "stored {key} ({})",
                    bytesize::ByteSize(*size).display().iec()
                ),
                Ok(None) => format!("cached {key}"),
                Err(e) => format!("FAILED {key}: {e}"),
            };
            progress.advance(&line);
        })
        .collect()
        .await;
    for (key, result) in results {
        match result {
            Ok(Some(size)) => {
                summary.downloaded += 1;
                summary.bytes += size;
            }
            Ok(None) => summary.cached += 1,
            Err(e) => summary.failures.push(format!("archive {key}: {e}")),
        }
    }
    progress.finish();
    summary
}

/// `tfmirror sync`.
pub fn command(
    config: Config,
    manifest: Option<PathBuf>,
    from: Option<PathBuf>,
    platforms: &[String],
    jobs: usize,
) -> anyhow::Result<()> {
    let selection = match (manifest, from) {
        (Some(path), _) => super::selection::from_manifest(&path)?,
        (None, Some(dir)) => {
            super::selection::from_directory(&dir, &super::platforms_or_current(platforms)?)?
        }
        (None, None) => anyhow::bail!("give --manifest FILE or --from DIR"),
    };
    if config.upstream.offline {
        anyhow::bail!("sync fetches from origins; it cannot run with upstream.offline");
    }
    let summary = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        anyhow::Ok(run(mirror, &selection, jobs).await)
    })?;
    println!("{summary}");
    for failure in &summary.failures {
        println!("FAILED {failure}");
    }
    if summary.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} failures", summary.failures.len())
    }
}
