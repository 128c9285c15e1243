//! The executables of a release archive (a provider package, a CLI
//! release), each taken out into an anonymous temporary file and read
//! there: the archive is never held in memory, and nothing is left behind.

use std::fs::File;
use std::io::{Read, Seek};
use std::path::Path;

use super::{read, Found, GoBuildError, Table, Wanted};

/// What kind of release an archive is, which says which of its files are
/// the executables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExecutableKind {
    /// A provider package: its `terraform-provider-<type>…` file.
    Provider,
    /// A Terraform or OpenTofu CLI release: its `terraform` or `tofu` file
    /// (`.exe` on Windows).
    Cli,
}

impl ExecutableKind {
    /// Whether the archive member `name` is this kind's executable.
    pub fn names(self, name: &str) -> bool {
        let base = name.rsplit('/').next().unwrap_or(name);
        match self {
            ExecutableKind::Provider => base.starts_with("terraform-provider-"),
            ExecutableKind::Cli => {
                matches!(base, "terraform" | "terraform.exe" | "tofu" | "tofu.exe")
            }
        }
    }
}

/// One executable of an archive and what its build information says.
#[derive(Debug)]
pub struct Executable {
    /// Its name in the archive.
    pub name: String,
    /// Its size, unpacked.
    pub size: u64,
    /// Its build information, or why it could not be read.
    pub build: Result<Found, GoBuildError>,
    /// What its function table says of its packages and symbols
    /// ([`super::packages`]), read for a Go program only; `Ok(None)` where
    /// it was not read or holds no table.
    pub packages: Result<Option<Table>, GoBuildError>,
}

/// The most executables read from one archive (a release has one): past
/// these, each is listed as not read, so that an archive of many large
/// members costs no more than this many unpacked.
pub const MAX_EXECUTABLES: usize = 4;

/// Reads the build information of each executable of the zip archive
/// `archive`, unpacking each into an anonymous file in `scratch`. A member
/// larger than `max_size` unpacked is not unpacked (its `build` says so),
/// nor is any past the first [`MAX_EXECUTABLES`]; an archive that is no
/// zip is an error. `wanted` names the symbols to look for.
pub fn executables_in(
    archive: File,
    kind: ExecutableKind,
    scratch: &Path,
    max_size: u64,
    wanted: &Wanted,
) -> Result<Vec<Executable>, GoBuildError> {
    let mut zip =
        zip::ZipArchive::new(archive).map_err(|e| GoBuildError::Archive(e.to_string()))?;
    let mut found = Vec::new();
    for i in 0..zip.len() {
        let mut member = zip
            .by_index(i)
            .map_err(|e| GoBuildError::Archive(e.to_string()))?;
        let name = member
            .name()
            .map_err(|e| GoBuildError::Archive(e.to_string()))?
            .into_owned();
        if !member.is_file() || !kind.names(&name) {
            continue;
        }
        let size = member.size();
        let (build, packages) = if found.len() >= MAX_EXECUTABLES {
            let too_many = format!(
                "{name} was not read: an archive's first {MAX_EXECUTABLES} executables are"
            );
            (Err(GoBuildError::Damaged(too_many)), Ok(None))
        } else if size > max_size {
            let too_big = format!("{name} unpacks to {size} bytes, more than the {max_size} read");
            (Err(GoBuildError::Damaged(too_big)), Ok(None))
        } else {
            match unpacked(&mut member, scratch, max_size) {
                Ok(file) => {
                    let build = read(&file);
                    let packages = match build {
                        Ok(Found::Go(_)) => super::packages(&file, wanted),
                        _ => Ok(None),
                    };
                    (build, packages)
                }
                Err(e) => (Err(e), Ok(None)),
            }
        };
        found.push(Executable {
            name,
            size,
            build,
            packages,
        });
    }
    Ok(found)
}

/// The member's bytes in an anonymous file, rewound; no more than
/// `max_size` of them, whatever its header announced.
fn unpacked(member: &mut impl Read, scratch: &Path, max_size: u64) -> Result<File, GoBuildError> {
    let mut out = tempfile::tempfile_in(scratch)?;
    let copied = std::io::copy(&mut member.take(max_size + 1), &mut out)
        .map_err(|e| GoBuildError::Archive(e.to_string()))?;
    if copied > max_size {
        return Err(GoBuildError::Damaged(format!(
            "the member unpacks to more than the {max_size} bytes read"
        )));
    }
    out.rewind()?;
    Ok(out)
}
