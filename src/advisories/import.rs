//! Reading an advisory database from what an operator has: the Go
//! vulnerability database's bulk zip (`ID/GO-….json`, with `index/*.json`
//! that are indexes, not entries), an osv.dev ecosystem zip (entries at
//! its top), or a directory of OSV JSON files (unpacked from either).
//!
//! Every entry is read within [`MAX_ENTRY`] bytes. An entry that does not
//! read is left out and named in the import's record; a zip that does not
//! read (corrupt, truncated) fails the whole import, and so does one that
//! holds no entries at all: the database kept before stays as it was.
//! Each entry is held to [`super::bounds`] as it is read, one at a time:
//! only the advisories kept, within [`super::bounds::MAX_DATABASE`], are
//! held in memory beside the entry being read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Read};
use std::path::Path;

use crate::verify::Sha256;

use super::database::{Advisory, Source, Stored, Taken, DATABASE_FORMAT};
use super::osv;

/// The largest entry read, in bytes.
pub const MAX_ENTRY: u64 = 4 << 20;

/// The most entries one import reads.
pub const MAX_ENTRIES: usize = 500_000;

/// How many refused entries the record names.
const NAMED_REFUSALS: usize = 20;

/// Why an import failed; the database kept before is untouched.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file or directory could not be read.
    #[error("reading {path}: {source}")]
    Io {
        /// What.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// The file is no readable zip archive.
    #[error("{path} is not a readable zip archive (corrupt or truncated?): {reason}")]
    NotZip {
        /// What.
        path: String,
        /// Why.
        reason: String,
    },
    /// A member of the zip could not be read whole.
    #[error("{path}: its member {member} does not read (corrupt or truncated?): {reason}")]
    Member {
        /// The zip.
        path: String,
        /// The member.
        member: String,
        /// Why.
        reason: String,
    },
    /// More entries than one import reads.
    #[error("{path} holds more than {MAX_ENTRIES} entries")]
    TooMany {
        /// What.
        path: String,
    },
    /// What was read weighs more than a database may.
    #[error("{path}: its advisories weigh more than the {} bytes a database may hold kept (details cut to {} bytes each)", super::bounds::MAX_DATABASE, super::bounds::MAX_DETAILS)]
    TooLarge {
        /// What.
        path: String,
    },
    /// Nothing in it is an OSV entry of the Go ecosystem.
    #[error("{path} holds no OSV entries for Go modules ({read} files read, {refused} refused)")]
    Empty {
        /// What.
        path: String,
        /// Files read.
        read: usize,
        /// Files refused.
        refused: usize,
    },
}

/// What was read, before it is kept.
#[derive(Default)]
struct Reading {
    advisories: BTreeMap<String, Advisory>,
    source: Source,
    files: usize,
    /// What the advisories kept weigh ([`super::bounds::weight`]).
    weight: u64,
}

impl Reading {
    fn source(&mut self) -> &mut Source {
        &mut self.source
    }

    /// One file's bytes, by its name in the zip or directory; `Err` when
    /// the advisories kept now weigh more than a database may.
    fn entry(&mut self, name: &str, bytes: &[u8], path: &Path) -> Result<(), ImportError> {
        self.files += 1;
        let refuse = |reading: &mut Reading, why: String| {
            let source = reading.source();
            source.refused_count += 1;
            if source.refused.len() < NAMED_REFUSALS {
                source.refused.push(format!("{name}: {why}"));
            }
        };
        if bytes.len() as u64 > MAX_ENTRY {
            refuse(self, format!("larger than {MAX_ENTRY} bytes"));
            return Ok(());
        }
        let entry = match osv::Entry::from_json(bytes) {
            Ok(e) => e,
            Err(why) => {
                refuse(self, why);
                return Ok(());
            }
        };
        match Advisory::from_osv(entry) {
            Taken::Kept(mut advisory, unread) => {
                if let Err(why) = super::bounds::bound(&mut advisory) {
                    refuse(self, why);
                    return Ok(());
                }
                self.weight = self.weight.saturating_add(super::bounds::weight(&advisory));
                let source = self.source();
                source.ranges_not_read += unread;
                if advisory.modified > source.newest_modified {
                    source.newest_modified.clone_from(&advisory.modified);
                }
                if let Some(was) = self.advisories.insert(advisory.id.clone(), *advisory) {
                    self.weight = self.weight.saturating_sub(super::bounds::weight(&was));
                }
                if self.weight > super::bounds::MAX_DATABASE {
                    return Err(ImportError::TooLarge {
                        path: path.display().to_string(),
                    });
                }
            }
            Taken::Withdrawn => self.source().withdrawn += 1,
            Taken::NotGo => self.source().not_go += 1,
        }
        Ok(())
    }

    /// The database read, its source named by each file read: `(name,
    /// kind, SHA-256)`.
    fn finish(
        mut self,
        read: &[(String, &str, String)],
        now_ms: u64,
    ) -> Result<Stored, ImportError> {
        let join = |f: &dyn Fn(&(String, &str, String)) -> String| {
            read.iter().map(f).collect::<Vec<_>>().join(", ")
        };
        if self.advisories.is_empty() {
            let refused = self.source().refused_count;
            return Err(ImportError::Empty {
                path: join(&|r| r.0.clone()),
                read: self.files,
                refused,
            });
        }
        let entries = self.advisories.len();
        let (name, kind, sha256) = (
            join(&|r| r.0.clone()),
            join(&|r| r.1.to_string()),
            join(&|r| r.2.clone()),
        );
        let source = self.source();
        source.kind = kind;
        source.name = name;
        source.sha256 = sha256;
        source.entries = entries;
        source.imported_at_ms = now_ms;
        source.imported_by = env!("CARGO_PKG_VERSION").to_string();
        let source = source.clone();
        Ok(Stored {
            format: DATABASE_FORMAT,
            source,
            advisories: self.advisories.into_values().collect(),
        })
    }
}

/// Reads a zip or a directory of OSV entries at `path`.
pub fn read(path: &Path, now_ms: u64) -> Result<Stored, ImportError> {
    read_all(&[(path.to_path_buf(), path.display().to_string())], now_ms)
}

/// Reads several zips or directories, each with the name its source is
/// given (a file name, a URL), into one database: an entry of a later
/// one replaces an earlier one's of the same ID. The source's `name`,
/// `kind` and `sha256` list each one's, comma-separated, in order.
pub fn read_all(
    paths: &[(std::path::PathBuf, String)],
    now_ms: u64,
) -> Result<Stored, ImportError> {
    let mut reading = Reading::default();
    let mut read = Vec::new();
    for (path, name) in paths {
        let io = |source| ImportError::Io {
            path: path.display().to_string(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        let (kind, sha256) = if meta.is_dir() {
            read_dir(path, &mut reading)?
        } else {
            read_zip(path, &mut reading)?
        };
        read.push((name.clone(), kind, sha256));
    }
    reading.finish(&read, now_ms)
}

/// Whether a name inside the Go database is one of its indexes.
fn is_index(name: &str) -> bool {
    let name = name.trim_start_matches("./");
    name.starts_with("index/") || matches!(name, "db.json" | "modules.json" | "vulns.json")
}

fn read_zip(path: &Path, reading: &mut Reading) -> Result<(&'static str, String), ImportError> {
    let shown = || path.display().to_string();
    let io = |source| ImportError::Io {
        path: shown(),
        source,
    };
    let sha256 = crate::verify::hash::sha256_of_file(path).map_err(io)?;
    let file = File::open(path).map_err(io)?;
    let mut zip = zip::ZipArchive::new(BufReader::new(file)).map_err(|e| ImportError::NotZip {
        path: shown(),
        reason: e.to_string(),
    })?;
    let mut go_layout = false;
    let mut bytes = Vec::new();
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(|e| ImportError::NotZip {
            path: shown(),
            reason: e.to_string(),
        })?;
        let name = member
            .name()
            .map_or_else(|_| format!("member {i}"), std::borrow::Cow::into_owned);
        if !member.is_file() || !name.ends_with(".json") {
            continue;
        }
        if is_index(&name) {
            go_layout = true;
            continue;
        }
        go_layout |= name.starts_with("ID/");
        if reading.files >= MAX_ENTRIES {
            return Err(ImportError::TooMany { path: shown() });
        }
        bytes.clear();
        (&mut member)
            .take(MAX_ENTRY + 1)
            .read_to_end(&mut bytes)
            .map_err(|e| ImportError::Member {
                path: shown(),
                member: name.clone(),
                reason: e.to_string(),
            })?;
        reading.entry(&name, &bytes, path)?;
    }
    let kind = if go_layout {
        "go-vulndb-zip"
    } else {
        "osv-zip"
    };
    Ok((kind, sha256))
}

fn read_dir(path: &Path, reading: &mut Reading) -> Result<(&'static str, String), ImportError> {
    let mut files = Vec::new();
    collect(path, path, &mut files)?;
    files.sort();
    let mut hasher = Sha256::new();
    for name in files {
        if is_index(&name) {
            continue;
        }
        if reading.files >= MAX_ENTRIES {
            return Err(ImportError::TooMany {
                path: path.display().to_string(),
            });
        }
        let full = path.join(&name);
        let io = |source| ImportError::Io {
            path: full.display().to_string(),
            source,
        };
        let mut bytes = Vec::new();
        File::open(&full)
            .map_err(io)?
            .take(MAX_ENTRY + 1)
            .read_to_end(&mut bytes)
            .map_err(io)?;
        hasher.update(name.as_bytes());
        hasher.update(&[0]);
        hasher.update(&(bytes.len() as u64).to_be_bytes());
        hasher.update(&bytes);
        reading.entry(&name, &bytes, path)?;
    }
    let sha256 = hex::encode(hasher.finalize());
    Ok(("directory", sha256))
}

/// Every `.json` file below `dir`, by its path from `top` with `/`.
fn collect(top: &Path, dir: &Path, out: &mut Vec<String>) -> Result<(), ImportError> {
    let io = |source| ImportError::Io {
        path: dir.display().to_string(),
        source,
    };
    for entry in std::fs::read_dir(dir).map_err(io)? {
        let entry = entry.map_err(io)?;
        let kind = entry.file_type().map_err(io)?;
        let path = entry.path();
        if kind.is_dir() {
            collect(top, &path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "json") {
            if let Ok(rel) = path.strip_prefix(top) {
                out.push(rel.to_string_lossy().replace('\\', "/"));
            }
        }
    }
    Ok(())
}
