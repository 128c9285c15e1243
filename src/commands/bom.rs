//! `tfmirror bom`: the CycloneDX bill of materials of a held provider
//! package or CLI release zip (`tfmirror bom terraform 1.0.3`), as the
//! pages serve it, written to standard output or a file.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use crate::address::{ArchiveKey, ArtifactName, Product, ReleaseFile, Version};
use crate::config::Config;
use crate::mirror::Mirror;

/// What a bill of materials is asked for.
enum Asked {
    /// A provider package.
    Package(ArchiveKey),
    /// A CLI release's zip.
    Release(ReleaseFile),
}

/// `tfmirror bom`.
pub fn command(
    config: Config,
    source: &str,
    version: &str,
    platform: &[String],
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let platform = super::platforms_or_current(platform)?.remove(0);
    let version = Version::parse(version).with_context(|| format!("version {version:?}"))?;
    // A provider's source has a slash; a product's name has none.
    let asked = if let Ok(product) = source.parse::<Product>() {
        let name = format!("{product}_{version}_{platform}.zip");
        Asked::Release(ReleaseFile {
            product,
            version,
            name: ArtifactName::parse(&name)?,
        })
    } else {
        let provider = crate::address::Provider::from_source(source)?;
        Asked::Package(ArchiveKey::new(&provider, &version, &platform))
    };
    let document = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let made = match &asked {
            Asked::Package(key) => mirror.package_bom(key).await,
            Asked::Release(file) => mirror.release_bom(file).await,
        };
        mirror.close().await;
        made.map_err(|e| anyhow::anyhow!(e))
    })?;
    let mut text = serde_json::to_string_pretty(&document)?;
    text.push('\n');
    match output {
        Some(path) => {
            crate::store::atomic::write(crate::store::atomic::dir_of(path), path, text.as_bytes())
                .with_context(|| format!("writing {}", path.display()))?;
        }
        None => print!("{text}"),
    }
    Ok(())
}
