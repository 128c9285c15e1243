//! What this release writes, kept as fixtures for every later build to
//! read (`tests/upgrade.rs`). Run at each release by
//! `scripts/make-upgrade-fixtures`, which writes
//! `tests/fixtures/upgrade/<version>/`:
//!
//! - `cache/`: a disk cache filled by `sync` from fake origins: signed
//!   provider versions, a keyless one with its pin, two registry modules
//!   from git with their pins, a Terraform CLI release, and policy
//!   decisions made with `approve` and `deny`;
//! - `bucket/`: the same, synced into an S3-compatible bucket, as the
//!   bucket's objects (one file per key below the prefix `mirror`);
//! - `bundle.tar`: `export` of the disk cache;
//! - `inventory.json`: `inventory` of the disk cache;
//! - `release-key.asc`: the key that signed the CLI release's checksums;
//! - `FIXTURES.md`: which build wrote them, and what they hold.
//!
//! Not a test: `cargo test` leaves it out (`test = false`), and it asserts
//! nothing but that each step succeeded.

#[path = "../common/mod.rs"]
mod common;

use std::path::{Path, PathBuf};

use common::daemon::{run_ok, run_tfmirror};
use common::releases::{publish_terraform, publish_terraform_index, zip_of};
use common::seaweed::Seaweed;
use common::*;

/// The sync manifest: everything the fixtures hold.
const MANIFEST: &str = r#"
[[provider]]
source = "registry.origin.test/acme/widget"
versions = ">= 1.0.0"
platforms = ["linux_amd64"]

[[provider]]
source = "registry.origin.test/acme/widget"
versions = "1.1.0"
platforms = ["linux_arm64", "darwin_arm64"]

[[provider]]
source = "registry.opentofu.org/acme/gadget"
versions = "0.2.0"
platforms = ["linux_amd64", "linux_arm64"]

[[module]]
source = "registry.origin.test/acme/net/aws"
versions = "1.0.0"

[[release]]
product = "terraform"
versions = "1.5.7"
platforms = ["linux_amd64"]
"#;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The mirror's configuration: the signed registry with its modules and
/// the CLI release on `signed`, the keyless OpenTofu-shaped registry on
/// `keyless`; `storage` is appended.
fn config(setup: &Setup, signed: &FakeOrigin, keyless: &FakeOrigin, storage: &str) -> PathBuf {
    let dir = setup.dir.path();
    let key = dir.join("release-key.asc");
    let base = signed.file_url("x");
    let base = base.trim_end_matches("/files/x");
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "{data}"
[cache]
dir = "{cache}"
[modules]
git = "{git}"
[upstream]
allowed_hosts = []
ca_file = "{ca}"
allow_private_addresses = true
[upstream.hosts."registry.origin.test"]
services = {{ "providers.v1" = "{api}", "modules.v1" = "{modules}" }}
[upstream.hosts."registry.opentofu.org"]
services = {{ "providers.v1" = "{keyless_api}" }}
unsigned = "checked"
[releases]
products = ["terraform"]
[releases.terraform]
list_url = "{base}/files/index.json"
download_url = "{base}/files/{{artifact}}"
key_files = ["{key}"]
{storage}
"#,
        data = dir.join("data").display(),
        cache = setup.cache_dir().display(),
        git = git_program().display(),
        ca = dir.join("origin-ca.pem").display(),
        api = signed.providers_url(),
        modules = signed.modules_url(),
        keyless_api = keyless.providers_url(),
        key = key.display(),
    );
    let path = dir.join("tfmirror.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// Publishes everything [`MANIFEST`] asks for.
async fn origins(setup: &Setup) -> (FakeOrigin, FakeOrigin) {
    let signed = FakeOrigin::start(&setup.ca).await;
    publish_net_and_sub(setup, &signed);
    let acme = Signer::new("acme");
    signed.publish(
        "acme",
        "widget",
        "1.1.0",
        &["linux_amd64", "linux_arm64", "darwin_arm64"],
        &acme,
        &[&acme],
    );
    let release_key = Signer::new("HashiCorp Security");
    std::fs::write(
        setup.dir.path().join("release-key.asc"),
        release_key.public_armored(),
    )
    .unwrap();
    let cli = zip_of("terraform", b"#!/bin/sh\necho 'Terraform v1.5.7'\n");
    publish_terraform(&signed, &release_key, "1.5.7", &[("linux_amd64", cli)]);
    publish_terraform_index(&signed, &["1.5.7"]);

    let keyless = FakeOrigin::start(&setup.ca).await;
    keyless.use_shape("opentofu-registry");
    keyless.use_download_answer("provider-download-keyless-null.json");
    keyless.publish(
        "acme",
        "gadget",
        "0.2.0",
        &["linux_amd64", "linux_arm64"],
        &Signer::new("Gadget Author"),
        &[],
    );
    (signed, keyless)
}

/// Fills the cache `config` names: sync, then the policy decisions.
async fn fill(home: &Path, config: &Path, manifest: &Path) {
    run_ok(
        home,
        &["sync", "--config", s(config), "--manifest", s(manifest)],
    )
    .await;
    let widget = "registry.origin.test/acme/widget";
    run_ok(
        home,
        &[
            "approve",
            "--config",
            s(config),
            widget,
            "1.1.0",
            "--reason",
            "reviewed",
        ],
    )
    .await;
    run_ok(
        home,
        &[
            "deny",
            "--config",
            s(config),
            widget,
            "0.9.0",
            "--reason",
            "yanked",
        ],
    )
    .await;
}

#[tokio::main]
async fn main() {
    let version = env!("CARGO_PKG_VERSION");
    let out = match std::env::var_os("UPGRADE_FIXTURES_OUT") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/upgrade")
            .join(version),
    };
    let setup = Setup::new();
    let home = setup.dir.path();
    let (signed, keyless) = origins(&setup).await;
    let manifest = home.join("fixtures.toml");
    std::fs::write(&manifest, MANIFEST).unwrap();

    // The disk cache, its bundle and its inventory.
    let disk = config(&setup, &signed, &keyless, "");
    fill(home, &disk, &manifest).await;
    let staged = home.join("out");
    std::fs::create_dir_all(&staged).unwrap();
    std::fs::copy(home.join("release-key.asc"), staged.join("release-key.asc")).unwrap();
    copy_tree(&setup.cache_dir(), &staged.join("cache"), &["tmp/"]);
    let bundle = staged.join("bundle.tar");
    run_ok(
        home,
        &["export", "--config", s(&disk), "--output", s(&bundle)],
    )
    .await;
    let inventory = staged.join("inventory.json");
    run_ok(
        home,
        &["inventory", "--config", s(&disk), "--output", s(&inventory)],
    )
    .await;

    // The bucket, filled the same way from a cache directory of its own.
    let seaweed = Seaweed::start().await;
    seaweed.create_bucket("fixtures").await;
    std::fs::remove_dir_all(setup.cache_dir()).unwrap();
    let bucket = config(
        &setup,
        &signed,
        &keyless,
        &seaweed.storage_toml("fixtures", home),
    );
    fill(home, &bucket, &manifest).await;
    let store = seaweed.object_store("fixtures");
    for key in seaweed.keys("fixtures").await {
        let Some(rel) = key.strip_prefix("mirror/") else {
            continue;
        };
        if rel.starts_with("leases/") {
            continue;
        }
        let bytes = object_store::ObjectStoreExt::get(&store, &key.as_str().into())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let dest = staged.join("bucket").join(rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::write(dest, bytes).unwrap();
    }

    let listed = run_tfmirror(home, &["ls", "--config", s(&disk)]).await;
    let built = run_ok(home, &["--version"]).await;
    std::fs::write(
        staged.join("FIXTURES.md"),
        format!(
            "# Upgrade fixtures of tfmirror {version}\n\nWritten by `scripts/make-upgrade-fixtures` with {}; read by `tests/upgrade.rs` in every later build. Do not edit: regenerate.\n\nThe sync manifest:\n\n```toml{MANIFEST}```\n\nplus `approve registry.origin.test/acme/widget 1.1.0` and `deny … 0.9.0`.\n\n`tfmirror ls` of `cache/`:\n\n```text\n{}```\n",
            built.stdout.trim(),
            listed.stdout
        ),
    )
    .unwrap();

    if out.exists() {
        std::fs::remove_dir_all(&out).unwrap();
    }
    std::fs::create_dir_all(out.parent().unwrap()).unwrap();
    copy_tree(&staged, &out, &[]);
    println!("wrote {}", out.display());
}
