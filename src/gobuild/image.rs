//! An executable's address space as the file lays it out: which file bytes
//! back which addresses, and where the data that holds the build
//! information starts.

use object::read::macho::{FatArch, MachOFatFile32, MachOFatFile64};
use object::{FileKind, Object, ObjectSection, ObjectSegment, ReadCache, ReadRef};

use super::GoBuildError;

/// File bytes behind a range of addresses.
#[derive(Debug, Clone, Copy)]
struct Mapped {
    address: u64,
    /// How many bytes from `address` the file holds.
    size: u64,
    /// Where they start in the file.
    offset: u64,
}

/// One executable image (a universal binary holds several).
pub(super) struct Image<'a> {
    data: &'a ReadCache<&'a std::fs::File>,
    /// Where the image starts in the file (non-zero inside a universal
    /// binary).
    base: u64,
    mapped: Vec<Mapped>,
    /// The address the build information is looked for from, if any.
    pub(super) data_start: Option<u64>,
    /// Where the function table is, or is looked for, in the file.
    pub(super) pclntab: Option<super::pclntab::Place>,
}

/// The images of an executable file: one, or one per architecture of a
/// universal binary; none when the file is no executable format read here.
pub(super) fn images<'a>(
    data: &'a ReadCache<&'a std::fs::File>,
) -> Result<Vec<Image<'a>>, GoBuildError> {
    let Ok(kind) = FileKind::parse(data) else {
        return Ok(Vec::new());
    };
    let ranges: Vec<(u64, u64)> = match kind {
        FileKind::MachOFat32 => MachOFatFile32::parse(data)
            .map_err(damaged)?
            .arches()
            .iter()
            .map(FatArch::file_range)
            .collect(),
        FileKind::MachOFat64 => MachOFatFile64::parse(data)
            .map_err(damaged)?
            .arches()
            .iter()
            .map(FatArch::file_range)
            .collect(),
        FileKind::Elf32
        | FileKind::Elf64
        | FileKind::MachO32
        | FileKind::MachO64
        | FileKind::Pe32
        | FileKind::Pe64 => {
            let len = data.len().map_err(|()| damaged("no length"))?;
            vec![(0, len)]
        }
        _ => return Ok(Vec::new()),
    };
    ranges
        .into_iter()
        .map(|(base, size)| Image::parse(data, base, size))
        .collect()
}

impl<'a> Image<'a> {
    fn parse(
        data: &'a ReadCache<&'a std::fs::File>,
        base: u64,
        size: u64,
    ) -> Result<Self, GoBuildError> {
        let file = object::File::parse(data.range(base, size)).map_err(damaged)?;
        let mapped = file
            .segments()
            .map(|s| {
                let (offset, size) = s.file_range();
                Mapped {
                    address: s.address(),
                    size,
                    offset,
                }
            })
            .collect();
        Ok(Image {
            data,
            base,
            mapped,
            data_start: data_start(&file),
            pclntab: pclntab_place(&file, base),
        })
    }

    /// The file bytes at `address`, at most `len` of them (fewer where the
    /// mapped range ends first); an error where no segment maps `address`.
    pub(super) fn read(&self, address: u64, len: u64) -> Result<&'a [u8], GoBuildError> {
        let m = self
            .mapped
            .iter()
            .find(|m| address >= m.address && address - m.address < m.size)
            .ok_or_else(|| damaged(format!("no segment holds address {address:#x}")))?;
        let within = address - m.address;
        let len = len.min(m.size - within);
        let at = self
            .base
            .checked_add(m.offset)
            .and_then(|o| o.checked_add(within))
            .ok_or_else(|| damaged(format!("address {address:#x} lies past any file")))?;
        self.data.read_bytes_at(at, len).map_err(|()| {
            damaged(format!(
                "{len} bytes at {address:#x} lie past the end of the file"
            ))
        })
    }

    /// Exactly `len` bytes at `address`.
    pub(super) fn read_exact(&self, address: u64, len: u64) -> Result<&'a [u8], GoBuildError> {
        let bytes = self.read(address, len)?;
        if (bytes.len() as u64) < len {
            return Err(damaged(format!(
                "{len} bytes at {address:#x} run past the end of their segment"
            )));
        }
        Ok(bytes)
    }
}

/// Where the build information is looked for: its own section where the
/// linker made one (ELF, Mach-O), else the start of the first writable
/// data, where the linker puts it first (PE, older toolchains).
fn data_start<'d, R: ReadRef<'d>>(file: &object::File<'d, R>) -> Option<u64> {
    use object::BinaryFormat;
    let own = match file.format() {
        BinaryFormat::Elf => Some(".go.buildinfo"),
        BinaryFormat::MachO => Some("__go_buildinfo"),
        _ => None,
    };
    if let Some(section) = own.and_then(|name| file.section_by_name(name)) {
        return Some(section.address());
    }
    // Else the first writable data the file holds bytes for (a PE file's
    // sections are its segments here).
    file.segments()
        .find(|s| {
            let p = s.permissions();
            let (_, filesz) = s.file_range();
            s.address() != 0 && filesz != 0 && p.writable() && !p.executable()
        })
        .map(|s| s.address())
}

/// Where the function table is: its own section where the linker made
/// one (ELF, Mach-O), else a read-only data section to look in (PE, where
/// the section is not named and stripping removes the symbols that mark
/// it).
fn pclntab_place<'d, R: ReadRef<'d>>(
    file: &object::File<'d, R>,
    base: u64,
) -> Option<super::pclntab::Place> {
    use super::pclntab::Place;
    let in_file = |section: &object::Section<'d, '_, R>| {
        let (offset, size) = section.file_range()?;
        Some((base.checked_add(offset)?, size))
    };
    for name in [".gopclntab", "__gopclntab"] {
        if let Some(section) = file.section_by_name(name) {
            return in_file(&section).map(|(offset, size)| Place::Section { offset, size });
        }
    }
    [".rdata", ".data.rel.ro", ".text"]
        .iter()
        .find_map(|name| file.section_by_name(name).as_ref().and_then(in_file))
        .map(|(offset, size)| Place::Search { offset, size })
}

fn damaged(e: impl std::fmt::Display) -> GoBuildError {
    GoBuildError::Damaged(e.to_string())
}
