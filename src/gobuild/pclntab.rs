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

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;

use super::GoBuildError;

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

/// The import paths of the packages whose code `file` holds, from the
/// first table found at one of `places`; `None` where none is.
pub(super) fn packages(
    file: &File,
    places: &[Place],
) -> Result<Option<BTreeSet<String>>, GoBuildError> {
    for place in places {
        let found = match *place {
            Place::Section { offset, size } => {
                header_at(file, offset, size, false)?.map(|h| (offset, size, h))
            }
            Place::Search { offset, size } => search(file, offset, size)?,
        };
        if let Some((offset, size, header)) = found {
            return names(file, offset, size, &header).map(Some);
        }
    }
    Ok(None)
}

/// The header at `offset`, if one is there and holds together; `strict`
/// (when looking for it among other data) also asks the layout's fixed
/// names to follow the header closely, where the toolchain puts them.
fn header_at(
    file: &File,
    offset: u64,
    size: u64,
    strict: bool,
) -> Result<Option<Header>, GoBuildError> {
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
        return Ok(None);
    }
    let word = |i: u64| -> Option<u64> {
        let at = usize::try_from(8 + i * ptr).ok()?;
        let bytes = raw.get(at..at + usize::try_from(ptr).ok()?)?;
        Some(match (ptr, big_endian) {
            (4, false) => u64::from(u32::from_le_bytes(bytes.try_into().ok()?)),
            (4, true) => u64::from(u32::from_be_bytes(bytes.try_into().ok()?)),
            (_, false) => u64::from_le_bytes(bytes.try_into().ok()?),
            (_, true) => u64::from_be_bytes(bytes.try_into().ok()?),
        })
    };
    let Some(nfunc) = word(0) else {
        return Ok(None);
    };
    if nfunc == 0 || nfunc > size / (2 * ptr).max(1) {
        return Ok(None);
    }
    // The offsets that follow: names, compilation units, files, pc
    // tables, function records, in that order and inside the table.
    let first = match layout {
        // The old layout has no offsets to check: believed only in its
        // own section.
        Layout::Go12 => {
            return Ok((!strict).then_some(Header {
                layout,
                big_endian,
                ptr,
                nfunc,
                names: (0, 0),
            }))
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
    // The names follow the header closely (the linker pads it a little).
    let close = offsets[0] <= header_len + 64;
    if !ordered || offsets[0] < header_len || (strict && !close) {
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

/// Looks through a section for a table's header, at 4-byte alignment.
fn search(file: &File, offset: u64, size: u64) -> Result<Option<(u64, u64, Header)>, GoBuildError> {
    let mut chunk = vec![0u8; SEARCH_CHUNK];
    let mut at = 0u64;
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
            {
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

/// Every function name's package, from the table at `offset`.
fn names(
    file: &File,
    offset: u64,
    size: u64,
    header: &Header,
) -> Result<BTreeSet<String>, GoBuildError> {
    let mut packages = BTreeSet::new();
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
                noted.note(&mut packages, &name);
            }
        }
        Layout::Go12 => {
            // Names reached through each function's record.
            let ptr = header.ptr;
            let table_len = header.nfunc * 2 * ptr;
            if 8 + ptr + table_len > size {
                return Err(GoBuildError::Damaged(format!(
                    "the function table names {} functions, more than its {size} bytes hold",
                    header.nfunc
                )));
            }
            let mut table = vec![0u8; usize::try_from(table_len).unwrap_or(0)];
            file.read_exact_at(&mut table, offset + 8 + ptr)?;
            let word = |bytes: &[u8]| match (ptr, header.big_endian) {
                (4, false) => u64::from(u32::from_le_bytes(bytes.try_into().unwrap_or_default())),
                (4, true) => u64::from(u32::from_be_bytes(bytes.try_into().unwrap_or_default())),
                (_, false) => u64::from_le_bytes(bytes.try_into().unwrap_or_default()),
                (_, true) => u64::from_be_bytes(bytes.try_into().unwrap_or_default()),
            };
            let step = usize::try_from(ptr).unwrap_or(8);
            let mut name = vec![0u8; 512];
            for entry in table.chunks_exact(2 * step) {
                let record = word(&entry[step..]);
                let mut nameoff = [0u8; 4];
                if record + ptr + 4 > size {
                    continue;
                }
                file.read_exact_at(&mut nameoff, offset + record + ptr)?;
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
                let got = read_some(file, offset + nameoff, &mut name)?;
                let end = name[..got].iter().position(|b| *b == 0).unwrap_or(got);
                add(&mut packages, &name[..end]);
            }
        }
    }
    Ok(packages)
}

/// Notes the package of one function name.
fn add(packages: &mut BTreeSet<String>, name: &[u8]) {
    let Ok(name) = std::str::from_utf8(name) else {
        return;
    };
    if let Some(package) = package_of(name) {
        if !packages.contains(package.as_str()) {
            packages.insert(package);
        }
    }
}

/// Names noted one after another. A package's functions come together in
/// the table: a name in the package just noted costs one comparison.
#[derive(Debug, Default)]
struct Noted {
    /// The package part of the last name noted, as written.
    last: Vec<u8>,
}

impl Noted {
    /// Notes the package of `name` in `packages`.
    fn note(&mut self, packages: &mut BTreeSet<String>, name: &[u8]) {
        if self.in_last(name) {
            return;
        }
        add(packages, name);
        self.last.clear();
        if let Some(len) = std::str::from_utf8(name).ok().and_then(raw_package_len) {
            self.last.extend_from_slice(&name[..len]);
        }
    }

    /// Whether `name`'s package is the last one noted, as [`package_of`]
    /// finds it: the name starts with it and a `.`, and no `/` follows
    /// before any type arguments.
    fn in_last(&self, name: &[u8]) -> bool {
        let last = self.last.as_slice();
        if last.is_empty() || name.len() <= last.len() || !name.starts_with(last) {
            return false;
        }
        let rest = &name[last.len()..];
        if rest[0] != b'.' {
            return false;
        }
        let head = rest.split(|b| *b == b'[').next().unwrap_or(rest);
        !head.contains(&b'/')
    }
}

/// The length of the package part of a name, as written (before `%2e` is
/// read back): [`package_of`]'s cut, whether or not it names a package.
fn raw_package_len(name: &str) -> Option<usize> {
    let head = name.split('[').next()?;
    let last_slash = head.rfind('/').map_or(0, |i| i + 1);
    Some(head[last_slash..].find('.')? + last_slash)
}

/// The import path a function name starts with: up to the first `.`
/// after its last `/`, with the `%2e` the linker writes for a dot in the
/// path's last element read back. `None` for the linker's own names
/// (`type:.eq.…`, `go:buildid`) and names without a package.
pub(super) fn package_of(name: &str) -> Option<String> {
    if name.starts_with("type:") || name.starts_with("type..") || name.starts_with("go:") {
        return None;
    }
    if name.starts_with("go.") || name.starts_with("_cgo") {
        return None;
    }
    // A generic instantiation's type arguments may hold paths of their own.
    let name = name.split('[').next()?;
    let last_slash = name.rfind('/').map_or(0, |i| i + 1);
    let dot = name[last_slash..].find('.')? + last_slash;
    let package = &name[..dot];
    if package.is_empty() {
        return None;
    }
    Some(package.replace("%2e", "."))
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

#[cfg(test)]
mod tests {
    use super::{package_of, Noted};
    use std::collections::BTreeSet;

    #[test]
    fn names_noted_in_turn_give_each_names_package() {
        // Runs of one package, broken by names whose package starts the
        // same way, is longer, or is none; the oracle is each name's own
        // package.
        let names = [
            "a/b.F",
            "a/b.(*T).M",
            "a/b.F[go.shape.*net/http.Request]",
            "a/b.x/y.G",
            "a/b.x/y.H",
            "a/bc.F",
            "a/b%2ec.F",
            "type:.eq.a/b.T",
            "a/b.G",
            "a.F",
            "a.b/c.F",
            "runtime.main",
            "go:buildid",
            "runtime.gopark",
        ];
        let mut noted = Noted::default();
        let mut packages = BTreeSet::new();
        for name in names {
            noted.note(&mut packages, name.as_bytes());
        }
        let each: BTreeSet<String> = names.iter().filter_map(|n| package_of(n)).collect();
        assert_eq!(packages, each);
        assert!(packages.contains("a/b.x/y") && packages.contains("a/b.c"));
    }

    #[test]
    fn a_function_names_its_package() {
        for (name, package) in [
            (
                "golang.org/x/net/http2.(*Framer).ReadFrame",
                Some("golang.org/x/net/http2"),
            ),
            ("net/http.(*Server).Serve", Some("net/http")),
            ("runtime.gcWriteBarrier", Some("runtime")),
            ("main.main", Some("main")),
            (
                "gopkg.in/yaml%2ev3.(*parser).parse",
                Some("gopkg.in/yaml.v3"),
            ),
            (
                "slices.SortFunc[go.shape.[]github.com/x/y.T,go.shape.int]",
                Some("slices"),
            ),
            ("github.com/a/b.Map[...].func1", Some("github.com/a/b")),
            ("type:.eq.github.com/a/b.T", None),
            ("type..eq.[2]interface {}", None),
            ("go:buildid", None),
            ("go.shape.int", None),
            ("_cgo_init", None),
            ("noDotHere", None),
        ] {
            assert_eq!(package_of(name).as_deref(), package, "{name}");
        }
    }
}
