//! The packages a Go program holds code of, read from its function table
//! (`pclntab`), which stripping leaves in place: the runtime needs it for
//! stack traces. Each function's name starts with its package's import
//! path (`golang.org/x/net/http2.(*Framer).ReadFrame`), so the table's
//! names tell which packages the binary contains, inlined functions too.
//!
//! The table is found in its own section (`.gopclntab`, `__gopclntab`)
//! or, in PE files, looked for in the read-only data by its header, which
//! is checked field by field before it is believed. Layouts by toolchain:
//! Go 1.2 to 1.15 (names reached through each function's record), 1.16
//! and 1.18/1.20 (all names in one block, read as a stream). The file is
//! read with positioned reads, a bounded piece at a time; nothing is held
//! but the set of package paths.

use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;

use super::names::{Noted, Packages};
use super::symbols::{Looked, Symbols, Wanted};
use super::{GoBuildError, Table};

/// Where the table is, or may be, in the file.
#[derive(Debug, Clone, Copy)]
pub(super) enum Place {
    /// Its own section, at this offset and size.
    Section {
        /// Where it starts in the file.
        offset: u64,
        /// Its size.
        size: u64,
    },
    /// A section to look in for the table's header.
    Search {
        /// Where it starts in the file.
        offset: u64,
        /// Its size.
        size: u64,
    },
}

/// The layouts, by their magic number.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Layout {
    /// Go 1.2 to 1.15.
    Go12,
    /// Go 1.16 and 1.17.
    Go116,
    /// Go 1.18 on (1.20's magic differs, not its layout).
    Go118,
}

/// The longest name read; longer ones are cut (generic instantiations can
/// be long, package paths are not).
const MAX_NAME: usize = 4096;

/// How much of a section is looked through for a header at a time.
const SEARCH_CHUNK: usize = 1 << 20;

/// The most functions a table is believed to hold. The largest provider
/// binaries hold a few hundred thousand; a table that claims more is
/// refused before any of it is read.
pub const MAX_FUNCTIONS: u64 = 1 << 22;

/// The most places a header is tried at while a section is looked
/// through for one (a real table is found at the first).
const MAX_CANDIDATES: u32 = 1 << 16;

/// A header read and checked.
#[derive(Debug, Clone, Copy)]
struct Header {
    layout: Layout,
    big_endian: bool,
    ptr: u64,
    nfunc: u64,
    /// The names block (1.16 on), from the table's start.
    names: (u64, u64),
}

/// The import paths of the packages whose code `file` holds, and the
/// symbols of `wanted` its names hold, from the first table found at one
/// of `places`; `None` where none is. Every
/// extent is checked against the file's real length before it is read: a
/// section or a table that claims more than the file holds is an error
/// that says what it claimed.
pub(super) fn packages(
    file: &File,
    places: &[Place],
    wanted: &Wanted,
) -> Result<Option<Table>, GoBuildError> {
    let file_len = file.metadata()?.len();
    for place in places {
        let (Place::Section { offset, size } | Place::Search { offset, size }) = *place;
        let size = within_file(offset, size, file_len)?;
        let found = match place {
            Place::Section { .. } => {
                header_at(file, offset, size, false)?.map(|h| (offset, size, h))
            }
            Place::Search { .. } => search(file, offset, size)?,
        };
        if let Some((offset, size, header)) = found {
            let read = names(file, offset, size, &header, wanted)?;
            return Ok(Some(table(read, wanted, header.layout != Layout::Go12)));
        }
    }
    Ok(None)
}

/// `size`, where the `size` bytes at `offset` lie inside a file of
/// `file_len` bytes; else why not.
fn within_file(offset: u64, size: u64, file_len: u64) -> Result<u64, GoBuildError> {
    let held = file_len.checked_sub(offset).ok_or_else(|| {
        GoBuildError::Damaged(format!(
            "the function table's section starts at offset {offset}, past the end of the \
             {file_len}-byte file"
        ))
    })?;
    if size > held {
        return Err(GoBuildError::Damaged(format!(
            "the function table's section claims {size} bytes at offset {offset}, more than \
             the {held} the file holds from there"
        )));
    }
    Ok(size)
}

/// The header at `offset`, if one is there and holds together. `strict`
/// (when looking for it among other data) also asks the layout's fixed
/// names to follow the header closely, where the toolchain puts them, and
/// takes a header that does not hold together as no header; in a table's
/// own section (`strict` false) such a header is an error that says why.
fn header_at(
    file: &File,
    offset: u64,
    size: u64,
    strict: bool,
) -> Result<Option<Header>, GoBuildError> {
    let refuse = |why: String| {
        if strict {
            Ok(None)
        } else {
            Err(GoBuildError::Damaged(why))
        }
    };
    let mut raw = [0u8; 8 + 8 * 8];
    let got = read_some(file, offset, &mut raw)?;
    let raw = &raw[..got];
    if raw.len() < 16 {
        return Ok(None);
    }
    let (layout, big_endian) = match (
        u32::from_le_bytes([raw[0], raw[1], raw[2], raw[3]]),
        u32::from_be_bytes([raw[0], raw[1], raw[2], raw[3]]),
    ) {
        (0xffff_fffb, _) => (Layout::Go12, false),
        (0xffff_fffa, _) => (Layout::Go116, false),
        (0xffff_fff0 | 0xffff_fff1, _) => (Layout::Go118, false),
        (_, 0xffff_fffb) => (Layout::Go12, true),
        (_, 0xffff_fffa) => (Layout::Go116, true),
        (_, 0xffff_fff0 | 0xffff_fff1) => (Layout::Go118, true),
        _ => return Ok(None),
    };
    let (pad, min_lc, ptr) = (&raw[4..6], raw[6], u64::from(raw[7]));
    if pad != [0, 0] || !matches!(min_lc, 1 | 2 | 4) || !matches!(ptr, 4 | 8) {
        return refuse(format!(
            "the function table's header is damaged (padding {pad:?}, instruction size \
             {min_lc}, pointer size {ptr})"
        ));
    }
    let word = |i: u64| -> Option<u64> {
        let at = usize::try_from(8 + i * ptr).ok()?;
        raw.get(at..at + usize::try_from(ptr).ok()?)
            .map(|bytes| word_of(bytes, big_endian))
    };
    let Some(nfunc) = word(0) else {
        return Ok(None);
    };
    if nfunc == 0 {
        return Ok(None);
    }
    // Each function takes at least two words of the table.
    let holds = size / (2 * ptr);
    if nfunc > holds {
        return refuse(format!(
            "this binary's function table claims {nfunc} entries, more than its {size} bytes \
             hold"
        ));
    }
    if nfunc > MAX_FUNCTIONS {
        return refuse(format!(
            "this binary's function table claims {nfunc} entries, more than the \
             {MAX_FUNCTIONS} read"
        ));
    }
    // The offsets that follow: names, compilation units, files, pc
    // tables, function records, in that order and inside the table.
    let first = match layout {
        // The old layout has no offsets to check; among other data it is
        // believed where its first two functions hold together.
        Layout::Go12 => {
            let header = Header {
                layout,
                big_endian,
                ptr,
                nfunc,
                names: (0, 0),
            };
            let holds = !strict || go12_functions_hold(file, offset, size, &header, word)?;
            return Ok(holds.then_some(header));
        }
        Layout::Go116 => 2,
        Layout::Go118 => 3,
    };
    let offsets: Option<Vec<u64>> = (first..first + 5).map(word).collect();
    let Some(offsets) = offsets else {
        return Ok(None);
    };
    let ordered = offsets.windows(2).all(|w| w[0] <= w[1]) && offsets[4] <= size;
    let header_len = 8 + first * ptr + 5 * ptr;
    if !ordered || offsets[0] < header_len {
        return refuse(format!(
            "the function table's offsets {offsets:?} are out of order or outside its {size} \
             bytes"
        ));
    }
    // The names follow the header closely (the linker pads it a little).
    if strict && offsets[0] > header_len + 64 {
        return Ok(None);
    }
    Ok(Some(Header {
        layout,
        big_endian,
        ptr,
        nfunc,
        names: (offsets[0], offsets[1]),
    }))
}

/// Whether a Go 1.2 to 1.15 header found among other data starts a real
/// table: its first two functions' entry addresses rise, their records
/// lie in order behind the (entry, record) pairs and inside the table,
/// and the first record starts with its function's entry address, as the
/// toolchain lays them out. `word(i)` is the header's i-th word after the
/// magic (0: the count; then entry, record, entry, record).
fn go12_functions_hold(
    file: &File,
    offset: u64,
    size: u64,
    header: &Header,
    word: impl Fn(u64) -> Option<u64>,
) -> Result<bool, GoBuildError> {
    let (Some(entry0), Some(record0), Some(entry1), Some(record1)) =
        (word(1), word(2), word(3), word(4))
    else {
        return Ok(false);
    };
    let pairs_end = header
        .nfunc
        .checked_mul(2 * header.ptr)
        .and_then(|len| len.checked_add(8 + header.ptr));
    let in_order = header.nfunc >= 2
        && entry0 < entry1
        && pairs_end.is_some_and(|end| end <= record0)
        && record0 < record1
        && record1.saturating_add(header.ptr) <= size;
    if !in_order {
        return Ok(false);
    }
    let mut first = [0u8; 8];
    let first = &mut first[..usize::try_from(header.ptr).unwrap_or(8)];
    file.read_exact_at(first, offset + record0)?;
    Ok(word_of(first, header.big_endian) == entry0)
}

/// Looks through a section for a table's header, at 4-byte alignment;
/// at most [`MAX_CANDIDATES`] places that start like one are tried.
fn search(file: &File, offset: u64, size: u64) -> Result<Option<(u64, u64, Header)>, GoBuildError> {
    let mut chunk = vec![0u8; SEARCH_CHUNK];
    let mut at = 0u64;
    let mut tried = 0u32;
    while at < size {
        let want = usize::try_from((size - at).min(SEARCH_CHUNK as u64)).unwrap_or(SEARCH_CHUNK);
        let got = read_some(file, offset + at, &mut chunk[..want])?;
        if got == 0 {
            break;
        }
        for i in (0..got.saturating_sub(3)).step_by(4) {
            if chunk[i..i + 4] == [0xf1, 0xff, 0xff, 0xff]
                || chunk[i..i + 4] == [0xf0, 0xff, 0xff, 0xff]
                || chunk[i..i + 4] == [0xfa, 0xff, 0xff, 0xff]
                || chunk[i..i + 4] == [0xfb, 0xff, 0xff, 0xff]
            {
                tried += 1;
                if tried > MAX_CANDIDATES {
                    return Err(GoBuildError::Damaged(format!(
                        "more than {MAX_CANDIDATES} places in a section start like a function \
                         table"
                    )));
                }
                let start = offset + at + i as u64;
                let rest = size - (at + i as u64);
                if let Some(header) = header_at(file, start, rest, true)? {
                    return Ok(Some((start, rest, header)));
                }
            }
        }
        at += got as u64;
    }
    Ok(None)
}

/// Every function name's package, from the table at `offset`, which lies
/// inside the file (`size` bytes of it).
fn names<'w>(
    file: &File,
    offset: u64,
    size: u64,
    header: &Header,
    wanted: &'w Wanted,
) -> Result<Packages<'w>, GoBuildError> {
    let mut packages = Packages::new(wanted);
    match header.layout {
        Layout::Go116 | Layout::Go118 => {
            // One block of names, each ended by a zero byte.
            let (from, to) = header.names;
            let block = Positioned {
                file,
                at: offset + from,
            }
            .take(to - from);
            let mut reader = BufReader::with_capacity(1 << 16, block);
            let mut name = Vec::with_capacity(256);
            let mut noted = Noted::default();
            loop {
                name.clear();
                let n = (&mut reader)
                    .take(MAX_NAME as u64)
                    .read_until(0, &mut name)?;
                if n == 0 {
                    break;
                }
                if name.last() == Some(&0) {
                    name.pop();
                } else if n == MAX_NAME {
                    // The rest of an over-long name is passed over.
                    reader.skip_until(0)?;
                }
                noted.note(&mut packages, &name)?;
            }
        }
        Layout::Go12 => go12_names(file, offset, size, header, &mut packages)?,
    }
    Ok(packages)
}

/// The names of a Go 1.2 to 1.15 table, reached through each function's
/// record: the table of (entry, record offset) pairs is read as a stream,
/// and each record's name offset where it lies inside the table.
fn go12_names(
    file: &File,
    offset: u64,
    size: u64,
    header: &Header,
    packages: &mut Packages<'_>,
) -> Result<(), GoBuildError> {
    let ptr = header.ptr;
    let start = 8 + ptr;
    let table_len = header.nfunc.checked_mul(2 * ptr);
    if table_len
        .and_then(|len| len.checked_add(start))
        .is_none_or(|end| end > size)
    {
        return Err(GoBuildError::Damaged(format!(
            "this binary's function table claims {} entries, more than its {size} bytes hold",
            header.nfunc
        )));
    }
    let table = Positioned {
        file,
        at: offset + start,
    }
    .take(table_len.unwrap_or(0));
    let mut table = BufReader::with_capacity(1 << 16, table);
    let step = usize::try_from(ptr).unwrap_or(8);
    let mut entry = [0u8; 16];
    let mut name = vec![0u8; 512];
    let mut noted = Noted::default();
    for _ in 0..header.nfunc {
        table.read_exact(&mut entry[..2 * step])?;
        let record = word_of(&entry[step..2 * step], header.big_endian);
        // The record's name offset follows its entry address.
        let Some(at) = record
            .checked_add(ptr)
            .filter(|at| at.saturating_add(4) <= size)
        else {
            continue;
        };
        let mut nameoff = [0u8; 4];
        file.read_exact_at(&mut nameoff, offset + at)?;
        let nameoff = if header.big_endian {
            i32::from_be_bytes(nameoff)
        } else {
            i32::from_le_bytes(nameoff)
        };
        let Ok(nameoff) = u64::try_from(nameoff) else {
            continue;
        };
        if nameoff >= size {
            continue;
        }
        let want = usize::try_from(size - nameoff).map_or(name.len(), |left| left.min(name.len()));
        let got = read_some(file, offset + nameoff, &mut name[..want])?;
        let end = name[..got].iter().position(|b| *b == 0).unwrap_or(got);
        noted.note(packages, &name[..end])?;
    }
    Ok(())
}

/// What a table's names came to: its packages, and for each package held
/// that symbols are asked for of, what was asked and which were found.
fn table(read: Packages<'_>, wanted: &Wanted, inlined_listed: bool) -> Table {
    let mut found = read.found;
    let by_package = wanted
        .packages()
        .filter(|p| read.set.contains(*p))
        .filter_map(|p| {
            let looked = Looked {
                asked: wanted.digest(p)?.to_string(),
                found: found.remove(p).unwrap_or_default(),
            };
            Some((p.to_string(), looked))
        })
        .collect();
    Table {
        packages: read.set,
        symbols: Symbols {
            by_package,
            inlined_listed,
        },
    }
}

/// A word of 4 or 8 bytes (the table's pointer size) in the table's byte
/// order; 0 for any other length.
fn word_of(bytes: &[u8], big_endian: bool) -> u64 {
    match (bytes.len(), big_endian) {
        (4, false) => u64::from(u32::from_le_bytes(bytes.try_into().unwrap_or_default())),
        (4, true) => u64::from(u32::from_be_bytes(bytes.try_into().unwrap_or_default())),
        (8, false) => u64::from_le_bytes(bytes.try_into().unwrap_or_default()),
        (8, true) => u64::from_be_bytes(bytes.try_into().unwrap_or_default()),
        _ => 0,
    }
}

/// Reads what the file holds at `at`, up to `buf`'s length.
fn read_some(file: &File, at: u64, buf: &mut [u8]) -> Result<usize, GoBuildError> {
    let mut got = 0;
    while got < buf.len() {
        match file.read_at(&mut buf[got..], at + got as u64) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e.into()),
        }
    }
    Ok(got)
}

/// A file read from a position on, with positioned reads.
struct Positioned<'a> {
    file: &'a File,
    at: u64,
}

impl Read for Positioned<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.file.read_at(buf, self.at)?;
        self.at += n as u64;
        Ok(n)
    }
}
