//! Go build information: which toolchain built an executable, and from
//! which modules at which versions.
//!
//! Provider binaries and the Terraform and OpenTofu CLIs are Go programs.
//! The Go linker leaves a small block in every program it builds, stripped
//! or not: a 32-byte header that starts with the magic `\xff Go buildinf:`,
//! then the toolchain's version and the module information (`path`, `mod`,
//! `dep`, `=>` and `build` lines). Toolchains from Go 1.18 on write both
//! strings inline after the header; older ones write two pointers to Go
//! string headers elsewhere in the data. The block sits in its own section
//! (`.go.buildinfo` in ELF, `__go_buildinfo` in Mach-O) or, where there is
//! none (PE, older toolchains), near the start of the first writable data.
//!
//! The object formats are read with the `object` crate through a read cache
//! over the file: only the headers and the few ranges named here are read,
//! each bounded, never the whole executable. `image` maps addresses to file
//! offsets; `header` finds the block and its two strings; `modinfo` reads
//! the module lines; `toolchain` reads the toolchain's name of itself;
//! `pclntab` reads the function table, `names` its names as packages and
//! `symbols` as the symbols advisories name;
//! `unpack` takes the executables out of a release
//! archive, one at a time, into a temporary file.

use std::fs::File;

mod header;
mod image;
mod modinfo;
mod names;
mod pclntab;
mod symbols;
mod toolchain;
mod unpack;

#[cfg(test)]
mod tests;

pub use modinfo::{BuildInfo, Module, Setting};
pub use names::{MAX_PACKAGES, MAX_PACKAGE_BYTES};
pub use pclntab::MAX_FUNCTIONS;
pub use symbols::{without_package_name, Looked, Symbols, Wanted};
pub use toolchain::{release_name, Reading, Toolchain};
pub use unpack::{executables_in, Executable, ExecutableKind, MAX_EXECUTABLES};

/// The most bytes read for either string of the block (the toolchain
/// version, the module information). Real module information is tens of
/// kilobytes; a length past this is a lie, refused before anything is read.
pub const MAX_STRING: u64 = 4 << 20;

/// The most bytes an executable is unpacked to (the largest provider
/// binaries are a few hundred megabytes); a larger one is recorded as
/// unreadable, not unpacked.
pub const MAX_EXECUTABLE_SIZE: u64 = 2 << 30;

/// How far past the start of the data the block is looked for, as Go's own
/// reader does.
pub const SEARCH_WINDOW: u64 = 64 * 1024;

/// What an executable says about how it was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A Go program's build information.
    Go(BuildInfo),
    /// No Go build information: not a Go program, or one whose toolchain
    /// wrote none. Not an error; the reason says which case it was.
    Nothing(String),
}

/// Why build information could not be read.
#[derive(Debug, thiserror::Error)]
pub enum GoBuildError {
    /// Reading the file failed.
    #[error("reading the executable: {0}")]
    Io(#[from] std::io::Error),
    /// The block names data the file does not hold: a length past the end,
    /// an address no segment covers, a pointer size other than 4 or 8.
    #[error("the Go build information is damaged: {0}")]
    Damaged(String),
    /// A module information line breaks the format.
    #[error("the Go module information is damaged: line {line}: {reason}")]
    ModInfo {
        /// The line, counted from 1.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
    /// The archive holding the executable could not be read.
    #[error("reading the release archive: {0}")]
    Archive(String),
}

/// Reads the Go build information of an executable file (ELF, Mach-O, a
/// universal Mach-O binary, or PE).
pub fn read(file: &File) -> Result<Found, GoBuildError> {
    let cache = object::ReadCache::new(file);
    let images = image::images(&cache)?;
    if images.is_empty() {
        return Ok(Found::Nothing(
            "not an ELF, Mach-O or PE executable".to_string(),
        ));
    }
    // A universal binary holds one image per architecture, all built from
    // the same modules: the first with build information speaks for all.
    for image in &images {
        if let Some((version, info)) = header::strings(image)? {
            return Ok(Found::Go(modinfo::parse(version, &info)?));
        }
    }
    Ok(Found::Nothing("no Go build information".to_string()))
}

/// What an executable's function table (`pclntab`, which stripping
/// leaves) says: the packages it holds code of, and which of the symbols
/// asked for it names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// The import paths of the packages it holds code of.
    pub packages: std::collections::BTreeSet<String>,
    /// The symbols of [`Wanted`] found, for the packages held.
    pub symbols: Symbols,
}

/// What an executable's function table says of its packages and of the
/// symbols `wanted` asks for; `None` where no table is found (not a Go
/// program, or one whose table is neither in a section of its own nor
/// found by its header among a PE file's read-only data).
pub fn packages(file: &File, wanted: &Wanted) -> Result<Option<Table>, GoBuildError> {
    let places: Vec<pclntab::Place> = {
        let cache = object::ReadCache::new(file);
        image::images(&cache)?
            .iter()
            .filter_map(|image| image.pclntab)
            .collect()
    };
    pclntab::packages(file, &places, wanted)
}

/// A Go toolchain's release as semantic versioning with a `v`
/// (`go1.21.3` → `v1.21.3`, `go1.22rc2` → `v1.22.0-rc.2`, `go1.16` →
/// `v1.16.0`, `go1.21.1-bigcorp` → `v1.21.1`); `None` for a development
/// build, a language version with no patch and a name Go does not read
/// ([`Toolchain::parse`] reads those too).
pub fn go_semver(go_version: &str) -> Option<String> {
    Toolchain::parse(go_version)
        .filter(Toolchain::is_release)
        .map(|t| t.semver)
}
