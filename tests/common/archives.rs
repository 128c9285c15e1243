//! Provider archives built at test time, SHA256SUMS documents over them,
//! and the fixtures kept in `tests/fixtures/`.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;

use sha2::{Digest, Sha256};

/// Builds a small provider zip archive whose content depends on `seed`.
pub fn build_archive(kind: &str, version: &str, seed: &str) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file(format!("terraform-provider-{kind}_v{version}"), opts)
            .unwrap();
        writeln!(
            w,
            "#!/bin/sh\necho provider {kind} {version} built for {seed}"
        )
        .unwrap();
        w.start_file("LICENSE", opts).unwrap();
        w.write_all(b"MPL-2.0\n").unwrap();
        w.finish().unwrap();
    }
    out.into_inner()
}

/// Builds a provider zip archive holding `size` bytes of incompressible data.
pub fn build_big_archive(kind: &str, version: &str, size: usize) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(size > u32::MAX as usize / 2);
        w.start_file(format!("terraform-provider-{kind}_v{version}"), opts)
            .unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ size as u64;
        let mut chunk = Vec::with_capacity(64 * 1024);
        let mut left = size;
        while left > 0 {
            chunk.clear();
            while chunk.len() < 64 * 1024 && chunk.len() < left {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.extend_from_slice(&x.to_le_bytes());
            }
            chunk.truncate(left.min(chunk.len()));
            w.write_all(&chunk).unwrap();
            left -= chunk.len();
        }
        w.finish().unwrap();
    }
    out.into_inner()
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    tfmirror::verify::hex(&Sha256::digest(data))
}

/// A SHA256SUMS document for archives.
pub fn sums_document(kind: &str, version: &str, archives: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    archives
        .iter()
        .map(|(p, bytes)| {
            format!(
                "{}  terraform-provider-{kind}_{version}_{p}.zip\n",
                sha256_hex(bytes)
            )
        })
        .collect::<Vec<_>>()
        .concat()
        .into_bytes()
}

/// A file of `tests/fixtures/h1`: an archive and the hashes a real
/// Terraform CLI recorded for it.
pub fn h1_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/h1")
            .join(name),
    )
    .expect("tests/fixtures/h1 is part of the repository")
}

/// A file of `tests/fixtures/gnupg`.
pub fn gnupg_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gnupg")
            .join(name),
    )
    .unwrap()
}
