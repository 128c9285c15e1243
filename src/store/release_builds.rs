//! Build records of CLI release files: what the Go build information of
//! the `terraform` or `tofu` executable in each stored release zip says,
//! read once when the file is kept and kept in every store under
//! `release-builds/<product>/<version>/<file>.json`. Like a provider
//! archive's record ([`super::builds`]), it names its format, shares its
//! executables' shape, and stays when the file is evicted.

use serde::{Deserialize, Serialize};

use super::builds::{
    current_for, outcome_of, read_executables, reading_of, ExecutableBuild, Unpacking,
    BUILD_FORMAT, PACKAGES_READER,
};
use super::{Store, StoreError};
use crate::address::{ArtifactName, Platform, Product, ReleaseFile, Version};
use crate::gobuild::ExecutableKind;

/// The folder the records are kept in.
const TOP: &str = "release-builds";

/// What the executables of one CLI release file say about their build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReleaseBuildRecord {
    /// The record's format ([`BUILD_FORMAT`], shared with provider
    /// archives' records).
    pub format: u32,
    /// The product.
    pub product: Product,
    /// The release's version.
    pub version: Version,
    /// The file's name in the release.
    pub file: ArtifactName,
    /// The platform the file is built for.
    pub platform: Platform,
    /// The file's SHA-256 (lowercase hex), as the release's signed
    /// checksum document lists it.
    pub archive_sha256: String,
    /// When it was read, in milliseconds since the Unix epoch.
    pub read_at_ms: u64,
    /// The tfmirror version that read it.
    pub read_by: String,
    /// Each executable of the file (normally one).
    pub executables: Vec<ExecutableBuild>,
    /// The reading of function tables that made the executables'
    /// packages ([`PACKAGES_READER`]); 0 for a record made before the
    /// field was written.
    #[serde(default)]
    pub packages_reader: u32,
}

impl ReleaseBuildRecord {
    /// Reads the record of the release zip `archive` (whose SHA-256 is
    /// `sha256`, built for `platform`), as `how` says. Blocks: run it off
    /// the async threads.
    pub fn from_archive(
        file: &ReleaseFile,
        platform: &Platform,
        sha256: &str,
        archive: std::fs::File,
        how: &Unpacking<'_>,
    ) -> ReleaseBuildRecord {
        ReleaseBuildRecord {
            format: BUILD_FORMAT,
            product: file.product,
            version: file.version.clone(),
            file: file.name.clone(),
            platform: platform.clone(),
            archive_sha256: sha256.to_string(),
            read_at_ms: how.read_at_ms,
            read_by: super::format::THIS_VERSION.to_string(),
            executables: read_executables(ExecutableKind::Cli, file.name.as_str(), archive, how),
            packages_reader: PACKAGES_READER,
        }
    }

    /// Whether its packages were read by this build's reading of function
    /// tables, looking for the symbols `wanted` names; else they are read
    /// again where the file is held.
    pub fn current_for(&self, wanted: &crate::gobuild::Wanted) -> bool {
        current_for(self.packages_reader, &self.executables, wanted)
    }

    /// What the record says, in a word: `go`, `nothing` or `unreadable`.
    pub fn outcome(&self) -> &'static str {
        outcome_of(&self.executables)
    }

    /// What its executables come to in `db` (the advisories they fall
    /// under, the main module matched by the release's version, and what
    /// is not known of them).
    pub fn reading(&self, db: &crate::advisories::Database) -> crate::advisories::Reading {
        reading_of(&self.executables, &self.version, &self.platform, db)
    }
}

/// The path of a release file's record.
fn path_of(file: &ReleaseFile) -> [String; 4] {
    [
        TOP.to_string(),
        file.product.as_str().to_string(),
        file.version.as_str().to_string(),
        format!("{}.json", file.name),
    ]
}

/// A release file's record, if one is kept. A record of a newer format
/// is an error that names both formats.
pub async fn read(
    store: &dyn Store,
    file: &ReleaseFile,
) -> Result<Option<ReleaseBuildRecord>, StoreError> {
    let path = path_of(file);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let Some(bytes) = store.read_document(&parts).await? else {
        return Ok(None);
    };
    super::builds::decode(&parts, &bytes).map(Some)
}

/// Keeps a release file's record, replacing an earlier one.
pub async fn write(store: &dyn Store, record: &ReleaseBuildRecord) -> Result<(), StoreError> {
    let file = ReleaseFile {
        product: record.product,
        version: record.version.clone(),
        name: record.file.clone(),
    };
    let path = path_of(&file);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let bytes = serde_json::to_vec(record).map_err(std::io::Error::other)?;
    store.write_document(&parts, bytes).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::builds::BuildState;
    use crate::store::DiskStore;

    #[tokio::test]
    async fn a_release_record_comes_back_as_kept_and_a_newer_format_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = DiskStore::open(dir.path()).unwrap();
        let file = ReleaseFile {
            product: Product::Terraform,
            version: Version::parse("1.0.3").unwrap(),
            name: ArtifactName::parse("terraform_1.0.3_linux_amd64.zip").unwrap(),
        };
        assert_eq!(read(&store, &file).await.unwrap(), None);
        let record = ReleaseBuildRecord {
            format: BUILD_FORMAT,
            product: file.product,
            version: file.version.clone(),
            file: file.name.clone(),
            platform: Platform::parse("linux_amd64").unwrap(),
            archive_sha256: "00".repeat(32),
            read_at_ms: 1,
            read_by: "0.1.0".into(),
            executables: vec![ExecutableBuild {
                name: "terraform".into(),
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
        let kept = dir
            .path()
            .join("release-builds/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip.json");
        assert!(kept.is_file());
        assert_eq!(read(&store, &file).await.unwrap(), Some(record));
        let mut newer: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&kept).unwrap()).unwrap();
        newer["format"] = serde_json::json!(BUILD_FORMAT + 1);
        std::fs::write(&kept, newer.to_string()).unwrap();
        let e = read(&store, &file).await.unwrap_err().to_string();
        assert!(e.contains("this build reads formats up to 1"), "{e}");
    }
}
