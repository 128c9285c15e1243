//! Go's own readers as the tests' oracles for tfmirror's reading of Go
//! programs: `go version -m` for the build information, `go tool nm` for
//! the symbol table, `debug/gosym` for the function table (all from
//! Debian's golang-go), and the programs packed as releases pack them.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use tfmirror::gobuild::{self, executables_in, BuildInfo, ExecutableKind, Found};

use super::go::go_build;

/// What `go version -m` says of a file, in its own words: the toolchain,
/// then each line of the module information (without the leading tab).
pub struct GoSays {
    /// The toolchain.
    pub version: String,
    /// The module information's lines.
    pub lines: Vec<String>,
}

pub fn go_version_m(file: &Path) -> GoSays {
    let out = Command::new("go")
        .args(["version", "-m"])
        .arg(file)
        .output()
        .expect("go (Debian's golang-go) runs; the README's test command installs it");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "go version -m {}: {text}{}",
        file.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let mut lines = text.lines();
    let first = lines.next().unwrap();
    let version = first.rsplit_once(": ").unwrap().1.to_string();
    GoSays {
        version,
        lines: lines
            .map(|l| l.strip_prefix('\t').unwrap_or(l).to_string())
            .collect(),
    }
}

/// tfmirror's reading, in the words `go version -m` uses for it (Go's
/// `BuildInfo.String`): a replaced module's line has no sum, and its
/// replacement follows on a `=>` line, then an empty one; a build setting's value is quoted
/// where it holds a space, a tab, a newline or a quote.
pub fn as_go_says(info: &BuildInfo) -> Vec<String> {
    let mut out = Vec::new();
    if !info.path.is_empty() {
        out.push(format!("path\t{}", info.path));
    }
    let module = |word: &str, m: &gobuild::Module, out: &mut Vec<String>| {
        match &m.replace {
            None => out.push(format!("{word}\t{}\t{}\t{}", m.path, m.version, m.sum)),
            Some(r) => {
                out.push(format!("{word}\t{}\t{}", m.path, m.version));
                out.push(format!("=>\t{}\t{}\t{}", r.path, r.version, r.sum));
                // Go's rendering ends a replaced module with an empty line.
                out.push(String::new());
            }
        }
    };
    if let Some(main) = &info.main {
        module("mod", main, &mut out);
    }
    for dep in &info.deps {
        module("dep", dep, &mut out);
    }
    for s in &info.settings {
        let value = if s.value.contains([' ', '\t', '\r', '\n', '"', '`']) {
            serde_json::to_string(&s.value).unwrap()
        } else {
            s.value.clone()
        };
        out.push(format!("build\t{}={value}", s.key));
    }
    out
}

/// Packs `exe` as `name` into a zip archive, as a release would: deflated,
/// but for the largest programs, stored (the tests' build leaves the
/// compression code unoptimised, and both ways are read alike).
pub fn packed(dir: &Path, name: &str, exe: &Path) -> PathBuf {
    let archive = dir.join(format!("{}.zip", name.replace('/', "_")));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&archive).unwrap());
    let method = if std::fs::metadata(exe).unwrap().len() > 16 << 20 {
        zip::CompressionMethod::Stored
    } else {
        zip::CompressionMethod::Deflated
    };
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(method)
        .unix_permissions(0o755);
    zip.start_file("README.md", options).unwrap();
    zip.write_all(b"not an executable\n").unwrap();
    zip.start_file(name, options).unwrap();
    std::io::copy(&mut std::fs::File::open(exe).unwrap(), &mut zip).unwrap();
    zip.finish().unwrap();
    archive
}

/// Reads the one executable of an archive.
pub fn read_packed(dir: &Path, name: &str, exe: &Path, kind: ExecutableKind) -> Found {
    let archive = packed(dir, name, exe);
    let archive = std::fs::File::open(&archive).unwrap();
    let mut found =
        executables_in(archive, kind, dir, 1 << 30, &gobuild::Wanted::default()).unwrap();
    assert_eq!(found.len(), 1, "{name}: {found:?}");
    let one = found.remove(0);
    assert_eq!(one.name, name);
    assert_eq!(one.size, std::fs::metadata(exe).unwrap().len());
    one.build.unwrap()
}

/// Asserts that tfmirror reads `exe` (packed as `name`) as Go does.
pub fn agrees_with_go(dir: &Path, name: &str, exe: &Path, kind: ExecutableKind) -> BuildInfo {
    let go = go_version_m(exe);
    let Found::Go(info) = read_packed(dir, name, exe, kind) else {
        panic!("{name}: no build information read; go says {}", go.version);
    };
    assert_eq!(info.go_version, go.version, "{name}");
    let ours = as_go_says(&info);
    for (i, (a, b)) in ours.iter().zip(&go.lines).enumerate() {
        assert_eq!(a, b, "{name}: line {} differs", i + 1);
    }
    assert_eq!(
        ours.len(),
        go.lines.len(),
        "{name}: {ours:#?}\n{:#?}",
        go.lines
    );
    info
}

/// The file an environment variable names, which the README's test
/// command sets.
pub fn env_file(var: &str) -> PathBuf {
    match std::env::var_os(var) {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        other => panic!("{var} must name a file (got {other:?}); run the README's test command"),
    }
}

/// A universal Mach-O binary of the given thin ones, laid out as `lipo`
/// lays it out: the big-endian fat header, one entry per architecture,
/// each image at a 16 KiB boundary.
pub fn universal(dir: &Path, name: &str, thin: &[&Path]) -> PathBuf {
    const ALIGN: u32 = 14;
    let images: Vec<Vec<u8>> = thin.iter().map(|p| std::fs::read(p).unwrap()).collect();
    let mut out = Vec::new();
    out.extend_from_slice(&0xcafe_babe_u32.to_be_bytes());
    out.extend_from_slice(&u32::try_from(images.len()).unwrap().to_be_bytes());
    let mut offset = 1u32 << ALIGN;
    let mut layout = Vec::new();
    for image in &images {
        // cputype and cpusubtype, from the thin image's own header.
        let cputype = u32::from_le_bytes(image[4..8].try_into().unwrap());
        let subtype = u32::from_le_bytes(image[8..12].try_into().unwrap());
        let size = u32::try_from(image.len()).unwrap();
        for word in [cputype, subtype, offset, size, ALIGN] {
            out.extend_from_slice(&word.to_be_bytes());
        }
        layout.push(offset);
        offset = (offset + size).next_multiple_of(1 << ALIGN);
    }
    for (image, at) in images.iter().zip(layout) {
        out.resize(at as usize, 0);
        out.extend_from_slice(image);
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

/// Where the build information block of a file starts.
pub fn block_at(bytes: &[u8]) -> usize {
    bytes
        .windows(14)
        .position(|w| w == b"\xff Go buildinf:")
        .unwrap()
}

/// The packages of the functions `go tool nm` lists (text symbols) in an
/// unstripped program: the symbol table, read by Go's own tool.
pub fn nm_packages(exe: &Path) -> std::collections::BTreeSet<String> {
    let out = Command::new("go")
        .args(["tool", "nm"])
        .arg(exe)
        .output()
        .expect("go tool nm runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let (_, kind, name) = (fields.next()?, fields.next()?, fields.next()?);
            if kind != "T" && kind != "t" {
                return None;
            }
            // Text symbols only: the compiler's own `go.` names are
            // data (`go.itab.…`, `go.string.…`), so a text symbol that
            // starts with `go.` is a package's (`go.etcd.io/…`).
            // Methods of unnamed types (`go.(*struct { … }).Lock`, before
            // Go 1.18) and the build ID (a text symbol in PE files)
            // belong to no package.
            if name.starts_with("type:")
                || name.starts_with("type.")
                || name.starts_with("go:")
                || name.starts_with("go.(")
                || name.starts_with("go.struct")
                || name == "go.buildid"
            {
                return None;
            }
            // A symbol is the package path, then the name; type arguments
            // and a method's receiver follow in brackets and parentheses.
            let name = name.split(['[', '(']).next()?;
            let from = name.rfind('/').map_or(0, |i| i + 1);
            let dot = name[from..].find('.')? + from;
            Some(name[..dot].replace("%2e", "."))
        })
        .collect()
}

/// The function names Go's own `debug/gosym` (Debian's Go 1.19) reads
/// from a program's function table, found without a symbol table: its
/// section in ELF (`.gopclntab`) and Mach-O (`__gopclntab`) files; in a PE
/// file, the first place in `.rdata` where a table's header starts (magic,
/// two zero bytes, instruction size 1, 2 or 4, pointer size 8) and from
/// which `debug/gosym` reads more than a thousand functions. Go 1.20's
/// magic (`0xfffffff1`) is read as Go 1.18's (`0xfffffff0`), which Go 1.20's
/// own `debug/gosym` reads alike and Go 1.19's does not know. The reader
/// is built once into `work`.
pub fn gosym_names(work: &Path, exe: &Path) -> Vec<String> {
    let reader = work.join("gosym");
    if !reader.exists() {
        let src = work.join("gosym-src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("go.mod"), "module example.test/gosym\n\ngo 1.19\n").unwrap();
        std::fs::write(src.join("main.go"), GOSYM_READER).unwrap();
        go_build(work, &src, &reader, ("linux", "amd64"), false);
    }
    let out = Command::new(&reader).arg(exe).output().unwrap();
    assert!(
        out.status.success(),
        "{}: {}",
        exe.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect()
}

/// The oracle of [`gosym_names`], in Go.
const GOSYM_READER: &str = r#"package main

import (
	"debug/elf"
	"debug/gosym"
	"debug/macho"
	"debug/pe"
	"encoding/binary"
	"fmt"
	"os"
)

func names(data []byte) (funcs []string, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	if binary.LittleEndian.Uint32(data) == 0xfffffff1 {
		data = append([]byte{}, data...)
		binary.LittleEndian.PutUint32(data, 0xfffffff0)
	}
	table, err := gosym.NewTable(nil, gosym.NewLineTable(data, 0))
	if err != nil {
		return nil, false
	}
	for _, fn := range table.Funcs {
		funcs = append(funcs, fn.Name)
	}
	return funcs, true
}

func main() {
	path := os.Args[1]
	var data []byte
	var err error
	if f, e := elf.Open(path); e == nil {
		data, err = f.Section(".gopclntab").Data()
	} else if f, e := macho.Open(path); e == nil {
		data, err = f.Section("__gopclntab").Data()
	} else if f, e := pe.Open(path); e == nil {
		rdata, e := f.Section(".rdata").Data()
		if e != nil {
			panic(e)
		}
		for i := 0; i+8 <= len(rdata); i += 4 {
			m := binary.LittleEndian.Uint32(rdata[i:])
			h := rdata[i+4 : i+8]
			if (m == 0xfffffffb || m == 0xfffffffa || m == 0xfffffff0 || m == 0xfffffff1) &&
				h[0] == 0 && h[1] == 0 && (h[2] == 1 || h[2] == 2 || h[2] == 4) && h[3] == 8 {
				if funcs, ok := names(rdata[i:]); ok && len(funcs) > 1000 {
					for _, n := range funcs {
						fmt.Println(n)
					}
					return
				}
			}
		}
		panic("no function table in .rdata")
	} else {
		panic("not an ELF, Mach-O or PE file")
	}
	if err != nil {
		panic(err)
	}
	funcs, ok := names(data)
	if !ok {
		panic("debug/gosym reads no table")
	}
	for _, n := range funcs {
		fmt.Println(n)
	}
}
"#;

/// The packages of function names as the runtime writes them (the import
/// path, then the name; a method's receiver and type arguments follow in
/// parentheses and brackets; dots in the path's last element escaped as
/// `%2e`), the compiler's own names (`type.`, `go.` data, `_cgo`) left out.
pub fn function_packages(names: &[String]) -> std::collections::BTreeSet<String> {
    names
        .iter()
        .filter(|n| {
            !n.starts_with("type.")
                && !n.starts_with("type:")
                && !n.starts_with("go.(")
                && !n.starts_with("go.struct")
                && !n.starts_with("go:")
                && !n.starts_with("_cgo")
                && n.as_str() != "go.buildid"
        })
        .filter_map(|n| {
            let head = n.split(['[', '(']).next()?;
            let from = head.rfind('/').map_or(0, |i| i + 1);
            let dot = head[from..].find('.')? + from;
            Some(head[..dot].replace("%2e", "."))
        })
        .collect()
}
