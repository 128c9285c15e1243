//! The daemon's snapshot of its archive index, so that the next start
//! reads one file instead of walking every archive in the cache (or
//! listing the whole bucket).
//!
//! The daemon writes it when it stops (`<cache.dir>/index/archives.snapshot`)
//! and takes it (reads and removes it) when it starts, so that a daemon
//! that did not stop cleanly leaves none and the next start walks the
//! store. A snapshot is used only by the daemon and only when its checksum
//! holds and its [`Seal`] matches: the same store, and no other process
//! (`sync`, `import`, `gc`, `verify`) changed the store since the
//! snapshot's daemon started ([`crate::store::changes`]). Anything else
//! (no snapshot, another format, a damaged one) means a walk. A snapshot
//! that is used is a fast start, not the truth: the daemon reconciles it
//! with the store at once, while it serves. It says whether a
//! reconciliation confirmed the index it holds (a daemon stopped while
//! reconciling writes one that says it did not).
//!
//! The file is postcard: a header, then one record per provider with its
//! versions and, per platform, size, stamp and the last time its use was
//! written to the store; then the SHA-256 of everything before it.

use std::io;
use std::path::{Path, PathBuf};

use crate::verify::Sha256;
use serde::{Deserialize, Serialize};

use super::table::Held;
use super::{Archives, Residency};
use crate::address::{Platform, Provider, Version};

/// The snapshot format this build writes and reads (1 had no checksum).
const FORMAT: u32 = 2;

/// The bytes of the checksum at the end.
const SUM: usize = 32;

/// What a snapshot was made for: it is used only where both match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    /// The store (`Store::location`).
    pub location: String,
    /// The store's last change by another process when the daemon
    /// started (`None`: never).
    pub changed: Option<u64>,
}

#[derive(Serialize, Deserialize)]
struct Header {
    format: u32,
    seal: Seal,
    /// Whether a reconciliation with the store confirmed the index.
    confirmed: bool,
    archives: u64,
    turns: u64,
    platforms: Vec<String>,
    providers: u32,
}

/// One held platform: its number, size, stamp and touched time.
type Listed = (u16, u64, u64, u32);

/// One provider: its versions and their platforms.
#[derive(Serialize, Deserialize)]
struct Record<'a> {
    provider: &'a str,
    #[serde(borrow)]
    versions: Vec<(&'a str, Vec<Listed>)>,
}

/// Where the daemon keeps its snapshot below `cache.dir`.
pub fn path(cache_dir: &Path) -> PathBuf {
    cache_dir.join("index").join("archives.snapshot")
}

/// Why a snapshot was not used.
#[derive(Debug, thiserror::Error)]
pub enum Unused {
    /// There is none.
    #[error("there is no snapshot")]
    Missing,
    /// It could not be read or decoded.
    #[error("the snapshot {0} cannot be read: {1}")]
    Unreadable(PathBuf, String),
    /// It is for another store, or the store changed since.
    #[error("the snapshot {0} is out of date: {1}")]
    Stale(PathBuf, &'static str),
}

impl Residency {
    /// The index's archives, as a snapshot sealed with `seal`, saying
    /// whether a reconciliation `confirmed` them.
    pub fn snapshot(&self, seal: &Seal, confirmed: bool) -> Vec<u8> {
        let index = self.lock();
        let table = &index.archives;
        let platforms: Vec<String> = (0..)
            .map_while(|n| u16::try_from(n).ok())
            .take_while(|n| table.has_platform(*n))
            .map(|n| table.platform(n).to_string())
            .collect();
        let slots: Vec<_> = table
            .slots()
            .iter()
            .filter(|s| !s.versions.is_empty())
            .collect();
        let header = Header {
            format: FORMAT,
            seal: seal.clone(),
            confirmed,
            archives: table.len(),
            turns: index.turns,
            platforms,
            providers: u32::try_from(slots.len()).expect("fewer than 2^32 providers"),
        };
        let mut out = postcard::to_stdvec(&header).expect("a header encodes");
        for slot in slots {
            let provider = slot.provider.to_string();
            let record = Record {
                provider: &provider,
                versions: slot
                    .versions
                    .iter()
                    .map(|(v, held)| {
                        let held = held
                            .iter()
                            .map(|h| (h.platform, h.size, h.stamp, h.touched))
                            .collect();
                        (&**v, held)
                    })
                    .collect(),
            };
            out = postcard::to_extend(&record, out).expect("a record encodes");
        }
        let sum = Sha256::digest(&out);
        out.extend_from_slice(&sum);
        out
    }
}

/// Writes a snapshot atomically (staged in `tmp_dir`).
pub fn write(cache_dir: &Path, tmp_dir: &Path, bytes: &[u8]) -> io::Result<()> {
    let dest = path(cache_dir);
    std::fs::create_dir_all(crate::store::atomic::dir_of(&dest))?;
    crate::store::atomic::write(tmp_dir, &dest, bytes)
}

/// Reads the snapshot below `cache_dir` if it is sealed with `seal`, and
/// removes it, used or not. Returns its archives, and whether a
/// reconciliation confirmed them.
pub fn take(cache_dir: &Path, seal: &Seal) -> Result<(Archives, bool), Unused> {
    let file = path(cache_dir);
    let bytes = match std::fs::read(&file) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Unused::Missing),
        Err(e) => return Err(Unused::Unreadable(file, e.to_string())),
    };
    if let Err(e) = std::fs::remove_file(&file) {
        return Err(Unused::Unreadable(
            file,
            format!("it cannot be removed: {e}"),
        ));
    }
    decode(&bytes, seal).map_err(|why| match why {
        Decoded::Bad(e) => Unused::Unreadable(file.clone(), e),
        Decoded::Stale(e) => Unused::Stale(file.clone(), e),
    })
}

enum Decoded {
    Bad(String),
    Stale(&'static str),
}

fn decode(bytes: &[u8], seal: &Seal) -> Result<(Archives, bool), Decoded> {
    let bad = |e: postcard::Error| Decoded::Bad(e.to_string());
    // The format first: a snapshot of another format is not damaged, and
    // says so.
    let (format, _) = postcard::take_from_bytes::<u32>(bytes).map_err(bad)?;
    if format != FORMAT {
        return Err(Decoded::Stale("it was written in another format"));
    }
    let Some(body) = bytes.len().checked_sub(SUM).map(|at| &bytes[..at]) else {
        return Err(Decoded::Bad("it is shorter than its checksum".into()));
    };
    if Sha256::digest(body).as_slice() != &bytes[body.len()..] {
        return Err(Decoded::Bad(
            "its checksum does not match: it is truncated or damaged".into(),
        ));
    }
    let (header, mut rest) = postcard::take_from_bytes::<Header>(body).map_err(bad)?;
    if header.seal.location != seal.location {
        return Err(Decoded::Stale("it was written for another store"));
    }
    if header.seal.changed != seal.changed {
        return Err(Decoded::Stale(
            "another process changed the store's archives since it was written",
        ));
    }
    let mut archives = Archives::default();
    // The snapshot's platform numbers, as the new table numbers them.
    let mut platforms = Vec::with_capacity(header.platforms.len());
    for p in &header.platforms {
        let platform = Platform::parse(p).map_err(|e| Decoded::Bad(e.to_string()))?;
        let n = (archives.table.platform_id_or_new(&platform))
            .ok_or_else(|| Decoded::Bad("too many platforms".into()))?;
        platforms.push(n);
    }
    for _ in 0..header.providers {
        let (record, left) = postcard::take_from_bytes::<Record>(rest).map_err(bad)?;
        rest = left;
        let provider =
            Provider::from_source(record.provider).map_err(|e| Decoded::Bad(e.to_string()))?;
        let id = archives.table.provider_id_or_new(&provider);
        for (version, listed) in record.versions {
            // Only versions as tfmirror writes them, which parse back.
            Version::parse(version).map_err(|e| Decoded::Bad(e.to_string()))?;
            let mut held = Vec::with_capacity(listed.len());
            for (platform, size, stamp, touched) in listed {
                let platform = *platforms
                    .get(usize::from(platform))
                    .ok_or_else(|| Decoded::Bad(format!("platform {platform} is not listed")))?;
                held.push(Held {
                    size,
                    stamp,
                    touched,
                    platform,
                    seen: false,
                });
            }
            held.sort_by_key(|h| h.platform);
            held.dedup_by_key(|h| h.platform);
            archives.bytes += held.iter().map(|h| h.size).sum::<u64>();
            let replaced =
                (archives.table).put_version(id, version.into(), held.into_boxed_slice());
            archives.bytes -= replaced.map_or(0, |r| r.iter().map(|h| h.size).sum::<u64>());
        }
    }
    if !rest.is_empty() || archives.len() != header.archives {
        return Err(Decoded::Bad(format!(
            "it lists {} archives where its header says {}",
            archives.len(),
            header.archives
        )));
    }
    archives.turns = header.turns;
    Ok((archives, header.confirmed))
}
