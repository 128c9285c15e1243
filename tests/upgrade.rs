//! Upgrades and downgrades: what every earlier release wrote
//! (`tests/fixtures/upgrade/<version>/`, made by that release's
//! `scripts/make-upgrade-fixtures`) is verified, served offline to the real
//! Terraform CLI, evicted and exported by this build, on disk and on a
//! bucket; what a newer release wrote (a cache, a bundle, an inventory in
//! a newer format) is refused with a message naming both versions, and
//! nothing is changed.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::daemon::*;
use common::seaweed::Seaweed;
use common::*;
use http::StatusCode;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The fixture directory of every earlier release, oldest first.
fn releases() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/upgrade");
    let mut out: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.join("cache").is_dir())
        .collect();
    out.sort_by_key(|p| semver::Version::parse(p.file_name().unwrap().to_str().unwrap()).unwrap());
    assert!(!out.is_empty(), "no upgrade fixtures in {}", root.display());
    out
}

/// An offline site's configuration for the release of `fixtures` on `cache` (with `extra`, such as a
/// bucket's settings), serving both fixture registries and the Terraform
/// CLI releases signed by the fixtures' release key.
fn site(fixtures: &Path, dir: &Path, name: &str, cache: &Path, extra: &str) -> PathBuf {
    let key = fixtures.join("release-key.asc");
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "{data}"
[cache]
dir = "{cache}"
[upstream]
offline = true
allowed_hosts = ["registry.origin.test", "registry.opentofu.org"]
[upstream.hosts."registry.opentofu.org"]
unsigned = "checked"
[releases]
products = ["terraform"]
[releases.terraform]
key_files = ["{key}"]
{extra}
"#,
        key = key.display(),
        data = dir.join(format!("{name}-data")).display(),
        cache = cache.display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// How many archives, module packages and CLI release files the release's
/// cache holds.
fn held(fixtures: &Path) -> usize {
    files_below(&fixtures.join("cache"))
        .iter()
        .filter(|f| f.ends_with(".zip") || f.ends_with("/package.tar.gz"))
        .count()
}

/// What `verify` says of a whole cache of the release.
fn all_verified(fixtures: &Path) -> String {
    format!(
        "checked {} archives, module packages and release files, quarantined 0",
        held(fixtures)
    )
}

/// Runs a command that must end (a refused start ends at once).
async fn ended(home: &Path, args: &[&str]) -> Ran {
    tokio::time::timeout(Duration::from_secs(60), run_tfmirror(home, args))
        .await
        .unwrap_or_else(|_| panic!("tfmirror {args:?} did not end"))
}

/// The configuration the real CLI initialises: both providers and the
/// registry module (which calls another) from the fixtures.
const ROOT_MODULE: &str = r#"
terraform {
  required_providers {
    widget = {
      source  = "registry.origin.test/acme/widget"
      version = "1.1.0"
    }
    gadget = {
      source  = "registry.opentofu.org/acme/gadget"
      version = "0.2.0"
    }
  }
}

module "net" {
  source  = "registry.origin.test/acme/net/aws"
  version = "1.0.0"
}
"#;

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_releases_disk_cache_is_verified_served_evicted_and_exported() {
    let clis = common::terraform::clis();
    let platform = common::terraform::platform();
    for fixtures in releases() {
        let release = fixtures.file_name().unwrap().to_str().unwrap().to_owned();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let cache = dir.join("cache");
        copy_tree(&fixtures.join("cache"), &cache, &[]);
        let config = site(&fixtures, dir, "site", &cache, "");

        let verified = run_ok(dir, &["verify", "--config", s(&config)]).await;
        assert!(
            verified.stdout.contains(&all_verified(&fixtures)),
            "{release}:\n{}",
            verified.stdout
        );

        // The real CLI, with only this build serving that cache to reach.
        let mut serve = tfmirror(dir);
        serve.args(["serve", "--config", s(&config)]);
        let daemon = Daemon::start(serve);
        let ca = dir.join("site-data/tls/ca.pem");
        for (i, (version, bin)) in clis.iter().enumerate() {
            let work = dir.join(format!("work-{i}"));
            std::fs::create_dir_all(&work).unwrap();
            std::fs::write(work.join("main.tf"), ROOT_MODULE).unwrap();
            let url = daemon.url.trim_end_matches('/').to_owned();
            let cli_config = format!(
                "{}\nhost \"registry.origin.test\" {{\n  services = {{\n    \"modules.v1\" = \"{url}/v1/modules/registry.origin.test/\"\n  }}\n}}\n",
                common::terraform::network_mirror(&url)
            );
            let (ok, out) = common::terraform::init(bin, &work, &cli_config, &ca);
            assert!(
                ok,
                "{release}: {version} init failed:\n{out}\n{}",
                daemon.log
            );
            for (host, kind, v) in [
                ("registry.origin.test", "widget", "1.1.0"),
                ("registry.opentofu.org", "gadget", "0.2.0"),
            ] {
                let installed = work.join(format!(
                    ".terraform/providers/{host}/acme/{kind}/{v}/{platform}"
                ));
                assert!(
                    installed.is_dir(),
                    "{release}: {version} did not install {kind}"
                );
            }
        }
        daemon.signal("TERM");
        let (status, _) = daemon.wait().await;
        assert!(
            status.success(),
            "{release}: the daemon did not stop cleanly"
        );

        // What the site holds, against the release's inventory: nothing to
        // carry. Then the cache exported whole, imported into a fresh one.
        let nothing = dir.join("nothing.tar");
        let delta = run_ok(
            dir,
            &[
                "export",
                "--config",
                s(&config),
                "--output",
                s(&nothing),
                "--missing-from",
                s(&fixtures.join("inventory.json")),
            ],
        )
        .await;
        assert!(
            delta.stdout.contains(" 0 archives"),
            "{release}:\n{}",
            delta.stdout
        );
        let bundle = dir.join("again.tar");
        run_ok(
            dir,
            &["export", "--config", s(&config), "--output", s(&bundle)],
        )
        .await;
        let fresh = site(&fixtures, dir, "fresh", &dir.join("fresh-cache"), "");
        let imported = run_ok(dir, &["import", "--config", s(&fresh), s(&bundle)]).await;
        assert!(
            imported
                .stdout
                .contains(&format!("{} archives stored", held(&fixtures))),
            "{release}:\n{}",
            imported.stdout
        );

        // The release's own bundle imports into a fresh cache, which then
        // verifies.
        let old = site(&fixtures, dir, "old", &dir.join("old-cache"), "");
        let imported = run_ok(
            dir,
            &[
                "import",
                "--config",
                s(&old),
                s(&fixtures.join("bundle.tar")),
            ],
        )
        .await;
        assert!(
            imported
                .stdout
                .contains(&format!("{} archives stored", held(&fixtures))),
            "{release}:\n{}",
            imported.stdout
        );
        run_ok(dir, &["verify", "--config", s(&old)]).await;

        // Eviction down to one kilobyte, then the rest still verifies.
        let gc = run_ok(dir, &["gc", "--config", s(&config), "--max-size", "1KiB"]).await;
        assert!(gc.stdout.contains("evicted"), "{release}:\n{}", gc.stdout);
        let left = run_ok(dir, &["verify", "--config", s(&config)]).await;
        assert!(
            left.stdout.contains(", quarantined 0"),
            "{release}:\n{}",
            left.stdout
        );
    }
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_earlier_releases_bucket_is_verified_and_served_and_a_newer_one_refused() {
    let seaweed = Seaweed::start().await;
    // One bucket, a prefix for each release: SeaweedFS gives each bucket
    // volumes of its own, and has few.
    let bucket = "upgrade";
    seaweed.create_bucket(bucket).await;
    let store = seaweed.object_store(bucket);
    for fixtures in releases() {
        let release = fixtures.file_name().unwrap().to_str().unwrap().to_owned();
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path();
        let prefix = format!("r-{}", release.replace('.', "-"));
        let objects = fixtures.join("bucket");
        for rel in files_below(&objects) {
            let bytes = std::fs::read(objects.join(&rel)).unwrap();
            object_store::ObjectStoreExt::put(
                &store,
                &format!("{prefix}/{rel}").as_str().into(),
                bytes.into(),
            )
            .await
            .unwrap();
        }
        let config = site(
            &fixtures,
            dir,
            "site",
            &dir.join("cache"),
            &seaweed
                .storage_toml(bucket, dir)
                .replace("prefix = \"mirror\"", &format!("prefix = \"{prefix}\"")),
        );
        let verified = run_ok(dir, &["verify", "--config", s(&config)]).await;
        assert!(
            verified.stdout.contains(&all_verified(&fixtures)),
            "{}",
            verified.stdout
        );

        let mut serve = tfmirror(dir);
        serve.args(["serve", "--config", s(&config)]);
        let daemon = Daemon::start(serve);
        let client = Client::trusting_when_ready(&dir.join("site-data/tls/ca.pem")).await;
        let name = "terraform-provider-widget_1.1.0_linux_amd64.zip";
        let answer = client
            .get(&format!(
                "{}registry.origin.test/acme/widget/1.1.0.json",
                daemon.url
            ))
            .await;
        assert_eq!(answer.status, StatusCode::OK, "{release}");
        let url = answer.json()["archives"]["linux_amd64"]["url"]
            .as_str()
            .unwrap()
            .to_owned();
        let zip = client
            .get(&format!(
                "{}registry.origin.test/acme/widget/{url}",
                daemon.url
            ))
            .await;
        assert_eq!(zip.status, StatusCode::OK, "{release}");
        let held = objects.join(format!(
            "providers/registry.origin.test/acme/widget/1.1.0/{name}"
        ));
        assert_eq!(zip.body, std::fs::read(held).unwrap(), "{release}");
        drop(daemon);

        // A newer release's marker on the bucket: refused, and kept.
        let marker = object_store::path::Path::from(format!("{prefix}/tfmirror-cache.json"));
        let newer = br#"{"format": 2, "written_by": "99.0.0"}"#;
        object_store::ObjectStoreExt::put(&store, &marker, newer.to_vec().into())
            .await
            .unwrap();
        let refused = ended(dir, &["serve", "--config", s(&config)]).await;
        assert!(!refused.ok);
        assert!(
            refused
                .stderr
                .contains("is in cache format 2, written by tfmirror 99.0.0"),
            "{}",
            refused.stderr
        );
        let kept = object_store::ObjectStoreExt::get(&store, &marker)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        assert_eq!(&kept[..], &newer[..]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_newer_release_wrote_is_refused_by_name_and_left_as_it_is() {
    let fixtures = releases().pop().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let cache = dir.join("cache");
    copy_tree(&fixtures.join("cache"), &cache, &[]);
    let marker = cache.join("tfmirror-cache.json");
    std::fs::write(&marker, r#"{"format": 2, "written_by": "99.0.0"}"#).unwrap();
    let before = files_below(&cache);
    let config = site(&fixtures, dir, "site", &cache, "");
    let says = "is in cache format 2, written by tfmirror 99.0.0; this tfmirror";
    for args in [
        vec!["serve", "--config", s(&config)],
        vec!["verify", "--config", s(&config)],
        vec!["ls", "--config", s(&config)],
        vec!["gc", "--config", s(&config), "--max-size", "1KiB"],
        vec!["export", "--config", s(&config), "--output", "x.tar"],
        vec!["inventory", "--config", s(&config), "--output", "x.json"],
    ] {
        let refused = ended(dir, &args).await;
        assert!(!refused.ok, "{args:?} accepted a newer cache");
        assert!(
            refused.stderr.contains(says),
            "{args:?}:\n{}",
            refused.stderr
        );
        assert!(
            refused.stderr.contains("use tfmirror 99.0.0 or newer"),
            "{}",
            refused.stderr
        );
    }
    assert_eq!(
        files_below(&cache),
        before,
        "a refused command changed the cache"
    );

    // A cache from before caches were marked is read, and marked.
    std::fs::remove_file(&marker).unwrap();
    run_ok(dir, &["verify", "--config", s(&config)]).await;
    let rewritten: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&marker).unwrap()).unwrap();
    assert_eq!(rewritten["format"], 1);

    // A bundle in a newer format, with a field this build does not know:
    // refused for being newer, and the site's cache is left empty.
    let mut entries = bundle_entries(&fixtures.join("bundle.tar"));
    let (_, manifest) = &mut entries[0];
    let mut json: serde_json::Value = serde_json::from_slice(manifest).unwrap();
    json["format"] = 5.into();
    json["written_by"] = "99.0.0".into();
    json["signed_manifest"] = "…".into();
    *manifest = serde_json::to_vec(&json).unwrap();
    let newer = dir.join("newer.tar");
    write_bundle(&newer, &entries);
    let empty = site(&fixtures, dir, "empty", &dir.join("empty-cache"), "");
    let refused = ended(dir, &["import", "--config", s(&empty), s(&newer)]).await;
    assert!(!refused.ok);
    assert!(
        refused
            .stderr
            .contains("is in bundle format 5, written by tfmirror 99.0.0; this tfmirror"),
        "{}",
        refused.stderr
    );
    assert!(
        !files_below(&dir.join("empty-cache"))
            .iter()
            .any(|f| f.ends_with(".zip")),
        "a refused bundle left archives"
    );

    // A bundle of the format before the first release (no `covers`, no
    // writer) still imports.
    json["format"] = 1.into();
    for field in ["written_by", "signed_manifest", "covers"] {
        json.as_object_mut().unwrap().remove(field);
    }
    entries[0].1 = serde_json::to_vec(&json).unwrap();
    let older = dir.join("older.tar");
    write_bundle(&older, &entries);
    let imported = run_ok(dir, &["import", "--config", s(&empty), s(&older)]).await;
    assert!(
        imported
            .stdout
            .contains(&format!("{} archives stored", held(&fixtures))),
        "{}",
        imported.stdout
    );

    // An inventory in a newer format.
    let inventory = dir.join("newer.json");
    std::fs::write(&inventory, r#"{"tfmirror_inventory": 4, "digests": {}}"#).unwrap();
    let refused = ended(
        dir,
        &[
            "export",
            "--config",
            s(&config),
            "--output",
            "x.tar",
            "--missing-from",
            s(&inventory),
        ],
    )
    .await;
    assert!(!refused.ok);
    assert!(
        refused
            .stderr
            .contains("is in inventory format 4; this tfmirror"),
        "{}",
        refused.stderr
    );
}
