//! Provider documentation served as the two registries serve it
//! (`tests/fixtures/docs/SOURCE.md`), from the real documentation trees
//! of the null provider kept in `tests/fixtures/docs/`, for acme's
//! providers on a fake origin.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use super::FakeOrigin;

/// The kind a page of category `category` is shown under on the mirror.
pub fn kind_of(category: &str) -> &'static str {
    match category {
        "overview" => "overview",
        "resources" => "resource",
        "data-sources" => "data-source",
        "guides" => "guide",
        other => panic!("no kind for {other}"),
    }
}

/// Sets `config` to fetch `host`'s documentation from `origin` in
/// registry.terraform.io's shape; returns the origin's root URL.
pub fn docs_from(config: &mut tfmirror::config::Config, host: &str, origin: &FakeOrigin) -> String {
    let root = origin.providers_url().replace("/v1/providers/", "/");
    config.docs.hosts.insert(
        host.parse().unwrap(),
        tfmirror::config::docs::DocsHost {
            source: tfmirror::config::docs::DocsSource::Terraform,
            url: Some(root.parse().unwrap()),
        },
    );
    root
}

/// One HCL document: its category as registry.terraform.io names it,
/// its name, and its content.
#[derive(Debug, Clone)]
pub struct TreeDoc {
    pub category: &'static str,
    pub name: String,
    pub content: Vec<u8>,
}

/// The documents of a fixture tree's `docs/` folder, read as the test
/// reads the layout: `index.md` is the overview; `resources/`,
/// `data-sources/` and `guides/` hold one file per document; `cdktf/`
/// (other languages) is left out.
pub fn tree_docs(tree: &str) -> Vec<TreeDoc> {
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

/// The documents of a fixture tree in the providers' older
/// `website/docs/` layout, as registry.terraform.io names them: the
/// overview `index.html.markdown`, one file per document in `r/`
/// (resources) and `d/` (data sources), each named by its file name
/// without the `.html.md` or `.html.markdown` ending.
pub fn website_docs(tree: &str) -> Vec<TreeDoc> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/docs")
        .join(tree)
        .join("website/docs");
    let mut out = vec![TreeDoc {
        category: "overview",
        name: "index".into(),
        content: std::fs::read(docs.join("index.html.markdown")).unwrap(),
    }];
    for (folder, category) in [("r", "resources"), ("d", "data-sources")] {
        let mut files: Vec<PathBuf> = (std::fs::read_dir(docs.join(folder)).unwrap())
            .map(|e| e.unwrap().path())
            .collect();
        files.sort();
        for file in files {
            let name = file.file_name().unwrap().to_string_lossy();
            let name = name.split(".html").next().unwrap().to_owned();
            out.push(TreeDoc {
                category,
                name,
                content: std::fs::read(&file).unwrap(),
            });
        }
    }
    out
}

/// Serves `docs` as acme/`kind` `version`'s documentation, as
/// registry.terraform.io does: the version's `docs[]` (with one CDKTF
/// document, in another language), then each document by its ID, from
/// `first_id` on.
pub fn serve_terraform_shape(
    origin: &FakeOrigin,
    (kind, version): (&str, &str),
    docs: &[TreeDoc],
    first_id: u64,
) {
    let mut listed = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
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
    let list = serde_json::json!({"id": format!("acme/{kind}/{version}"), "version": version,
        "docs": listed, "downloads": 1, "published_at": "2025-04-14T17:58:04Z"});
    origin.serve_page(
        &format!("/v1/providers/acme/{kind}/{version}"),
        "application/json",
        list.to_string().into_bytes(),
    );
}

/// Serves `docs` as acme/`kind` `version`'s documentation, as
/// registry.opentofu.org does: the version's `index.json`, then each
/// document's Markdown file.
pub fn serve_opentofu_shape(origin: &FakeOrigin, (kind, version): (&str, &str), docs: &[TreeDoc]) {
    let folder = format!("/registry/docs/providers/acme/{kind}/v{version}");
    let mut lists: BTreeMap<&str, Vec<serde_json::Value>> = BTreeMap::new();
    let mut index = serde_json::Value::Null;
    for doc in docs {
        let item = serde_json::json!({"name": doc.name, "title": doc.name, "subcategory": "",
            "description": "", "edit_link": ""});
        // The registry's folders and keys (registry-ui's `DocTypes`).
        let key = match doc.category {
            "overview" => "index",
            "data-sources" => "datasources",
            "ephemeral-resources" => "ephemeral",
            "list-resources" => "listresources",
            "resources" | "functions" | "actions" => doc.category,
            _ => "guides",
        };
        let path = match key {
            "index" => "index.md".to_string(),
            folder => format!("{folder}/{}.md", doc.name),
        };
        if key == "index" {
            index = item;
        } else {
            lists.entry(key).or_default().push(item);
        }
        origin.serve_page(
            &format!("{folder}/{path}"),
            "text/markdown",
            doc.content.clone(),
        );
    }
    let mut all = serde_json::json!(lists);
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
