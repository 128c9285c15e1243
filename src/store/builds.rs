//! Build records: what the Go build information of each stored provider
//! archive says (its toolchain, its main module, every dependency module),
//! read once when the archive is kept and kept in every store under
//! `builds/<host>/<namespace>/<type>/<version>/<os>_<arch>.json`, beside
//! the version's evidence. Instances sharing a bucket share them. A record
//! stays when its archive is evicted: it describes what was handed out.
//!
//! A record names its format ([`BUILD_FORMAT`]). A record of a newer
//! format than this build reads is refused by name, never misread; one
//! that is missing (an archive kept before records were made, or by an
//! older build) is read again from the archive when asked for
//! ([`crate::mirror`]).

use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::gobuild::{self, BuildInfo, ExecutableKind, Found};

/// The format of the build records this build writes, and the newest it
/// reads.
pub const BUILD_FORMAT: u32 = 1;

/// Which reading of the executables' function tables this build makes.
/// A record made by an earlier reading has its packages read again from
/// its archive where the archive is held (on first ask, and by `tfmirror
/// verify`); an older build reads a record of a later reading as it is,
/// since the field is new and optional.
///
/// - 0 (no field): packages whose import path starts with `go.`
///   (`go.etcd.io/…`, `go.uber.org/…`) were passed over.
/// - 1: they are read.
/// - 2: the symbols the advisory database names are looked for too
///   ([`ExecutableBuild::symbols`]).
/// - 3: a PE file built before Go 1.16 has its table found among its
///   read-only data (before, its packages were not read).
///
/// A record of the current reading is also read again where the database
/// held asks for other symbols of a package the binary holds than those
/// the record looked for ([`BuildRecord::current_for`]).
pub const PACKAGES_READER: u32 = 3;

/// How an archive's executables are read: where they are unpacked, how
/// large one may be, when, and which symbols to look for.
#[derive(Debug, Clone, Copy)]
pub struct Unpacking<'a> {
    /// The folder each executable is unpacked in (into an anonymous file).
    pub scratch: &'a std::path::Path,
    /// The most bytes an executable is unpacked to.
    pub max_size: u64,
    /// When, in milliseconds since the Unix epoch.
    pub read_at_ms: u64,
    /// The symbols the advisory database names ([`gobuild::Wanted`];
    /// empty without one).
    pub wanted: &'a gobuild::Wanted,
}

/// The folder the records are kept in.
const TOP: &str = "builds";

/// What the executables of one provider archive say about their build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildRecord {
    /// The record's format.
    pub format: u32,
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// The platform.
    pub platform: Platform,
    /// The SHA-256 (lowercase hex) of the archive the record was read
    /// from: the signed checksum's.
    pub archive_sha256: String,
    /// When it was read, in milliseconds since the Unix epoch.
    pub read_at_ms: u64,
    /// The tfmirror version that read it.
    pub read_by: String,
    /// Each executable of the archive (normally one).
    pub executables: Vec<ExecutableBuild>,
    /// The reading of function tables that made the executables'
    /// packages ([`PACKAGES_READER`]); 0 for a record made before the
    /// field was written.
    #[serde(default)]
    pub packages_reader: u32,
}

/// One executable of an archive and its build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecutableBuild {
    /// Its name in the archive.
    pub name: String,
    /// Its size unpacked, in bytes.
    pub size: u64,
    /// What its build information says.
    #[serde(flatten)]
    pub build: BuildState,
    /// The import paths of the packages it holds code of, read from its
    /// function table: whether an advisory's affected packages are in the
    /// binary. `None` where they were not read (a record made before they
    /// were, no table found); an advisory's presence is then unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages: Option<Vec<String>>,
    /// Why the packages could not be read, where reading them failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packages_error: Option<String>,
    /// The symbols the advisory database named, looked for among the
    /// function table's names, for each package held that it names
    /// symbols of; `None` where the table was not read (or by a reading
    /// before [`PACKAGES_READER`] 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub symbols: Option<gobuild::Symbols>,
}

/// What an executable's build information says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum BuildState {
    /// A Go program's build information.
    Go {
        /// The build information.
        build: BuildInfo,
    },
    /// No Go build information: not a Go program, or built without it.
    Nothing {
        /// Which of the two.
        reason: String,
    },
    /// Build information that could not be read (damaged or lying).
    Unreadable {
        /// Why.
        error: String,
    },
}

impl BuildRecord {
    /// Reads the record of an archive from the zip file `archive` (whose
    /// SHA-256 is `sha256`), as `how` says. Blocks: run it off the async
    /// threads.
    pub fn from_archive(
        key: &ArchiveKey,
        sha256: &str,
        archive: std::fs::File,
        how: &Unpacking<'_>,
    ) -> BuildRecord {
        let fallback = key.provider.archive_name(&key.version, &key.platform);
        BuildRecord {
            format: BUILD_FORMAT,
            provider: key.provider.clone(),
            version: key.version.clone(),
            platform: key.platform.clone(),
            archive_sha256: sha256.to_string(),
            read_at_ms: how.read_at_ms,
            read_by: super::format::THIS_VERSION.to_string(),
            executables: read_executables(ExecutableKind::Provider, &fallback, archive, how),
            packages_reader: PACKAGES_READER,
        }
    }

    /// Whether its packages were read by this build's reading of function
    /// tables, looking for the symbols `wanted` names; else they are read
    /// again where the archive is held.
    pub fn current_for(&self, wanted: &gobuild::Wanted) -> bool {
        current_for(self.packages_reader, &self.executables, wanted)
    }

    /// What the record says, in a word: `go`, `nothing` or `unreadable`
    /// (its first executable's state).
    pub fn outcome(&self) -> &'static str {
        outcome_of(&self.executables)
    }

    /// What its executables come to in `db` (the advisories they fall
    /// under, the main module matched by the record's own version, and
    /// what is not known of them).
    pub fn reading(&self, db: &crate::advisories::Database) -> crate::advisories::Reading {
        reading_of(&self.executables, &self.version, &self.platform, db)
    }
}

/// Whether executables read by the reading `reader` looked for what
/// `wanted` asks of each package they hold: for each, the record looked
/// for the same symbols (by [`gobuild::Wanted::digest`]).
pub(super) fn current_for(
    reader: u32,
    executables: &[ExecutableBuild],
    wanted: &gobuild::Wanted,
) -> bool {
    reader >= PACKAGES_READER
        && executables.iter().all(|exe| {
            let Some(held) = exe.packages.as_deref() else {
                return true;
            };
            let looked = exe.symbols.as_ref().map(|s| &s.by_package);
            wanted
                .packages()
                .filter(|p| held.binary_search_by(|h| h.as_str().cmp(p)).is_ok())
                .all(|p| {
                    looked
                        .and_then(|l| l.get(p))
                        .is_some_and(|read| wanted.digest(p) == Some(read.asked.as_str()))
                })
        })
}

/// The executables of kind `kind` in the zip file `archive`, each read
/// ([`gobuild::executables_in`]) as `how` says. An archive that cannot be
/// read at all gives one entry named `fallback` that says why. Blocks.
pub(super) fn read_executables(
    kind: ExecutableKind,
    fallback: &str,
    archive: std::fs::File,
    how: &Unpacking<'_>,
) -> Vec<ExecutableBuild> {
    match gobuild::executables_in(archive, kind, how.scratch, how.max_size, how.wanted) {
        Ok(found) => found.into_iter().map(executable_build).collect(),
        // Kept archives passed a checksum check: a failure here is the
        // disk's, or a zip the check let through.
        Err(e) => vec![ExecutableBuild {
            name: fallback.to_string(),
            size: 0,
            build: BuildState::Unreadable {
                error: e.to_string(),
            },
            packages: None,
            packages_error: None,
            symbols: None,
        }],
    }
}

/// What executables' records say, in a word: `go`, `nothing` or
/// `unreadable` (the first one's state).
pub(super) fn outcome_of(executables: &[ExecutableBuild]) -> &'static str {
    match executables.first().map(|e| &e.build) {
        Some(BuildState::Go { .. }) => "go",
        Some(BuildState::Unreadable { .. }) => "unreadable",
        Some(BuildState::Nothing { .. }) | None => "nothing",
    }
}

/// What `executables` (built for `platform`) come to in `db`: the
/// advisories they fall under, each main module matched by `version` (the
/// registry's or the release's, never the build's own word), and what
/// could not be told of them.
pub(super) fn reading_of(
    executables: &[ExecutableBuild],
    version: &Version,
    platform: &Platform,
    db: &crate::advisories::Database,
) -> crate::advisories::Reading {
    use crate::advisories::Unknown;
    let mut reading = crate::advisories::Reading::default();
    if executables.is_empty() {
        reading.unknown.push(Unknown::NoGoBuild {
            executable: "the archive".into(),
            detail: "it holds no executable".into(),
        });
    }
    for exe in executables {
        let executable = exe.name.clone();
        match &exe.build {
            BuildState::Go { build } => {
                if crate::advisories::version::GoVersion::toolchain(&build.go_version).is_none() {
                    reading.unknown.push(Unknown::Toolchain {
                        executable,
                        go_version: build.go_version.clone(),
                    });
                }
                reading.findings.extend(crate::advisories::findings(
                    db,
                    &crate::advisories::Subject {
                        build,
                        release_version: Some(version.as_str()),
                        packages: exe.packages.as_deref(),
                        symbols: exe.symbols.as_ref(),
                        goos: platform.os(),
                        goarch: platform.arch(),
                    },
                ));
            }
            BuildState::Nothing { reason } => reading.unknown.push(Unknown::NoGoBuild {
                executable,
                detail: reason.clone(),
            }),
            BuildState::Unreadable { error } => reading.unknown.push(Unknown::Unreadable {
                executable,
                error: error.clone(),
            }),
        }
    }
    reading
}

/// An executable's record entry.
fn executable_build(e: gobuild::Executable) -> ExecutableBuild {
    let build = match e.build {
        Ok(Found::Go(build)) => BuildState::Go { build },
        Ok(Found::Nothing(reason)) => BuildState::Nothing { reason },
        Err(e) => BuildState::Unreadable {
            error: e.to_string(),
        },
    };
    let (packages, symbols, packages_error) = match e.packages {
        Ok(Some(table)) => (
            Some(table.packages.into_iter().collect()),
            Some(table.symbols),
            None,
        ),
        Ok(None) => (None, None, None),
        Err(e) => (None, None, Some(e.to_string())),
    };
    ExecutableBuild {
        name: e.name,
        size: e.size,
        build,
        packages,
        packages_error,
        symbols,
    }
}

/// A record's format, read before the rest.
#[derive(Deserialize)]
struct Marker {
    format: u32,
}

/// The path of an archive's record.
fn path_of(key: &ArchiveKey) -> [String; 6] {
    [
        TOP.to_string(),
        key.provider.hostname.as_str().to_string(),
        key.provider.namespace.as_str().to_string(),
        key.provider.kind.as_str().to_string(),
        key.version.as_str().to_string(),
        format!("{}.json", key.platform),
    ]
}

/// An archive's record, if one is kept. A record of a newer format is an
/// error that names both formats.
pub async fn read(store: &dyn Store, key: &ArchiveKey) -> Result<Option<BuildRecord>, StoreError> {
    let path = path_of(key);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let Some(bytes) = store.read_document(&parts).await? else {
        return Ok(None);
    };
    decode(&parts, &bytes).map(Some)
}

/// A record's bytes read as a record, its format checked first: a record
/// of a newer format is an error that names both formats.
pub(super) fn decode<T: serde::de::DeserializeOwned>(
    parts: &[&str],
    bytes: &[u8],
) -> Result<T, StoreError> {
    let corrupt = |reason: String| StoreError::Corrupt {
        what: "build record",
        reason,
    };
    let marker: Marker = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    if marker.format > BUILD_FORMAT {
        return Err(corrupt(format!(
            "{} is of format {}; this build reads formats up to {BUILD_FORMAT}",
            parts.join("/"),
            marker.format
        )));
    }
    serde_json::from_slice(bytes).map_err(|e| corrupt(format!("{}: {e}", parts.join("/"))))
}

/// Keeps an archive's record, replacing an earlier one.
pub async fn write(store: &dyn Store, record: &BuildRecord) -> Result<(), StoreError> {
    let key = ArchiveKey::new(&record.provider, &record.version, &record.platform);
    let path = path_of(&key);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    store.write_document(&parts, bytes).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::DiskStore;

    #[tokio::test]
    async fn a_record_comes_back_as_kept_and_a_newer_format_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(dir.path()).unwrap();
        let provider = Provider {
            hostname: crate::address::Hostname::parse("registry.example").unwrap(),
            namespace: crate::address::Namespace::parse("acme").unwrap(),
            kind: crate::address::ProviderType::parse("tool").unwrap(),
        };
        let version = Version::parse("1.2.3").unwrap();
        let platform = Platform::parse("linux_arm64").unwrap();
        let key = ArchiveKey::new(&provider, &version, &platform);
        assert_eq!(read(&store, &key).await.unwrap(), None);
        let record = BuildRecord {
            format: BUILD_FORMAT,
            provider,
            version,
            platform,
            archive_sha256: "00".repeat(32),
            read_at_ms: 1,
            read_by: "0.1.0".into(),
            executables: vec![ExecutableBuild {
                name: "terraform-provider-tool_v1.2.3".into(),
                size: 10,
                build: BuildState::Nothing {
                    reason: "no Go build information".into(),
                },
                packages: None,
                packages_error: None,
                symbols: None,
            }],
            packages_reader: PACKAGES_READER,
        };
        write(&store, &record).await.unwrap();
        let file = dir
            .path()
            .join("builds/registry.example/acme/tool/1.2.3/linux_arm64.json");
        assert!(file.is_file());
        assert_eq!(read(&store, &key).await.unwrap(), Some(record));
        let mut newer: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        newer["format"] = serde_json::json!(BUILD_FORMAT + 1);
        newer["a_later_field"] = serde_json::json!(true);
        std::fs::write(&file, newer.to_string()).unwrap();
        let e = read(&store, &key).await.unwrap_err().to_string();
        assert!(
            e.contains("is of format 2; this build reads formats up to 1"),
            "{e}"
        );
    }
}
