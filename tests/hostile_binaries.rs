//! A provider whose executable is crafted to hurt the reader of its Go
//! build information costs a clear record, never the mirror. The crafted
//! binaries start from a real program that Debian's Go builds, with the
//! function table's section header and the table's own header changed as
//! an attacker who publishes a provider would change them: a section that
//! claims a terabyte, a table that claims more functions than it holds, a
//! section past the end of the file, offsets out of order. Each is read to
//! an error that says what the binary claimed, while its build
//! information (which `go version -m` still reads) is kept; and `sync`,
//! `verify` and `bom` run to their end on such a provider under a memory
//! limit far below what the claims would cost.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;

use common::daemon::{config_file, sync_manifest};
use common::go::{archive_of, hello_program, publish_archives};
use common::*;
use tfmirror::gobuild;

/// The address space each command is run under: a small multiple of what
/// `sync` needs on a real provider, and a thousandth of the terabyte the
/// crafted section claims.
const MEMORY_LIMIT: u64 = 3 << 30;

/// A little-endian word of `N` bytes at `at`.
fn word<const N: usize>(bytes: &[u8], at: usize) -> u64 {
    let mut w = [0u8; 8];
    w[..N].copy_from_slice(&bytes[at..at + N]);
    u64::from_le_bytes(w)
}

/// Where the section header of `.gopclntab` is in a 64-bit little-endian
/// ELF file, read from the file header as the ELF specification lays it
/// out (an oracle apart from the reader's own parser).
fn pclntab_header(elf: &[u8]) -> usize {
    assert_eq!(&elf[..6], b"\x7fELF\x02\x01", "64-bit little-endian ELF");
    let shoff = usize::try_from(word::<8>(elf, 0x28)).unwrap();
    let shentsize = usize::try_from(word::<2>(elf, 0x3a)).unwrap();
    let shnum = usize::try_from(word::<2>(elf, 0x3c)).unwrap();
    let shstrndx = usize::try_from(word::<2>(elf, 0x3e)).unwrap();
    let header = |i: usize| shoff + i * shentsize;
    let names = usize::try_from(word::<8>(elf, header(shstrndx) + 0x18)).unwrap();
    (0..shnum)
        .map(header)
        .find(|&h| {
            let name = names + usize::try_from(word::<4>(elf, h)).unwrap();
            elf[name..].starts_with(b".gopclntab\0")
        })
        .expect("a .gopclntab section")
}

/// The program's bytes with `change` made to them; `change` is given the
/// offsets of the section header's `sh_offset` and `sh_size` fields and of
/// the table itself.
fn crafted(exe: &Path, change: impl FnOnce(&mut Vec<u8>, usize, usize, usize)) -> Vec<u8> {
    let mut bytes = std::fs::read(exe).unwrap();
    let header = pclntab_header(&bytes);
    let table = usize::try_from(word::<8>(&bytes, header + 0x18)).unwrap();
    change(&mut bytes, header + 0x18, header + 0x20, table);
    bytes
}

fn put(bytes: &mut [u8], at: usize, value: u64) {
    bytes[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

/// The Go 1.2 layout's magic and a count of `0xf_ffff_ffff` functions at
/// the table's start.
fn old_layout_claiming_functions(bytes: &mut [u8], table: usize) {
    bytes[table..table + 4].copy_from_slice(&0xffff_fffb_u32.to_le_bytes());
    put(bytes, table + 8, 0xf_ffff_ffff);
}

/// A section that claims a terabyte, holding a table that claims 2^36
/// functions: the binary an attacker would publish.
fn terabyte(exe: &Path) -> Vec<u8> {
    crafted(exe, |bytes, _, size, table| {
        put(bytes, size, 1 << 40);
        old_layout_claiming_functions(bytes, table);
    })
}

/// What the reader says of `bytes`' packages (written to a file in `dir`).
fn packages_of(dir: &Path, bytes: &[u8]) -> Result<Option<usize>, String> {
    let path = dir.join("crafted");
    std::fs::write(&path, bytes).unwrap();
    let file = std::fs::File::open(&path).unwrap();
    // The build information is read as before: the block is untouched.
    assert!(matches!(gobuild::read(&file), Ok(gobuild::Found::Go(_))));
    gobuild::packages(&file, &gobuild::Wanted::default())
        .map(|found| found.map(|table| table.packages.len()))
        .map_err(|e| e.to_string())
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[test]
fn a_function_table_that_claims_more_than_the_file_holds_is_refused_by_its_claim() {
    let dir = tempfile::tempdir().unwrap();
    let exe = hello_program(dir.path());
    let whole = std::fs::read(&exe).unwrap();
    let file_len = whole.len();
    // The untouched program reads, so each refusal below is the change's.
    let held = packages_of(dir.path(), &whole).unwrap().unwrap();
    assert!(held > 10, "{held} packages");

    let e = packages_of(dir.path(), &terabyte(&exe)).unwrap_err();
    assert!(e.contains("claims 1099511627776 bytes"), "{e}");

    let many = crafted(&exe, |bytes, _, _, table| {
        old_layout_claiming_functions(bytes, table);
    });
    let e = packages_of(dir.path(), &many).unwrap_err();
    assert!(
        e.contains("function table claims 68719476735 entries, more than its"),
        "{e}"
    );

    let past_the_end = crafted(&exe, |bytes, offset, _, _| {
        put(bytes, offset, file_len as u64 + 4096);
    });
    let e = packages_of(dir.path(), &past_the_end).unwrap_err();
    assert!(e.contains("past the end of the"), "{e}");

    let wrapping = crafted(&exe, |bytes, offset, _, _| {
        put(bytes, offset, u64::MAX - 8);
    });
    let e = packages_of(dir.path(), &wrapping).unwrap_err();
    assert!(e.contains("past the end of the"), "{e}");

    // Go 1.18's layout: the names block's offset (the header's fourth
    // word) past the table's end.
    let out_of_order = crafted(&exe, |bytes, _, _, table| {
        put(bytes, table + 8 + 3 * 8, u64::MAX / 2);
    });
    let e = packages_of(dir.path(), &out_of_order).unwrap_err();
    assert!(e.contains("out of order or outside"), "{e}");
}

/// Runs `tfmirror ARGS` in `home` under [`MEMORY_LIMIT`].
async fn limited(home: &Path, args: &[&str]) -> Output {
    common::daemon::limited(home, MEMORY_LIMIT, args).await
}

fn succeeded(what: &str, out: &Output) {
    assert!(
        out.status.success(),
        "{what} ended with {}:\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crafted_provider_costs_a_clear_record_not_the_mirror() {
    let setup = Setup::new();
    let home = setup.dir.path();
    let exe = hello_program(home);
    let crafted = home.join("terraform-provider-hostile");
    std::fs::write(&crafted, terabyte(&exe)).unwrap();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = BTreeMap::from([(
        "linux_amd64".to_string(),
        archive_of("hostile", "1.0.0", &crafted),
    )]);
    publish_archives(&origin, &signer, ("hostile", "1.0.0"), &archives);
    let config = config_file(&setup, &origin, "");
    let manifest = sync_manifest(home, "registry.origin.test/acme/hostile", "1.0.0");
    let config = config.to_str().unwrap().to_owned();
    let manifest = manifest.to_str().unwrap();
    let out = limited(home, &["sync", "--config", &config, "--manifest", manifest]).await;
    succeeded("sync", &out);

    let record_path = setup
        .cache_dir()
        .join("builds/registry.origin.test/acme/hostile/1.0.0/linux_amd64.json");
    let record = || -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(&record_path).unwrap()).unwrap()
    };
    let exe_record = &record()["executables"][0];
    assert_eq!(exe_record["state"], "go", "{exe_record}");
    let why = exe_record["packages_error"].as_str().unwrap_or_default();
    assert!(why.contains("claims 1099511627776 bytes"), "{exe_record}");
    assert!(exe_record.get("packages").is_none(), "{exe_record}");

    // verify reads a missing record again from the archive, and bom reads
    // the record: both run to their end under the same limit.
    std::fs::remove_file(&record_path).unwrap();
    succeeded(
        "verify",
        &limited(home, &["verify", "--config", &config]).await,
    );
    assert_eq!(record()["executables"][0]["packages_error"], why);
    let bom = home.join("bom.json");
    let out = limited(
        home,
        &[
            "bom",
            "--config",
            &config,
            "--platform",
            "linux_amd64",
            "--output",
            bom.to_str().unwrap(),
            "registry.origin.test/acme/hostile",
            "1.0.0",
        ],
    )
    .await;
    succeeded("bom", &out);
    assert!(bom.is_file());
}
