//! Real Go programs for macOS and Windows, as their publisher shipped them
//! (npm's esbuild packages, `tests/fixtures/found/SOURCE.md`), in each
//! function table layout: Go 1.2–1.15 (Mach-O and PE), 1.16 (PE), 1.18
//! (Mach-O arm64) and 1.20 on (Mach-O arm64 and PE), and a universal
//! binary of two of them. Their build information reads as `go version
//! -m` reads it; their function tables name the packages Go's own
//! `debug/gosym` names; and no change to their object headers, build
//! information or function table makes either reader panic.

use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod common;

use common::go_reader::{agrees_with_go, block_at, function_packages, gosym_names, universal};
use proptest::prelude::*;
use tfmirror::gobuild::{self, ExecutableKind, Found};

/// One found program: its package, where it is in it, its toolchain and
/// its function table's magic.
struct Fixture {
    tgz: &'static str,
    member: &'static str,
    go_version: &'static str,
    magic: u32,
}

const FIXTURES: [Fixture; 6] = [
    Fixture {
        tgz: "esbuild-darwin-64-0.8.9.tgz",
        member: "package/bin/esbuild",
        go_version: "go1.15.5",
        magic: 0xffff_fffb,
    },
    Fixture {
        tgz: "esbuild-windows-64-0.8.9.tgz",
        member: "package/esbuild.exe",
        go_version: "go1.15.5",
        magic: 0xffff_fffb,
    },
    Fixture {
        tgz: "esbuild-windows-64-0.12.1.tgz",
        member: "package/esbuild.exe",
        go_version: "go1.16.3",
        magic: 0xffff_fffa,
    },
    Fixture {
        tgz: "esbuild-darwin-arm64-0.14.54.tgz",
        member: "package/bin/esbuild",
        go_version: "go1.19",
        magic: 0xffff_fff0,
    },
    Fixture {
        tgz: "esbuild-darwin-arm64-0.17.19.tgz",
        member: "package/bin/esbuild",
        go_version: "go1.20.4",
        magic: 0xffff_fff1,
    },
    Fixture {
        tgz: "esbuild-win32-x64-0.17.19.tgz",
        member: "package/esbuild.exe",
        go_version: "go1.20.4",
        magic: 0xffff_fff1,
    },
];

/// The programs, each taken out of its package once per run.
struct Unpacked {
    dir: tempfile::TempDir,
    programs: Vec<PathBuf>,
}

fn unpacked() -> &'static Unpacked {
    static UNPACKED: OnceLock<Unpacked> = OnceLock::new();
    UNPACKED.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let programs = FIXTURES
            .iter()
            .map(|f| {
                let tgz = Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("tests/fixtures/found")
                    .join(f.tgz);
                let into = dir.path().join(f.tgz.trim_end_matches(".tgz"));
                std::fs::create_dir_all(&into).unwrap();
                let status = Command::new("tar")
                    .arg("xzf")
                    .arg(&tgz)
                    .arg("-C")
                    .arg(&into)
                    .arg(f.member)
                    .status()
                    .unwrap();
                assert!(status.success(), "{}", f.tgz);
                into.join(f.member)
            })
            .collect();
        Unpacked { dir, programs }
    })
}

/// Where a function table's header starts in `bytes`, found as the test
/// reads the layout (magic, two zero bytes, instruction size 1, 2 or 4,
/// pointer size 8, at 4-byte alignment), with its magic.
fn table_at(bytes: &[u8]) -> (usize, u32) {
    (0..bytes.len().saturating_sub(8))
        .step_by(4)
        .find_map(|i| {
            let magic = u32::from_le_bytes(bytes[i..i + 4].try_into().unwrap());
            let header = &bytes[i + 4..i + 8];
            let starts = matches!(magic, 0xffff_fffb | 0xffff_fffa | 0xffff_fff0 | 0xffff_fff1)
                && header[..2] == [0, 0]
                && matches!(header[2], 1 | 2 | 4)
                && header[3] == 8;
            starts.then_some((i, magic))
        })
        .expect("a function table's header")
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn found_programs_are_read_as_go_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    for (fixture, exe) in FIXTURES.iter().zip(&unpacked().programs) {
        let name = if fixture.member.ends_with(".exe") {
            "terraform-provider-found_v1.0.0.exe"
        } else {
            "terraform-provider-found_v1.0.0"
        };
        let info = agrees_with_go(dir.path(), name, exe, ExecutableKind::Provider);
        assert_eq!(info.go_version, fixture.go_version, "{}", fixture.tgz);
        // The fixture holds the layout it is kept for.
        let (_, magic) = table_at(&std::fs::read(exe).unwrap());
        assert_eq!(magic, fixture.magic, "{}", fixture.tgz);
    }
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn found_tables_name_the_packages_go_names() {
    let work = tempfile::tempdir().unwrap();
    for (fixture, exe) in FIXTURES.iter().zip(&unpacked().programs) {
        let what = fixture.tgz;
        let mut wanted = gobuild::Wanted::default();
        wanted.ask("os", &["OpenFile".into()]);
        let table = gobuild::packages(&std::fs::File::open(exe).unwrap(), &wanted)
            .unwrap()
            .unwrap_or_else(|| panic!("{what}: no function table found"));
        let names = gosym_names(work.path(), exe);
        assert!(names.len() > 3000, "{what}: {}", names.len());
        let oracle = function_packages(&names);
        let missing: Vec<_> = oracle.difference(&table.packages).collect();
        assert!(missing.is_empty(), "{what}: debug/gosym names {missing:?}");
        let extra: Vec<_> = table.packages.difference(&oracle).collect();
        if fixture.magic == 0xffff_fffb {
            // Names reached through the functions' records: exactly the
            // functions Go lists, and no inlined function's name.
            assert!(extra.is_empty(), "{what}: {extra:?}");
            assert!(!table.symbols.inlined_listed, "{what}");
        } else {
            // One block of names, inlined functions' too: a package whose
            // every function was inlined is named there and nowhere in
            // Go's list of functions.
            assert!(
                extra.len() <= 40,
                "{what}: {} extra: {extra:?}",
                extra.len()
            );
            assert!(table.symbols.inlined_listed, "{what}");
        }
        assert!(
            table
                .packages
                .contains("github.com/evanw/esbuild/internal/js_parser"),
            "{what}"
        );
        assert!(
            table.symbols.by_package["os"].found.contains("OpenFile"),
            "{what}: {:?}",
            table.symbols
        );
    }
}

#[test]
fn a_universal_binary_of_found_programs_reads_as_its_first_image() {
    let programs = &unpacked().programs;
    let (intel, arm) = (&programs[0], &programs[3]);
    let fat = universal(unpacked().dir.path(), "esbuild-universal", &[intel, arm]);
    let open = |p: &Path| std::fs::File::open(p).unwrap();
    let Found::Go(thin) = gobuild::read(&open(intel)).unwrap() else {
        panic!("no build information in {}", intel.display());
    };
    let Found::Go(from_fat) = gobuild::read(&open(&fat)).unwrap() else {
        panic!("the universal binary has no build information");
    };
    assert_eq!(from_fat, thin);
    let wanted = gobuild::Wanted::default();
    let packages = |p: &Path| gobuild::packages(&open(p), &wanted).unwrap().unwrap();
    assert_eq!(packages(&fat), packages(intel));
    // The arm64 image, of another toolchain, differs: the table read is
    // the first image's, not a mixture.
    assert_ne!(packages(&fat), packages(arm));
}

/// A copy of a found program whose bytes the fuzzing changes in place and
/// puts back: its first bytes (the object headers and load commands or
/// section table), its build information block, its function table's
/// start.
struct Scratch {
    path: PathBuf,
    file: std::fs::File,
    regions: [(u64, Vec<u8>); 3],
}

/// How many bytes of each region the fuzzing changes.
const SPAN: usize = 4096;

impl Scratch {
    fn of(source: &Path, dir: &Path, n: usize) -> Scratch {
        let path = dir.join(format!("scratch-{n}"));
        std::fs::copy(source, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let region = |at: usize| (at as u64, bytes[at..at + SPAN].to_vec());
        let regions = [
            region(0),
            region(block_at(&bytes)),
            region(table_at(&bytes).0),
        ];
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        Scratch {
            path,
            file,
            regions,
        }
    }

    /// Reads the build information and the function table with `changes`
    /// made to one region, then puts the region back.
    fn read_changed(&self, region: usize, changes: &[(usize, u8)], wanted: &gobuild::Wanted) {
        let (at, original) = &self.regions[region];
        for (offset, value) in changes {
            self.file.write_at(&[*value], at + *offset as u64).unwrap();
        }
        let file = std::fs::File::open(&self.path).unwrap();
        let _ = gobuild::read(&file);
        let _ = gobuild::packages(&file, wanted);
        self.file.write_at(original, *at).unwrap();
    }
}

fn scratches() -> &'static (tempfile::TempDir, Vec<Scratch>, gobuild::Wanted) {
    static SCRATCHES: OnceLock<(tempfile::TempDir, Vec<Scratch>, gobuild::Wanted)> =
        OnceLock::new();
    SCRATCHES.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        let copies = unpacked()
            .programs
            .iter()
            .enumerate()
            .map(|(n, p)| Scratch::of(p, dir.path(), n))
            .collect();
        let mut wanted = gobuild::Wanted::default();
        wanted.ask("os", &["OpenFile".into(), "File.Read".into()]);
        wanted.ask("runtime", &["main".into()]);
        (dir, copies, wanted)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(192))]

    /// Any change to a found program's object headers, build information
    /// or function table start is read or refused, by both readers; none
    /// panics. (What a claim costs in memory is tests/hostile_binaries.rs's.)
    #[test]
    fn any_damage_to_a_found_program_is_answered(
        program in 0usize..FIXTURES.len(),
        region in 0usize..3,
        changes in prop::collection::vec((0usize..SPAN, any::<u8>()), 1..8),
    ) {
        let (_, copies, wanted) = scratches();
        copies[program].read_changed(region, &changes, wanted);
    }
}

#[test]
fn the_fuzzed_programs_read_whole_before_they_are_damaged() {
    // The fuzzing starts from programs both readers read through.
    let (_, copies, wanted) = scratches();
    for (copy, fixture) in copies.iter().zip(&FIXTURES) {
        let file = std::fs::File::open(&copy.path).unwrap();
        assert!(
            matches!(gobuild::read(&file), Ok(Found::Go(_))),
            "{}",
            fixture.tgz
        );
        let table = gobuild::packages(&file, wanted).unwrap();
        assert!(
            table.is_some_and(|t| t.symbols.by_package["os"].found.contains("OpenFile")),
            "{}",
            fixture.tgz
        );
    }
}

/// Where `.rdata` lies in a PE file (its raw data's offset and size), read
/// from the section table as the PE specification lays it out.
fn rdata_of(pe: &[u8]) -> (usize, usize) {
    let u16_at = |at: usize| usize::from(u16::from_le_bytes([pe[at], pe[at + 1]]));
    let u32_at = |at: usize| u32::from_le_bytes(pe[at..at + 4].try_into().unwrap()) as usize;
    let header = u32_at(0x3c);
    assert_eq!(&pe[header..header + 4], b"PE\0\0");
    let sections = header + 24 + u16_at(header + 20);
    (0..u16_at(header + 6))
        .map(|i| sections + 40 * i)
        .find(|s| &pe[*s..*s + 8] == b".rdata\0\0")
        .map(|s| (u32_at(s + 20), u32_at(s + 16)))
        .expect("an .rdata section")
}

/// A Go 1.2–1.15 table's start as the linker lays it out, for a header
/// planted at the start of `.rdata`, before the real table: the header
/// and function count, then (entry, record) pairs, then at each record
/// its function's entry address. `record1` may point anywhere.
struct Planted {
    nfunc: u64,
    entries: (u64, u64),
    records: (u64, u64),
    /// The first word of the first record.
    at_record0: u64,
}

impl Planted {
    const REAL: Planted = Planted {
        nfunc: 2,
        entries: (0x40_1000, 0x40_1080),
        records: (64, 128),
        at_record0: 0x40_1000,
    };

    fn plant(&self, bytes: &mut [u8], at: usize) {
        let mut put = |offset: u64, word: u64| {
            let offset = at + usize::try_from(offset).unwrap();
            bytes[offset..offset + 8].copy_from_slice(&word.to_le_bytes());
        };
        put(16, self.entries.0);
        put(24, self.records.0);
        put(32, self.entries.1);
        put(40, self.records.1);
        if self.records.0 != 16 {
            put(self.records.0, self.at_record0);
        }
        put(8, self.nfunc);
        bytes[at..at + 8].copy_from_slice(&[0xfb, 0xff, 0xff, 0xff, 0, 0, 1, 8]);
    }
}

#[test]
fn an_old_table_among_other_data_is_believed_only_where_its_functions_hold_together() {
    let dir = tempfile::tempdir().unwrap();
    // The Windows program of Go 1.15, whose table only its header marks.
    let exe = &unpacked().programs[1];
    let original = std::fs::read(exe).unwrap();
    let (rdata, size) = rdata_of(&original);
    let wanted = gobuild::Wanted::default();
    let packages_with = |planted: &Planted| {
        let mut bytes = original.clone();
        bytes[rdata..rdata + 256].fill(0);
        planted.plant(&mut bytes, rdata);
        let path = dir.path().join("planted.exe");
        std::fs::write(&path, &bytes).unwrap();
        gobuild::packages(&std::fs::File::open(&path).unwrap(), &wanted)
            .map(|t| t.map(|t| t.packages))
            .map_err(|e| e.to_string())
    };
    let real = gobuild::packages(&std::fs::File::open(exe).unwrap(), &wanted)
        .unwrap()
        .unwrap()
        .packages;
    // A planted start that holds together is taken for the table: the
    // test plants what the reader would believe.
    assert_ne!(packages_with(&Planted::REAL), Ok(Some(real.clone())));
    let broken = [
        (
            "one function",
            Planted {
                nfunc: 1,
                ..Planted::REAL
            },
        ),
        (
            "entries that do not rise",
            Planted {
                entries: (0x40_1000, 0x40_1000),
                ..Planted::REAL
            },
        ),
        // A record inside the pairs (there, the first word is the entry).
        (
            "a record among the pairs",
            Planted {
                records: (16, 128),
                ..Planted::REAL
            },
        ),
        (
            "records out of order",
            Planted {
                records: (128, 64),
                ..Planted::REAL
            },
        ),
        (
            "a record past the table",
            Planted {
                records: (64, u64::try_from(size).unwrap() - 4),
                ..Planted::REAL
            },
        ),
        (
            "a record of another entry",
            Planted {
                at_record0: 0x40_1001,
                ..Planted::REAL
            },
        ),
    ];
    for (what, planted) in broken {
        assert_eq!(packages_with(&planted), Ok(Some(real.clone())), "{what}");
    }
}
