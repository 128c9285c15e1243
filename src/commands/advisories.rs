//! `tfmirror advisories`: the advisory database in the store.
//!
//! - `import PATH`: reads the Go vulnerability database's bulk zip, an
//!   osv.dev zip or a directory of OSV entries, and keeps it in the
//!   configured store (every instance on it sees the new one within
//!   seconds), replacing the one kept before. A file that does not read
//!   leaves the kept database as it was.
//! - `sync`: fetches `[advisories] urls` and keeps them as the database.
//! - `status`: what was imported, when, from what.
//! - `show SOURCE VERSION`: the advisories each held platform of a
//!   provider version falls under, offline.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use crate::address::{ArchiveKey, Provider, Version};
use crate::advisories::database::Source;
use crate::advisories::{import, Reading, Summary};
use crate::config::Config;
use crate::mirror::Mirror;

/// `tfmirror advisories import PATH…`: one database of every path.
pub fn import(config: &Config, paths: &[PathBuf]) -> anyhow::Result<()> {
    let now_ms = crate::clock::unix_ms_of(std::time::SystemTime::now());
    let named: Vec<(PathBuf, String)> = (paths.iter())
        .map(|p| (p.clone(), p.display().to_string()))
        .collect();
    let stored = import::read_all(&named, now_ms)?;
    super::runtime()?.block_on(async {
        let store = crate::store::open(config, false).await?;
        crate::store::advisories::write(store.as_ref(), &stored)
            .await
            .with_context(|| format!("keeping the advisory database in {}", store.location()))?;
        store.close().await;
        anyhow::Ok(())
    })?;
    print!("{}", describe(&stored.source));
    Ok(())
}

/// `tfmirror advisories sync`.
pub fn sync(config: Config) -> anyhow::Result<()> {
    let source = super::runtime()?.block_on(async {
        let mirror = Mirror::beside_daemon(config).await?;
        let fetched = mirror.sync_advisories().await;
        mirror.close().await;
        anyhow::Ok(fetched?)
    })?;
    print!("{}", describe(&source));
    Ok(())
}

/// `tfmirror advisories status`.
pub fn status(config: &Config) -> anyhow::Result<()> {
    let current = super::runtime()?.block_on(async {
        let store = crate::store::open(config, false).await?;
        let current = crate::store::advisories::current(store.as_ref()).await;
        store.close().await;
        anyhow::Ok(current?)
    })?;
    match current {
        Some(current) => print!("{}", describe(&current.source)),
        None => {
            println!("no advisory database is kept; import one with `tfmirror advisories import`");
        }
    }
    Ok(())
}

/// What an import holds, in lines.
fn describe(s: &Source) -> String {
    let mut out = format!(
        "advisory database: {} advisories from {} ({}), SHA-256 {}\n  newest entry modified {}; imported at {} ms by tfmirror {}\n  left out: {} withdrawn, {} not about Go modules, {} ranges that do not read\n",
        s.entries,
        s.name,
        s.kind,
        s.sha256,
        if s.newest_modified.is_empty() { "(none given)" } else { &s.newest_modified },
        s.imported_at_ms,
        s.imported_by,
        s.withdrawn,
        s.not_go,
        s.ranges_not_read
    );
    if s.refused_count > 0 {
        let _ = writeln!(out, "  {} entries refused:", s.refused_count);
        for r in &s.refused {
            let _ = writeln!(out, "    {r}");
        }
    }
    out
}

/// `tfmirror advisories show SOURCE VERSION`.
pub fn show(config: Config, source: &str, version: &str, json: bool) -> anyhow::Result<()> {
    let provider = Provider::from_source(source)?;
    let version = Version::parse(version).with_context(|| format!("version {version:?}"))?;
    let per_platform = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let result = findings_of(&mirror, &provider, &version).await;
        mirror.close().await;
        result
    })?;
    let summary = Summary::of(&per_platform, Vec::new());
    if json {
        println!("{}", serde_json::to_string_pretty(&summary)?);
        return Ok(());
    }
    println!("{provider} {version}: advisories {}", summary.headline());
    for a in &summary.advisories {
        let f = &a.finding;
        println!(
            "  {} [{}] {} {}{}: {}\n    {}; {}; on {}",
            f.id,
            f.severity.map_or("unrated", |s| s.as_str()),
            f.module,
            f.found,
            f.fixed
                .as_ref()
                .map_or(String::new(), |x| format!(" (fixed in {x})")),
            f.summary,
            f.presence.describe(),
            if f.aliases.is_empty() {
                "no aliases".to_string()
            } else {
                f.aliases.join(", ")
            },
            a.platforms.join(", ")
        );
    }
    Ok(())
}

/// Each held platform's findings.
async fn findings_of(
    mirror: &Arc<Mirror>,
    provider: &Provider,
    version: &Version,
) -> anyhow::Result<BTreeMap<String, Reading>> {
    let db = mirror
        .advisories()
        .await
        .db
        .clone()
        .context("no advisory database is kept (or it does not read); import one with `tfmirror advisories import`")?;
    let record = mirror
        .stored_record(provider, version)
        .await
        .with_context(|| format!("{provider} {version} is not held by this mirror"))?;
    let mut out = BTreeMap::new();
    for platform in record.packages.keys() {
        let key = ArchiveKey::new(provider, version, platform);
        if let Some(found) = mirror
            .package_findings(&db, &key)
            .await
            .map_err(|e| anyhow::anyhow!(e))?
        {
            out.insert(platform.to_string(), found);
        }
    }
    Ok(out)
}
