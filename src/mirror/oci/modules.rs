//! Registry modules on the OCI paths, for `oci://` module sources: a
//! repository per module, a tag per version naming an image manifest
//! (`artifactType` `application/vnd.opentofu.modulepkg`) whose one
//! `archive/zip` layer is the pinned package as a deterministic zip
//! ([`crate::module_source::oci_zip`]). The manifest is kept in the store
//! (`oci-modules/<host>/<namespace>/<name>/<system>/<version>.json`) the
//! first time it is answered; a zip that would no longer match it is
//! refused, never served under the digest handed out.

use std::io::Read;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::AsyncWriteExt;

use super::{module_manifest, OciManifest, MANIFEST_TYPE};
use crate::address::oci::{tag_of, Digest, Reference};
use crate::address::{Module, Version};
use crate::error::RequestError;
use crate::mirror::Mirror;

/// The folder of the store module manifests are kept in.
const TOP: &str = "oci-modules";

/// A module version's OCI artifact.
#[derive(Debug, Clone)]
pub struct ModuleArtifact {
    /// Its image manifest.
    pub manifest: OciManifest,
    /// The digest of its one layer.
    pub layer: Digest,
    /// The layer: the package as a zip.
    pub zip: Bytes,
}

impl Mirror {
    /// A module's versions as tags, without those the policy denies.
    pub async fn oci_module_tags(&self, module: &Module) -> Result<Vec<String>, RequestError> {
        let record = self
            .visible_module_index(module, self.module_index(module).await?)
            .await;
        Ok(record.versions.iter().map(tag_of).collect())
    }

    /// A module version's artifact, by tag or by the digest of its
    /// manifest or its layer.
    pub async fn oci_module_find(
        self: &Arc<Self>,
        module: &Module,
        reference: &Reference,
    ) -> Result<(Version, ModuleArtifact), RequestError> {
        let version = match reference {
            Reference::Tag(v) => v.clone(),
            Reference::Digest(digest) => self.module_version_of(module, digest).await?,
        };
        let artifact = self.oci_module(module, &version).await?;
        if let Reference::Digest(digest) = reference {
            if *digest != artifact.manifest.digest && *digest != artifact.layer {
                return Err(RequestError::NotHeld(format!(
                    "module {module} has no OCI object {digest}"
                )));
            }
        }
        Ok((version, artifact))
    }

    /// A module version's artifact: its pinned package zipped, checked
    /// against the manifest kept for it (kept now if none is).
    pub async fn oci_module(
        self: &Arc<Self>,
        module: &Module,
        version: &Version,
    ) -> Result<ModuleArtifact, RequestError> {
        let zip = self.module_zip(module, version).await?;
        let layer = Digest::of(&zip);
        let built = module_manifest(&layer, zip.len() as u64);
        let leaf = format!("{version}.json");
        let path = path_of(module, &leaf);
        let kept = self
            .store
            .read_document(&path)
            .await
            .map_err(|e| self.store_failed("reading an OCI module manifest", &e))?;
        let text = match kept {
            Some(bytes) if bytes != built.as_bytes() => {
                return Err(RequestError::Internal(format!(
                    "module {module} {version}: its package no longer zips to the layer its kept OCI manifest names; not served"
                )));
            }
            Some(_) => built,
            None => {
                self.store
                    .write_document(&path, built.clone().into_bytes())
                    .await
                    .map_err(|e| self.store_failed("keeping an OCI module manifest", &e))?;
                built
            }
        };
        Ok(ModuleArtifact {
            manifest: OciManifest::new(MANIFEST_TYPE, text.into_bytes()),
            layer,
            zip: Bytes::from(zip),
        })
    }

    /// The pinned package of a module version as the OCI zip layer.
    async fn module_zip(
        self: &Arc<Self>,
        module: &Module,
        version: &Version,
    ) -> Result<Vec<u8>, RequestError> {
        let reader = self.module_package(module, version).await?;
        let staged = |e: &dyn std::fmt::Display| {
            RequestError::Internal(format!("zipping module {module} {version}: {e}"))
        };
        let package = self.store.staging_file().map_err(|e| staged(&e))?;
        let zip = self.store.staging_file().map_err(|e| staged(&e))?;
        let mut out = tokio::fs::File::create(package.path())
            .await
            .map_err(|e| staged(&e))?;
        tokio::io::copy(&mut reader.into_reader(), &mut out)
            .await
            .map_err(|e| staged(&e))?;
        out.flush().await.map_err(|e| staged(&e))?;
        drop(out);
        tokio::task::spawn_blocking(move || {
            crate::module_source::oci_zip::package_to_zip(package.path(), zip.path())
                .map_err(|e| e.to_string())?;
            let mut bytes = Vec::new();
            std::fs::File::open(zip.path())
                .and_then(|mut f| f.read_to_end(&mut bytes))
                .map_err(|e| e.to_string())?;
            Ok::<_, String>(bytes)
        })
        .await
        .map_err(|e| staged(&e))?
        .map_err(|e| staged(&e))
    }

    /// The version a manifest or layer digest belongs to, among the
    /// module's visible versions (newest first).
    async fn module_version_of(
        self: &Arc<Self>,
        module: &Module,
        digest: &Digest,
    ) -> Result<Version, RequestError> {
        let record = self
            .visible_module_index(module, self.module_index(module).await?)
            .await;
        for version in record.versions.iter().rev() {
            let leaf = format!("{version}.json");
            let Ok(Some(kept)) = self.store.read_document(&path_of(module, &leaf)).await else {
                continue;
            };
            let layer = serde_json::from_slice::<serde_json::Value>(&kept)
                .ok()
                .and_then(|v| v["layers"][0]["digest"].as_str().map(str::to_owned));
            if Digest::of(&kept) == *digest || layer.as_deref() == Some(digest.as_str()) {
                return Ok(version.clone());
            }
        }
        Err(RequestError::NotHeld(format!(
            "module {module} has no OCI object {digest}"
        )))
    }
}

/// The store path of a module version's kept manifest.
fn path_of<'a>(module: &'a Module, leaf: &'a str) -> [&'a str; 6] {
    [
        TOP,
        module.hostname.as_str(),
        module.namespace.as_str(),
        module.name.as_str(),
        module.system.as_str(),
        leaf,
    ]
}
