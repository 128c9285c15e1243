//! A held package's bill of materials
//! (`/-/api/providers/:hostname/:namespace/:type/:version/:os_arch/cyclonedx.json`):
//! the CycloneDX document the mirror makes from the version's stored
//! evidence and the archive's build record ([`crate::bom`]). Read from the
//! store alone: no origin is asked anything.

use super::{PageAnswer, Site};
use crate::address::ArchiveKey;
use crate::error::RequestError;

/// The bill of materials of a held package.
pub async fn page(site: Site<'_>, key: &ArchiveKey) -> Result<PageAnswer, RequestError> {
    Ok(PageAnswer::json(&site.mirror.package_bom(key).await?))
}
