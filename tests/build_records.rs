//! A build record whose packages an earlier reading of function tables
//! made (before packages whose path starts with `go.` were read) is read
//! again from its archive: by `tfmirror bom` (the mirror's own lookup,
//! which the pages and the advisory summaries use too) and by `tfmirror
//! verify`. The record is made by a real `sync` of a real Go program, then
//! put back as an earlier build wrote it: no `packages_reader`, and a
//! package missing from its list. So is a record that looked for other
//! symbols than the advisory database held names: one made before any
//! database was imported, once the real entries naming symbols of `os`
//! are.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::daemon::{config_file, run_ok, sync_manifest};
use common::go::{archive_of, hello_program, publish_archives};
use common::*;

/// The record's first executable's packages, and its reading.
fn packages_and_reader(record: &Path) -> (Vec<String>, Option<u64>) {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    let packages = doc["executables"][0]["packages"]
        .as_array()
        .map(|list| {
            list.iter()
                .map(|p| p.as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default();
    (packages, doc["packages_reader"].as_u64())
}

/// Rewrites the record as a build before `packages_reader` wrote it,
/// without `fmt` among its packages.
fn as_an_earlier_reading(record: &Path) {
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    doc.as_object_mut().unwrap().remove("packages_reader");
    let packages = doc["executables"][0]["packages"].as_array_mut().unwrap();
    packages.retain(|p| p != "fmt");
    std::fs::write(record, doc.to_string()).unwrap();
    assert_eq!(packages_and_reader(record).1, None);
}

#[cfg_attr(
    tfmirror_no_go,
    ignore = "needs go (Debian's golang-go); scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_of_an_earlier_reading_is_read_again() {
    let setup = Setup::new();
    let home = setup.dir.path();
    let exe = hello_program(home);
    let origin = FakeOrigin::start(&setup.ca).await;
    let archives = BTreeMap::from([(
        "linux_amd64".to_string(),
        archive_of("hello", "1.0.0", &exe),
    )]);
    publish_archives(&origin, &Signer::new("acme"), ("hello", "1.0.0"), &archives);
    let config = config_file(&setup, &origin, "");
    let config = config.to_str().unwrap();
    let manifest = sync_manifest(home, "registry.origin.test/acme/hello", "1.0.0");
    let manifest = manifest.to_str().unwrap();
    run_ok(home, &["sync", "--config", config, "--manifest", manifest]).await;
    let record = setup
        .cache_dir()
        .join("builds/registry.origin.test/acme/hello/1.0.0/linux_amd64.json");
    let (packages, reader) = packages_and_reader(&record);
    assert_eq!(reader, Some(3));
    assert!(packages.iter().any(|p| p == "fmt"), "{packages:?}");
    assert_eq!(looked_for(&record), Vec::<String>::new());

    as_an_earlier_reading(&record);
    let bom = home.join("bom.json");
    let bom_args = [
        "bom",
        "--config",
        config,
        "--platform",
        "linux_amd64",
        "--output",
        bom.to_str().unwrap(),
        "registry.origin.test/acme/hello",
        "1.0.0",
    ];
    run_ok(home, &bom_args).await;
    assert_eq!(packages_and_reader(&record), (packages.clone(), Some(3)));

    as_an_earlier_reading(&record);
    run_ok(home, &["verify", "--config", config]).await;
    assert_eq!(packages_and_reader(&record), (packages.clone(), Some(3)));

    // A database that names symbols of `os`, which the program holds: the
    // record looked for none, and is read again, by `bom` and by `verify`.
    let entries =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories/govulncheck");
    run_ok(
        home,
        &[
            "advisories",
            "import",
            "--config",
            config,
            entries.to_str().unwrap(),
        ],
    )
    .await;
    assert!(packages.iter().any(|p| p == "os"), "{packages:?}");
    assert!(!looked_for(&record).contains(&"os".to_string()));
    run_ok(home, &bom_args).await;
    assert!(
        looked_for(&record).contains(&"os".to_string()),
        "{:?}",
        looked_for(&record)
    );
    let mut doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    doc["executables"][0]["symbols"]["by_package"] = serde_json::json!({});
    std::fs::write(&record, doc.to_string()).unwrap();
    run_ok(home, &["verify", "--config", config]).await;
    assert!(looked_for(&record).contains(&"os".to_string()));
}

/// The packages the record's first executable looked for symbols of.
fn looked_for(record: &Path) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(record).unwrap()).unwrap();
    doc["executables"][0]["symbols"]["by_package"]
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default()
}
