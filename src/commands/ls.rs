//! `tfmirror ls`: the cached archives as a table or as JSON;
//! `tfmirror ls --modules`: the pinned module versions;
//! `tfmirror ls --releases`: the CLI release files held. All read the
//! configured store: the disk cache or the bucket.

use std::fmt::Write as _;
use std::time::Duration;

use std::collections::BTreeMap;

use anyhow::Context as _;

use crate::address::{Provider, Version};
use crate::config::Config;

/// A cached archive as `ls --json` prints it: with how its version was
/// verified.
#[derive(serde::Serialize)]
struct ListedArchive<'a> {
    #[serde(flatten)]
    archive: &'a crate::store::CachedArchive,
    /// `signed`, `pinned-key` or `keyless`; `unknown` when the version's
    /// record cannot be read, `unsigned-import` for a static import.
    verification: &'static str,
    /// The key that signed its SHA256SUMS; empty when keyless.
    signed_by: String,
    /// Its known advisories, where a database is kept and its build
    /// record read.
    #[serde(skip_serializing_if = "Option::is_none")]
    advisories: Option<Advisories>,
}

/// An archive's known advisories, in short.
#[derive(serde::Serialize, Clone)]
struct Advisories {
    /// How many.
    count: usize,
    /// The worst's severity (`unrated` where none is rated); none when
    /// there are none.
    worst: Option<&'static str>,
    /// Whether the binary was read and understood: where not, `count` is
    /// a floor and `unknown` says why.
    known: bool,
    /// Why the archive's advisories are not known, where they are not.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    unknown: Vec<String>,
}

/// Each archive's known advisories, from its build record and the kept
/// database; empty when no database is kept.
async fn advisories_of(
    store: &dyn crate::store::Store,
    archives: &[crate::store::CachedArchive],
) -> anyhow::Result<Option<Vec<Option<Advisories>>>> {
    use crate::store::{advisories, builds};
    let Some(current) = advisories::current(store).await? else {
        return Ok(None);
    };
    let Some(stored) = advisories::database(store, &current).await? else {
        return Ok(None);
    };
    let db = crate::advisories::Database::new(stored);
    let mut out = Vec::with_capacity(archives.len());
    for a in archives {
        let key = crate::address::ArchiveKey::new(&a.provider, &a.version, &a.platform);
        let summary = builds::read(store, &key)
            .await
            .ok()
            .flatten()
            .map(|record| {
                let per_platform = BTreeMap::from([(a.platform.to_string(), record.reading(&db))]);
                crate::advisories::Summary::of(&per_platform, Vec::new())
            });
        out.push(summary.map(|s| {
            Advisories {
                count: s.count,
                worst: s.worst_name(),
                known: s.known,
                unknown: s
                    .unknown
                    .values()
                    .flatten()
                    .map(crate::advisories::Unknown::describe)
                    .collect(),
            }
        }));
    }
    Ok(Some(out))
}

/// `tfmirror ls`.
pub fn command(config: &Config, json: bool) -> anyhow::Result<()> {
    let (archives, labels, advisories) = super::runtime()?.block_on(async {
        let store = crate::store::open(config, false).await?;
        let archives = store
            .list_archives()
            .await
            .with_context(|| format!("listing the archives in {}", store.location()))?;
        let mut labels: BTreeMap<(Provider, Version), (&'static str, String)> = BTreeMap::new();
        for a in &archives {
            let key = (a.provider.clone(), a.version.clone());
            if labels.contains_key(&key) {
                continue;
            }
            let label = match store.read_version(&a.provider, &a.version).await {
                Ok(Some(r)) if r.unsigned_import => ("unsigned-import", String::new()),
                Ok(Some(r)) => (r.verification().as_str(), r.signed_by().to_owned()),
                _ => ("unknown", String::new()),
            };
            labels.insert(key, label);
        }
        let advisories = advisories_of(store.as_ref(), &archives).await?;
        anyhow::Ok((archives, labels, advisories))
    })?;
    let advisory = |i: usize| advisories.as_ref().and_then(|a| a[i].clone());
    let label = |a: &crate::store::CachedArchive| {
        labels
            .get(&(a.provider.clone(), a.version.clone()))
            .cloned()
            .unwrap_or(("unknown", String::new()))
    };
    if json {
        let listed: Vec<ListedArchive<'_>> = archives
            .iter()
            .enumerate()
            .map(|(i, archive)| {
                let (verification, signed_by) = label(archive);
                ListedArchive {
                    archive,
                    verification,
                    signed_by,
                    advisories: advisory(i),
                }
            })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    let rows: Vec<[String; 6]> = archives
        .iter()
        .map(|a| {
            let (verification, signed_by) = label(a);
            [
                a.provider.to_string(),
                a.version.to_string(),
                a.platform.to_string(),
                bytesize::ByteSize(a.size).display().iec().to_string(),
                humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + Duration::from_secs(a.last_used),
                )
                .to_string(),
                if signed_by.is_empty() {
                    verification.to_owned()
                } else {
                    format!("{verification} {signed_by}")
                },
            ]
        })
        .collect();
    print_table(
        [
            "PROVIDER",
            "VERSION",
            "PLATFORM",
            "SIZE",
            "LAST USED",
            "VERIFIED",
        ],
        3,
        &rows,
    );
    let total: u64 = archives.iter().map(|a| a.size).sum();
    let keyless = archives.iter().filter(|a| label(a).0 == "keyless").count();
    println!(
        "{} archives, {}{}",
        archives.len(),
        bytesize::ByteSize(total).display().iec(),
        if keyless > 0 {
            format!(", {keyless} of keyless versions (published without a signing key)")
        } else {
            String::new()
        }
    );
    if let Some(found) = &advisories {
        let affected: Vec<&Advisories> = found.iter().flatten().filter(|a| a.count > 0).collect();
        let worst: Vec<String> = crate::advisories::WORST
            .iter()
            .filter_map(|w| {
                let n = affected.iter().filter(|a| a.worst == Some(*w)).count();
                (n > 0).then(|| format!("{w} {n}"))
            })
            .collect();
        let unread = found.iter().filter(|a| a.is_none()).count();
        let not_known = found.iter().flatten().filter(|a| !a.known).count();
        println!(
            "advisories: {} of {} archives fall under known advisories{}{}{}; `tfmirror advisories show` names them",
            affected.len(),
            archives.len(),
            if worst.is_empty() { String::new() } else { format!(" (worst: {})", worst.join(", ")) },
            if unread > 0 { format!(", {unread} not yet read") } else { String::new() },
            if not_known > 0 {
                format!(", {not_known} read and not known (no Go build information, unreadable, or a toolchain not understood)")
            } else {
                String::new()
            }
        );
    }
    Ok(())
}

/// A pinned module version as `ls --modules --json` prints it.
#[derive(serde::Serialize)]
struct ListedModule<'a> {
    #[serde(flatten)]
    pin: &'a crate::store::ModuleRecord,
    /// Whether the package is in the cache (a pin stays when its package
    /// is evicted).
    held: bool,
}

/// `tfmirror ls --modules`.
pub fn modules(config: &Config, json: bool) -> anyhow::Result<()> {
    let pins = super::runtime()?.block_on(async {
        let store = crate::store::open(config, false).await?;
        store
            .list_modules()
            .await
            .with_context(|| format!("listing the modules in {}", store.location()))
    })?;
    if json {
        let listed: Vec<ListedModule<'_>> = pins
            .iter()
            .map(|(pin, held)| ListedModule { pin, held: *held })
            .collect();
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    let rows: Vec<[String; 5]> = pins
        .iter()
        .map(|(pin, held)| {
            [
                pin.module.to_string(),
                pin.version.to_string(),
                pin.commit.as_ref().map_or_else(
                    || pin.source_kind.clone(),
                    |c| format!("git {}", c.get(..12).unwrap_or(c)),
                ),
                if *held {
                    bytesize::ByteSize(pin.size).display().iec().to_string()
                } else {
                    "(evicted)".to_owned()
                },
                pin.h1.clone(),
            ]
        })
        .collect();
    print_table(["MODULE", "VERSION", "SOURCE", "SIZE", "TREE"], 3, &rows);
    let held = pins.iter().filter(|(_, held)| *held).count();
    println!(
        "{} module versions pinned, {held} packages held",
        pins.len()
    );
    Ok(())
}

/// A held CLI release file as `ls --releases --json` prints it.
#[derive(serde::Serialize)]
struct ListedRelease<'a> {
    product: crate::address::Product,
    version: &'a crate::address::Version,
    file: &'a str,
    size: u64,
    /// The ID of the key whose signature over the checksums verified.
    key_id: &'a str,
}

/// `tfmirror ls --releases`.
pub fn releases(config: &Config, json: bool) -> anyhow::Result<()> {
    let held = super::runtime()?.block_on(async {
        let store = crate::store::open(config, false).await?;
        store
            .list_releases()
            .await
            .with_context(|| format!("listing the CLI releases in {}", store.location()))
    })?;
    let listed: Vec<ListedRelease<'_>> = held
        .iter()
        .flat_map(|(record, files)| {
            files.iter().map(|(file, size)| ListedRelease {
                product: record.product,
                version: &record.version,
                file,
                size: *size,
                key_id: &record.key_id,
            })
        })
        .collect();
    if json {
        println!("{}", serde_json::to_string_pretty(&listed)?);
        return Ok(());
    }
    let rows: Vec<[String; 5]> = listed
        .iter()
        .map(|r| {
            [
                r.product.to_string(),
                r.version.to_string(),
                r.file.to_owned(),
                bytesize::ByteSize(r.size).display().iec().to_string(),
                r.key_id.to_owned(),
            ]
        })
        .collect();
    print_table(
        ["PRODUCT", "VERSION", "FILE", "SIZE", "SIGNED BY"],
        3,
        &rows,
    );
    let total: u64 = listed.iter().map(|r| r.size).sum();
    println!(
        "{} releases verified, {} files held, {}",
        held.len(),
        listed.len(),
        bytesize::ByteSize(total).display().iec()
    );
    Ok(())
}

/// Prints rows under a header, in columns; column `right` is right-aligned.
fn print_table<const N: usize>(header: [&str; N], right: usize, rows: &[[String; N]]) {
    let mut widths = header.map(str::len);
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; N]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == right {
                let _ = write!(s, "{cell:>w$}  ");
            } else {
                let _ = write!(s, "{cell:<w$}  ");
            }
        }
        s.trim_end().to_owned()
    };
    println!("{}", line(header));
    for row in rows {
        println!("{}", line(row.each_ref().map(String::as_str)));
    }
}
