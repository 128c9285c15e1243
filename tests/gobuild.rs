//! The Go build information tfmirror reads from the executables it hands
//! out agrees with Go's own reader, `go version -m` from Debian's
//! golang-go, on real programs: the Terraform v1.0.3 CLI (go1.16, the
//! older pointer format), SeaweedFS's `weed` (a recent toolchain and some
//! 270 modules), Debian's `prometheus` (built without module information),
//! and programs `go build` makes for Linux (64- and 32-bit), macOS (Intel,
//! Apple silicon, and both in one universal binary) and Windows. Each is
//! read from inside a provider or CLI archive, as tfmirror meets it.
//! Damaged build information is refused by cause, and no mutation of the
//! block makes the reader panic.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

mod common;

use common::go::go_build;
use common::go_reader::{
    agrees_with_go, block_at, env_file, function_packages, gosym_names, nm_packages, read_packed,
    universal,
};
use proptest::prelude::*;
use tfmirror::gobuild::{self, ExecutableKind, Found};

/// Small Go programs built once per run for each platform, stripped as
/// releases are (`-s -w`).
fn built() -> &'static Built {
    static BUILT: OnceLock<Built> = OnceLock::new();
    BUILT.get_or_init(Built::make)
}

/// A directory of this test binary's own under the build's scratch space
/// (`target/tmp`), emptied: what is made once per run is kept there. A
/// static is never dropped, so a temporary directory it held would
/// outlive the run.
fn run_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("gobuild")
        .join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

struct Built {
    /// (GOOS/GOARCH, the program).
    programs: Vec<(String, PathBuf)>,
}

impl Built {
    fn make() -> Built {
        let dir = run_dir("programs");
        let src = dir.join("src");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("go.mod"), "module example.test/hello\n\ngo 1.19\n").unwrap();
        std::fs::write(
            src.join("main.go"),
            "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
        )
        .unwrap();
        let mut programs = Vec::new();
        for (os, arch) in [
            ("linux", "amd64"),
            ("linux", "386"),
            ("darwin", "amd64"),
            ("darwin", "arm64"),
            ("windows", "amd64"),
        ] {
            let out = dir.join(format!("hello_{os}_{arch}"));
            go_build(&dir, &src, &out, (os, arch), true);
            programs.push((format!("{os}/{arch}"), out));
        }
        Built { programs }
    }

    fn program(&self, platform: &str) -> &Path {
        &self.programs.iter().find(|(p, _)| p == platform).unwrap().1
    }
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn the_terraform_1_0_3_cli_is_read_as_go_reads_it_in_the_older_pointer_format() {
    let dir = tempfile::tempdir().unwrap();
    let info = agrees_with_go(
        dir.path(),
        "terraform",
        &env_file("TERRAFORM_BIN"),
        ExecutableKind::Cli,
    );
    assert_eq!(info.go_version, "go1.16.4");
    let main = info.main.unwrap();
    assert_eq!(
        (main.path.as_str(), main.version.as_str()),
        ("github.com/hashicorp/terraform", "(devel)")
    );
    assert!(info.deps.len() > 100, "{}", info.deps.len());
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN; scripts/test installs it"
)]
#[test]
fn seaweedfs_weed_is_read_as_go_reads_it_with_every_module() {
    let dir = tempfile::tempdir().unwrap();
    let info = agrees_with_go(
        dir.path(),
        "terraform-provider-weed_v4.48.0",
        &env_file("WEED_BIN"),
        ExecutableKind::Provider,
    );
    assert!(info.deps.len() > 200, "{}", info.deps.len());
    assert!(info
        .settings
        .iter()
        .any(|s| s.key == "GOOS" && s.value == "linux"));
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn a_program_built_without_module_information_has_no_modules() {
    let dir = tempfile::tempdir().unwrap();
    let prometheus = Path::new("/usr/bin/prometheus");
    assert!(
        prometheus.is_file(),
        "Debian's prometheus; the README's test command installs it"
    );
    let info = agrees_with_go(
        dir.path(),
        "terraform-provider-prometheus",
        prometheus,
        ExecutableKind::Provider,
    );
    assert_eq!(info.main, None);
    assert!(info.deps.is_empty());
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn programs_for_every_platform_are_read_as_go_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    for (platform, exe) in &built().programs {
        let name = if platform.starts_with("windows") {
            "terraform.exe"
        } else {
            "terraform"
        };
        let info = agrees_with_go(dir.path(), name, exe, ExecutableKind::Cli);
        let os = platform.split('/').next().unwrap();
        assert!(
            info.settings
                .iter()
                .any(|s| s.key == "GOOS" && s.value == os),
            "{platform}: {:?}",
            info.settings
        );
    }
    // Go's own reader of this version takes no universal binary: the
    // universal one must read as each of its thin images does.
    let (intel, arm) = (
        built().program("darwin/amd64"),
        built().program("darwin/arm64"),
    );
    let fat = universal(dir.path(), "hello_darwin_universal", &[intel, arm]);
    let Found::Go(from_fat) = read_packed(
        dir.path(),
        "terraform-provider-hello_v1.0.0",
        &fat,
        ExecutableKind::Provider,
    ) else {
        panic!("the universal binary has no build information");
    };
    let Found::Go(thin) = gobuild::read(&std::fs::File::open(intel).unwrap()).unwrap() else {
        panic!("no build information in {}", intel.display());
    };
    assert_eq!(from_fat, thin);
}

#[test]
fn an_executable_that_is_no_go_program_is_said_to_have_none() {
    let ls = std::fs::File::open("/usr/bin/ls").unwrap();
    assert_eq!(
        gobuild::read(&ls).unwrap(),
        Found::Nothing("no Go build information".into())
    );
}

fn read_bytes(dir: &Path, bytes: &[u8]) -> Result<Found, gobuild::GoBuildError> {
    let path = dir.join("mutated");
    std::fs::write(&path, bytes).unwrap();
    gobuild::read(&std::fs::File::open(&path).unwrap())
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn lying_build_information_is_refused_by_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    // Inline format: a version length past the 4 MiB read.
    let mut inline = std::fs::read(built().program("linux/amd64")).unwrap();
    let at = block_at(&inline);
    assert_eq!(inline[at + 15] & 2, 2, "the inline format");
    inline[at + 32..at + 37].copy_from_slice(&[0xff, 0xff, 0xff, 0xff, 0x0f]);
    let e = read_bytes(dir.path(), &inline).unwrap_err().to_string();
    assert!(e.contains("a string of 4294967295 bytes"), "{e}");
    // A length of exactly the bound is read (and here runs past its
    // segment); one byte more is refused as too long.
    inline[at + 32..at + 36].copy_from_slice(&[0x80, 0x80, 0x80, 0x02]);
    assert_eq!(gobuild::MAX_STRING, 1 << 22, "the varint above");
    let e = read_bytes(dir.path(), &inline).unwrap_err().to_string();
    assert!(e.contains("run past the end of their segment"), "{e}");
    inline[at + 32..at + 36].copy_from_slice(&[0x81, 0x80, 0x80, 0x02]);
    let e = read_bytes(dir.path(), &inline).unwrap_err().to_string();
    assert!(e.contains("a string of 4194305 bytes"), "{e}");
    // The same file cut short inside the module information.
    let whole = std::fs::read(built().program("linux/amd64")).unwrap();
    let e = read_bytes(dir.path(), &whole[..block_at(&whole) + 40])
        .unwrap_err()
        .to_string();
    assert!(e.contains("damaged"), "{e}");
    // Pointer format: a pointer to an address no segment holds, and a
    // pointer size that is neither 4 nor 8.
    let mut pointers = std::fs::read(env_file("TERRAFORM_BIN")).unwrap();
    let at = block_at(&pointers);
    assert_eq!(
        (pointers[at + 14], pointers[at + 15]),
        (8, 0),
        "8-byte little-endian pointers"
    );
    pointers[at + 16..at + 24].copy_from_slice(&0xdead_beef_0000_u64.to_le_bytes());
    let e = read_bytes(dir.path(), &pointers).unwrap_err().to_string();
    assert!(e.contains("no segment holds address 0xdeadbeef0000"), "{e}");
    pointers[at + 14] = 6;
    let e = read_bytes(dir.path(), &pointers).unwrap_err().to_string();
    assert!(e.contains("a pointer size of 6 bytes"), "{e}");
}

/// The block is looked for at every 16 bytes from the start of the data,
/// the alignment Go's own reader (`debug/buildinfo`) allows it, and a
/// magic too near the end of the 64 KiB searched to hold a header is no
/// block. Terraform v1.0.3's block is in the pointer format: its 32-byte
/// header holds all the reader needs, so it can be moved.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn the_block_is_found_at_any_sixteen_byte_step_and_not_past_what_is_searched() {
    let dir = tempfile::tempdir().unwrap();
    let whole = std::fs::read(env_file("TERRAFORM_BIN")).unwrap();
    let want = read_bytes(dir.path(), &whole).unwrap();
    assert!(matches!(want, Found::Go(_)), "{want:?}");
    let at = block_at(&whole);
    let header = whole[at..at + 32].to_vec();
    for by in [16, 48] {
        let mut moved = whole.clone();
        moved[at..at + by].fill(0);
        moved[at + by..at + by + 32].copy_from_slice(&header);
        assert_eq!(
            read_bytes(dir.path(), &moved).unwrap(),
            want,
            "{by} bytes on"
        );
    }
    let mut late = whole.clone();
    late[at] = 0;
    let end = at + usize::try_from(gobuild::SEARCH_WINDOW).unwrap();
    late[end - 16..end - 2].copy_from_slice(&header[..14]);
    assert_eq!(
        read_bytes(dir.path(), &late).unwrap(),
        Found::Nothing("no Go build information".into())
    );
}

/// A copy of a program whose bytes a test changes in place and puts back.
struct Scratch {
    file: std::fs::File,
    path: PathBuf,
    block: u64,
    original: Vec<u8>,
}

impl Scratch {
    fn of(source: &Path, dir: &Path) -> Scratch {
        let path = dir.join(source.file_name().unwrap());
        std::fs::copy(source, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let block = block_at(&bytes);
        Scratch {
            file: std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap(),
            path,
            block: block as u64,
            original: bytes[block..block + 96].to_vec(),
        }
    }

    /// Reads the program with `changes` made to its block, then puts the
    /// block back.
    fn read_changed(&self, changes: &[(usize, u8)]) -> Result<Found, gobuild::GoBuildError> {
        use std::os::unix::fs::FileExt;
        for (offset, value) in changes {
            self.file
                .write_at(&[*value], self.block + *offset as u64)
                .unwrap();
        }
        let read = gobuild::read(&std::fs::File::open(&self.path).unwrap());
        self.file.write_at(&self.original, self.block).unwrap();
        read
    }
}

fn scratch_copies() -> &'static (Scratch, Scratch) {
    static COPIES: OnceLock<(Scratch, Scratch)> = OnceLock::new();
    COPIES.get_or_init(|| {
        let dir = run_dir("scratch");
        let pointers = Scratch::of(&env_file("TERRAFORM_BIN"), &dir);
        let inline = Scratch::of(built().program("linux/amd64"), &dir);
        (pointers, inline)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any change to the bytes of the block and what follows it, in
    /// either format, is read or refused; the reader never panics.
    #[cfg_attr(tfmirror_no_go, ignore = "needs go (Debian's golang-go); scripts/test installs it")]
    #[cfg_attr(tfmirror_no_terraform, ignore = "needs TERRAFORM_BIN; scripts/test installs it")]
    #[test]
    fn any_damage_to_the_block_is_answered(
        pointer_format in any::<bool>(),
        changes in prop::collection::vec((0usize..96, any::<u8>()), 1..8),
    ) {
        let (pointers, inline) = scratch_copies();
        let scratch = if pointer_format { pointers } else { inline };
        let _ = scratch.read_changed(&changes);
    }
}

/// A program's copy whose function table's first bytes a test changes
/// and puts back.
struct TableScratch {
    file: std::fs::File,
    path: PathBuf,
    at: u64,
    original: Vec<u8>,
}

/// How much of the table's start the fuzzing changes: its header, the
/// first function entries, and the start of the names block behind them.
const TABLE_SPAN: usize = 4096;

impl TableScratch {
    /// A copy of `source` in `dir`; the table is found by its magic
    /// (Go 1.16's `0xfffffffa` or 1.18's `0xfffffff0`, little-endian)
    /// followed by the header's padding, instruction size and pointer
    /// size.
    fn of(source: &Path, dir: &Path) -> TableScratch {
        let path = dir.join(format!(
            "table-{}",
            source.file_name().unwrap().to_string_lossy()
        ));
        std::fs::copy(source, &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        let at = bytes
            .windows(8)
            .position(|w| {
                matches!(w[0], 0xfa | 0xf0 | 0xf1)
                    && w[1..4] == [0xff, 0xff, 0xff]
                    && w[4..6] == [0, 0]
                    && matches!(w[6], 1 | 2 | 4)
                    && w[7] == 8
            })
            .expect("a function table's header");
        TableScratch {
            file: std::fs::OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .unwrap(),
            path,
            at: at as u64,
            original: bytes[at..at + TABLE_SPAN].to_vec(),
        }
    }

    /// Reads the packages and symbols with `changes` made to the table's
    /// first bytes, then puts them back.
    fn packages_changed(&self, changes: &[(usize, u8)], wanted: &gobuild::Wanted) -> bool {
        use std::os::unix::fs::FileExt;
        for (offset, value) in changes {
            self.file
                .write_at(&[*value], self.at + *offset as u64)
                .unwrap();
        }
        let read = gobuild::packages(&std::fs::File::open(&self.path).unwrap(), wanted);
        self.file.write_at(&self.original, self.at).unwrap();
        read.is_ok()
    }
}

fn table_copies() -> &'static (TableScratch, TableScratch, gobuild::Wanted) {
    static COPIES: OnceLock<(TableScratch, TableScratch, gobuild::Wanted)> = OnceLock::new();
    COPIES.get_or_init(|| {
        let dir = run_dir("tables");
        let go116 = TableScratch::of(&env_file("TERRAFORM_BIN"), &dir);
        let go118 = TableScratch::of(built().program("linux/amd64"), &dir);
        let mut wanted = gobuild::Wanted::default();
        wanted.ask("fmt", &["Println".into(), "pp.doPrintln".into()]);
        wanted.ask("runtime", &["main".into()]);
        (go116, go118, wanted)
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// Any change to a function table's header, first entries and names,
    /// in Go 1.16's and 1.18's layouts, is read or refused, the symbols
    /// asked for looked up on the way; the reader never panics. (The
    /// claims it cannot be made to believe, and its memory, are
    /// tests/hostile_binaries.rs's.)
    #[cfg_attr(tfmirror_no_go, ignore = "needs go (Debian's golang-go); scripts/test installs it")]
    #[cfg_attr(tfmirror_no_terraform, ignore = "needs TERRAFORM_BIN; scripts/test installs it")]
    #[test]
    fn any_damage_to_the_function_table_is_answered(
        go116 in any::<bool>(),
        changes in prop::collection::vec((0usize..TABLE_SPAN, any::<u8>()), 1..8),
    ) {
        let (old, new, wanted) = table_copies();
        let scratch = if go116 { old } else { new };
        let _ = scratch.packages_changed(&changes, wanted);
    }
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn the_fuzzed_tables_read_whole_before_they_are_damaged() {
    // The fuzzing above starts from tables that read, with symbols found.
    let (old, new, wanted) = table_copies();
    for scratch in [old, new] {
        assert!(scratch.packages_changed(&[], wanted));
        let table = gobuild::packages(&std::fs::File::open(&scratch.path).unwrap(), wanted)
            .unwrap()
            .expect("a function table");
        assert!(
            table.symbols.by_package["fmt"].found.contains("Println"),
            "{:?}",
            table.symbols
        );
    }
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn the_packages_a_program_holds_are_those_its_symbol_table_names() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    // A dependency whose module path starts with `go.`, as
    // go.etcd.io/etcd's and go.uber.org/zap's do, replaced by a directory
    // so that the build stays offline.
    let lib = dir.path().join("lib");
    std::fs::create_dir_all(&lib).unwrap();
    std::fs::write(
        lib.join("go.mod"),
        "module go.example.test/lib\n\ngo 1.19\n",
    )
    .unwrap();
    std::fs::write(
        lib.join("lib.go"),
        "package lib\n\n//go:noinline\nfunc Twice(n int) int { return 2 * n }\n",
    )
    .unwrap();
    std::fs::write(
        src.join("go.mod"),
        "module example.test/web\n\ngo 1.19\n\nrequire go.example.test/lib v0.0.0\n\nreplace go.example.test/lib => ../lib\n",
    )
    .unwrap();
    std::fs::write(
        src.join("main.go"),
        "package main\n\nimport (\n\t\"net/http\"\n\t\"os\"\n\t\"regexp\"\n\n\t\"go.example.test/lib\"\n)\n\nfunc main() {\n\t_ = regexp.MustCompile(\"a+\")\n\tos.Exit(lib.Twice(len(os.Args)))\n\t_ = http.ListenAndServe(\":0\", nil)\n}\n",
    )
    .unwrap();
    for (os, arch) in [
        ("linux", "amd64"),
        ("windows", "amd64"),
        ("darwin", "arm64"),
        ("linux", "386"),
    ] {
        // Unstripped, so that `go tool nm` has a symbol table to read;
        // the function table is the same either way.
        let out = dir.path().join(format!("web_{os}_{arch}"));
        go_build(dir.path(), &src, &out, (os, arch), false);
        let ours = gobuild::packages(
            &std::fs::File::open(&out).unwrap(),
            &gobuild::Wanted::default(),
        )
        .unwrap()
        .unwrap_or_else(|| panic!("{os}/{arch}: no function table found"))
        .packages;
        let nm = nm_packages(&out);
        let missing: Vec<_> = nm.difference(&ours).collect();
        assert!(
            missing.is_empty(),
            "{os}/{arch}: nm names {missing:?}, not read"
        );
        // Packages whose every function was inlined have names in the
        // table and no symbol; nothing else may be extra.
        let extra: Vec<_> = ours.difference(&nm).collect();
        assert!(extra.len() <= 10, "{os}/{arch}: {extra:?}");
        for package in ["net/http", "regexp", "main", "go.example.test/lib"] {
            assert!(ours.contains(package), "{os}/{arch}: {package}");
        }
        assert!(!ours.contains("debug/macho"), "{os}/{arch}");
    }
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn the_terraform_1_0_3_function_table_holds_what_its_symbol_table_names() {
    // Go 1.16's table layout, in a release binary that kept its symbols.
    let exe = env_file("TERRAFORM_BIN");
    let ours = gobuild::packages(
        &std::fs::File::open(&exe).unwrap(),
        &gobuild::Wanted::default(),
    )
    .unwrap()
    .expect("a function table")
    .packages;
    let nm = nm_packages(&exe);
    let missing: Vec<_> = nm.difference(&ours).collect();
    assert!(missing.is_empty(), "nm names {missing:?}, not read");
    let extra: Vec<_> = ours.difference(&nm).collect();
    assert!(extra.len() <= 40, "{} extra: {extra:?}", extra.len());
    // A module path that starts with `go.`, which the build record lists
    // no package of.
    assert!(ours.contains("go.etcd.io/etcd/pkg/tlsutil"));
    assert!(nm.len() > 700, "{}", nm.len());
}

/// The Go 1.15 program of `tests/fixtures/go115` (npm's esbuild 0.8.0),
/// taken out of its package into `dir`.
fn go115_program(dir: &Path) -> PathBuf {
    let tgz = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/go115/esbuild-linux-64-0.8.0.tgz");
    let status = Command::new("tar")
        .args(["xzf"])
        .arg(&tgz)
        .arg("-C")
        .arg(dir)
        .arg("package/bin/esbuild")
        .status()
        .unwrap();
    assert!(status.success());
    dir.join("package/bin/esbuild")
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn a_go_1_15_table_is_read_through_its_records_and_tells_no_symbols() {
    let dir = tempfile::tempdir().unwrap();
    let exe = go115_program(dir.path());
    let file = std::fs::File::open(&exe).unwrap();
    let Found::Go(build) = gobuild::read(&file).unwrap() else {
        panic!("no build information");
    };
    assert_eq!(build.go_version, "go1.15");
    let mut wanted = gobuild::Wanted::default();
    wanted.ask("os", &["Open".into()]);
    let table = gobuild::packages(&file, &wanted)
        .unwrap()
        .expect("a function table");
    // The packages, against what Go's own reader names: each function
    // name's package, as the test reads it (its own parsing, not
    // tfmirror's), the compiler's names left out.
    let names = gosym_names(dir.path(), &exe);
    assert!(names.len() > 3000, "{}", names.len());
    assert_eq!(table.packages, function_packages(&names));
    assert!(table
        .packages
        .contains("github.com/evanw/esbuild/internal/js_parser"));
    // Its names are its functions' own: one inlined everywhere is in none,
    // so the symbols asked for are not told, even where found.
    assert!(!table.symbols.inlined_listed);
    assert!(table.symbols.by_package.contains_key("os"));
    // Matched against the real entries of the standard library: an entry
    // that lists symbols of a package the program holds is present by the
    // package, and says the symbols are not told; none is "not found" by
    // symbol.
    let entries =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories/govulncheck");
    let db = tfmirror::advisories::Database::new(
        tfmirror::advisories::import::read(&entries, 1).unwrap(),
    );
    let table = gobuild::packages(&file, &db.wanted).unwrap().unwrap();
    let packages: Vec<String> = table.packages.iter().cloned().collect();
    let found = tfmirror::advisories::findings(
        &db,
        &tfmirror::advisories::Subject {
            build: &build,
            release_version: None,
            packages: Some(&packages),
            symbols: Some(&table.symbols),
            goos: "linux",
            goarch: "amd64",
        },
    );
    let mut not_told = 0;
    for f in &found {
        match &f.presence {
            tfmirror::advisories::Presence::Present {
                symbols,
                symbols_not_told,
                ..
            } => {
                assert!(symbols.is_empty(), "{}: {symbols:?}", f.id);
                not_told += usize::from(!symbols_not_told.is_empty());
            }
            tfmirror::advisories::Presence::NotFound { packages } => {
                assert!(
                    packages.is_empty(),
                    "{}: found by symbol: {packages:?}",
                    f.id
                );
            }
            _ => {}
        }
    }
    assert!(not_told > 10, "{not_told} of {} not told", found.len());
}
