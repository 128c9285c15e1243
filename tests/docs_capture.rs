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

use common::daemon::{
    bundle_entries, config_file, run_ok, run_tfmirror, site_config, write_bundle,
};
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

/// The page entries of a bundle: their names.
fn page_entries(entries: &[(String, Vec<u8>)]) -> Vec<&str> {
    (entries.iter())
        .map(|(n, _)| n.as_str())
        .filter(|n| n.contains("/docs/") && n.ends_with(".md"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documentation_crosses_the_gap_in_a_bundle_with_its_versions_only() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.1", "3.2.4"]);
    serve_opentofu_shape(&origin, ("null", "3.2.1"), &tree_docs("null-v3.2.1"));
    serve_opentofu_shape(&origin, ("null", "3.2.4"), &tree_docs("null-v3.2.4"));
    let config = config_with_docs(&setup, &origin, "opentofu");
    sync(&setup, &config, ">= 3.2.1", "\"linux_amd64\"").await;
    let dir = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let bundle = dir.join("null.bundle");
    let out = run_ok(
        dir,
        &["export", "--config", &s(&config), "--output", &s(&bundle)],
    )
    .await;
    let pages = tree_docs("null-v3.2.1").len() + tree_docs("null-v3.2.4").len();
    assert!(
        out.stdout.contains(&format!(
            "DOCS the documentation of 2 versions is carried, {pages} pages (bundle format 4)"
        )),
        "{}",
        out.stdout
    );
    // Each page with each version whose list names it, after the list.
    let entries = bundle_entries(&bundle);
    let distinct: BTreeSet<String> = ["null-v3.2.1", "null-v3.2.4"]
        .iter()
        .flat_map(|t| tree_docs(t))
        .map(|d| hex::encode(Sha256::digest(&d.content)))
        .collect();
    let carried: BTreeSet<&str> = page_entries(&entries)
        .iter()
        .map(|n| &n[n.len() - 67..n.len() - 3])
        .collect();
    assert_eq!(page_entries(&entries).len(), pages);
    assert_eq!(carried, distinct.iter().map(String::as_str).collect());
    let manifest: serde_json::Value = serde_json::from_slice(&entries[0].1).unwrap();
    assert_eq!(manifest["format"], 4);

    // Inside the site: the documentation of each version, as the tree has
    // it, kept with the version; the pages served offline.
    let site = site_config(dir, "site", "");
    let imported = run_ok(dir, &["import", "--config", &s(&site), &s(&bundle)]).await;
    assert!(
        imported
            .stdout
            .contains("DOCS the documentation of 2 versions kept, 0 kept already"),
        "{}",
        imported.stdout
    );
    let site_cache = dir.join("site-cache");
    for version in ["3.2.1", "3.2.4"] {
        let list = format!("docs/versions/registry.origin.test/acme/null/{version}.json");
        assert_eq!(
            std::fs::read(site_cache.join(&list)).unwrap(),
            std::fs::read(setup.cache_dir().join(&list)).unwrap(),
            "{version}"
        );
    }
    for sha in &distinct {
        let kept = site_cache.join(format!("docs/pages/{}/{sha}.md", &sha[..2]));
        assert_eq!(
            hex::encode(Sha256::digest(std::fs::read(&kept).unwrap())),
            *sha
        );
    }
    let again = run_ok(dir, &["import", "--config", &s(&site), &s(&bundle)]).await;
    assert!(
        again
            .stdout
            .contains("DOCS the documentation of 0 versions kept, 2 kept already"),
        "{}",
        again.stdout
    );

    // A version the site's policy denies: nothing of it is kept, its
    // documentation neither.
    let deny = "[[policy.rule]]\nsource = \"registry.origin.test/acme/null\"\nversions = \"= 3.2.1\"\naction = \"deny\"\nreason = \"withdrawn\"\n";
    let strict = site_config(dir, "strict", deny);
    run_tfmirror(dir, &["import", "--config", &s(&strict), &s(&bundle)]).await;
    let strict_cache = dir.join("strict-cache");
    let lists = strict_cache.join("docs/versions/registry.origin.test/acme/null");
    assert!(lists.join("3.2.4.json").exists() && !lists.join("3.2.1.json").exists());

    // A page altered on the way: refused by its hash, and the list naming
    // it not kept; the rest of the bundle is.
    let mut altered = entries.clone();
    // (One page only one version has: a page both have would be kept
    // from the other's copy, whole.)
    let pages = page_entries(&entries);
    let once = |n: &str| {
        pages
            .iter()
            .filter(|p| p[p.len() - 67..] == n[n.len() - 67..])
            .count()
            == 1
    };
    let at = (altered.iter())
        .position(|(n, _)| n.contains("/docs/") && n.ends_with(".md") && once(n))
        .unwrap();
    altered[at]
        .1
        .extend_from_slice(b"\n<script>alert(1)</script>\n");
    let bad = dir.join("altered.bundle");
    write_bundle(&bad, &altered);
    let other = site_config(dir, "other", "");
    let refused = run_tfmirror(dir, &["import", "--config", &s(&other), &s(&bad)]).await;
    assert!(!refused.ok);
    assert!(
        refused.stdout.contains("its content's SHA-256 is")
            && refused.stdout.contains("is missing from the bundle"),
        "{}",
        refused.stdout
    );
    let other_lists = dir.join("other-cache/docs/versions/registry.origin.test/acme/null");
    let kept: Vec<bool> = ["3.2.1", "3.2.4"]
        .iter()
        .map(|v| other_lists.join(format!("{v}.json")).exists())
        .collect();
    assert_eq!(
        kept.iter().filter(|k| **k).count(),
        1,
        "only the whole list is kept: {kept:?}"
    );

    // A list that is not the one the manifest names: refused, not kept.
    let mut relisted = entries.clone();
    let at = (relisted.iter())
        .position(|(n, _)| n.ends_with("/3.2.4/docs.json"))
        .unwrap();
    relisted[at].1.push(b' ');
    let bad = dir.join("relisted.bundle");
    write_bundle(&bad, &relisted);
    let third = site_config(dir, "third", "");
    let refused = run_tfmirror(dir, &["import", "--config", &s(&third), &s(&bad)]).await;
    assert!(
        !refused.ok
            && refused
                .stdout
                .contains("REJECTED documentation of registry.origin.test/acme/null 3.2.4: its ")
            && refused.stdout.contains("the manifest names"),
        "{}",
        refused.stdout
    );
    let third_lists = dir.join("third-cache/docs/versions/registry.origin.test/acme/null");
    assert!(third_lists.join("3.2.1.json").exists() && !third_lists.join("3.2.4.json").exists());

    // Left out on request: a bundle of format 2 with no documentation.
    let plain = dir.join("plain.bundle");
    run_ok(
        dir,
        &[
            "export",
            "--config",
            &s(&config),
            "--output",
            &s(&plain),
            "--no-docs",
        ],
    )
    .await;
    let entries = bundle_entries(&plain);
    assert!(page_entries(&entries).is_empty());
    assert!(!entries.iter().any(|(n, _)| n.ends_with("/docs.json")));
    let manifest: serde_json::Value = serde_json::from_slice(&entries[0].1).unwrap();
    assert_eq!(manifest["format"], 2);
}

/// What `check --from` says of the documentation of acme/null 3.2.1 and
/// 3.2.4, each pinned by a configuration of its own; its lines say the
/// same.
async fn check_docs(dir: &Path, config: &Path) -> Vec<serde_json::Value> {
    let mut froms = Vec::new();
    for version in ["3.2.1", "3.2.4"] {
        let from = dir.join(format!("uses-{version}"));
        std::fs::create_dir_all(&from).unwrap();
        std::fs::write(
            from.join("main.tf"),
            format!("terraform {{\n  required_providers {{\n    null = {{\n      source  = \"registry.origin.test/acme/null\"\n      version = \"= {version}\"\n    }}\n  }}\n}}\n"),
        )
        .unwrap();
        froms.push(from.to_str().unwrap().to_owned());
    }
    let config = config.to_str().unwrap();
    let mut args = vec!["check", "--config", config, "--platform", "linux_amd64"];
    for from in &froms {
        args.extend(["--from", from.as_str()]);
    }
    let lines = run_ok(dir, &args).await.stdout;
    args.push("--json");
    let json: serde_json::Value = serde_json::from_str(&run_ok(dir, &args).await.stdout).unwrap();
    let said: Vec<serde_json::Value> = (json["configurations"].as_array().unwrap().iter())
        .map(|c| c["items"][0]["documentation"].clone())
        .collect();
    for docs in &said {
        let line = match docs["kept"].as_str().unwrap() {
            "none" => format!(
                "documentation: none kept: {}",
                docs["why"].as_str().unwrap()
            ),
            _ => format!(
                "documentation: {} pages, from {}",
                docs["pages"],
                docs["source"].as_str().unwrap()
            ),
        };
        assert!(lines.contains(&line), "{line}\n{lines}");
    }
    said
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_held_without_documentation_get_it_by_the_backfill() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.1", "3.2.4"]);
    let dir = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    // Held before any source was named: no documentation.
    let none = config_with_docs(&setup, &origin, "none");
    sync(&setup, &none, ">= 3.2.1", "\"linux_amd64\"").await;
    assert_eq!(kept_list(&setup, "3.2.1"), None);
    let said = run_ok(dir, &["docs", "backfill", "--config", &s(&none)]).await;
    assert!(
        said.stdout.contains("versions held: 2; documentation kept now: 0, kept already: 0, no source for their host: 2"),
        "{}",
        said.stdout
    );
    // A source named, but only 3.2.4's documentation served: 3.2.4's is
    // kept, 3.2.1's said to have failed, and the command fails.
    serve_opentofu_shape(&origin, ("null", "3.2.4"), &tree_docs("null-v3.2.4"));
    let config = config_with_docs(&setup, &origin, "opentofu");
    let said = run_tfmirror(dir, &["docs", "backfill", "--config", &s(&config)]).await;
    assert!(!said.ok, "{}", said.stdout);
    assert!(
        said.stdout.contains("FAILED registry.origin.test/acme/null 3.2.1: ")
            && said.stdout.contains("documentation kept now: 1, kept already: 0, no source for their host: 0, denied by the policy: 0, failed: 1"),
        "{}",
        said.stdout
    );
    assert_kept_as_the_tree(&setup, "3.2.4", "null-v3.2.4");
    assert_eq!(kept_list(&setup, "3.2.1"), None);
    // `check --from` says, beside each version a configuration gets,
    // whether its documentation is kept, and why not.
    let checked = check_docs(dir, &config).await;
    assert_eq!(checked[0]["kept"], "none", "{checked:?}");
    let why = checked[0]["why"].as_str().unwrap();
    assert!(why.contains("none is kept yet"), "{why}");
    assert_eq!(checked[1]["kept"], "pages", "{checked:?}");
    assert_eq!(checked[1]["pages"], tree_docs("null-v3.2.4").len());
    assert!(checked[1]["source"]
        .as_str()
        .unwrap()
        .ends_with("/acme/null/v3.2.4/index.json"));
    let no_source = dir.join("no-source.toml");
    let text = std::fs::read_to_string(&config).unwrap();
    std::fs::write(&no_source, text.replace("\"opentofu\"", "\"none\"")).unwrap();
    let none_named = check_docs(dir, &no_source).await;
    let why = none_named[0]["why"].as_str().unwrap();
    assert!(why.contains("names no source"), "{why}");
    // A version the policy denies is not asked for.
    let listed = "/registry/docs/providers/acme/null/v3.2.1/index.json";
    let before = origin.hits(listed);
    let deny = format!(
        "{}\n[[policy.rule]]\nsource = \"registry.origin.test/acme/null\"\nversions = \"= 3.2.1\"\naction = \"deny\"\nreason = \"withdrawn\"\n",
        std::fs::read_to_string(&config).unwrap()
    );
    let strict = dir.join("strict.toml");
    std::fs::write(&strict, deny).unwrap();
    let said = run_ok(dir, &["docs", "backfill", "--config", &s(&strict)]).await;
    assert!(
        said.stdout.contains("kept now: 0, kept already: 1, no source for their host: 0, denied by the policy: 1, failed: 0"),
        "{}",
        said.stdout
    );
    assert_eq!(origin.hits(listed), before);
    // The daemon, once started, fetches what is still lacking on its own.
    serve_opentofu_shape(&origin, ("null", "3.2.1"), &tree_docs("null-v3.2.1"));
    let mut cmd = common::daemon::tfmirror(dir);
    cmd.args(["serve", "--config"]).arg(&config);
    let mut daemon = common::daemon::Daemon::start(cmd);
    daemon.wait_for("documentation backfill done");
    assert_kept_as_the_tree(&setup, "3.2.1", "null-v3.2.1");
    daemon.signal("TERM");
    daemon.wait().await;
}

/// The SHA-256 of each page of a fixture tree.
fn tree_pages(tree: &str) -> BTreeSet<String> {
    (tree_docs(tree).iter())
        .map(|d| hex::encode(Sha256::digest(&d.content)))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delta_bundle_carries_the_documentation_a_site_lacks_and_only_the_pages_it_lacks() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_null(&setup, &origin, &["3.2.1", "3.2.4"]);
    // Only 3.2.1's documentation is served at first.
    serve_opentofu_shape(&origin, ("null", "3.2.1"), &tree_docs("null-v3.2.1"));
    let config = config_with_docs(&setup, &origin, "opentofu");
    sync(&setup, &config, ">= 3.2.1", "\"linux_amd64\"").await;
    assert!(kept_list(&setup, "3.2.1").is_some());
    assert!(kept_list(&setup, "3.2.4").is_none());
    let dir = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    // The site gets both versions, and 3.2.1's documentation.
    let first = dir.join("first.bundle");
    run_ok(
        dir,
        &["export", "--config", &s(&config), "--output", &s(&first)],
    )
    .await;
    let site = site_config(dir, "site", "");
    run_ok(dir, &["import", "--config", &s(&site), &s(&first)]).await;
    let site_lists = dir.join("site-cache/docs/versions/registry.origin.test/acme/null");
    assert!(site_lists.join("3.2.1.json").is_file() && !site_lists.join("3.2.4.json").exists());

    // Its inventory lists that documentation, in format 3; without it,
    // format 2.
    let inventory = dir.join("site.json");
    let said = run_ok(
        dir,
        &[
            "inventory",
            "--config",
            &s(&site),
            "--output",
            &s(&inventory),
        ],
    )
    .await;
    let old_pages = tree_pages("null-v3.2.1");
    assert!(
        said.stdout.contains(&format!(
            "documentation of 1 versions ({} pages)",
            old_pages.len()
        )),
        "{}",
        said.stdout
    );
    // It names the held version without documentation, and why: an
    // offline site fetches none.
    let without: Vec<&str> = (said.stdout.lines())
        .filter(|l| l.starts_with("NO DOCS"))
        .collect();
    assert_eq!(
        without,
        ["NO DOCS registry.origin.test/acme/null 3.2.4: this mirror is offline and fetches none: documentation comes with the versions in bundles"],
        "{}",
        said.stdout
    );
    let listed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&inventory).unwrap()).unwrap();
    assert_eq!(listed["tfmirror_inventory"], 3);
    assert_eq!(
        listed["docs"]["registry.origin.test/acme/null"],
        serde_json::json!(["3.2.1"])
    );
    let listed_pages: BTreeSet<String> = (listed["doc_pages"].as_array().unwrap().iter())
        .map(|p| p.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed_pages, old_pages);
    let plain = dir.join("plain.json");
    run_ok(
        dir,
        &[
            "inventory",
            "--config",
            &s(&site),
            "--output",
            &s(&plain),
            "--no-docs",
        ],
    )
    .await;
    let plain: serde_json::Value = serde_json::from_slice(&std::fs::read(&plain).unwrap()).unwrap();
    assert_eq!(plain["tfmirror_inventory"], 2);
    assert!(
        plain.get("docs").is_none() && plain.get("doc_pages").is_none(),
        "{plain:#}"
    );

    // The connected side gets 3.2.4's documentation; the delta for the
    // site carries it alone, with no archive, and only the pages the site
    // lacks.
    serve_opentofu_shape(&origin, ("null", "3.2.4"), &tree_docs("null-v3.2.4"));
    run_ok(dir, &["docs", "backfill", "--config", &s(&config)]).await;
    // And an archive of 3.2.1 the site lacks: carried, without the
    // documentation the site keeps of 3.2.1.
    sync(
        &setup,
        &config,
        "= 3.2.1",
        "\"linux_amd64\", \"darwin_arm64\"",
    )
    .await;
    let delta = dir.join("delta.bundle");
    run_ok(
        dir,
        &[
            "export",
            "--config",
            &s(&config),
            "--output",
            &s(&delta),
            "--missing-from",
            &s(&inventory),
        ],
    )
    .await;
    let entries = bundle_entries(&delta);
    let names: Vec<&str> = entries.iter().map(|(n, _)| n.as_str()).collect();
    let zips: Vec<&&str> = names.iter().filter(|n| n.ends_with(".zip")).collect();
    assert_eq!(zips.len(), 1, "{names:?}");
    assert!(
        zips[0].ends_with("terraform-provider-null_3.2.1_darwin_arm64.zip"),
        "{names:?}"
    );
    assert!(
        !names.iter().any(|n| n.contains("/3.2.1/docs")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n.ends_with("/3.2.4/docs.json")),
        "{names:?}"
    );
    let carried: BTreeSet<String> = (page_entries(&entries).iter())
        .map(|n| n[n.len() - 67..n.len() - 3].to_owned())
        .collect();
    let new_pages = tree_pages("null-v3.2.4");
    let lacking: BTreeSet<String> = new_pages.difference(&old_pages).cloned().collect();
    assert!(!lacking.is_empty() && lacking.len() < new_pages.len());
    assert_eq!(carried, lacking);
    let manifest: serde_json::Value = serde_json::from_slice(&entries[0].1).unwrap();
    assert_eq!(manifest["format"], 4);

    // The site keeps it whole, from the bundle and its own pages.
    let imported = run_ok(dir, &["import", "--config", &s(&site), &s(&delta)]).await;
    assert!(
        imported
            .stdout
            .contains("DOCS the documentation of 1 versions kept"),
        "{}",
        imported.stdout
    );
    assert_eq!(
        std::fs::read(site_lists.join("3.2.4.json")).unwrap(),
        std::fs::read(
            setup
                .cache_dir()
                .join("docs/versions/registry.origin.test/acme/null/3.2.4.json")
        )
        .unwrap()
    );
    for sha in &new_pages {
        let kept = dir.join(format!("site-cache/docs/pages/{}/{sha}.md", &sha[..2]));
        assert_eq!(
            hex::encode(Sha256::digest(std::fs::read(&kept).unwrap())),
            *sha
        );
    }
    // Another site without the pages the delta left out refuses the list,
    // and says why.
    let bare = site_config(dir, "bare", "");
    let plain_first = dir.join("plain-first.bundle");
    run_ok(
        dir,
        &[
            "export",
            "--config",
            &s(&config),
            "--output",
            &s(&plain_first),
            "--no-docs",
        ],
    )
    .await;
    run_ok(dir, &["import", "--config", &s(&bare), &s(&plain_first)]).await;
    let refused = run_tfmirror(dir, &["import", "--config", &s(&bare), &s(&delta)]).await;
    assert!(!refused.ok);
    assert!(
        refused
            .stdout
            .contains("is missing from the bundle (truncated?) and not kept here"),
        "{}",
        refused.stdout
    );
    assert!(!dir
        .join("bare-cache/docs/versions/registry.origin.test/acme/null/3.2.4.json")
        .exists());
}
