//! OpenTofu's `packages` field in the registry facade's download answer:
//! every platform's `zh:`, its `h1:` when known, and its exact size, in the
//! shape OpenTofu's registry documents; learned from an origin that sends
//! the field (checked against the signed checksums) or filled in for one
//! that does not; and what OpenTofu's client checks of it
//! (`registryPackageAuthentication`: the installed platform's entry, its
//! size against the downloaded archive, its `zh:` against `shasum`) holds
//! for every answer the mirror gives.

mod common;

use std::collections::BTreeSet;

use common::daemon::*;
use common::*;
use http::StatusCode;
use serde_json::Value;

const PLATFORMS: [&str; 3] = ["darwin_arm64", "linux_amd64", "windows_amd64"];

fn answer_url(m: &RunningMirror, platform: &str) -> String {
    let (os, arch) = platform.split_once('_').unwrap();
    m.url(&format!(
        "/v1/providers/registry.origin.test/acme/widget/1.0.0/download/{os}/{arch}"
    ))
}

fn zip_name(platform: &str) -> String {
    format!("terraform-provider-widget_1.0.0_{platform}.zip")
}

fn h1_of(archive: &[u8]) -> String {
    tfmirror::verify::h1_of_zip(std::io::Cursor::new(archive)).unwrap()
}

/// Checks the field's shape as OpenTofu's provider registry page documents
/// it: an object keyed by `os_arch`, each entry exactly `hashes` (strings,
/// `zh:` first) and `package_size` (a whole number above zero), covering
/// every platform. Returns it.
fn packages(doc: &Value) -> &serde_json::Map<String, Value> {
    let packages = doc["packages"]
        .as_object()
        .unwrap_or_else(|| panic!("no packages field: {doc}"));
    let names: BTreeSet<&str> = packages.keys().map(String::as_str).collect();
    assert_eq!(names, BTreeSet::from(PLATFORMS), "{doc}");
    for (platform, entry) in packages {
        let fields: BTreeSet<&str> = entry
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(
            fields,
            BTreeSet::from(["hashes", "package_size"]),
            "{platform}"
        );
        assert!(entry["package_size"].as_u64().unwrap() > 0, "{platform}");
        let hashes = entry["hashes"].as_array().unwrap();
        assert!(hashes[0].as_str().unwrap().starts_with("zh:"), "{platform}");
        assert!(hashes.iter().all(Value::is_string), "{platform}");
    }
    packages
}

/// A mirror in front of an origin answering as the OpenTofu Registry does
/// (with `packages`), publishing `acme/widget` 1.0.0 for `PLATFORMS`;
/// `prepare` may change the origin first.
async fn opentofu_registry(prepare: impl FnOnce(&FakeOrigin)) -> Scene {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.use_shape("opentofu-registry");
    prepare(&origin);
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    Scene::on(setup, origin, signer, archives, |_| {}).await
}

/// The shape of a JSON value: each object's keys (a `packages` map's
/// platform names as one), each value's type, a list by its first element.
fn skeleton(value: &Value, under_packages: bool) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let key = if under_packages {
                        "<platform>"
                    } else {
                        k.as_str()
                    };
                    (key.to_owned(), skeleton(v, k == "packages"))
                })
                .collect(),
        ),
        Value::Array(items) => {
            Value::Array(items.iter().take(1).map(|v| skeleton(v, false)).collect())
        }
        Value::String(_) => Value::from("string"),
        Value::Number(_) => Value::from("number"),
        Value::Bool(_) => Value::from("bool"),
        Value::Null => Value::Null,
    }
}

/// The download answer's shape as OpenTofu's provider registry page
/// documents it, from the OpenTofu Registry's shape in the fixtures (its
/// placeholders standing for values of the documented types).
fn documented_shape() -> Value {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/registries/opentofu-registry/provider-download.json"
    ))
    .unwrap();
    let body = text
        .split_once('\n')
        .unwrap()
        .1
        .replace("\"{{package_size}}\"", "1");
    skeleton(&serde_json::from_str(&body).unwrap(), false)
}

/// What OpenTofu's client checks before it installs `platform` from the
/// answer `doc`: the archive its `download_url` gives has the size the
/// platform's entry says, and the entry's `zh:` is `shasum`.
async fn opentofu_accepts(c: &Client, url: &str, doc: &Value, platform: &str) -> Vec<u8> {
    let entry = &packages(doc)[platform];
    let archive = c
        .get(&resolve(url, doc["download_url"].as_str().unwrap()))
        .await;
    assert_eq!(archive.status, StatusCode::OK, "{}", archive.error_text());
    assert_eq!(
        archive.body.len() as u64,
        entry["package_size"].as_u64().unwrap(),
        "{platform}: the size OpenTofu compares"
    );
    let zh: Vec<&str> = entry["hashes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .filter(|h| h.starts_with("zh:"))
        .collect();
    assert_eq!(
        zh,
        [format!("zh:{}", doc["shasum"].as_str().unwrap())],
        "{platform}"
    );
    archive.body.to_vec()
}

/// The hashes of a lock file's text.
fn lock_hashes(text: &str) -> BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("\"h1:") || l.starts_with("\"zh:"))
        .map(|l| l.trim_end_matches(',').trim_matches('"').to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_without_the_field_gets_it_filled_in_sizes_learned_once() {
    let sc = Scene::start("widget", "1.0.0", &PLATFORMS).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let url = answer_url(m, "linux_amd64");
    let answer = c.get(&url).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    let doc = answer.json();
    // Golden: the answer has exactly the documented shape, field for field.
    assert_eq!(skeleton(&doc, false), documented_shape(), "{doc}");
    for (platform, entry) in packages(&doc) {
        let archive = &sc.archives[platform.as_str()];
        assert_eq!(
            entry["package_size"].as_u64().unwrap(),
            archive.len() as u64,
            "{platform}"
        );
        // Nothing is cached yet: no h1: is known, and none is made up.
        assert_eq!(
            entry["hashes"],
            serde_json::json!([format!("zh:{}", sha256_hex(archive))]),
            "{platform}"
        );
    }
    // The sizes were asked of the origin once per archive and kept: other
    // platforms' answers and a second asking do not ask again.
    for platform in PLATFORMS {
        let again = c.get(&answer_url(m, platform)).await.json();
        assert_eq!(again["packages"], doc["packages"], "{platform}");
    }
    for platform in PLATFORMS {
        assert_eq!(
            sc.origin.hits(&format!("/files/{}", zip_name(platform))),
            1,
            "{platform}"
        );
    }

    // What OpenTofu checks holds, and the archive it installs then lends
    // its own h1: to the entry.
    let installed = opentofu_accepts(c, &url, &doc, "linux_amd64").await;
    assert_eq!(installed, sc.archives["linux_amd64"]);
    let after = c.get(&url).await.json();
    assert_eq!(
        after["packages"]["linux_amd64"]["hashes"],
        serde_json::json!([format!("zh:{}", sha256_hex(&installed)), h1_of(&installed)])
    );

    // `tfmirror lock` for every platform computes the same hashes the
    // field then carries.
    let home = sc.setup.dir.path();
    let config = config_file(&sc.setup, &sc.origin, "");
    let mut args = vec![
        "lock".to_string(),
        "--config".into(),
        config.display().to_string(),
    ];
    for platform in PLATFORMS {
        args.extend(["--platform".into(), platform.into()]);
    }
    args.push("registry.origin.test/acme/widget@1.0.0".into());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let locked = run_ok(home, &args).await;
    assert!(
        locked
            .stderr
            .contains("downloaded and hashed darwin_arm64, windows_amd64"),
        "{}",
        locked.stderr
    );
    let complete = c.get(&url).await.json();
    let served: BTreeSet<String> = packages(&complete)
        .values()
        .flat_map(|e| e["hashes"].as_array().unwrap().clone())
        .map(|h| h.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(served, lock_hashes(&locked.stdout), "{}", locked.stdout);
    assert_eq!(served.len(), 2 * PLATFORMS.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_with_the_field_is_checked_and_spares_every_download() {
    let sc = opentofu_registry(|_| {}).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let release = |platform: &str| {
        format!(
            "/gh/acme/terraform-provider-widget/releases/download/v1.0.0/{}",
            zip_name(platform)
        )
    };

    let url = answer_url(m, "darwin_arm64");
    let doc = c.get(&url).await.json();
    for (platform, entry) in packages(&doc) {
        let archive = &sc.archives[platform.as_str()];
        assert_eq!(
            entry["package_size"].as_u64().unwrap(),
            archive.len() as u64
        );
        assert_eq!(
            entry["hashes"],
            serde_json::json!([format!("zh:{}", sha256_hex(archive)), h1_of(archive)]),
            "{platform}"
        );
    }
    // The network mirror's `:version.json` lists the same h1: hashes.
    let listed = c.get(&sc.url("widget/1.0.0.json")).await.json();
    for platform in PLATFORMS {
        let hashes = listed["archives"][platform]["hashes"].as_array().unwrap();
        assert!(
            hashes.contains(&Value::from(h1_of(&sc.archives[platform]))),
            "{platform}: {listed}"
        );
    }
    // Nothing was downloaded for any of it.
    for platform in PLATFORMS {
        assert_eq!(sc.origin.hits(&release(platform)), 0, "{platform}");
    }

    // `lock` takes the origin's h1: hashes without downloading either.
    let home = sc.setup.dir.path();
    let config = config_file(&sc.setup, &sc.origin, "");
    let locked = run_ok(
        home,
        &[
            "lock",
            "--config",
            config.to_str().unwrap(),
            "--platform",
            "linux_amd64",
            "--platform",
            "windows_amd64",
            "registry.origin.test/acme/widget@1.0.0",
        ],
    )
    .await;
    assert!(
        locked
            .stderr
            .contains("h1: taken from the origin's packages field for linux_amd64, windows_amd64"),
        "{}",
        locked.stderr
    );
    assert!(!locked.stderr.contains("downloaded"), "{}", locked.stderr);
    let hashes = lock_hashes(&locked.stdout);
    for platform in ["linux_amd64", "windows_amd64"] {
        assert!(
            hashes.contains(&h1_of(&sc.archives[platform])),
            "{platform}"
        );
        assert_eq!(sc.origin.hits(&release(platform)), 0, "{platform}");
    }

    // OpenTofu's checks hold for the archive it installs.
    opentofu_accepts(c, &url, &doc, "darwin_arm64").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_field_that_contradicts_the_signed_checksums_fails_verification() {
    let sc = opentofu_registry(|origin| {
        origin.misreport_package("windows_amd64", &format!("zh:{}", "0".repeat(64)));
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let answer = c.get(&answer_url(m, "linux_amd64")).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY);
    let text = answer.error_text();
    assert!(text.contains("windows_amd64"), "{text}");
    assert!(text.contains("packages field"), "{text}");
    assert!(text.contains(&"0".repeat(64)), "{text}");
    // The network mirror refuses the version alike: nothing was stored.
    let listed = c.get(&sc.url("widget/1.0.0.json")).await;
    assert_eq!(listed.status, StatusCode::BAD_GATEWAY);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_h1_the_archive_contradicts_is_dropped() {
    let wrong = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let sc = opentofu_registry(|origin| origin.misreport_package("linux_amd64", wrong)).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let url = answer_url(m, "linux_amd64");
    let before = c.get(&url).await.json();
    assert_eq!(before["packages"]["linux_amd64"]["hashes"][1], wrong);
    // `:version.json` lists what the origin reported: every platform has
    // an h1:, so the document is kept with the version's record.
    let listed_hashes = |listed: &Value| -> Vec<Value> {
        listed["archives"]["linux_amd64"]["hashes"]
            .as_array()
            .unwrap()
            .clone()
    };
    let doc_url = sc.url("widget/1.0.0.json");
    let first = c.get(&doc_url).await.json();
    assert!(
        listed_hashes(&first).contains(&Value::from(wrong)),
        "{first}"
    );
    assert_eq!(c.get(&doc_url).await.json(), first);
    // The archive, fetched and checked, hashes otherwise: its own h1:
    // replaces the origin's, in the field and in `:version.json` (the
    // record amended, its kept document rendered again).
    opentofu_accepts(c, &url, &before, "linux_amd64").await;
    let own = h1_of(&sc.archives["linux_amd64"]);
    let after = c.get(&url).await.json();
    assert_eq!(after["packages"]["linux_amd64"]["hashes"][1], own.as_str());
    let listed = c.get(&doc_url).await.json();
    let hashes = listed_hashes(&listed);
    assert!(hashes.contains(&Value::from(own)), "{listed}");
    assert!(!hashes.contains(&Value::from(wrong)), "{listed}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_size_the_archive_contradicts_is_replaced() {
    let real = |sc: &Scene| sc.archives["darwin_arm64"].len() as u64;
    let sc = opentofu_registry(|origin| origin.misreport_size("darwin_arm64", 7)).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let url = answer_url(m, "linux_amd64");
    let before = c.get(&url).await.json();
    assert_eq!(before["packages"]["darwin_arm64"]["package_size"], 7);
    // Once the mirror holds the archive, its own size counts, and the
    // record keeps it.
    let fetched = c
        .get(&sc.archive_url("widget", "1.0.0", "darwin_arm64"))
        .await;
    assert_eq!(fetched.status, StatusCode::OK);
    let after = c.get(&url).await.json();
    assert_eq!(after["packages"]["darwin_arm64"]["package_size"], real(&sc));
    let record: Value = serde_json::from_slice(
        &std::fs::read(
            sc.setup
                .cache_dir()
                .join("providers/registry.origin.test/acme/widget/1.0.0/version.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(
        record["packages"]["darwin_arm64"]["size"],
        real(&sc),
        "{record}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_size_that_cannot_be_learned_leaves_the_field_out() {
    let sc = Scene::start("widget", "1.0.0", &PLATFORMS).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let windows = format!("/files/{}", zip_name("windows_amd64"));
    // One archive's host does not say how big it is.
    sc.origin.set_fault(&windows, Some(Fault::Chunked));
    let url = answer_url(m, "linux_amd64");
    let answer = c.get(&url).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    let doc = answer.json();
    assert!(doc.get("packages").is_none(), "{doc}");
    assert_eq!(doc["shasum"], sha256_hex(&sc.archives["linux_amd64"]));
    // Another answering host fails.
    sc.origin.set_fault(
        &windows,
        Some(Fault::Status(StatusCode::INTERNAL_SERVER_ERROR)),
    );
    let doc = c.get(&url).await.json();
    assert!(doc.get("packages").is_none(), "{doc}");
    // Once the host answers as usual, the next answer has it all.
    sc.origin.set_fault(&windows, None);
    let doc = c.get(&url).await.json();
    assert_eq!(
        packages(&doc)["windows_amd64"]["package_size"]
            .as_u64()
            .unwrap(),
        sc.archives["windows_amd64"].len() as u64
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_field_crosses_the_air_gap_in_the_records() {
    let sc = opentofu_registry(|_| {}).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let url = answer_url(m, "linux_amd64");
    let online = c.get(&url).await.json();
    opentofu_accepts(c, &url, &online, "linux_amd64").await;
    let online = c.get(&url).await.json();

    // One archive is held; the records know every platform's size and h1:.
    sc.origin.stop();
    let gap = across_the_gap(&sc, "", |_| {}).await;
    let gc = Client::trusting(&gap.ca_file);
    let offline = gc.get(&answer_url(&gap, "linux_amd64")).await;
    assert_eq!(offline.status, StatusCode::OK, "{}", offline.error_text());
    assert_eq!(offline.json()["packages"], online["packages"]);
}
