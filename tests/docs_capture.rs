//! A provider version's documentation comes with it: `tfmirror sync`
//! keeps the version's archives and then, before it ends, its
//! documentation, fetched from the origin in either registry's shape
//! (`tests/fixtures/docs/SOURCE.md`) and served here from the real
//! documentation trees of the null provider. The oracle is the tree: each
//! page kept is the file's content byte for byte, under its SHA-256, and
//! a page two versions share is kept once. A registry that fails to give
//! documentation never fails the install.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::daemon::{config_file, run_ok};
use common::docs::{serve_opentofu_shape, serve_terraform_shape, tree_docs};
use common::go::{archive_of, publish_archives};
use common::*;
use sha2::{Digest, Sha256};

/// Publishes acme/null at each version, a shell script as its executable.
fn publish_null(setup: &Setup, origin: &FakeOrigin, versions: &[&str]) {
    let script = setup.dir.path().join("provider.sh");
    std::fs::write(&script, "#!/bin/sh\necho not a Go program\n").unwrap();
    for version in versions {
        let archives: BTreeMap<String, Vec<u8>> = ["linux_amd64", "darwin_arm64", "linux_arm64"]
            .iter()
            .map(|p| (p.to_string(), archive_of("null", version, &script)))
            .collect();
        publish_archives(origin, &Signer::new("acme"), ("null", version), &archives);
    }
}

/// The mirror's configuration, with `source` as the origin's
/// documentation shape.
fn config_with_docs(setup: &Setup, origin: &FakeOrigin, source: &str) -> PathBuf {
    let root = origin.providers_url().replace("/v1/providers/", "/");
    config_file(
        setup,
        origin,
        &format!(
            "[docs.hosts.\"registry.origin.test\"]\nsource = \"{source}\"\nurl = \"{root}\"\n"
        ),
    )
}

/// The version's kept list, as the store holds it.
fn kept_list(setup: &Setup, version: &str) -> Option<serde_json::Value> {
    let file = setup.cache_dir().join(format!(
        "docs/versions/registry.origin.test/acme/null/{version}.json"
    ));
    let bytes = std::fs::read(file).ok()?;
    Some(serde_json::from_slice(&bytes).unwrap())
}

/// Asserts that the kept list names each document of `tree` with the
/// file's content, kept under its SHA-256 (computed here).
fn assert_kept_as_the_tree(setup: &Setup, version: &str, tree: &str) {
    let list = kept_list(setup, version).expect("the version's documentation is kept");
    let pages = list["pages"].as_array().unwrap();
    let tree = tree_docs(tree);
    assert_eq!(pages.len(), tree.len(), "{list:#}");
    for (page, doc) in pages.iter().zip(&tree) {
        assert_eq!(page["name"], doc.name.as_str());
        let sha = hex::encode(Sha256::digest(&doc.content));
        assert_eq!(page["sha256"], sha.as_str(), "{}", doc.name);
        assert_eq!(page["size"], doc.content.len());
        let kept = setup
            .cache_dir()
            .join(format!("docs/pages/{}/{sha}.md", &sha[..2]));
        assert_eq!(std::fs::read(&kept).unwrap(), doc.content, "{}", doc.name);
    }
}

/// Runs `sync` of acme/null's `versions` for `platforms`; returns its
/// summary line.
async fn sync(setup: &Setup, config: &Path, versions: &str, platforms: &str) -> String {
    let home = setup.dir.path();
    let manifest = home.join("providers.toml");
    std::fs::write(
        &manifest,
        format!(
            "platforms = [{platforms}]\n[[provider]]\nsource = \"registry.origin.test/acme/null\"\nversions = \"{versions}\"\n"
        ),
    )
    .unwrap();
    let args = [
        "sync",
        "--config",
        config.to_str().unwrap(),
        "--manifest",
        manifest.to_str().unwrap(),
    ];
    let ran = run_ok(home, &args).await;
    ran.stdout.lines().next().unwrap_or_default().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_keeps_a_version_s_documentation_from_registry_terraform_io_s_shape() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.4"]);
    serve_terraform_shape(
        &origin,
        ("null", "3.2.4"),
        &tree_docs("null-v3.2.4"),
        8_814_900,
    );
    let config = config_with_docs(&setup, &origin, "terraform");
    let said = sync(&setup, &config, "3.2.4", "\"linux_amd64\"").await;
    assert!(said.contains("archives: 1 (1 downloaded"), "{said}");
    assert_kept_as_the_tree(&setup, "3.2.4", "null-v3.2.4");
    let list = kept_list(&setup, "3.2.4").unwrap();
    assert_eq!(list["passed_over"]["language \"python\""], 1, "{list:#}");
    assert!(
        list["source"]
            .as_str()
            .unwrap()
            .ends_with("/v1/providers/acme/null/3.2.4"),
        "{list:#}"
    );
    // One request for the list, one per document, and no more: a second
    // sync finds the documentation kept and fetches none again.
    let docs = tree_docs("null-v3.2.4").len();
    let asked = |origin: &FakeOrigin| {
        origin
            .all_hits()
            .iter()
            .filter(|(p, _)| p.starts_with("/v2/provider-docs/") || p.ends_with("/acme/null/3.2.4"))
            .map(|(_, n)| n)
            .sum::<usize>()
    };
    assert_eq!(asked(&origin), docs + 1);
    // Another platform's archive kept later finds the version's
    // documentation kept, and fetches none of it again.
    let said = sync(
        &setup,
        &config,
        "3.2.4",
        "\"linux_amd64\", \"darwin_arm64\"",
    )
    .await;
    assert!(said.contains("archives: 2 (1 downloaded"), "{said}");
    assert_eq!(asked(&origin), docs + 1);
    // A list this build cannot read (a later build's, on a shared store)
    // is left as it is, not fetched again over it.
    let file = setup
        .cache_dir()
        .join("docs/versions/registry.origin.test/acme/null/3.2.4.json");
    let mut later = kept_list(&setup, "3.2.4").unwrap();
    later["format"] = serde_json::json!(2);
    std::fs::write(&file, later.to_string()).unwrap();
    let all = "\"linux_amd64\", \"darwin_arm64\", \"linux_arm64\"";
    let said = sync(&setup, &config, "3.2.4", all).await;
    assert!(said.contains("archives: 3 (1 downloaded"), "{said}");
    assert_eq!(asked(&origin), docs + 1);
    assert_eq!(kept_list(&setup, "3.2.4").unwrap(), later);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_versions_from_opentofu_s_shape_share_the_pages_they_have_in_common() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.1", "3.2.4"]);
    serve_opentofu_shape(&origin, ("null", "3.2.1"), &tree_docs("null-v3.2.1"));
    serve_opentofu_shape(&origin, ("null", "3.2.4"), &tree_docs("null-v3.2.4"));
    let config = config_with_docs(&setup, &origin, "opentofu");
    sync(&setup, &config, ">= 3.2.1", "\"linux_amd64\"").await;
    assert_kept_as_the_tree(&setup, "3.2.1", "null-v3.2.1");
    assert_kept_as_the_tree(&setup, "3.2.4", "null-v3.2.4");
    let list = kept_list(&setup, "3.2.4").unwrap();
    assert_eq!(list["licenses"][0]["spdx"], "MPL-2.0", "{list:#}");
    // Kept once: as many page files as distinct contents in both trees.
    let distinct: BTreeSet<String> = ["null-v3.2.1", "null-v3.2.4"]
        .iter()
        .flat_map(|t| tree_docs(t))
        .map(|d| hex::encode(Sha256::digest(&d.content)))
        .collect();
    let all = tree_docs("null-v3.2.1").len() + tree_docs("null-v3.2.4").len();
    assert!(distinct.len() < all, "the two trees share some pages");
    let mut files = 0;
    for dir in std::fs::read_dir(setup.cache_dir().join("docs/pages")).unwrap() {
        files += std::fs::read_dir(dir.unwrap().path()).unwrap().count();
    }
    assert_eq!(files, distinct.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_that_gives_no_documentation_fails_no_install() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.4"]);
    // Nothing served at the documentation paths: each answers 404.
    let config = config_with_docs(&setup, &origin, "terraform");
    let said = sync(&setup, &config, "3.2.4", "\"linux_amd64\"").await;
    assert!(
        said.contains("archives: 1 (1 downloaded") && said.contains("failures: 0"),
        "{said}"
    );
    assert!(origin.hits("/v1/providers/acme/null/3.2.4") >= 1);
    assert_eq!(kept_list(&setup, "3.2.4"), None);
    // And a host whose source is "none" is not asked.
    let quiet = Setup::new();
    let origin = FakeOrigin::start(&quiet.ca).await;
    publish_null(&quiet, &origin, &["3.2.4"]);
    let config = config_with_docs(&quiet, &origin, "none");
    sync(&quiet, &config, "3.2.4", "\"linux_amd64\"").await;
    assert_eq!(origin.hits("/v1/providers/acme/null/3.2.4"), 0);
}
