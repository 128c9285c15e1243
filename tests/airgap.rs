//! The air-gapped site path, through the `tfmirror` binary: `sync` fills a
//! connected cache (idempotently, resuming after a crash), `export` writes a
//! bundle, `import` verifies it into another cache (refusing altered,
//! unsigned and truncated bundles item by item), an offline mirror serves
//! it without opening a connection, and static mirror directories go both
//! ways. The real Terraform CLI's part is in `tests/terraform.rs`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::daemon::*;
use common::*;
use http::StatusCode;
use sha2::Digest;

const HOST: &str = "registry.origin.test";

/// The fake origin publishes widget 1.0.0, 1.1.0 and 2.0.0 (two platforms)
/// and gadget 0.3.1 (one).
async fn origin_with_providers() -> (Setup, FakeOrigin, BTreeMap<String, Vec<u8>>) {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let mut archives = BTreeMap::new();
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        for (p, bytes) in origin.publish(
            "acme",
            "widget",
            v,
            &["linux_amd64", "darwin_arm64"],
            &signer,
            &[&signer],
        ) {
            archives.insert(format!("terraform-provider-widget_{v}_{p}.zip"), bytes);
        }
    }
    for (p, bytes) in origin.publish(
        "acme",
        "gadget",
        "0.3.1",
        &["linux_amd64"],
        &signer,
        &[&signer],
    ) {
        archives.insert(format!("terraform-provider-gadget_0.3.1_{p}.zip"), bytes);
    }
    (setup, origin, archives)
}

fn write_manifest(dir: &Path) -> PathBuf {
    let path = dir.join("providers.toml");
    std::fs::write(
        &path,
        format!(
            r#"platforms = ["linux_amd64", "darwin_arm64"]

[[provider]]
source = "{HOST}/acme/widget"
versions = "~> 1.0"

[[provider]]
source = "{HOST}/acme/gadget"
versions = "= 0.3.1"
platforms = ["linux_amd64"]
"#
        ),
    )
    .unwrap();
    path
}

fn archive_hits(origin: &FakeOrigin, archives: &BTreeMap<String, Vec<u8>>) -> usize {
    archives
        .keys()
        .map(|name| origin.hits(&format!("/files/{name}")))
        .sum()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Every file of a cache with its SHA-256 (temporary files left out).
/// The cache's files and their SHA-256, without `tmp/` and without the
/// note a command writes before it may change the archives
/// (`index/changed.json`, bookkeeping for the daemon's next start).
fn snapshot(cache: &Path) -> BTreeMap<String, String> {
    files_below(cache)
        .into_iter()
        .filter(|f| !f.starts_with("tmp/") && f != "index/changed.json")
        .map(|f| {
            let bytes = std::fs::read(cache.join(&f)).unwrap();
            (f, hex(&sha2::Sha256::digest(&bytes)))
        })
        .collect()
}

fn hex(bytes: &[u8]) -> String {
    tfmirror::verify::hex(bytes)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_export_import_and_tampered_bundles() {
    let (setup, origin, archives) = origin_with_providers().await;
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let manifest = write_manifest(dir);

    // Connected side: sync selects widget 1.0.0 and 1.1.0 (two platforms
    // each) and gadget 0.3.1 (one): five archives.
    let first = run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    assert!(
        first
            .stdout
            .contains("providers: 2, versions: 3, archives: 5 (5 downloaded, 0 already cached)"),
        "{}",
        first.stdout
    );
    assert_eq!(archive_hits(&origin, &archives), 5);
    // Idempotent: a second run transfers nothing.
    let second = run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    assert!(
        second
            .stdout
            .contains("(0 downloaded, 5 already cached), bytes downloaded: 0 B"),
        "{}",
        second.stdout
    );
    assert_eq!(archive_hits(&origin, &archives), 5);

    let bundle = dir.join("providers.bundle");
    let gadget_only = dir.join("gadget.bundle");
    let out = run_ok(
        dir,
        &["export", "--config", s(&connected), "--output", s(&bundle)],
    )
    .await;
    assert!(
        out.stdout.contains("3 versions, 5 archives"),
        "{}",
        out.stdout
    );
    let gadget = format!("{HOST}/acme/gadget");
    run_ok(
        dir,
        &[
            "export",
            "--config",
            s(&connected),
            "--output",
            s(&gadget_only),
            "--provider",
            &gadget,
        ],
    )
    .await;

    // Inside the site: a cache that holds gadget already. Each bad bundle
    // goes to a fresh one of those.
    let holding_gadget = |name: &'static str| {
        let site = site_config(dir, name, "");
        let gadget_only = gadget_only.clone();
        async move {
            run_ok(dir, &["import", "--config", s(&site), s(&gadget_only)]).await;
            let cache = dir.join(format!("{name}-cache"));
            let before = snapshot(&cache);
            assert!(before
                .keys()
                .any(|f| f.ends_with("terraform-provider-gadget_0.3.1_linux_amd64.zip")));
            (site, cache, before)
        }
    };

    // Altered, unsigned and truncated bundles: each refused with its
    // reason; nothing the site held changes, and nothing bad gets in.
    let entries = bundle_entries(&bundle);
    let altered_zip = "terraform-provider-widget_1.1.0_linux_amd64.zip";
    let mut altered = entries.clone();
    let zip = altered
        .iter_mut()
        .find(|(n, _)| n.ends_with(altered_zip))
        .unwrap();
    let at = zip.1.len() / 2;
    zip.1[at] ^= 0x20;
    let mut unsigned = entries.clone();
    let record = unsigned
        .iter_mut()
        .find(|(n, _)| n.ends_with("/widget/1.0.0/version.json"))
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&record.1).unwrap();
    json["sums"][0]["signature"] = serde_json::json!("");
    record.1 = serde_json::to_vec(&json).unwrap();
    let whole = std::fs::read(&bundle).unwrap();
    let cases = [
        ("altered", format!("{altered_zip}: its SHA-256")),
        ("unsigned", format!("REJECTED {HOST}/acme/widget 1.0.0: the SHA256SUMS signature is not a valid OpenPGP signature")),
        ("truncated", "truncated".to_string()),
    ];
    for (name, says) in cases {
        let path = dir.join(format!("{name}.bundle"));
        match name {
            "altered" => write_bundle(&path, &altered),
            "unsigned" => write_bundle(&path, &unsigned),
            _ => std::fs::write(&path, &whole[..whole.len() * 3 / 5]).unwrap(),
        }
        let (site, cache, before) = holding_gadget(name).await;
        let out = run_tfmirror(dir, &["import", "--config", s(&site), s(&path)]).await;
        assert!(!out.ok, "{name} bundle accepted:\n{}", out.stdout);
        assert!(out.stdout.contains(&says), "{name}:\n{}", out.stdout);
        assert!(
            out.stderr.contains("rejected; nothing else was changed"),
            "{}",
            out.stderr
        );
        let now = snapshot(&cache);
        for (file, sum) in &before {
            assert_eq!(now.get(file), Some(sum), "{name}: {file} changed");
        }
        match name {
            "altered" => assert!(
                !now.keys().any(|f| f.ends_with(altered_zip)),
                "the altered archive got in"
            ),
            "unsigned" => assert!(
                !now.keys().any(|f| f.contains("/widget/1.0.0/")),
                "the unsigned version got in"
            ),
            _ => {}
        }
    }

    // The whole bundle imports, and importing it again changes nothing.
    let site = site_config(dir, "site", "");
    let site_cache = dir.join("site-cache");
    run_ok(dir, &["import", "--config", s(&site), s(&bundle)]).await;
    let full = snapshot(&site_cache);
    let again = run_ok(dir, &["import", "--config", s(&site), s(&bundle)]).await;
    assert!(
        again
            .stdout
            .contains("0 archives stored, 5 already cached, 0 rejected"),
        "{}",
        again.stdout
    );
    assert_eq!(snapshot(&site_cache), full);
    for name in archives.keys().filter(|n| !n.contains("2.0.0")) {
        let (kind, rest) = name
            .trim_start_matches("terraform-provider-")
            .split_once('_')
            .unwrap();
        let version = rest.split('_').next().unwrap();
        let stored = site_cache.join(format!("providers/{HOST}/acme/{kind}/{version}/{name}"));
        assert_eq!(std::fs::read(&stored).unwrap(), archives[name], "{name}");
    }
}

/// Offline, the mirror serves what it holds and answers 404 for the rest,
/// and never connects to the origin, which is up and would answer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_offline_mirror_opens_no_connection() {
    let (setup, origin, archives) = origin_with_providers().await;
    let mut config = setup.config(&origin, &[], &[HOST]);
    let online = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&online.ca_file);
    let zip = "terraform-provider-gadget_0.3.1_linux_amd64.zip";
    assert_eq!(
        c.get(&online.url(&format!("/{HOST}/acme/gadget/{zip}")))
            .await
            .status,
        StatusCode::OK
    );
    online.stop().await;

    config.upstream.offline = true;
    let before = origin.requests.load(std::sync::atomic::Ordering::SeqCst);
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let url = |p: &str| m.url(&format!("/{HOST}/acme/{p}"));
    assert_eq!(
        c.get(&url("gadget/index.json")).await.status,
        StatusCode::OK
    );
    assert_eq!(
        c.get(&url("gadget/0.3.1.json")).await.status,
        StatusCode::OK
    );
    let served = c.get(&url(&format!("gadget/{zip}"))).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(&served.body[..], &archives[zip][..]);
    for missing in [
        "widget/index.json".to_string(),
        "widget/1.0.0.json".to_string(),
        "widget/terraform-provider-widget_1.0.0_linux_amd64.zip".to_string(),
    ] {
        let a = c.get(&url(&missing)).await;
        assert_eq!(a.status, StatusCode::NOT_FOUND, "{missing}");
        assert!(a.error_text().contains("offline"), "{}", a.error_text());
    }
    assert_eq!(
        origin.requests.load(std::sync::atomic::Ordering::SeqCst),
        before,
        "the offline mirror contacted the origin"
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_from_a_configuration_directory_and_failures() {
    let (setup, origin, _archives) = origin_with_providers().await;
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let work = dir.join("infra");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("main.tf"),
        format!(
            "terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"{HOST}/acme/widget\"\n      version = \"~> 1.0\"\n    }}\n    gadget = {{\n      source = \"{HOST}/acme/gadget\"\n    }}\n  }}\n}}\n"
        ),
    )
    .unwrap();
    std::fs::write(
        work.join(".terraform.lock.hcl"),
        format!("provider \"{HOST}/acme/gadget\" {{\n  version = \"0.3.1\"\n  hashes = []\n}}\n"),
    )
    .unwrap();
    run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--from",
            s(&work),
            "--platform",
            "linux_amd64",
        ],
    )
    .await;
    // The newest widget that meets ~> 1.0, and the gadget the lock file pins.
    let zips: Vec<String> = files_below(&setup.cache_dir())
        .into_iter()
        .filter(|f| f.ends_with(".zip"))
        .map(|f| f.rsplit('/').next().unwrap().to_string())
        .collect();
    assert_eq!(
        zips,
        [
            "terraform-provider-gadget_0.3.1_linux_amd64.zip",
            "terraform-provider-widget_1.1.0_linux_amd64.zip"
        ]
    );

    // Anything that cannot be had is reported, and the exit code says so.
    let bad = dir.join("bad.toml");
    std::fs::write(
        &bad,
        format!("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"{HOST}/acme/nothing\"\n[[provider]]\nsource = \"{HOST}/acme/widget\"\nversions = \">= 9.0\"\n[[provider]]\nsource = \"{HOST}/acme/gadget\"\nplatforms = [\"windows_arm64\"]\n"),
    )
    .unwrap();
    let out = run_tfmirror(
        dir,
        &["sync", "--config", s(&connected), "--manifest", s(&bad)],
    )
    .await;
    assert!(!out.ok);
    assert!(out.stdout.contains("failures: 3"), "{}", out.stdout);
    assert!(out.stdout.contains("acme/nothing"), "{}", out.stdout);
    assert!(
        out.stdout.contains("no version meets \">= 9.0\""),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("windows_arm64: the origin offers no verified package"),
        "{}",
        out.stdout
    );
}

/// `kill -9` in the middle of a sync: the next run fetches only what the
/// first did not finish, and the cache ends up complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_sync_resumes() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let versions = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];
    let published = publish_big(&origin, &signer, "big", &versions, 256 * 1024);
    origin.set_archive_delay(Duration::from_millis(700));
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let manifest = dir.join("big.toml");
    std::fs::write(
        &manifest,
        format!("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"{HOST}/acme/big\"\n"),
    )
    .unwrap();
    let zips = |cache: &Path| {
        files_below(cache)
            .into_iter()
            .filter(|f| f.ends_with(".zip"))
            .count()
    };
    let mut cmd = tfmirror(dir);
    cmd.args([
        "sync",
        "--config",
        s(&connected),
        "--manifest",
        s(&manifest),
        "--jobs",
        "1",
    ])
    .stdout(std::process::Stdio::null())
    .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    wait_until(
        "sync to store its first archive",
        Duration::from_secs(10),
        || zips(&setup.cache_dir()) >= 1,
    )
    .await;
    child.kill().unwrap();
    child.wait().unwrap();
    let kept = zips(&setup.cache_dir());
    assert!(
        (1..versions.len()).contains(&kept),
        "{kept} archives before the kill"
    );

    let out = run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    let expect = format!(
        "archives: 4 ({} downloaded, {kept} already cached)",
        versions.len() - kept
    );
    assert!(out.stdout.contains(&expect), "{expect}:\n{}", out.stdout);
    for v in versions {
        let name = format!("terraform-provider-big_{v}_linux_amd64.zip");
        let path = setup
            .cache_dir()
            .join(format!("providers/{HOST}/acme/big/{v}/{name}"));
        assert_eq!(std::fs::read(path).unwrap(), published[v], "{v}");
    }
}

/// A static directory (`export --static`) holds the protocol's documents as
/// the daemon serves them; `import --static` reads it back, as unsigned
/// imports that are served only when allowed, and refuses archives whose
/// hashes the directory does not record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn static_directories_both_ways() {
    let (setup, origin, archives) = origin_with_providers().await;
    let dir = setup.dir.path();
    let config = setup.config(&origin, &[], &[HOST]);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    for p in ["linux_amd64", "darwin_arm64"] {
        let zip = format!("terraform-provider-widget_1.1.0_{p}.zip");
        assert_eq!(
            c.get(&m.url(&format!("/{HOST}/acme/widget/{zip}")))
                .await
                .status,
            StatusCode::OK
        );
    }
    let served = c
        .get(&m.url(&format!("/{HOST}/acme/widget/1.1.0.json")))
        .await
        .json();
    m.stop().await;

    let config_path = dir.join("connected.toml");
    std::fs::write(
        &config_path,
        format!("[cache]\ndir = \"{}\"\n", setup.cache_dir().display()),
    )
    .unwrap();
    let snapshot_dir = dir.join("snapshot");
    run_ok(
        dir,
        &[
            "export",
            "--config",
            s(&config_path),
            "--static",
            s(&snapshot_dir),
        ],
    )
    .await;
    let provider_dir = snapshot_dir.join(format!("{HOST}/acme/widget"));
    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(provider_dir.join("1.1.0.json")).unwrap()).unwrap();
    assert_eq!(doc, served, "the static document differs from the daemon's");
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(provider_dir.join("index.json")).unwrap()).unwrap();
    assert_eq!(index, serde_json::json!({"versions": {"1.1.0": {}}}));
    for p in ["linux_amd64", "darwin_arm64"] {
        let zip = format!("terraform-provider-widget_1.1.0_{p}.zip");
        assert_eq!(
            std::fs::read(provider_dir.join(&zip)).unwrap(),
            archives[&zip]
        );
    }

    // Back in, into another cache; one archive was altered in the meantime.
    let altered = provider_dir.join("terraform-provider-widget_1.1.0_darwin_arm64.zip");
    let mut bytes = std::fs::read(&altered).unwrap();
    std::fs::remove_file(&altered).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 1;
    std::fs::write(&altered, bytes).unwrap();
    // The lenient site names the directory relative to the working
    // directory, as an operator types it.
    for (name, extra) in [("strict", ""), ("lenient", "allow_unsigned_imports = true")] {
        let site = site_config(dir, name, extra);
        let out = if name == "strict" {
            run_tfmirror(
                dir,
                &["import", "--config", s(&site), "--static", s(&snapshot_dir)],
            )
            .await
        } else {
            let mut cmd = tfmirror(dir);
            cmd.current_dir(dir)
                .args(["import", "--config", s(&site), "--static", "snapshot"]);
            let out = cmd.output().unwrap();
            Ran {
                ok: out.status.success(),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            }
        };
        assert!(!out.stdout.contains("absolute path"), "{}", out.stdout);
        assert!(!out.ok, "{}", out.stdout);
        assert!(
            out.stdout
                .contains("REJECTED registry.origin.test/acme/widget 1.1.0 darwin_arm64"),
            "{}",
            out.stdout
        );
        assert!(
            out.stdout
                .contains("1 versions verified, 1 archives stored"),
            "{}",
            out.stdout
        );
        assert!(
            out.stderr.contains("the rest was imported"),
            "{}",
            out.stderr
        );
    }
    for (name, allowed) in [("strict", false), ("lenient", true)] {
        let mut site = config.clone();
        site.cache.dir = dir.join(format!("{name}-cache"));
        site.cache.allow_unsigned_imports = allowed;
        site.upstream.offline = true;
        let m = RunningMirror::start(site).await;
        let c = Client::trusting(&m.ca_file);
        let doc = c
            .get(&m.url(&format!("/{HOST}/acme/widget/1.1.0.json")))
            .await;
        let zip = "terraform-provider-widget_1.1.0_linux_amd64.zip";
        let archive = c.get(&m.url(&format!("/{HOST}/acme/widget/{zip}"))).await;
        if allowed {
            assert_eq!(doc.status, StatusCode::OK);
            assert_eq!(doc.json()["archives"].as_object().unwrap().len(), 1);
            assert_eq!(&archive.body[..], &archives[zip][..]);
        } else {
            assert_eq!(doc.status, StatusCode::NOT_FOUND, "{}", doc.error_text());
        }
        m.stop().await;
    }
}

/// Module packages cross the gap with their pins, and an import checks
/// each package against its pin: altered bytes, and a package repacked with
/// other content under a pin edited to match its bytes, are refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_packages_are_checked_against_their_pins_on_import() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let git_root = setup.dir.path().join("git");
    let repo = Repo::new(&git_root, "net");
    repo.commit(&[("main.tf", "# net\n"), ("sub/main.tf", "# sub\n")], "v1");
    repo.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let manifest = dir.join("modules.toml");
    std::fs::write(
        &manifest,
        format!("[[module]]\nsource = \"{HOST}/acme/net/aws\"\n"),
    )
    .unwrap();
    run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    let bundle = dir.join("modules.bundle");
    run_ok(
        dir,
        &["export", "--config", s(&connected), "--output", s(&bundle)],
    )
    .await;
    let entries = bundle_entries(&bundle);
    let base = format!("tfmirror-bundle/modules/{HOST}/acme/net/aws/1.0.0");
    let find = |leaf: &str| {
        entries
            .iter()
            .position(|(n, _)| *n == format!("{base}/{leaf}"))
            .unwrap()
    };
    let (pin_at, package_at) = (find("module.json"), find("package.tar.gz"));

    // Other content, packed as tfmirror packs, under a pin whose checksum
    // and size are edited to match: the tree hash gives it away.
    let other = tempfile::tempdir().unwrap();
    std::fs::write(other.path().join("main.tf"), "# planted\n").unwrap();
    let mut repacked = tempfile::tempfile().unwrap();
    let packed = tfmirror::module_source::tree::pack(other.path(), &mut repacked, 1 << 20).unwrap();
    std::io::Seek::rewind(&mut repacked).unwrap();
    let mut repacked_bytes = Vec::new();
    std::io::Read::read_to_end(&mut repacked, &mut repacked_bytes).unwrap();
    let mut pin: serde_json::Value = serde_json::from_slice(&entries[pin_at].1).unwrap();
    pin["sha256"] = packed.sha256.clone().into();
    pin["size"] = packed.size.into();
    let mut flipped = entries[package_at].1.clone();
    let middle = flipped.len() / 2;
    flipped[middle] ^= 1;

    for (name, pin_bytes, package_bytes, says) in [
        (
            "flipped",
            entries[pin_at].1.clone(),
            flipped,
            "does not match its pin",
        ),
        (
            "repacked",
            serde_json::to_vec(&pin).unwrap(),
            repacked_bytes,
            "its tree hashes to",
        ),
    ] {
        let mut altered = entries.clone();
        altered[pin_at].1 = pin_bytes;
        altered[package_at].1 = package_bytes;
        let path = dir.join(format!("{name}.bundle"));
        write_bundle(&path, &altered);
        let site = site_config(dir, name, "");
        let out = run_tfmirror(dir, &["import", "--config", s(&site), s(&path)]).await;
        assert!(!out.ok, "{name}: {}", out.stdout);
        assert!(out.stdout.contains(says), "{name}: {}", out.stdout);
        let site_cache = dir.join(format!("{name}-cache"));
        assert!(
            !files_below(&site_cache)
                .iter()
                .any(|f| f.starts_with("modules/")),
            "{name}"
        );
    }

    // The bundle as exported imports, with the pin the connected side wrote.
    let site = site_config(dir, "site", "");
    let out = run_ok(dir, &["import", "--config", s(&site), s(&bundle)]).await;
    assert!(
        out.stdout.contains("1 module versions checked"),
        "{}",
        out.stdout
    );
    let site_pin = dir.join(format!(
        "site-cache/modules/{HOST}/acme/net/aws/1.0.0/module.json"
    ));
    assert_eq!(std::fs::read(site_pin).unwrap(), entries[pin_at].1);
}

/// An origin-reported `h1:` that the imported archive contradicts is
/// dropped from the version's record, also when an earlier, interrupted
/// import had stored the record before the archive.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_h1_the_imported_archive_contradicts_is_dropped() {
    let (setup, origin, _archives) = origin_with_providers().await;
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let manifest = write_manifest(dir);
    run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    let bundle = dir.join("all.tar");
    run_ok(
        dir,
        &["export", "--config", s(&connected), "--output", s(&bundle)],
    )
    .await;
    let wrong = "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=";
    let mut entries = bundle_entries(&bundle);
    let record = entries
        .iter_mut()
        .find(|(n, _)| n.ends_with("/widget/1.0.0/version.json"))
        .unwrap();
    let mut json: serde_json::Value = serde_json::from_slice(&record.1).unwrap();
    json["packages"]["linux_amd64"]["reported_h1"] = wrong.into();
    record.1 = serde_json::to_vec(&json).unwrap();
    let contradicted = dir.join("contradicted.tar");
    write_bundle(&contradicted, &entries);
    // The records alone, as an import killed before the archives leaves
    // them.
    let records_only: Vec<_> = entries
        .iter()
        .filter(|(n, _)| !n.ends_with(".zip"))
        .cloned()
        .collect();
    let first = dir.join("records-only.tar");
    write_bundle(&first, &records_only);
    let reported = |cache: &Path| {
        let path = cache.join(format!("providers/{HOST}/acme/widget/1.0.0/version.json"));
        let record: serde_json::Value =
            serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
        record["packages"]["linux_amd64"]["reported_h1"].clone()
    };

    for (name, earlier) in [("whole", None), ("resumed", Some(&first))] {
        let site = site_config(dir, name, "");
        let cache = dir.join(format!("{name}-cache"));
        if let Some(earlier) = earlier {
            run_tfmirror(dir, &["import", "--config", s(&site), s(earlier)]).await;
            assert_eq!(reported(&cache), wrong, "{name}");
        }
        run_ok(dir, &["import", "--config", s(&site), s(&contradicted)]).await;
        assert!(reported(&cache).is_null(), "{name}: {}", reported(&cache));
    }
}
