//! A held package's bill of materials
//! (`/-/api/providers/:hostname/:namespace/:type/:version/:os_arch/cyclonedx.json`):
//! the CycloneDX document [`crate::bom`] makes from the version's stored
//! evidence and the archive's build record. Read from the store alone: no
//! origin is asked anything.

use super::{PageAnswer, Site};
use crate::address::ArchiveKey;
use crate::bom::{cyclonedx, PackageFacts};
use crate::error::RequestError;

/// The bill of materials of a held package.
pub async fn page(site: Site<'_>, key: &ArchiveKey) -> Result<PageAnswer, RequestError> {
    let not_held = || {
        RequestError::NotHeld(format!(
            "{key} is not held by this mirror: a bill of materials is made for the packages it holds"
        ))
    };
    let record = site
        .mirror
        .stored_record(&key.provider, &key.version)
        .await
        .ok_or_else(not_held)?;
    let pkg = record.packages.get(&key.platform).ok_or_else(not_held)?;
    let build = site.mirror.build_record(key).await?.ok_or_else(not_held)?;
    let h1 = site.mirror.cached_h1(&record).await.remove(&key.platform);
    let sums = record.sums.get(pkg.sums);
    let verification = if record.unsigned_import {
        "unsigned-import"
    } else {
        record.verification().as_str()
    };
    let document = cyclonedx(&PackageFacts {
        provider: &key.provider,
        version: &key.version,
        platform: &key.platform,
        filename: &pkg.filename,
        sha256: &pkg.sha256,
        h1: h1.as_deref(),
        signed_by: sums.map_or("", |s| s.signed_by.as_str()),
        verification,
        build: &build,
    });
    Ok(PageAnswer::json(&document))
}
