//! `tfmirror bom`: the CycloneDX bill of materials of a held provider
//! package, as the pages serve it, written to standard output or a file.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;

use crate::address::{ArchiveKey, Version};
use crate::config::Config;
use crate::mirror::Mirror;

/// `tfmirror bom`.
pub fn command(
    config: Config,
    source: &str,
    version: &str,
    platform: &[String],
    output: Option<&Path>,
) -> anyhow::Result<()> {
    let platform = super::platforms_or_current(platform)?.remove(0);
    let provider = crate::address::Provider::from_source(source)?;
    let version = Version::parse(version).with_context(|| format!("version {version:?}"))?;
    let key = ArchiveKey::new(&provider, &version, &platform);
    let document = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let made = mirror.package_bom(&key).await;
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
