//! Tests of `tree`.

use super::*;

fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    for (name, body) in files {
        let path = dir.path().join(name);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, body).unwrap();
    }
    dir
}

fn packed(dir: &Path) -> (Packed, Vec<u8>) {
    let out = tempfile::NamedTempFile::new().unwrap();
    let p = pack(dir, &mut out.reopen().unwrap(), 1 << 20).unwrap();
    (p, fs::read(out.path()).unwrap())
}

#[test]
fn the_same_tree_packs_to_the_same_bytes() {
    let a = tree(&[
        ("main.tf", "a"),
        ("modules/x/main.tf", "b"),
        (".git/HEAD", "x"),
    ]);
    let b = tree(&[("modules/x/main.tf", "b"), ("main.tf", "a")]);
    // Different modification times on disk make no difference.
    File::options()
        .write(true)
        .open(b.path().join("main.tf"))
        .unwrap()
        .set_modified(std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000))
        .unwrap();
    let (pa, bytes_a) = packed(a.path());
    let (pb, bytes_b) = packed(b.path());
    assert_eq!(bytes_a, bytes_b);
    assert_eq!(pa, pb);
    let c = tree(&[("main.tf", "a"), ("modules/x/main.tf", "c")]);
    assert_ne!(packed(c.path()).0.h1, pa.h1);

    // What was packed unpacks to the same tree, without `.git`.
    let archive = tempfile::NamedTempFile::new().unwrap();
    fs::write(archive.path(), &bytes_a).unwrap();
    let out = tempfile::tempdir().unwrap();
    unpack(
        File::open(archive.path()).unwrap(),
        ArchiveFormat::TarGz,
        out.path(),
        1 << 20,
    )
    .unwrap();
    assert_eq!(
        fs::read_to_string(out.path().join("modules/x/main.tf")).unwrap(),
        "b"
    );
    assert!(!out.path().join(".git").exists());
    assert_eq!(packed(out.path()).0, pa);

    // A tree with more content than allowed is refused.
    let mut sink = tempfile::tempfile().unwrap();
    assert!(matches!(
        pack(a.path(), &mut sink, 1),
        Err(TreeError::TooLarge(_))
    ));
}

/// A tar whose single entry has the raw name `name` (written past the
/// tar crate's own checks) and type `kind`.
fn raw_tar(name: &str, kind: tar::EntryType, link: Option<&str>, body: &[u8]) -> Vec<u8> {
    let mut header = tar::Header::new_gnu();
    header.set_entry_type(kind);
    header.set_size(body.len() as u64);
    header.set_mode(0o644);
    {
        let gnu = header.as_gnu_mut().unwrap();
        gnu.name[..name.len()].copy_from_slice(name.as_bytes());
        if let Some(link) = link {
            gnu.linkname[..link.len()].copy_from_slice(link.as_bytes());
        }
    }
    header.set_cksum();
    let mut out = header.as_bytes().to_vec();
    out.extend_from_slice(body);
    out.resize(out.len().div_ceil(512) * 512, 0);
    out.extend_from_slice(&[0; 1024]);
    out
}

fn try_unpack(
    bytes: &[u8],
    format: ArchiveFormat,
    cap: u64,
) -> (Result<(), TreeError>, tempfile::TempDir) {
    let archive = tempfile::NamedTempFile::new().unwrap();
    fs::write(archive.path(), bytes).unwrap();
    let out = tempfile::tempdir().unwrap();
    let r = unpack(
        File::open(archive.path()).unwrap(),
        format,
        &out.path().join("t").tap_mkdir(),
        cap,
    );
    (r, out)
}

trait TapMkdir {
    fn tap_mkdir(self) -> PathBuf;
}
impl TapMkdir for PathBuf {
    fn tap_mkdir(self) -> PathBuf {
        fs::create_dir_all(&self).unwrap();
        self
    }
}

#[test]
fn hostile_tar_entries_are_refused() {
    for (name, kind, link) in [
        ("../evil.tf", tar::EntryType::Regular, None),
        ("a/../../evil.tf", tar::EntryType::Regular, None),
        ("/etc/evil.tf", tar::EntryType::Regular, None),
        ("up", tar::EntryType::Symlink, Some("../../etc")),
        ("abs", tar::EntryType::Symlink, Some("/etc/passwd")),
        ("hard", tar::EntryType::Link, Some("/etc/passwd")),
        ("dev", tar::EntryType::Char, None),
    ] {
        let (r, out) = try_unpack(
            &raw_tar(name, kind, link, b"x"),
            ArchiveFormat::Tar,
            1 << 20,
        );
        assert!(matches!(r, Err(TreeError::Refused(_))), "{name}: {r:?}");
        assert!(!out.path().join("evil.tf").exists());
        assert!(!out.path().join("etc").exists());
    }
    let (r, _) = try_unpack(
        &raw_tar("ok", tar::EntryType::Symlink, Some("sub/../main.tf"), b""),
        ArchiveFormat::Tar,
        1 << 20,
    );
    r.unwrap();
}

#[test]
fn a_link_cannot_carry_a_later_entry_outside() {
    let mut bytes = raw_tar("l", tar::EntryType::Symlink, Some("."), b"");
    bytes.truncate(bytes.len() - 1024);
    bytes.extend(raw_tar("l/evil.tf", tar::EntryType::Regular, None, b"x"));
    let (r, _) = try_unpack(&bytes, ArchiveFormat::Tar, 1 << 20);
    assert!(matches!(r, Err(TreeError::Refused(_))), "{r:?}");
}

#[test]
fn bombs_stop_at_the_cap() {
    // 64 MiB of zeros, a few KiB compressed; the header tells the truth.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    {
        let mut b = tar::Builder::new(&mut gz);
        let mut h = tar::Header::new_gnu();
        h.set_size(64 << 20);
        h.set_mode(0o644);
        b.append_data(&mut h, "zeros", io::repeat(0).take(64 << 20))
            .unwrap();
        b.finish().unwrap();
    }
    let bytes = gz.finish().unwrap();
    assert!(bytes.len() < 1 << 20);
    let (r, _) = try_unpack(&bytes, ArchiveFormat::TarGz, 1 << 20);
    assert!(matches!(r, Err(TreeError::TooLarge(_))), "{r:?}");

    let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    zip.start_file("zeros", zip::write::SimpleFileOptions::default())
        .unwrap();
    io::copy(&mut io::repeat(0).take(8 << 20), &mut zip).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let (r, _) = try_unpack(&bytes, ArchiveFormat::Zip, 1 << 20);
    assert!(matches!(r, Err(TreeError::TooLarge(_))), "{r:?}");
}

#[test]
fn hostile_zip_entries_are_refused() {
    for name in ["../evil.tf", "/abs/evil.tf"] {
        let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        zip.start_file(name, zip::write::SimpleFileOptions::default())
            .unwrap();
        zip.write_all(b"x").unwrap();
        let bytes = zip.finish().unwrap().into_inner();
        let (r, _) = try_unpack(&bytes, ArchiveFormat::Zip, 1 << 20);
        assert!(matches!(r, Err(TreeError::Refused(_))), "{name}: {r:?}");
    }
    let mut zip = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    zip.add_symlink("up", "../../etc", zip::write::SimpleFileOptions::default())
        .unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    let (r, _) = try_unpack(&bytes, ArchiveFormat::Zip, 1 << 20);
    assert!(matches!(r, Err(TreeError::Refused(_))), "{r:?}");
}
