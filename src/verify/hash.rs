//! Terraform's package hashes.
//!
//! - `zh:` is the lowercase hex SHA-256 of the zip file itself, the value the
//!   origin's SHA256SUMS records.
//! - `h1:` is Terraform's hash of a package's contents (the Go modules
//!   "dirhash" version 1 scheme): every name in the zip's central directory,
//!   directory entries included, sorted bytewise; for each, the SHA-256 of its
//!   decompressed content as a line `<hex>  <name>\n`; the SHA-256 of all
//!   lines, written as `h1:` and standard padded base64.

use std::collections::BTreeMap;
use std::io::{Read, Seek};

use base64::Engine;

/// SHA-256, as tfmirror computes it everywhere: *ring*'s implementation,
/// which uses the CPU's SHA extensions where it has them and its vector
/// units where it does not (on such a CPU, 1.7 to 2 times the speed of the
/// portable `sha2` crate; see BENCHMARKS.md). Every archive byte is hashed
/// at least twice on its way in, so this is most of the CPU time of a cold
/// download.
#[derive(Clone)]
pub struct Sha256(ring::digest::Context);

impl Sha256 {
    /// A new hash of nothing yet.
    pub fn new() -> Sha256 {
        Sha256(ring::digest::Context::new(&ring::digest::SHA256))
    }

    /// Adds bytes to the hash.
    pub fn update(&mut self, data: &[u8]) {
        self.0.update(data);
    }

    /// The hash of everything added.
    pub fn finalize(self) -> [u8; 32] {
        self.0
            .finish()
            .as_ref()
            .try_into()
            .expect("SHA-256 is 32 bytes")
    }

    /// The hash of `data`.
    pub fn digest(data: &[u8]) -> [u8; 32] {
        let mut hasher = Sha256::new();
        hasher.update(data);
        hasher.finalize()
    }
}

impl Default for Sha256 {
    fn default() -> Sha256 {
        Sha256::new()
    }
}

impl std::fmt::Debug for Sha256 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sha256")
    }
}

/// Lowercase hex of a byte string.
pub fn hex(bytes: &[u8]) -> String {
    hex::encode(bytes)
}

/// The SHA-256 of a file's bytes, as lowercase hex.
pub fn sha256_of_file(path: &std::path::Path) -> std::io::Result<String> {
    sha256_of_reader(&mut std::fs::File::open(path)?)
}

/// The SHA-256 of everything `reader` gives, as lowercase hex.
pub fn sha256_of_reader(reader: &mut impl std::io::Read) -> std::io::Result<String> {
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        let n = reader.read(&mut buf)?;
        if n == 0 {
            break;
        }
        hasher.update(&buf[..n]);
    }
    Ok(hex(&hasher.finalize()))
}

/// Formats a hex SHA-256 of an archive as a `zh:` hash.
pub fn zh(sha256_hex: &str) -> String {
    format!("zh:{sha256_hex}")
}

/// Why an `h1:` hash could not be computed.
#[derive(Debug, thiserror::Error)]
pub enum HashError {
    /// The file is not a readable zip archive.
    #[error("not a valid zip archive: {0}")]
    Zip(#[from] zip::result::ZipError),
    /// Reading an entry failed.
    #[error("reading the archive failed: {0}")]
    Io(#[from] std::io::Error),
    /// An entry name holds a newline, which the scheme cannot express.
    #[error("the archive holds a file name with a newline")]
    NewlineInName,
}

/// Computes the `h1:` hash of a zip archive.
///
/// Entries are decompressed one at a time in a streaming fashion, so memory use
/// does not grow with the archive. When a name occurs twice, the last entry of
/// that name stands for both, as in Terraform's own implementation.
pub fn h1_of_zip<R: Read + Seek>(reader: R) -> Result<String, HashError> {
    let mut archive = zip::ZipArchive::new(reader)?;
    // Names in central-directory order, and for each name the index of its
    // last entry.
    let mut names: Vec<Vec<u8>> = Vec::with_capacity(archive.len());
    let mut last_index: BTreeMap<Vec<u8>, usize> = BTreeMap::new();
    for i in 0..archive.len() {
        let entry = archive.by_index_raw(i)?;
        let name = entry.name_raw().to_vec();
        if name.contains(&b'\n') {
            return Err(HashError::NewlineInName);
        }
        last_index.insert(name.clone(), i);
        names.push(name);
    }
    names.sort();
    let mut summary = H1::default();
    let mut buf = vec![0u8; 64 * 1024];
    for name in &names {
        let mut entry = archive.by_index(last_index[name])?;
        let mut file_hash = Sha256::new();
        loop {
            let n = entry.read(&mut buf)?;
            if n == 0 {
                break;
            }
            file_hash.update(&buf[..n]);
        }
        summary.add(&hex(&file_hash.finalize()), name);
    }
    Ok(summary.finish())
}

/// The `h1:` scheme's running summary: one line per name, added in
/// bytewise name order by the caller.
#[derive(Default)]
pub struct H1(Sha256);

impl H1 {
    /// Adds the line of one name and the hex SHA-256 of its content.
    pub fn add(&mut self, sha256_hex: &str, name: &[u8]) {
        self.0.update(sha256_hex.as_bytes());
        self.0.update(b"  ");
        self.0.update(name);
        self.0.update(b"\n");
    }

    /// The hash, as `h1:` and padded base64.
    pub fn finish(self) -> String {
        format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(self.0.finalize())
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Cursor, Write};

    fn fixture() -> Vec<u8> {
        let path = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/h1/terraform-provider-widget_1.1.0_linux_amd64.zip"
        );
        std::fs::read(path).expect("tests/fixtures/h1 is part of the repository")
    }

    #[test]
    fn matches_the_hashes_terraform_recorded() {
        let zip = fixture();
        assert_eq!(
            h1_of_zip(Cursor::new(&zip)).unwrap(),
            "h1:sOTXWnXSxY+hmLoQsMc+YUZZUMEIs+hKVrGB0OLMNVo="
        );
        assert_eq!(
            zh(&hex(&Sha256::digest(&zip))),
            "zh:414800b435b90218a173cdd3eb44fb46a8408d6c20c0d5216c6c53b5a8b36387"
        );
    }

    /// Builds the expected hash by hand from the scheme's definition.
    fn expected(entries: &[(&str, &[u8])]) -> String {
        let mut lines: Vec<String> = entries
            .iter()
            .map(|(n, c)| format!("{}  {}\n", hex(&Sha256::digest(c)), n))
            .collect();
        lines.sort_by(|a, b| a[66..].cmp(&b[66..]));
        let digest = Sha256::digest(lines.concat().as_bytes());
        format!(
            "h1:{}",
            base64::engine::general_purpose::STANDARD.encode(digest)
        )
    }

    #[test]
    fn directory_entries_count_as_empty_files_and_order_is_bytewise() {
        let mut out = Cursor::new(Vec::new());
        {
            let mut w = zip::ZipWriter::new(&mut out);
            let opts = zip::write::SimpleFileOptions::default();
            w.add_directory("docs/", opts).unwrap();
            w.start_file("docs/b.txt", opts).unwrap();
            w.write_all(b"bee").unwrap();
            w.start_file(
                "Z-upper",
                opts.compression_method(zip::CompressionMethod::Stored),
            )
            .unwrap();
            w.write_all(b"zed").unwrap();
            w.start_file("a", opts).unwrap();
            w.write_all(&vec![7u8; 200_000]).unwrap();
            w.finish().unwrap();
        }
        let big = vec![7u8; 200_000];
        let want = expected(&[
            ("docs/", b""),
            ("docs/b.txt", b"bee"),
            ("Z-upper", b"zed"),
            ("a", &big),
        ]);
        assert_eq!(h1_of_zip(Cursor::new(out.into_inner())).unwrap(), want);
    }

    #[test]
    fn rejects_what_is_not_a_zip() {
        assert!(matches!(
            h1_of_zip(Cursor::new(b"PK\x03\x04 not really".to_vec())),
            Err(HashError::Zip(_))
        ));
    }
}
