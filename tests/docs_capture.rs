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
use common::go::{archive_of, publish_archives};
use common::*;
use sha2::{Digest, Sha256};

/// One HCL document of a tree: its category as registry.terraform.io
/// names it, its name, and its content.
struct TreeDoc {
    category: &'static str,
    name: String,
    content: Vec<u8>,
}

/// The documents of a fixture tree's `docs/` folder, read as the test
/// reads the layout: `index.md` is the overview; `resources/`,
/// `data-sources/` and `guides/` hold one file per document; `cdktf/`
/// (other languages) is left out.
fn tree_docs(tree: &str) -> Vec<TreeDoc> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/docs")
        .join(tree)
        .join("docs");
    let mut out = vec![TreeDoc {
        category: "overview",
        name: "index".into(),
        content: std::fs::read(docs.join("index.md")).unwrap(),
    }];
    for (folder, category) in [
        ("resources", "resources"),
        ("data-sources", "data-sources"),
        ("guides", "guides"),
    ] {
        let Ok(entries) = std::fs::read_dir(docs.join(folder)) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries.map(|e| e.unwrap().path()).collect();
        files.sort();
        for file in files {
            out.push(TreeDoc {
                category,
                name: file.file_stem().unwrap().to_string_lossy().into_owned(),
                content: std::fs::read(&file).unwrap(),
            });
        }
    }
    out
}

/// Serves a tree's documentation as registry.terraform.io does: the
/// version's `docs[]` (with one CDKTF document, in another language),
/// then each document by its ID.
fn serve_terraform_shape(origin: &FakeOrigin, version: &str, tree: &str, first_id: u64) {
    let mut listed = Vec::new();
    for (i, doc) in tree_docs(tree).iter().enumerate() {
        let id = (first_id + i as u64).to_string();
        listed.push(serde_json::json!({
            "id": id, "title": doc.name, "path": format!("docs/{}.md", doc.name),
            "slug": doc.name, "category": doc.category,
            "subcategory": serde_json::Value::Null, "language": "hcl",
        }));
        let answer = serde_json::json!({"data": {"type": "provider-docs", "id": id, "attributes": {
            "category": doc.category, "content": String::from_utf8(doc.content.clone()).unwrap(),
            "language": "hcl", "slug": doc.name, "title": doc.name, "truncated": false,
            "subcategory": "",
        }, "links": {"self": format!("/v2/provider-docs/{id}")}}});
        origin.serve_page(
            &format!("/v2/provider-docs/{id}"),
            "application/json",
            answer.to_string().into_bytes(),
        );
    }
    listed.push(serde_json::json!({
        "id": "999999", "title": "resource", "path": "docs/cdktf/python/resources/resource.md",
        "slug": "resource", "category": "resources", "subcategory": "", "language": "python",
    }));
    let list = serde_json::json!({"id": format!("acme/null/{version}"), "version": version,
        "docs": listed, "downloads": 1, "published_at": "2025-04-14T17:58:04Z"});
    origin.serve_page(
        &format!("/v1/providers/acme/null/{version}"),
        "application/json",
        list.to_string().into_bytes(),
    );
}

/// Serves a tree's documentation as registry.opentofu.org does: the
/// version's `index.json`, then each document's Markdown file.
fn serve_opentofu_shape(origin: &FakeOrigin, version: &str, tree: &str) {
    let folder = format!("/registry/docs/providers/acme/null/v{version}");
    let mut docs: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    let mut index = serde_json::Value::Null;
    for doc in tree_docs(tree) {
        let item = serde_json::json!({"name": doc.name, "title": doc.name, "subcategory": "",
            "description": "", "edit_link": ""});
        let (key, path) = match doc.category {
            "overview" => ("index", "index.md".to_string()),
            "resources" => ("resources", format!("resources/{}.md", doc.name)),
            "data-sources" => ("datasources", format!("datasources/{}.md", doc.name)),
            _ => ("guides", format!("guides/{}.md", doc.name)),
        };
        if key == "index" {
            index = item;
        } else {
            docs.entry(key).or_default().push(item);
        }
        origin.serve_page(&format!("{folder}/{path}"), "text/markdown", doc.content);
    }
    let mut all = serde_json::json!(docs);
    all["index"] = index;
    let answer = serde_json::json!({"id": format!("v{version}"), "docs": all,
        "license": [{"spdx": "MPL-2.0", "confidence": 0.99, "is_compatible": true,
            "file": "LICENSE", "link": "https://example.test/LICENSE"}],
        "incompatible_license": false, "cdktf_docs": {}});
    origin.serve_page(
        &format!("{folder}/index.json"),
        "application/json",
        answer.to_string().into_bytes(),
    );
}

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
    serve_terraform_shape(&origin, "3.2.4", "null-v3.2.4", 8_814_900);
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
    serve_opentofu_shape(&origin, "3.2.1", "null-v3.2.1");
    serve_opentofu_shape(&origin, "3.2.4", "null-v3.2.4");
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
