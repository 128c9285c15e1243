//! `tfmirror push-oci` and `[[watch.oci]]`: filling a site's own OCI
//! registry with what the mirror verified, in the layouts OpenTofu
//! installs from. A provider version is an image index tagged with the
//! version (`+` written `_`) whose per-platform image manifests each hold
//! the origin's archive, byte for byte, as their one `archive/zip` layer
//! (its digest is the signed `zh:` hash); a registry module version is an
//! image manifest (`application/vnd.opentofu.modulepkg`) whose one layer
//! is the pinned package as a deterministic zip. The repositories are
//! those of the mirror's own `/v2/`: `<prefix>/<hostname>/<namespace>/<type>`
//! and `<prefix>/<hostname>/<namespace>/<name>/<system>`.
//!
//! Every push asks the registry first: a tag that already names the same
//! content is left alone, a tag that names other content is never
//! overwritten (that version is reported and skipped), and blobs the
//! registry holds are not sent again; so a push that stopped half-way
//! picks up where it stopped, and a second push sends nothing. The tag is
//! written last, once everything it names is there.

pub mod auth;
pub mod client;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::Arc;

use tokio_util::io::ReaderStream;

use super::fill::{select_module_versions, select_versions, Observer};
use super::selection::Selection;
use crate::address::oci::{tag_of, Digest, OciRepo};
use crate::address::{ArchiveKey, Module, Platform, Provider, Version};
use crate::mirror::oci::{provider_layout, EMPTY_CONFIG, INDEX_TYPE, MANIFEST_TYPE};
use crate::mirror::{Freshness, Mirror};
use crate::store::{Store, StoreError};
use client::Registry;

/// Where to push: a registry (`host[:port]`) and a path prefix below which
/// the repositories go.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// The registry's `host[:port]`.
    pub registry: String,
    /// The repositories' common prefix (may be empty).
    pub prefix: String,
}

impl Target {
    /// Parses `REGISTRY[/PREFIX]`, as `registry.example:5000/opentofu`.
    pub fn parse(given: &str) -> anyhow::Result<Target> {
        let bad = |why: &str| anyhow::anyhow!("{given:?} is not REGISTRY/PREFIX: {why}");
        if given.contains("://") {
            return Err(bad(
                "give it without a scheme (the registry is spoken to over https)",
            ));
        }
        let (registry, prefix) = given
            .trim_end_matches('/')
            .split_once('/')
            .unwrap_or((given, ""));
        let host = registry.rsplit_once(':').map_or(registry, |(h, port)| {
            if port.parse::<u16>().is_ok() {
                h
            } else {
                registry
            }
        });
        if host.is_empty() || url::Host::parse(host).is_err() {
            return Err(bad(
                "the registry must be a host name or address, with an optional :port",
            ));
        }
        let component = |c: &str| {
            !c.is_empty()
                && c.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
                && c.as_bytes()[0].is_ascii_alphanumeric()
        };
        if !prefix.is_empty() && !prefix.split('/').all(component) {
            return Err(bad(
                "the prefix must be lowercase letters, digits and . _ - between slashes",
            ));
        }
        Ok(Target {
            registry: registry.to_owned(),
            prefix: prefix.to_owned(),
        })
    }

    /// The repository of a provider or module in this registry.
    pub fn repo(&self, of: &OciRepo) -> String {
        if self.prefix.is_empty() {
            of.to_string()
        } else {
            format!("{}/{of}", self.prefix)
        }
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.prefix.is_empty() {
            f.write_str(&self.registry)
        } else {
            write!(f, "{}/{}", self.registry, self.prefix)
        }
    }
}

/// One thing to push.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Item {
    /// A provider version, for these platforms (all it publishes when
    /// empty).
    Provider(Provider, Version, Vec<Platform>),
    /// A registry module version.
    Module(Module, Version),
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Provider(p, v, _) => write!(f, "{p} {v}"),
            Item::Module(m, v) => write!(f, "module {m} {v}"),
        }
    }
}

/// What a push did.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Pushed {
    /// Tags written, one line each (`repository:tag digest`).
    pub pushed: Vec<String>,
    /// Tags the registry already held with the same content.
    pub present: usize,
    /// Blobs sent.
    pub blobs: usize,
    /// Bytes of the blobs sent.
    pub bytes: u64,
    /// What failed, one line each.
    pub failures: Vec<String>,
}

impl fmt::Display for Pushed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "tags pushed: {}, already there: {}, blobs sent: {} ({}), failures: {}",
            self.pushed.len(),
            self.present,
            self.blobs,
            bytesize::ByteSize(self.bytes).display().iec(),
            self.failures.len()
        )
    }
}

/// The items a selection names: each provider version it selects, for the
/// platforms it names (`platforms` when given instead), and each registry
/// module version it selects. What cannot be selected is a failure line.
pub async fn items_of_selection(
    mirror: &std::sync::Arc<Mirror>,
    selection: &Selection,
    platforms: &[Platform],
    freshness: Freshness,
) -> (Vec<Item>, Vec<String>) {
    let (mut items, mut failures) = (BTreeSet::new(), Vec::new());
    for req in &selection.providers {
        match select_versions(mirror, req, freshness).await {
            Ok(versions) => {
                let chosen = if platforms.is_empty() {
                    &req.platforms
                } else {
                    platforms
                };
                for v in versions {
                    items.insert(Item::Provider(req.provider.clone(), v, chosen.to_vec()));
                }
            }
            Err(e) => failures.push(e.to_string()),
        }
    }
    for req in &selection.modules {
        match select_module_versions(mirror, req, freshness).await {
            Ok(versions) => {
                items.extend(
                    versions
                        .into_iter()
                        .map(|v| Item::Module(req.module.clone(), v)),
                );
            }
            Err(line) => failures.push(line),
        }
    }
    (items.into_iter().collect(), failures)
}

/// The items the cache holds: each provider version with the platforms
/// whose archives it holds (`platforms` when given instead), and each
/// module version whose package it holds.
pub async fn items_in_store(
    store: &dyn Store,
    platforms: &[Platform],
) -> Result<Vec<Item>, StoreError> {
    let mut held: BTreeMap<(Provider, Version), Vec<Platform>> = BTreeMap::new();
    for archive in store.list_archives().await? {
        let key = archive.key();
        held.entry((key.provider, key.version))
            .or_default()
            .push(key.platform);
    }
    let mut items: Vec<Item> = held
        .into_iter()
        .map(|((p, v), mut held)| {
            held.sort();
            let chosen = if platforms.is_empty() {
                held
            } else {
                platforms.to_vec()
            };
            Item::Provider(p, v, chosen)
        })
        .collect();
    for (pin, package_held) in store.list_modules().await? {
        if package_held {
            items.push(Item::Module(pin.module, pin.version));
        }
    }
    items.sort();
    Ok(items)
}

/// Pushes every item to the target, one after another, telling the
/// observer of each.
pub async fn push(
    mirror: &Arc<Mirror>,
    registry: &Registry,
    target: &Target,
    items: &[Item],
    observer: &dyn Observer,
) -> Pushed {
    let mut pushed = Pushed::default();
    observer.start(items.len() as u64);
    for item in items {
        let one = One {
            mirror,
            registry,
            pushed: &mut pushed,
        };
        let outcome = match item {
            Item::Provider(p, v, platforms) => {
                one.provider(&target.repo(&OciRepo::Provider(p.clone())), p, v, platforms)
                    .await
            }
            Item::Module(m, v) => {
                one.module(&target.repo(&OciRepo::Module(m.clone())), m, v)
                    .await
            }
        };
        match outcome {
            Ok(Some(line)) => {
                observer.advance(&format!("pushed {line}"));
                pushed.pushed.push(line);
            }
            Ok(None) => {
                observer.advance(&format!("{item}: already there"));
                pushed.present += 1;
            }
            Err(why) => {
                let line = format!("{item}: {why}");
                observer.line(&format!("FAILED {line}"));
                observer.advance("");
                pushed.failures.push(line);
            }
        }
    }
    observer.finish();
    pushed
}

/// One item's push.
struct One<'a> {
    mirror: &'a Arc<Mirror>,
    registry: &'a Registry,
    pushed: &'a mut Pushed,
}

impl One<'_> {
    /// Pushes a provider version; `None` when the tag was there already.
    async fn provider(
        mut self,
        repo: &str,
        provider: &Provider,
        version: &Version,
        platforms: &[Platform],
    ) -> Result<Option<String>, String> {
        let record = self
            .mirror
            .version(provider, version)
            .await
            .map_err(|e| e.to_string())?;
        let chosen: Vec<Platform> = if platforms.is_empty() {
            record.packages.keys().cloned().collect()
        } else {
            let unknown: Vec<String> = platforms
                .iter()
                .filter(|p| !record.packages.contains_key(*p))
                .map(ToString::to_string)
                .collect();
            if !unknown.is_empty() {
                return Err(format!("not published for {}", unknown.join(", ")));
            }
            platforms.to_vec()
        };
        let mut packages = BTreeMap::new();
        for platform in &chosen {
            let key = ArchiveKey::new(provider, version, platform);
            // Fetched and verified when the cache lacks it (and the mirror
            // is online).
            let archive = self.mirror.archive(&key).await.map_err(|e| e.to_string())?;
            let sha256 = record.packages[platform].sha256.clone();
            packages.insert(platform.clone(), (sha256, archive.size));
        }
        let layout = provider_layout(&packages);
        let index = Digest::of(layout.index.as_bytes());
        let tag = tag_of(version);
        if !self.tag_free(repo, &tag, &index).await? {
            return Ok(None);
        }
        self.small_blob(repo, EMPTY_CONFIG.into()).await?;
        for (platform, (sha256, size)) in &packages {
            let layer = Digest::from_sha256_hex(sha256).map_err(|e| e.to_string())?;
            if !self
                .registry
                .has_blob(repo, &layer)
                .await
                .map_err(|e| format!("{e:#}"))?
            {
                let key = ArchiveKey::new(provider, version, platform);
                let reader = self
                    .mirror
                    .store()
                    .open_archive(&key)
                    .await
                    .map_err(|e| e.to_string())?
                    .ok_or_else(|| {
                        format!("{key} left the cache while it was pushed; push again")
                    })?;
                let body = reqwest::Body::wrap_stream(ReaderStream::new(reader.into_reader()));
                self.registry
                    .upload_blob(repo, &layer, *size, body)
                    .await
                    .map_err(|e| format!("{e:#}"))?;
                self.pushed.blobs += 1;
                self.pushed.bytes += size;
            }
            let manifest = &layout.manifests[platform];
            let digest = Digest::of(manifest.as_bytes());
            self.registry
                .put_manifest(repo, digest.as_str(), MANIFEST_TYPE, manifest.as_bytes())
                .await
                .map_err(|e| format!("{e:#}"))?;
        }
        self.registry
            .put_manifest(repo, &tag, INDEX_TYPE, layout.index.as_bytes())
            .await
            .map_err(|e| format!("{e:#}"))?;
        Ok(Some(format!(
            "{}/{repo}:{tag} {index}",
            self.registry_name()
        )))
    }

    /// Pushes a module version; `None` when the tag was there already.
    async fn module(
        mut self,
        repo: &str,
        module: &Module,
        version: &Version,
    ) -> Result<Option<String>, String> {
        let artifact = self
            .mirror
            .oci_module(module, version)
            .await
            .map_err(|e| e.to_string())?;
        let tag = tag_of(version);
        let digest = artifact.manifest.digest.clone();
        if !self.tag_free(repo, &tag, &digest).await? {
            return Ok(None);
        }
        self.small_blob(repo, EMPTY_CONFIG.into()).await?;
        self.small_blob(repo, artifact.zip.clone()).await?;
        self.registry
            .put_manifest(repo, &tag, MANIFEST_TYPE, &artifact.manifest.bytes)
            .await
            .map_err(|e| format!("{e:#}"))?;
        Ok(Some(format!(
            "{}/{repo}:{tag} {digest}",
            self.registry_name()
        )))
    }

    fn registry_name(&self) -> String {
        self.registry.host().to_owned()
    }

    /// Whether the tag is free to write: `false` when it names `digest`
    /// already, an error when it names anything else.
    async fn tag_free(&self, repo: &str, tag: &str, digest: &Digest) -> Result<bool, String> {
        match self
            .registry
            .manifest_digest(repo, tag)
            .await
            .map_err(|e| format!("{e:#}"))?
        {
            None => Ok(true),
            Some(there) if there == *digest => Ok(false),
            Some(there) => Err(format!(
                "{repo}:{tag} holds {there}, not {digest}; a tag's content is never overwritten"
            )),
        }
    }

    /// Sends a blob held in memory unless the registry holds it.
    async fn small_blob(&mut self, repo: &str, bytes: bytes::Bytes) -> Result<(), String> {
        let digest = Digest::of(&bytes);
        if self
            .registry
            .has_blob(repo, &digest)
            .await
            .map_err(|e| format!("{e:#}"))?
        {
            return Ok(());
        }
        let size = bytes.len() as u64;
        self.registry
            .upload_blob(repo, &digest, size, reqwest::Body::from(bytes))
            .await
            .map_err(|e| format!("{e:#}"))?;
        self.pushed.blobs += 1;
        self.pushed.bytes += size;
        Ok(())
    }
}
