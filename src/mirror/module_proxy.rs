//! The module registry protocol (`modules.v1`) in front of the cache, for
//! clients whose CLI configuration points a registry host's `modules.v1`
//! service at tfmirror with a `host` block.
//!
//! - A module's versions: the origin's list, fresh for `cache.index_ttl`,
//!   served stale while the origin is down.
//! - A version's download answer points into the mirror (the packaged
//!   tree, with the origin's `//subdir`).
//! - A version's package: the origin's source fetched once (single-flight),
//!   packaged deterministically, and pinned: the record of what the mirror
//!   saw first (commit, tree hash) is kept even when the package is
//!   evicted, and a later fetch that yields something else is refused.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::Serialize;

use super::listing::{About, Freshness};
use super::{Held, Mirror, Timed};
use crate::address::{Module, Version};
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome};
use crate::module_source::source::{self, Location};
use crate::module_source::FetchError;
use crate::policy::Subject;
use crate::store::{ArchiveReader, ModuleIndexRecord, ModuleRecord};
use crate::upstream::{module_registry as registry, UpstreamError};

/// `GET :namespace/:name/:system/versions`.
#[derive(Debug, Serialize)]
struct VersionsDocument {
    modules: Vec<ModuleEntry>,
}

#[derive(Debug, Serialize)]
struct ModuleEntry {
    versions: Vec<VersionEntry>,
}

#[derive(Debug, Serialize)]
struct VersionEntry {
    version: String,
}

/// Where a version's source is, as the origin said.
#[derive(Debug)]
pub struct Located {
    /// The location, resolved when it was relative.
    pub given: String,
    /// What it means.
    pub location: Location,
}

/// What the module proxy keeps, apart from the provider mirror's state:
/// the version lists, the download locations and the pins it holds in
/// memory, the packages the store holds, and the fetcher of sources.
pub(super) struct ModuleState {
    /// Fetches and packages module sources.
    fetcher: crate::module_source::Fetcher,
    indexes: super::held::Cache<Module, Held<ModuleIndexRecord>>,
    /// Where the origin says module versions' sources are.
    locations: super::held::Cache<(Module, Version), Held<Located>>,
    /// Pins of module packages the store holds.
    packages: super::held::Cache<(Module, Version), Held<ModuleRecord>>,
    /// The module packages the store holds, for the status page.
    pub(super) held: std::sync::RwLock<BTreeMap<(Module, Version), Arc<ModuleRecord>>>,
}

impl ModuleState {
    /// The state for a store holding `pins` (with whether each package is
    /// held).
    pub(super) fn new(
        fetcher: crate::module_source::Fetcher,
        pins: Vec<(ModuleRecord, bool)>,
    ) -> ModuleState {
        let held = pins
            .into_iter()
            .filter(|(_, held)| *held)
            .map(|(pin, _)| ((pin.module.clone(), pin.version.clone()), Arc::new(pin)))
            .collect();
        ModuleState {
            fetcher,
            indexes: super::held::bounded(10_000),
            locations: super::held::bounded(10_000),
            packages: super::held::bounded(20_000),
            held: std::sync::RwLock::new(held),
        }
    }

    /// Forgets a package that left the store (evicted, or removed by
    /// another process); its pin stays.
    pub(super) async fn forget_package(&self, module: &Module, version: &Version) {
        let key = (module.clone(), version.clone());
        self.packages.invalidate(&key).await;
        self.held.write().expect("held modules lock").remove(&key);
    }

    /// Lists a package another process put in the store, with its pin.
    pub(super) fn package_held(&self, pin: ModuleRecord) {
        let key = (pin.module.clone(), pin.version.clone());
        (self.held.write().expect("held modules lock")).insert(key, Arc::new(pin));
    }
}

impl Mirror {
    /// A module's versions in the protocol's shape.
    pub async fn module_versions(&self, module: &Module) -> Result<Vec<u8>, RequestError> {
        let record = self
            .visible_module_index(module, self.module_index(module).await?)
            .await;
        let doc = VersionsDocument {
            modules: vec![ModuleEntry {
                versions: record
                    .versions
                    .iter()
                    .map(|v| VersionEntry {
                        version: v.to_string(),
                    })
                    .collect(),
            }],
        };
        Ok(serde_json::to_vec(&doc).expect("documents always serialize"))
    }

    /// A module's version list: from memory or the store while fresh, else
    /// from the origin; the stored copy when the origin is down.
    pub async fn module_index(
        &self,
        module: &Module,
    ) -> Result<Arc<ModuleIndexRecord>, RequestError> {
        self.check_host(&module.hostname)?;
        let (held, found) = self
            .held(&self.modules.indexes, module, || {
                self.load_module_index(module, Freshness::Cached)
            })
            .await?;
        if found {
            self.note(CacheKind::ModuleIndex, CacheOutcome::Hit);
        }
        Ok(held.value)
    }

    /// A module's version list asked of the origin now, as
    /// [`Mirror::relist`] asks for a provider's.
    pub async fn relist_module(
        &self,
        module: &Module,
    ) -> Result<Arc<ModuleIndexRecord>, RequestError> {
        self.check_host(&module.hostname)?;
        let loaded = self
            .load_module_index(module, Freshness::FromOrigin)
            .await?;
        Ok(self
            .hold_listed(&self.modules.indexes, module.clone(), loaded)
            .await)
    }

    async fn load_module_index(
        &self,
        module: &Module,
        freshness: Freshness,
    ) -> Result<Timed<ModuleIndexRecord>, RequestError> {
        let stored = self.store.read_module_index(module);
        let about = About {
            kind: CacheKind::ModuleIndex,
            subject: format!("module {module}"),
            named: format!("module {module}"),
            noun: "module version list",
        };
        let fetch = async {
            let base = self.origin.discovery.modules_base(&module.hostname).await?;
            let token = self.origin.credentials.token(&module.hostname);
            let versions = registry::versions(&self.origin.client, &base, token, module).await?;
            Ok(ModuleIndexRecord {
                fetched_at_ms: self.clock.unix_ms(),
                versions,
                first_seen_ms: BTreeMap::new(),
            })
        };
        self.load_listing(&about, freshness, stored, fetch, async |record| {
            self.store.write_module_index(module, record).await
        })
        .await
    }

    /// The subdirectory a version's download answer names, from its pin
    /// when the mirror has one, else from the origin's location (which is
    /// checked to be a source the mirror can fetch).
    pub async fn module_download(
        self: &Arc<Self>,
        module: &Module,
        version: &Version,
    ) -> Result<Option<String>, RequestError> {
        self.check_host(&module.hostname)?;
        self.permit(Subject::Module(module), version).await?;
        // The pin of a package served before is in memory; else on disk.
        let key = (module.clone(), version.clone());
        if let Some(held) = self.modules.packages.get(&key).await {
            return Ok(held.value.subdir.clone());
        }
        if let Some(pin) = self.module_pin(module, version).await {
            return Ok(pin.subdir);
        }
        if self.offline() {
            return Err(RequestError::NotHeld(format!(
                "module {module} {version} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        let located = self.module_location(module, version).await?;
        Ok(located.location.subdir.clone())
    }

    /// A version's stored pin, if any (an unreadable one is logged and
    /// treated as absent: the next fetch writes it again).
    async fn module_pin(&self, module: &Module, version: &Version) -> Option<ModuleRecord> {
        match self.store.read_module(module, version).await {
            Ok(pin) => pin,
            Err(e) => {
                tracing::warn!(%module, %version, error = %e, "ignoring an unreadable module pin");
                None
            }
        }
    }

    /// Where the origin says a version's source is, held for
    /// `cache.index_ttl`.
    async fn module_location(
        &self,
        module: &Module,
        version: &Version,
    ) -> Result<Arc<Located>, RequestError> {
        let key = (module.clone(), version.clone());
        let (held, _) = self
            .held(&self.modules.locations, &key, || async {
                let what = format!("module {module} {version}");
                let base = self
                    .origin
                    .discovery
                    .modules_base(&module.hostname)
                    .await
                    .map_err(|e| {
                        RequestError::upstream(
                            &e,
                            &format!("could not reach the registry of {what}"),
                        )
                    })?;
                let token = self.origin.credentials.token(&module.hostname);
                let (given, at) =
                    match registry::location(&self.origin.client, &base, token, module, version)
                        .await
                    {
                        Ok(found) => found,
                        Err(UpstreamError::NotFound { .. }) => {
                            return Err(RequestError::NotAtOrigin(format!(
                                "{what} does not exist at its origin registry"
                            )))
                        }
                        Err(e) => {
                            return Err(RequestError::upstream(
                                &e,
                                &format!("could not ask where {what} is"),
                            ))
                        }
                    };
                let location = source::parse(&given, &at)
                    .map_err(|e| RequestError::UnsupportedSource(format!("{what}: {e}")))?;
                Ok(Timed {
                    value: Arc::new(Located { given, location }),
                    ttl: Some(self.config.cache.index_ttl),
                })
            })
            .await?;
        Ok(held.value)
    }

    /// A version's package, opened for reading: fetched, packaged and
    /// pinned on first use.
    pub async fn module_package(
        self: &Arc<Self>,
        module: &Module,
        version: &Version,
    ) -> Result<ArchiveReader, RequestError> {
        self.check_host(&module.hostname)?;
        self.permit(Subject::Module(module), version).await?;
        let key = (module.clone(), version.clone());
        for _ in 0..2 {
            let (held, found) = self
                .held(&self.modules.packages, &key, || {
                    self.load_module_package(module, version)
                })
                .await?;
            let pin = held.value;
            if found {
                self.note(CacheKind::ModulePackage, CacheOutcome::Hit);
            }
            match self.store.open_module(module, version).await {
                Ok(Some(reader)) => {
                    self.residency.module_used(module, version, reader.size);
                    return Ok(reader);
                }
                Ok(None) => {
                    // Removed since it was loaded (gc): load it again.
                    tracing::info!(%module, %version, h1 = %pin.h1, "module package gone from the store; fetching it again");
                    self.package_gone(module, version).await;
                }
                Err(e) => return Err(self.store_failed("reading a module package", &e)),
            }
        }
        Err(RequestError::Internal(format!(
            "module {module} {version} was removed from the store while it was being served"
        )))
    }

    async fn load_module_package(
        self: &Arc<Self>,
        module: &Module,
        version: &Version,
    ) -> Result<Timed<ModuleRecord>, RequestError> {
        let what = format!("module {module} {version}");
        let pin = self.module_pin(module, version).await;
        if let Some(pin) = &pin {
            if matches!(self.store.open_module(module, version).await, Ok(Some(_))) {
                self.note(CacheKind::ModulePackage, CacheOutcome::Hit);
                // Perhaps stored by another process (sync, import).
                self.modules
                    .held
                    .write()
                    .expect("held modules lock")
                    .entry((module.clone(), version.clone()))
                    .or_insert_with(|| Arc::new(pin.clone()));
                return Ok(Timed {
                    value: Arc::new(pin.clone()),
                    ttl: None,
                });
            }
        }
        if self.offline() {
            return Err(RequestError::NotHeld(format!(
                "{what} is not held by this mirror, which is offline (upstream.offline)"
            )));
        }
        self.note(CacheKind::ModulePackage, CacheOutcome::Miss);
        let located = self.module_location(module, version).await?;
        let source = &located.location.source;
        let staging = self
            .store
            .staging_file()
            .map_err(|e| self.store_failed("staging a module package", &e))?;
        let scratch = staging
            .path()
            .parent()
            .map_or_else(std::env::temp_dir, std::path::Path::to_path_buf);
        let packaged = match self.modules.fetcher.fetch(source, &scratch, staging).await {
            Ok(p) => p,
            Err(e) => {
                self.metrics.module_fetch(source.kind(), "failed");
                return Err(fetch_failed(&e, &what, source.url()));
            }
        };
        self.metrics.module_fetch(source.kind(), "packaged");
        let mut record = ModuleRecord {
            module: module.clone(),
            version: version.clone(),
            location: located.given.clone(),
            source_kind: source.kind().to_owned(),
            subdir: located.location.subdir.clone(),
            commit: packaged.commit.clone(),
            h1: packaged.packed.h1.clone(),
            sha256: packaged.packed.sha256.clone(),
            size: packaged.packed.size,
            pinned_at_ms: self.clock.unix_ms(),
        };
        if let Some(pin) = pin {
            // Counted here; logged once, where the error becomes an answer
            // (or a line of a command's report).
            check_pin(&pin, &record).inspect_err(|_| self.metrics.pin_mismatch())?;
            // The pin stands as first written.
            record = ModuleRecord {
                sha256: record.sha256,
                size: record.size,
                ..pin
            };
        }
        if let Err(e) = self.store.keep_module(packaged.staged, &record).await {
            return Err(self.store_failed("storing a module package", &e));
        }
        self.health.succeeded();
        self.modules
            .held
            .write()
            .expect("held modules lock")
            .insert((module.clone(), version.clone()), Arc::new(record.clone()));
        self.arrived(crate::store::Item::Module(module.clone(), version.clone()));
        let evicted = self.residency.stored_module(module, version, record.size);
        self.evict(evicted).await;
        tracing::info!(%module, %version, source = source.kind(), commit = record.commit.as_deref().unwrap_or("-"), h1 = %record.h1, size = record.size, "module packaged and pinned");
        Ok(Timed {
            value: Arc::new(record),
            ttl: None,
        })
    }
}

/// Refuses a fetch that yields other content than the pin recorded.
fn check_pin(pin: &ModuleRecord, fetched: &ModuleRecord) -> Result<(), RequestError> {
    if pin.commit != fetched.commit || pin.h1 != fetched.h1 {
        let show = |r: &ModuleRecord| match &r.commit {
            Some(c) => format!("commit {c} (tree {})", r.h1),
            None => format!("tree {}", r.h1),
        };
        return Err(RequestError::PinMismatch(format!(
            "module {} {}: its source now yields {} where this mirror pinned {}; the tag or archive was changed upstream, and the new content is refused (nothing was stored)",
            pin.module,
            pin.version,
            show(fetched),
            show(pin)
        )));
    }
    Ok(())
}

/// The answer for a source that could not be fetched and packaged.
fn fetch_failed(e: &FetchError, what: &str, url: &url::Url) -> RequestError {
    let message = format!("could not fetch the source of {what} from {url}: {e}");
    match e {
        FetchError::Upstream(u) => {
            RequestError::upstream(u, &format!("could not fetch the source of {what}"))
        }
        FetchError::Download(d) => RequestError::download(d, &format!("the source of {what}")),
        FetchError::Io(_) | FetchError::Tree(crate::module_source::tree::TreeError::Io(_)) => {
            RequestError::DiskUnavailable(message)
        }
        FetchError::Git(crate::module_source::git::GitError::Timeout { .. }) => {
            RequestError::UpstreamTimeout(message)
        }
        FetchError::Git(crate::module_source::git::GitError::Missing { .. }) => {
            RequestError::Internal(message)
        }
        FetchError::Git(_) | FetchError::Refused(_) => RequestError::UpstreamUnreachable(message),
        FetchError::Tree(_) | FetchError::TooLarge(_) => RequestError::UpstreamInvalid(message),
        FetchError::NoRoom(_) => RequestError::InsufficientStorage(format!("{what}: {e}")),
    }
}
