//! Complete lock files: `.terraform.lock.hcl` provider blocks carrying the
//! `h1:` hash of every requested platform's archive and the `zh:` hash of
//! every package the signed SHA256SUMS lists, so that one file serves a
//! team working on several platforms. A platform's `h1:` is the cached
//! archive's own; else the one the origin reported in its `packages` field
//! (whose `zh:` there matched the signed checksum); else the archive is
//! downloaded, verified and hashed.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use super::Mirror;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::verify;

/// One provider block of a lock file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockEntry {
    /// The provider.
    pub provider: Provider,
    /// The selected version.
    pub version: Version,
    /// The version constraints that selected it, as written.
    pub constraints: Option<String>,
    /// `h1:` and `zh:` hashes.
    pub hashes: BTreeSet<String>,
    /// The platforms whose `h1:` came from the origin's `packages` field,
    /// without a download.
    pub reported: Vec<Platform>,
    /// The platforms whose archives were downloaded to hash them.
    pub downloaded: Vec<Platform>,
}

/// Gathers the hashes of a provider version for `platforms`.
pub async fn entry(
    mirror: &Arc<Mirror>,
    provider: &Provider,
    version: &Version,
    constraints: Option<String>,
    platforms: &[Platform],
) -> Result<LockEntry, RequestError> {
    let record = mirror.version(provider, version).await?;
    let mut hashes: BTreeSet<String> = record
        .packages
        .values()
        .map(|pkg| verify::zh(&pkg.sha256))
        .collect();
    let cached = mirror.cached_h1(&record).await;
    let (mut reported, mut downloaded) = (Vec::new(), Vec::new());
    for platform in platforms {
        let Some(pkg) = record.packages.get(platform) else {
            return Err(RequestError::NoPackage(format!(
                "{provider} {version} has no verified package for {platform}"
            )));
        };
        if let Some(h1) = cached.get(platform) {
            hashes.insert(h1.clone());
        } else if let Some(h1) = &pkg.reported_h1 {
            hashes.insert(h1.clone());
            reported.push(platform.clone());
        } else {
            let archive = mirror
                .archive(&ArchiveKey::new(provider, version, platform))
                .await?;
            hashes.insert(archive.h1.clone());
            downloaded.push(platform.clone());
        }
    }
    Ok(LockEntry {
        provider: provider.clone(),
        version: version.clone(),
        constraints: constraints.filter(|c| !c.trim().is_empty()),
        hashes,
        reported,
        downloaded,
    })
}

/// Renders provider blocks as Terraform lays them out, sorted by address.
pub fn render(entries: &[LockEntry]) -> String {
    let mut sorted: Vec<&LockEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| a.provider.cmp(&b.provider));
    let mut out = String::from(
        "# Provider hashes for every platform listed when this was written, from tfmirror.\n",
    );
    for e in sorted {
        let _ = writeln!(out, "\nprovider \"{}\" {{", e.provider);
        match &e.constraints {
            Some(c) => {
                let _ = writeln!(out, "  version     = {}", quoted(e.version.as_str()));
                let _ = writeln!(out, "  constraints = {}", quoted(c));
            }
            None => {
                let _ = writeln!(out, "  version = {}", quoted(e.version.as_str()));
            }
        }
        out.push_str("  hashes = [\n");
        for h in &e.hashes {
            let _ = writeln!(out, "    {},", quoted(h));
        }
        out.push_str("  ]\n}\n");
    }
    out
}

/// An HCL string literal.
fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            // Template sequences would be interpolated.
            '$' | '%' => {
                out.push(c);
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_blocks_that_hcl_reads_back() {
        let entry = |source: &str, constraints: Option<&str>| LockEntry {
            provider: Provider::from_source(source).unwrap(),
            version: Version::parse("1.2.0").unwrap(),
            constraints: constraints.map(String::from),
            hashes: ["zh:00ff".to_string(), "h1:abc=".to_string()].into(),
            reported: Vec::new(),
            downloaded: Vec::new(),
        };
        let text = render(&[entry("b/two", None), entry("a/one", Some("~> 1.0"))]);
        assert!(text.contains("  version     = \"1.2.0\"\n  constraints = \"~> 1.0\"\n"));
        assert!(text.find("a/one").unwrap() < text.find("b/two").unwrap());
        let body = hcl::parse(&text).unwrap();
        let locked = crate::site::selection::locked(&body).unwrap();
        assert_eq!(locked.len(), 2);
        assert_eq!(locked[0].constraints.as_deref(), Some("~> 1.0"));
        assert_eq!(locked[1].constraints, None);
        // The hashes read back as they were written.
        assert_eq!(locked[0].hashes, ["h1:abc=", "zh:00ff"]);
        // h1: sorts before zh:, as Terraform writes them.
        assert!(text.find("h1:abc=").unwrap() < text.find("zh:00ff").unwrap());
    }
}
