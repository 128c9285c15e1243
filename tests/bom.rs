//! A held provider package's bill of materials: when a package whose
//! executable is a real Go program (the Terraform v1.0.3 binary, go1.16,
//! some 150 modules) is fetched through the mirror, its build information
//! is recorded in the store, and its CycloneDX document lists the
//! toolchain and every module as `go version -m` (Debian's golang-go)
//! reads them from the same binary, with the archive's hashes and the key
//! that signed them. A package kept before its record is read on first
//! ask; the provider page links to each platform's document.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use common::browser::{accessible, axe_js, text, Browser, Elsewhere};
use common::daemon::{config_file, run_tfmirror, site_config};
use common::go::{
    archive_of, bom_command, bom_modules, bom_properties, copy_advisory_fixtures, go_modules,
    import_advisories, publish_archives, terraform_1_0_3, TERRAFORM_1_0_3_FINDINGS,
};
use common::pages::form;
use common::*;
use fantoccini::Locator;
use http::StatusCode;

#[cfg_attr(
    any(tfmirror_no_go, tfmirror_no_terraform, tfmirror_no_chromium),
    ignore = "needs go (Debian's golang-go), TERRAFORM_BIN, Debian's chromium and chromium-driver, and axe-core; scripts/test installs them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_held_package_lists_what_its_go_build_information_names() {
    let exe = terraform_1_0_3();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archive = archive_of("tfcli", "1.0.3", &exe);
    let archives = BTreeMap::from([("linux_amd64".to_string(), archive.clone())]);
    publish_tfcli(&origin, &signer, &archives);
    let config = setup.config(&origin, &[], &["registry.origin.test"]);
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let zip =
        m.url("/registry.origin.test/acme/tfcli/terraform-provider-tfcli_1.0.3_linux_amd64.zip");
    assert_eq!(
        c.get(&m.url("/registry.origin.test/acme/tfcli/1.0.3.json"))
            .await
            .status,
        StatusCode::OK
    );
    let fetched = c.get(&zip).await;
    assert_eq!(fetched.status, StatusCode::OK);
    assert_eq!(fetched.body.len(), archive.len());

    // Recorded once the archive is kept, without being asked.
    let record = setup
        .cache_dir()
        .join("builds/registry.origin.test/acme/tfcli/1.0.3/linux_amd64.json");
    wait_until(
        "the build record to be kept",
        Duration::from_secs(60),
        || record.is_file(),
    )
    .await;

    let bom_url =
        m.url("/-/api/providers/registry.origin.test/acme/tfcli/1.0.3/linux_amd64/cyclonedx.json");
    let bom = c.get(&bom_url).await;
    assert_eq!(
        bom.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&bom.body)
    );
    let doc = bom.json();
    assert_eq!(doc["bomFormat"], "CycloneDX");
    assert_eq!(doc["specVersion"], "1.5");
    let main = &doc["metadata"]["component"];
    assert_eq!(main["name"], "registry.origin.test/acme/tfcli");
    assert_eq!(main["version"], "1.0.3");
    assert_eq!(main["hashes"][0]["content"], sha256_hex(&archive));
    let props = bom_properties(main);
    assert_eq!(props["tfmirror:signing_key"], signer.key_id());
    assert!(props["tfmirror:h1"].starts_with("h1:"), "{props:?}");
    assert_eq!(
        props["tfmirror:executable"],
        "terraform-provider-tfcli_v1.0.3"
    );

    // The oracle: Go's own reader, on the same binary.
    let (toolchain, modules) = go_modules(&exe);
    assert_eq!(props["tfmirror:go_version"], toolchain);
    let components = doc["components"].as_array().unwrap();
    assert_eq!(bom_modules(&doc), modules);
    assert!(modules.len() > 100, "{}", modules.len());
    let stdlib = components.iter().find(|c| c["name"] == "stdlib").unwrap();
    assert_eq!(stdlib["purl"], "pkg:golang/stdlib@v1.16.4");
    assert!(components.iter().any(
        |c| c["purl"] == "pkg:golang/github.com/azure/azure-sdk-for-go@v52.5.0%2Bincompatible"
    ));

    // The provider's page links to it.
    let page = c
        .get(&m.url("/-/providers/registry.origin.test/acme/tfcli"))
        .await;
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("href=\"/-/api/providers/registry.origin.test/acme/tfcli/1.0.3/linux_amd64/cyclonedx.json\""), "{html}");

    // A package kept before its record: `tfmirror verify` fills it in...
    let config = config_file(&setup, &origin, "");
    std::fs::remove_file(&record).unwrap();
    let verified = run_tfmirror(
        setup.dir.path(),
        &["verify", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(verified.ok, "{}", verified.stderr);
    assert!(
        verified
            .stdout
            .contains("recorded the build information of 1 archives that had none"),
        "{}",
        verified.stdout
    );
    let filled: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    assert_eq!(filled["executables"][0]["state"], "go");
    let verified = run_tfmirror(
        setup.dir.path(),
        &["verify", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(
        !verified.stdout.contains("recorded the build information"),
        "{}",
        verified.stdout
    );
    // ... and so does the first ask for its document.
    std::fs::remove_file(&record).unwrap();
    let again = c.get(&bom_url).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.json()["components"], doc["components"]);
    assert!(record.is_file());

    // The command writes the same document, from the same store.
    let written = bom_command(
        setup.dir.path(),
        &config,
        "linux_amd64",
        "registry.origin.test/acme/tfcli",
        "1.0.3",
    )
    .await;
    assert_eq!(written["components"], doc["components"]);
    assert_eq!(
        written["metadata"]["component"],
        doc["metadata"]["component"]
    );
    // The record names the packages the binary holds, from its function
    // table: what advisories' presence is read from.
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    let packages = kept["executables"][0]["packages"]
        .as_array()
        .expect("packages read");
    assert!(packages.iter().any(|p| p == "net/http"), "{packages:?}");
    assert!(!packages.iter().any(|p| p == "debug/macho"));

    // Advisories: the pinned real entries, with GitHub's, imported into
    // the same store and matched against the held package offline.
    let entries = setup.dir.path().join("osv");
    copy_advisory_fixtures(&entries);
    // One entry written here, not taken from a database: details and a
    // summary as hostile as anyone could publish them.
    std::fs::write(
        entries.join("GO-9999-0001.json"),
        serde_json::to_vec(&serde_json::json!({
            "id": "GO-9999-0001",
            "summary": "<b>bold</b> claims",
            "details": "Read <script>alert(1)</script> this.\n\n![x](https://evil.example/pixel.png)\n\n[more](javascript:alert(2))",
            "affected": [{"package": {"ecosystem": "Go", "name": "example.com/hostile"},
                "ranges": [{"type": "SEMVER", "events": [{"introduced": "0"}]}]}],
            "database_specific": {"url": "javascript:alert(3)"}
        }))
        .unwrap(),
    )
    .unwrap();
    let imported = import_advisories(setup.dir.path(), &config, &[&entries]).await;
    assert!(imported.contains("18 advisories"), "{imported}");
    let status = run_tfmirror(
        setup.dir.path(),
        &["advisories", "status", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(status.stdout.contains("1 withdrawn"), "{}", status.stdout);
    let shown = run_tfmirror(
        setup.dir.path(),
        &[
            "advisories",
            "show",
            "--json",
            "--config",
            config.to_str().unwrap(),
            "registry.origin.test/acme/tfcli",
            "1.0.3",
        ],
    )
    .await;
    assert!(shown.ok, "{}", shown.stderr);
    let summary: serde_json::Value = serde_json::from_str(&shown.stdout).unwrap();
    // The hand reading in tests/advisories.rs (and SOURCE.md).
    let mut ids: Vec<&str> = summary["advisories"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["finding"]["id"].as_str().unwrap())
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, TERRAFORM_1_0_3_FINDINGS);
    assert_eq!(summary["count"], 8);
    assert_eq!(summary["worst"], "high");
    for a in summary["advisories"].as_array().unwrap() {
        assert_eq!(a["platforms"], serde_json::json!(["linux_amd64"]));
    }

    let listed = run_tfmirror(
        setup.dir.path(),
        &["ls", "--json", "--config", config.to_str().unwrap()],
    )
    .await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(
        listed[0]["advisories"],
        serde_json::json!({"count": 8, "worst": "high", "known": true})
    );
    let table = run_tfmirror(
        setup.dir.path(),
        &["ls", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(
        table
            .stdout
            .contains("advisories: 1 of 1 archives fall under known advisories (worst: high 1)"),
        "{}",
        table.stdout
    );

    // The running daemon reads the import from the store within seconds,
    // and the provider's page says the same, each finding linked.
    let page_json = m.url("/-/api/providers/registry.origin.test/acme/tfcli");
    wait_until_answered(
        "the daemon to read the imported database",
        Duration::from_secs(30),
        || async { c.get(&page_json).await.json()["versions"][0]["advisories"]["count"] == 8 },
    )
    .await;
    let page = c.get(&page_json).await.json();
    assert_eq!(
        page["versions"][0]["advisories"]["advisories"],
        summary["advisories"]
    );
    let metrics = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_advisory_database_entries 18\n"),
        "{metrics}"
    );
    // The daemon counts what it holds against the database.
    wait_until_answered(
        "the held versions to be counted",
        Duration::from_secs(60),
        || async {
            let text = c.get(&m.url("/metrics")).await.body;
            String::from_utf8_lossy(&text)
                .contains("tfmirror_advisory_affected_versions{worst=\"high\"} 1\n")
        },
    )
    .await;
    let status = c.get(&m.url("/-/api/status")).await.json();
    assert!(
        status["advisories"]
            .as_str()
            .unwrap()
            .ends_with("1 of 1 provider versions held fall under known advisories (worst: high 1)"),
        "{}",
        status["advisories"]
    );
    // The newest entry that carries a real time is GitHub's.
    assert!(
        metrics.contains("tfmirror_advisory_database_updated_timestamp_seconds 1711164624\n"),
        "{metrics}"
    );
    assert!(page["advisory_database"]
        .as_str()
        .unwrap()
        .contains("18 advisories"));
    let html = c
        .get(&m.url("/-/providers/registry.origin.test/acme/tfcli"))
        .await;
    let html = String::from_utf8_lossy(&html.body).into_owned();
    assert!(html.contains("8 known, the worst rated high"), "{html}");
    assert!(html.contains(r#"<a href="/-/advisories/GO-2023-2102">GO-2023-2102</a>"#));
    assert!(html.contains("not found in the binary"));
    // An advisory's page, also by an alias; its details sanitised.
    let by_alias = c
        .get(&m.url("/-/api/advisories/CVE-2023-39325"))
        .await
        .json();
    assert_eq!(by_alias["id"], "GO-2023-2102");
    let hostile = c.get(&m.url("/-/advisories/GO-9999-0001")).await;
    assert_eq!(hostile.status, StatusCode::OK);
    let hostile = String::from_utf8_lossy(&hostile.body).into_owned();
    assert!(hostile.contains("&#60;b&#62;bold&#60;/b&#62;"), "{hostile}");
    for bad in ["<script", "<img", "javascript:", "<b>"] {
        assert!(!hostile.contains(bad), "{bad} in {hostile}");
    }
    assert!(
        hostile.contains(r#"href="https://evil.example/pixel.png""#),
        "an image is a link"
    );
    // In a browser: the findings shown, no accessibility violation, and
    // nothing loaded from elsewhere.
    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    let axe = axe_js();
    b.client
        .goto(&m.url("/-/providers/registry.origin.test/acme/tfcli"))
        .await
        .unwrap();
    // A report: the counts, then by module, present first; what is not
    // found in the binary (GO-2021-0263: Terraform holds no debug/macho)
    // folded away until asked for; no wider than the window.
    let shown = text(&b, "div.advisories-report").await;
    assert!(shown.contains("present in the binaries"), "{shown}");
    assert!(shown.contains("the worst rated high"), "{shown}");
    assert!(shown.contains("GO-2023-2102"), "{shown}");
    assert!(!shown.contains("GO-2021-0263"), "{shown}");
    let width = b
        .run("return [document.documentElement.scrollWidth, window.innerWidth]")
        .await;
    assert!(
        width[0].as_u64().unwrap() <= width[1].as_u64().unwrap(),
        "the page is wider than the window: {width}"
    );
    for folded in b
        .client
        .find_all(Locator::Css("details.not-found summary"))
        .await
        .unwrap()
    {
        folded.click().await.unwrap();
    }
    let opened = text(&b, "div.advisories-report").await;
    assert!(
        opened.contains("GO-2021-0263") && opened.contains("GHSA-4374-p667-p6c8"),
        "{opened}"
    );
    let groups: Vec<String> = b
        .run("return [...document.querySelectorAll('.advisory-group .group-head')].map(e => e.textContent)")
        .await
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g.as_str().unwrap().to_owned())
        .collect();
    let first_without = groups.iter().position(|g| !g.contains(" present"));
    assert!(
        first_without.is_none_or(|at| groups[at..].iter().all(|g| !g.contains(" present"))),
        "groups with findings present come first: {groups:?}"
    );
    accessible(&b, &axe, "provider with advisories").await;
    for id in ["GO-2023-2102", "GO-9999-0001"] {
        b.client
            .goto(&m.url(&format!("/-/advisories/{id}")))
            .await
            .unwrap();
        accessible(&b, &axe, id).await;
    }
    assert_eq!(
        elsewhere.connections(),
        0,
        "a page loaded something from elsewhere"
    );
    b.stop().await;
    let unknown = c.get(&m.url("/-/advisories/GO-0000-0000")).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let bad_id = c.get(&m.url("/-/advisories/GO%2F1")).await;
    assert_eq!(bad_id.status, StatusCode::BAD_REQUEST);

    // A bundle carries the database, named by its checksum; the site
    // that imports it reads the same advisories offline, and makes its
    // own build record from the archive.
    let bundle = setup.dir.path().join("advisories.bundle");
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
    assert!(
        exported
            .stdout
            .contains("advisory database of 18 advisories is carried"),
        "{}",
        exported.stdout
    );
    let manifest = bundle_manifest(&bundle);
    assert_eq!(manifest["format"], 3);
    assert_eq!(manifest["advisories"]["entries"], 18);
    let site = site_config(setup.dir.path(), "site", "");
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
    assert!(
        imported
            .stdout
            .contains("ADVISORIES advisory database of 18 advisories"),
        "{}",
        imported.stdout
    );
    assert!(setup
        .dir
        .path()
        .join("site-cache/builds/registry.origin.test/acme/tfcli/1.0.3/linux_amd64.json")
        .is_file());
    let there = run_tfmirror(
        setup.dir.path(),
        &[
            "advisories",
            "show",
            "--json",
            "--config",
            site.to_str().unwrap(),
            "registry.origin.test/acme/tfcli",
            "1.0.3",
        ],
    )
    .await;
    assert!(there.ok, "{}", there.stderr);
    let there: serde_json::Value = serde_json::from_str(&there.stdout).unwrap();
    assert_eq!(there, summary);
    // Without it, for a site whose tfmirror reads no format 3.
    let plain = setup.dir.path().join("plain.bundle");
    let ran = run_tfmirror(
        setup.dir.path(),
        &[
            "export",
            "--no-advisories",
            "--config",
            config.to_str().unwrap(),
            "--output",
            plain.to_str().unwrap(),
        ],
    )
    .await;
    assert!(ran.ok, "{}", ran.stderr);
    assert_eq!(bundle_manifest(&plain)["format"], 2);
    assert!(bundle_manifest(&plain).get("advisories").is_none());
    // A database altered in the bundle is refused by its checksum.
    let altered = setup.dir.path().join("altered.bundle");
    alter_entry(
        &bundle,
        &altered,
        "tfmirror-bundle/advisories/database.json",
    );
    let other_site = site_config(setup.dir.path(), "other", "");
    let refused = run_tfmirror(
        setup.dir.path(),
        &[
            "import",
            "--config",
            other_site.to_str().unwrap(),
            altered.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!refused.ok);
    assert!(
        refused
            .stdout
            .contains("REJECTED the advisory database: its ")
            && refused.stdout.contains("are not the"),
        "{}",
        refused.stdout
    );
    assert!(!setup
        .dir
        .path()
        .join("other-cache/advisories/current.json")
        .exists());

    // `check --from` on a lock file that needs the package names its
    // advisories beside it; so does "Will it install?".
    let lock = format!(
        "provider \"registry.origin.test/acme/tfcli\" {{\n  version = \"1.0.3\"\n  hashes = [\"zh:{}\"]\n}}\n",
        sha256_hex(&archive)
    );
    let lock_file = setup.dir.path().join(".terraform.lock.hcl");
    std::fs::write(&lock_file, &lock).unwrap();
    let checked = run_tfmirror(
        setup.dir.path(),
        &[
            "check",
            "--json",
            "--config",
            config.to_str().unwrap(),
            "--platform",
            "linux_amd64",
            "--from",
            lock_file.to_str().unwrap(),
        ],
    )
    .await;
    assert!(checked.ok, "{}\n{}", checked.stdout, checked.stderr);
    let checked: serde_json::Value = serde_json::from_str(&checked.stdout).unwrap();
    let item = &checked["configurations"][0]["items"][0];
    assert_eq!(item["status"], "held", "{checked}");
    let mut named: Vec<&str> = item["advisories"]
        .as_array()
        .unwrap_or_else(|| panic!("no advisories in {item}"))
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    named.sort_unstable();
    assert_eq!(named, ids);
    let body = form(&[("lock", &lock), ("platforms", "linux_amd64")]);
    let headers = [("content-type", "application/x-www-form-urlencoded")];
    let web = c.post(&m.url("/-/api/check"), &headers, body).await;
    assert_eq!(
        web.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&web.body)
    );
    let web = web.json();
    assert_eq!(
        web["verdict"]["items"][0]["advisories"], item["advisories"],
        "the page names what the command names"
    );

    let refused = run_tfmirror(
        setup.dir.path(),
        &[
            "bom",
            "--config",
            config.to_str().unwrap(),
            "--platform",
            "windows_386",
            "registry.origin.test/acme/tfcli",
            "1.0.3",
        ],
    )
    .await;
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("not held by this mirror"),
        "{}",
        refused.stderr
    );

    // A platform not held has none.
    let missing = c
        .get(&m.url(
            "/-/api/providers/registry.origin.test/acme/tfcli/1.0.3/darwin_arm64/cyclonedx.json",
        ))
        .await;
    assert_eq!(
        missing.status,
        StatusCode::NOT_FOUND,
        "{}",
        String::from_utf8_lossy(&missing.body)
    );
    assert!(
        missing.error_text().contains("not held"),
        "{}",
        missing.error_text()
    );
}

/// A version's advisories are matched again when another of its platforms
/// is stored: the summary kept in memory names the platforms it was made
/// from, and a page after the arrival lists the new platform beside the
/// first.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_platform_stored_later_joins_its_versions_findings() {
    let exe = terraform_1_0_3();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archive = archive_of("tfcli", "1.0.3", &exe);
    let archives = BTreeMap::from([
        ("linux_amd64".to_string(), archive.clone()),
        ("linux_arm64".to_string(), archive),
    ]);
    publish_tfcli(&origin, &signer, &archives);
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);
    let fetch = |platform: &str| {
        m.url(&format!(
            "/registry.origin.test/acme/tfcli/terraform-provider-tfcli_1.0.3_{platform}.zip"
        ))
    };
    assert_eq!(c.get(&fetch("linux_amd64")).await.status, StatusCode::OK);
    let entries = setup.dir.path().join("osv");
    copy_advisory_fixtures(&entries);
    let config = config_file(&setup, &origin, "");
    import_advisories(setup.dir.path(), &config, &[&entries]).await;
    let page = m.url("/-/api/providers/registry.origin.test/acme/tfcli");
    let platforms_of = |doc: serde_json::Value| -> Vec<serde_json::Value> {
        (doc["versions"][0]["advisories"]["advisories"].as_array())
            .map(|found| found.iter().map(|f| f["platforms"].clone()).collect())
            .unwrap_or_default()
    };
    wait_until_answered(
        "the daemon to match the held platform",
        Duration::from_secs(30),
        || async { !platforms_of(c.get(&page).await.json()).is_empty() },
    )
    .await;
    for platforms in platforms_of(c.get(&page).await.json()) {
        assert_eq!(platforms, serde_json::json!(["linux_amd64"]));
    }
    assert_eq!(c.get(&fetch("linux_arm64")).await.status, StatusCode::OK);
    wait_until_answered(
        "the page to list the platform stored since",
        Duration::from_secs(30),
        || async {
            let found = platforms_of(c.get(&page).await.json());
            !found.is_empty()
                && found
                    .iter()
                    .all(|p| *p == serde_json::json!(["linux_amd64", "linux_arm64"]))
        },
    )
    .await;
}

/// Publishes acme/tfcli 1.0.3 with `archives` by platform, signed by
/// `signer`.
fn publish_tfcli(origin: &FakeOrigin, signer: &Signer, archives: &BTreeMap<String, Vec<u8>>) {
    publish_archives(origin, signer, ("tfcli", "1.0.3"), archives);
}

/// A bundle's manifest.
fn bundle_manifest(bundle: &Path) -> serde_json::Value {
    let mut tar = tar::Archive::new(std::fs::File::open(bundle).unwrap());
    let mut first = tar.entries().unwrap().next().unwrap().unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut first, &mut bytes).unwrap();
    serde_json::from_slice(&bytes).unwrap()
}

/// Copies a bundle, flipping one byte in the middle of the entry `path`.
fn alter_entry(from: &Path, to: &Path, path: &str) {
    let mut tar = tar::Archive::new(std::fs::File::open(from).unwrap());
    let mut out = tar::Builder::new(std::fs::File::create(to).unwrap());
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let mut header = entry.header().clone();
        let name = entry.path().unwrap().to_string_lossy().into_owned();
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut entry, &mut bytes).unwrap();
        if name == path {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x01;
        }
        out.append_data(&mut header, &name, bytes.as_slice())
            .unwrap();
    }
    out.finish().unwrap();
}
