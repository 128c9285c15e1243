//! A held CLI release's bill of materials and advisories: when a release
//! zip whose `terraform` is the real Terraform v1.0.3 binary (go1.16) is
//! fetched through the mirror, its build information is recorded in the
//! store; its CycloneDX document lists the toolchain and every module as
//! `go version -m` (Debian's golang-go) reads them from the same binary;
//! the releases page and its JSON name the advisories of the pinned real
//! entries that a hand reading finds, for the platform whose binary they
//! apply to; `tfmirror bom` writes the same document; and a bundle carries
//! the release to a site that reads its record from the file itself.

mod common;

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use common::browser::{accessible, axe_js, text, Browser, Elsewhere};
use common::daemon::{config_file, run_tfmirror, site_config};
use common::go::{
    bom_command, bom_modules, bom_properties, copy_advisory_fixtures, go_modules,
    import_advisories, terraform_1_0_3, TERRAFORM_1_0_3_FINDINGS,
};
use common::releases::publish_terraform;
use common::*;
use http::StatusCode;

/// A release zip holding `exe` as `terraform`, stored uncompressed (the
/// tests' build leaves compression unoptimised).
fn release_zip(exe: &Path) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o755);
    w.start_file("terraform", opts).unwrap();
    std::io::copy(&mut std::fs::File::open(exe).unwrap(), &mut w).unwrap();
    w.finish().unwrap();
    out.into_inner()
}

/// A release zip whose `terraform` is no Go program.
fn script_zip() -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
    w.start_file("terraform", opts).unwrap();
    w.write_all(b"#!/bin/sh\necho not go\n").unwrap();
    w.finish().unwrap();
    out.into_inner()
}

/// `[releases]` serving Terraform from the origin's `/files/`, trusting
/// the key in `key_file`.
fn releases_toml(origin: &FakeOrigin, key_file: &Path) -> String {
    format!(
        "[releases]\nproducts = [\"terraform\"]\n[releases.terraform]\nlist_url = \"{base}/files/index.json\"\ndownload_url = \"{base}/files/{{artifact}}\"\nkey_files = [\"{key}\"]\n",
        base = origin.file_url("x").trim_end_matches("/files/x"),
        key = key_file.display()
    )
}

#[cfg_attr(
    any(tfmirror_no_go, tfmirror_no_terraform, tfmirror_no_chromium),
    ignore = "needs go (Debian's golang-go), TERRAFORM_BIN, Debian's chromium and chromium-driver, and axe-core; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_cli_release_lists_its_build_and_its_advisories() {
    let exe = terraform_1_0_3();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let key_file = setup.dir.path().join("release-key.asc");
    std::fs::write(&key_file, signer.public_armored()).unwrap();
    let zip = release_zip(&exe);
    publish_terraform(
        &origin,
        &signer,
        "1.0.3",
        &[("linux_amd64", zip.clone()), ("darwin_arm64", script_zip())],
    );
    let toml = releases_toml(&origin, &key_file);
    let mut config = setup.config(&origin, &[], &[]);
    *config.releases = toml::from_str(&toml.replace("[releases]\n", "").replace("releases.", ""))
        .expect("the releases settings");
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    for platform in ["linux_amd64", "darwin_arm64"] {
        let got = c
            .get(&m.url(&format!("/terraform/1.0.3/terraform_1.0.3_{platform}.zip")))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{platform}");
    }

    // Recorded once the file is kept, without being asked.
    let records = setup.cache_dir().join("release-builds/terraform/1.0.3");
    let record = records.join("terraform_1.0.3_linux_amd64.zip.json");
    let script_record = records.join("terraform_1.0.3_darwin_arm64.zip.json");
    wait_until(
        "both release build records to be kept",
        Duration::from_secs(60),
        || record.is_file() && script_record.is_file(),
    )
    .await;
    let kept: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&script_record).unwrap()).unwrap();
    assert_eq!(kept["executables"][0]["state"], "nothing", "{kept}");

    let bom_url =
        m.url("/-/api/releases/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip/cyclonedx.json");
    let bom = c.get(&bom_url).await;
    assert_eq!(
        bom.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bom.body)
    );
    let doc = bom.json();
    assert_eq!(doc["bomFormat"], "CycloneDX");
    let main = &doc["metadata"]["component"];
    assert_eq!(main["name"], "terraform");
    assert_eq!(main["version"], "1.0.3");
    assert_eq!(main["hashes"][0]["content"], sha256_hex(&zip));
    let props = bom_properties(main);
    let prop = |name: &str| props[name].clone();
    assert_eq!(prop("tfmirror:signing_key"), signer.key_id());
    assert_eq!(prop("tfmirror:executable"), "terraform");
    assert_eq!(prop("tfmirror:platform"), "linux_amd64");

    // The oracle: Go's own reader, on the same binary.
    let (toolchain, modules) = go_modules(&exe);
    assert_eq!(prop("tfmirror:go_version"), toolchain);
    assert_eq!(bom_modules(&doc), modules);
    assert!(modules.len() > 100, "{}", modules.len());

    // A file not held has none; a file kept before its record is read on
    // first ask.
    let not_held = c
        .get(
            &m.url(
                "/-/api/releases/terraform/1.0.3/terraform_1.0.3_windows_386.zip/cyclonedx.json",
            ),
        )
        .await;
    assert_eq!(not_held.status, StatusCode::NOT_FOUND);
    std::fs::remove_file(&record).unwrap();
    let again = c.get(&bom_url).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["components"], doc["components"]);
    assert!(record.is_file());

    // The command writes the same document.
    let config = config_file(&setup, &origin, &toml);
    let written = bom_command(
        setup.dir.path(),
        &config,
        "linux_amd64",
        "terraform",
        "1.0.3",
    )
    .await;
    assert_eq!(written["components"], doc["components"]);

    // The releases page, before any database and after one is imported.
    let page_json = m.url("/-/api/releases");
    let page = c.get(&page_json).await.json();
    let release = &page["products"][0]["releases"][0];
    assert_eq!(release["version"], "1.0.3", "{page}");
    assert!(release["advisories"].is_null(), "{page}");
    let entries = setup.dir.path().join("osv");
    copy_advisory_fixtures(&entries);
    // A second directory, merged into the same database by one import.
    let more = setup.dir.path().join("more-osv");
    std::fs::create_dir_all(&more).unwrap();
    std::fs::write(
        more.join("GO-9999-0002.json"),
        serde_json::to_vec(&serde_json::json!({
            "id": "GO-9999-0002",
            "summary": "an entry of a second source",
            "affected": [{"package": {"ecosystem": "Go", "name": "example.com/elsewhere"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}]}]}]
        }))
        .unwrap(),
    )
    .unwrap();
    import_advisories(setup.dir.path(), &config, &[&entries, &more]).await;
    wait_until_answered(
        "the daemon to read the imported database",
        Duration::from_secs(30),
        || async {
            !c.get(&page_json).await.json()["products"][0]["releases"][0]["advisories"].is_null()
        },
    )
    .await;
    let page = c.get(&page_json).await.json();
    let summary = &page["products"][0]["releases"][0]["advisories"];
    let mut ids: Vec<&str> = summary["advisories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["finding"]["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, TERRAFORM_1_0_3_FINDINGS, "{summary}");
    assert_eq!(summary["count"], 8);
    assert_eq!(summary["worst"], "high");
    // Each applies to the Go binary alone: the script's platform has none.
    for a in summary["advisories"].as_array().unwrap() {
        assert_eq!(a["platforms"], serde_json::json!(["linux_amd64"]), "{a}");
    }
    // The database line counts the entries imported: every fixture but
    // the withdrawn ones and those about the go command (`toolchain`), as
    // docs/advisories.md says, and the second directory's one.
    let kept = std::fs::read_dir(&entries)
        .unwrap()
        .filter(|e| {
            let entry: serde_json::Value =
                serde_json::from_slice(&std::fs::read(e.as_ref().unwrap().path()).unwrap())
                    .unwrap();
            let toolchain = (entry["affected"].as_array().unwrap().iter())
                .all(|a| a["package"]["name"] == "toolchain");
            entry["withdrawn"].is_null() && !toolchain
        })
        .count();
    let line = page["advisory_database"].as_str().unwrap();
    assert!(
        line.starts_with(&format!("{} advisories ", kept + 1)),
        "{line}"
    );
    // The daemon counts the release with the provider versions.
    wait_until_answered(
        "the held release to be counted",
        Duration::from_secs(60),
        || async {
            let text = c.get(&m.url("/metrics")).await.body;
            String::from_utf8_lossy(&text)
                .contains("tfmirror_advisory_affected_releases{worst=\"high\"} 1\n")
        },
    )
    .await;
    let status = c.get(&m.url("/-/api/status")).await.json();
    let line = status["advisories"].as_str().unwrap();
    assert!(
        line.ends_with(
            "0 of 0 provider versions held fall under known advisories; 1 of 1 CLI releases held (worst: high 1)"
        ),
        "{line}"
    );
    let html = c.get(&m.url("/-/releases")).await;
    let html = String::from_utf8_lossy(&html.body);
    assert!(
        html.contains("href=\"/-/api/releases/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip/cyclonedx.json\""),
        "{html}"
    );
    assert!(html.contains(r#"<a href="/-/advisories/GO-2023-2102">GO-2023-2102</a>"#));

    // In a browser: the findings shown, no accessibility violation, and
    // nothing loaded from elsewhere.
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    let axe = axe_js();
    b.client.goto(&m.url("/-/releases")).await.unwrap();
    let shown = text(&b, "div.advisories-report").await;
    assert!(
        shown.contains("present in the binaries") && shown.contains("the worst rated high"),
        "{shown}"
    );
    accessible(&b, &axe, "releases with advisories").await;
    assert_eq!(
        elsewhere.connections(),
        0,
        "the page loaded something from elsewhere"
    );

    // A bundle carries the release; the site reads the record from the
    // file it checked.
    let bundle = setup.dir.path().join("release.bundle");
    let exported = run_tfmirror(
        setup.dir.path(),
        &[
            "export",
            "--config",
            config.to_str().unwrap(),
            "--output",
            bundle.to_str().unwrap(),
        ],
    )
    .await;
    assert!(exported.ok, "{}", exported.stderr);
    let site = site_config(setup.dir.path(), "site", &toml);
    let imported = run_tfmirror(
        setup.dir.path(),
        &[
            "import",
            "--config",
            site.to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    )
    .await;
    assert!(imported.ok, "{}\n{}", imported.stdout, imported.stderr);
    let there = setup
        .dir
        .path()
        .join("site-cache/release-builds/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip.json");
    let mut there: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&there).unwrap()).unwrap();
    let mut here: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    // Read before the bundle's database was held there: no symbols were
    // looked for, which the site's mirror and `verify` do on first look
    // (tests/build_records.rs). The rest is the same reading.
    assert!(there["executables"][0].get("symbols").is_some());
    assert!(there["executables"][0]["symbols"]["by_package"]
        .as_object()
        .unwrap()
        .is_empty());
    for doc in [&mut there, &mut here] {
        doc["executables"][0]
            .as_object_mut()
            .unwrap()
            .remove("symbols");
    }
    assert_eq!(there["executables"], here["executables"]);
}
