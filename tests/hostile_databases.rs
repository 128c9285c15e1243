//! An advisory database crafted to exhaust the mirror costs a bounded
//! import: entries whose `details` repeat one letter for megabytes (a
//! zip of under a megabyte that unpacks to hundreds), read by the real
//! command under a memory limit far below what keeping them whole would
//! cost, are kept with their details cut and say so; and a database
//! heavier than a database may be is refused whole, the one kept before
//! staying.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};

use common::daemon::limited;

/// The address space `advisories import` of the crafted entries runs
/// under: before entries were bounded, the 150 entries below took more
/// than twice this in resident memory alone (618 MiB with the details
/// cut but their strings' capacity kept; 65 MiB as it is).
const MEMORY_LIMIT: u64 = 256 << 20;

/// The address space of the import that passes the database's bound: it
/// holds up to the bound's 256 MiB before it refuses.
const BOUND_LIMIT: u64 = 1 << 30;

/// An OSV entry of the Go database's shape whose details are `details`
/// bytes of one letter.
fn entry(i: usize, details: usize) -> Vec<u8> {
    serde_json::to_vec(&serde_json::json!({
        "schema_version": "1.3.1",
        "id": format!("GO-2099-{i:04}"),
        "modified": "2024-01-01T00:00:00Z",
        "published": "2024-01-01T00:00:00Z",
        "summary": "A crafted entry",
        "details": "a".repeat(details),
        "affected": [{
            "package": {"name": "example.com/crafted", "ecosystem": "Go"},
            "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}, {"fixed": "1.0.0"}]}],
            "ecosystem_specific": {"imports": [{"path": "example.com/crafted"}]}
        }],
        "database_specific": {"url": format!("https://pkg.go.dev/vuln/GO-2099-{i:04}")}
    }))
    .unwrap()
}

/// A Go database zip of `count` such entries.
fn crafted_zip(dir: &Path, count: usize, details: usize) -> PathBuf {
    let path = dir.join(format!("crafted-{count}.zip"));
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for i in 0..count {
        zip.start_file(format!("ID/GO-2099-{i:04}.json"), options)
            .unwrap();
        zip.write_all(&entry(i, details)).unwrap();
    }
    zip.finish().unwrap();
    path
}

fn config(home: &Path) -> PathBuf {
    let path = home.join("tfmirror.toml");
    std::fs::write(
        &path,
        format!(
            "[server]\ndata_dir = \"{}\"\n[cache]\ndir = \"{}\"\n",
            home.join("data").display(),
            home.join("cache").display()
        ),
    )
    .unwrap();
    path
}

fn said(out: &std::process::Output) -> String {
    format!(
        "{}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crafted_database_is_cut_and_bounded_not_kept_whole() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let config = config(home);
    let config = config.to_str().unwrap();
    // 150 entries of 3.9 MB each: 585 MB of details.
    let zip = crafted_zip(home, 150, 3_900_000);
    assert!(std::fs::metadata(&zip).unwrap().len() < 4 << 20);
    let out = limited(
        home,
        MEMORY_LIMIT,
        &[
            "advisories",
            "import",
            "--config",
            config,
            zip.to_str().unwrap(),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", said(&out));
    assert!(said(&out).contains("150 advisories"), "{}", said(&out));
    // What is kept is the cut text, not the 780 MB.
    let kept: u64 = walk(&home.join("cache/advisories"))
        .iter()
        .map(|f| std::fs::metadata(f).unwrap().len())
        .sum();
    assert!(kept < 20 << 20, "{kept} bytes kept");
    // The advisory's page says its details were cut.
    let shown = limited(
        home,
        MEMORY_LIMIT,
        &["advisories", "status", "--config", config],
    )
    .await;
    assert!(shown.status.success(), "{}", said(&shown));
    let doc = walk(&home.join("cache/advisories"))
        .into_iter()
        .find(|f| f.to_string_lossy().contains("database"))
        .expect("the database document");
    let stored: serde_json::Value = serde_json::from_slice(&std::fs::read(doc).unwrap()).unwrap();
    let first = &stored["advisories"][0];
    assert_eq!(first["details_cut"], 3_900_000, "{}", first["id"]);
    assert_eq!(first["details"].as_str().unwrap().len(), 32 << 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_heavier_than_the_bound_is_refused_and_the_kept_one_stays() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let config = config(home);
    let config = config.to_str().unwrap();
    let small = crafted_zip(home, 3, 100);
    let out = limited(
        home,
        BOUND_LIMIT,
        &[
            "advisories",
            "import",
            "--config",
            config,
            small.to_str().unwrap(),
        ],
    )
    .await;
    assert!(out.status.success(), "{}", said(&out));
    // Aliases are what matching reads and are never cut: 1,000 of 2 KB
    // an entry (2 MB), over 140 entries, passes the 256 MiB a database
    // may hold.
    let path = home.join("heavy.zip");
    let mut zip = zip::ZipWriter::new(std::fs::File::create(&path).unwrap());
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    for i in 0..140 {
        let mut e: serde_json::Value = serde_json::from_slice(&entry(i, 10)).unwrap();
        e["aliases"] = (0..1000)
            .map(|j| format!("CVE-{i}-{j}-{}", "9".repeat(2000)))
            .collect::<Vec<_>>()
            .into();
        zip.start_file(format!("ID/GO-2099-{i:04}.json"), options)
            .unwrap();
        zip.write_all(&serde_json::to_vec(&e).unwrap()).unwrap();
    }
    zip.finish().unwrap();
    let out = limited(
        home,
        BOUND_LIMIT,
        &[
            "advisories",
            "import",
            "--config",
            config,
            path.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!out.status.success(), "{}", said(&out));
    assert!(
        said(&out).contains(
            "its advisories weigh more than the 268435456 bytes a database may hold kept"
        ),
        "{}",
        said(&out)
    );
    let status = limited(
        home,
        BOUND_LIMIT,
        &["advisories", "status", "--config", config],
    )
    .await;
    assert!(said(&status).contains("3 advisories"), "{}", said(&status));
}

/// Every file below `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            out.extend(walk(&path));
        } else {
            out.push(path);
        }
    }
    out
}
