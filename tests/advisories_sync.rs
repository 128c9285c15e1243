//! A connected mirror fetches its advisory database from the URLs it is
//! configured with, through its upstream client (the origin's TLS with
//! the configured CA, the request forgery guard), on demand (`tfmirror
//! advisories sync`) and on the daemon's schedule; a broken answer leaves
//! the kept database as it was.

mod common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use common::daemon::{config_file, run_tfmirror};
use common::*;

/// The pinned real entries, GitHub's among them, as osv.dev lays out a zip.
fn osv_zip() -> Vec<u8> {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default();
    for dir in ["go-vulndb/ID", "github"] {
        let mut names: Vec<_> = std::fs::read_dir(fixtures.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        names.sort();
        for path in names {
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            zip.start_file(name, options).unwrap();
            zip.write_all(&std::fs::read(&path).unwrap()).unwrap();
        }
    }
    zip.finish().unwrap().into_inner()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connected_mirror_fetches_its_database_through_its_upstream_client() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.replace_file("all.zip", osv_zip());
    let url = origin.file_url("all.zip");
    let extra = format!("[advisories]\nurls = [\"{url}\"]\n");
    let config = config_file(&setup, &origin, &extra);
    let dir = setup.dir.path();
    let c = config.to_str().unwrap();

    let synced = run_tfmirror(dir, &["advisories", "sync", "--config", c]).await;
    assert!(synced.ok, "{}", synced.stderr);
    assert!(
        synced
            .stdout
            .contains(&format!("17 advisories from {url} (osv-zip)")),
        "{}",
        synced.stdout
    );
    assert_eq!(origin.hits("/files/all.zip"), 1);
    let before = std::fs::read(setup.cache_dir().join("advisories/current.json")).unwrap();

    // A truncated answer fails the sync by name; the kept database stays.
    origin.set_fault("/files/all.zip", Some(Fault::Truncate));
    let failed = run_tfmirror(dir, &["advisories", "sync", "--config", c]).await;
    assert!(!failed.ok);
    assert!(
        failed.stderr.contains(&format!("fetching {url}")),
        "{}",
        failed.stderr
    );
    // So does an answer that is no zip.
    origin.set_fault(
        "/files/all.zip",
        Some(Fault::Body(b"<html>a captive portal</html>".to_vec())),
    );
    let failed = run_tfmirror(dir, &["advisories", "sync", "--config", c]).await;
    assert!(!failed.ok);
    assert!(
        failed.stderr.contains("is not a readable zip archive"),
        "{}",
        failed.stderr
    );
    origin.set_fault("/files/all.zip", None);
    let after = std::fs::read(setup.cache_dir().join("advisories/current.json")).unwrap();
    assert_eq!(before, after, "a failed sync changed the kept database");

    // The request forgery guard applies: the test origin is on a loopback
    // address, which the mirror refuses unless told otherwise.
    let guarded = dir.join("guarded.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    assert!(text.contains("allow_private_addresses = true"));
    std::fs::write(
        &guarded,
        text.replace(
            "allow_private_addresses = true",
            "allow_private_addresses = false",
        ),
    )
    .unwrap();
    let refused = run_tfmirror(
        dir,
        &["advisories", "sync", "--config", guarded.to_str().unwrap()],
    )
    .await;
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("refusing to connect to localhost"),
        "{}",
        refused.stderr
    );

    // Offline, nothing is fetched.
    let offline = dir.join("offline.toml");
    std::fs::write(
        &offline,
        format!(
            "{}\n",
            std::fs::read_to_string(&config)
                .unwrap()
                .replace("[upstream]\n", "[upstream]\noffline = true\n")
        ),
    )
    .unwrap();
    let nothing = run_tfmirror(
        dir,
        &["advisories", "sync", "--config", offline.to_str().unwrap()],
    )
    .await;
    assert!(!nothing.ok);
    assert!(nothing.stderr.contains("offline"), "{}", nothing.stderr);

    // The daemon fetches on its schedule, the first time at its start.
    let hits = origin.hits("/files/all.zip");
    let mut daemon = setup.config(&origin, &[], &["registry.origin.test"]);
    daemon.cache.dir = dir.join("daemon-cache");
    daemon.advisories.urls = vec![url.parse().unwrap()];
    daemon.advisories.sync_interval = Duration::from_secs(3600);
    let m = RunningMirror::start(daemon).await;
    let client = Client::trusting(&m.ca_file);
    wait_until_answered(
        "the daemon to fetch the database",
        Duration::from_secs(60),
        || async {
            let text = client.get(&m.url("/metrics")).await.body;
            String::from_utf8_lossy(&text).contains("tfmirror_advisory_database_entries 17\n")
        },
    )
    .await;
    assert_eq!(origin.hits("/files/all.zip"), hits + 1);
    assert!(dir.join("daemon-cache/advisories/database.json").is_file());
}
