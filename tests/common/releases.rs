//! CLI releases as releases.hashicorp.com publishes them, on the fake
//! origin's `/files/`: zips, their SHA256SUMS, its signatures and the
//! product index.

use std::collections::BTreeMap;
use std::io::Write as _;

use super::{sha256_hex, FakeOrigin, Signer};

/// A zip holding one file.
pub fn zip_of(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .unix_permissions(0o755)
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file(name, opts).unwrap();
        w.write_all(bytes).unwrap();
        w.finish().unwrap();
    }
    out.into_inner()
}

/// The lines of a SHA256SUMS document over `files`.
pub fn sums_of(files: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    let mut out = String::new();
    for (name, bytes) in files {
        out.push_str(&sha256_hex(bytes));
        out.push_str("  ");
        out.push_str(name);
        out.push('\n');
    }
    out.into_bytes()
}

/// Publishes a Terraform release on the origin's `/files/`: its zips, the
/// SHA256SUMS over them, and that signed by `signer` under both names
/// releases.hashicorp.com uses. Returns the published files.
pub fn publish_terraform(
    origin: &FakeOrigin,
    signer: &Signer,
    version: &str,
    zips: &[(&str, Vec<u8>)],
) -> BTreeMap<String, Vec<u8>> {
    let mut files: BTreeMap<String, Vec<u8>> = zips
        .iter()
        .map(|(platform, bytes)| (format!("terraform_{version}_{platform}.zip"), bytes.clone()))
        .collect();
    let sums_name = format!("terraform_{version}_SHA256SUMS");
    let sums = sums_of(&files);
    let sig = signer.sign_binary(&sums);
    files.insert(format!("{sums_name}.sig"), sig.clone());
    files.insert(format!("{sums_name}.72D7468F.sig"), sig);
    files.insert(sums_name, sums);
    for (name, bytes) in &files {
        origin.replace_file(name, bytes.clone());
    }
    files
}

/// HashiCorp's product index as releases.hashicorp.com shapes it, with
/// what a Go decoder passes over (nulls, extra fields, a version that is
/// not semantic versioning).
pub fn publish_terraform_index(origin: &FakeOrigin, versions: &[&str]) {
    let mut map = serde_json::Map::new();
    for v in versions {
        map.insert(
            (*v).to_string(),
            serde_json::json!({
                "name": "terraform", "version": v, "shasums": format!("terraform_{v}_SHA256SUMS"),
                "shasums_signature": null, "builds": null, "timestamp_created": "2021-07-28T00:00:00Z",
            }),
        );
    }
    map.insert("nightly".into(), serde_json::json!({}));
    let doc =
        serde_json::json!({ "name": "terraform", "versions": map, "url_source_repository": null });
    origin.replace_file("index.json", serde_json::to_vec(&doc).unwrap());
}
