//! A held version's documentation on the pages and as JSON, served from
//! what the mirror kept when it fetched the version through the
//! protocol: acme/widget 1.2.0's origin serves the null provider's real
//! v3.2.4 tree in registry.terraform.io's shape (`common::pages`). The
//! oracle is the tree: each page's Markdown is the file byte for byte,
//! listed under its kind in the tree's order. A page no list names, a
//! kind or name no page can have, a version not held, and documentation
//! damaged in the store each get a clear answer.

mod common;

use common::docs::kind_of;
use common::pages::world;
use http::StatusCode;

const DOCS: &str = "/-/providers/registry.origin.test/acme/widget/1.2.0/docs";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_s_documentation_is_listed_by_kind_and_each_page_is_its_markdown() {
    let began = std::time::SystemTime::now();
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    let listed = c.get(&m.url(&DOCS.replacen("/-/", "/-/api/", 1))).await;
    assert_eq!(listed.status, StatusCode::OK);
    let listed = listed.json();
    assert_eq!(listed["policy"], "allowed: the policy has no rule");
    assert_eq!(listed["none_kept"], serde_json::Value::Null);
    let kept = &listed["kept"];
    assert!(
        (kept["source"].as_str().unwrap()).ends_with("/v1/providers/acme/widget/1.2.0"),
        "{kept:#}"
    );
    assert_eq!(
        kept["passed_over"],
        serde_json::json!({"language \"python\"": 1})
    );
    let fetched = humantime::parse_rfc3339(kept["fetched_at"].as_str().unwrap()).unwrap();
    assert!(
        fetched + std::time::Duration::from_secs(1) >= began
            && fetched <= std::time::SystemTime::now()
    );
    // By kind, in the order the pages list kinds; within one, the tree's.
    let mut want: Vec<(&str, Vec<&str>)> = Vec::new();
    for kind in ["overview", "resource", "data-source", "guide"] {
        let names: Vec<&str> = (w.docs.iter())
            .filter(|d| kind_of(d.category) == kind)
            .map(|d| d.name.as_str())
            .collect();
        want.push((kind, names));
    }
    let got: Vec<(&str, Vec<&str>)> = (kept["sections"].as_array().unwrap().iter())
        .map(|s| {
            let names = s["pages"].as_array().unwrap();
            (
                s["kind"].as_str().unwrap(),
                names.iter().map(|p| p["name"].as_str().unwrap()).collect(),
            )
        })
        .collect();
    assert_eq!(got, want);
    for doc in &w.docs {
        let path = format!("{DOCS}/{}/{}", kind_of(doc.category), doc.name);
        let api = c.get(&m.url(&path.replacen("/-/", "/-/api/", 1))).await;
        assert_eq!(api.status, StatusCode::OK, "{path}");
        let api = api.json();
        assert_eq!(
            api["markdown"].as_str().unwrap().as_bytes(),
            doc.content.as_slice(),
            "{path}"
        );
        assert_eq!(api["page"]["size"], doc.content.len(), "{path}");
        assert_eq!(api["page"]["truncated"], false, "{path}");
        // The page: its Markdown's first heading, as a heading; none of
        // its front matter.
        let page = c.get(&m.url(&path)).await;
        assert_eq!(page.status, StatusCode::OK, "{path}");
        let html = String::from_utf8_lossy(&page.body);
        let text = String::from_utf8_lossy(&doc.content);
        let heading = (text.lines())
            .find(|l| l.starts_with("# ") && !l.starts_with("# generated"))
            .unwrap();
        assert!(
            html.contains(&format!("<h1>{}</h1>", &heading[2..])),
            "{path}: {heading}"
        );
        assert!(!html.contains("page_title"), "{path}: the front matter");
    }
    // The provider's page counts the pages kept of each version, and the
    // version without any says none is kept, and why.
    let provider = c
        .get(&m.url("/-/api/providers/registry.origin.test/acme/widget"))
        .await
        .json();
    assert_eq!(provider["versions"][0]["docs_pages"], w.docs.len());
    assert_eq!(provider["versions"][0]["docs"], DOCS);
    assert_eq!(
        provider["versions"][1]["docs_pages"],
        serde_json::Value::Null
    );
    let none = c
        .get(&m.url("/-/api/providers/registry.origin.test/acme/widget/1.1.0/docs"))
        .await;
    assert_eq!(none.status, StatusCode::OK);
    let none = none.json();
    assert_eq!(none["kept"], serde_json::Value::Null);
    assert!(
        none["none_kept"]
            .as_str()
            .unwrap()
            .contains("none is kept yet"),
        "{none:#}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_no_page_can_be_and_what_is_damaged_each_get_a_clear_answer() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    let said = |status: StatusCode, path: String, words: &'static str| {
        let (m, c) = (m, c);
        async move {
            let got = c.get(&m.url(&path)).await;
            assert_eq!(got.status, status, "{path}");
            let text = got.error_text();
            assert!(text.contains(words), "{path}: {text}");
        }
    };
    let api = DOCS.replacen("/-/", "/-/api/", 1);
    said(
        StatusCode::BAD_REQUEST,
        format!("{api}/widget/resource"),
        "the kinds are overview, resource, data-source",
    )
    .await;
    said(
        StatusCode::BAD_REQUEST,
        format!("{api}/resource/.hidden"),
        "documentation page name",
    )
    .await;
    said(
        StatusCode::BAD_REQUEST,
        format!("{api}/resource/a%2Fb"),
        "documentation page name",
    )
    .await;
    said(
        StatusCode::NOT_FOUND,
        format!("{api}/resource/nothing"),
        "has no resource page nothing",
    )
    .await;
    // A page is found under its own kind only.
    said(
        StatusCode::NOT_FOUND,
        format!("{api}/resource/data_source"),
        "has no resource page data_source",
    )
    .await;
    said(
        StatusCode::NOT_FOUND,
        "/-/api/providers/registry.origin.test/acme/widget/9.9.9/docs".into(),
        "holds no archive of registry.origin.test/acme/widget 9.9.9",
    )
    .await;
    // A page whose content in the store is not what its name says is
    // refused, not shown.
    let resource = w.docs.iter().find(|d| d.name == "resource").unwrap();
    let sha = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&resource.content));
    let file = w
        .setup
        .cache_dir()
        .join(format!("docs/pages/{}/{sha}.md", &sha[..2]));
    std::fs::write(&file, b"# Another page\n<script>alert(1)</script>\n").unwrap();
    said(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{api}/resource/resource"),
        "whose SHA-256 is",
    )
    .await;
    let page = c.get(&m.url(&format!("{DOCS}/resource/resource"))).await;
    assert_eq!(page.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(!String::from_utf8_lossy(&page.body).contains("Another page"));
    // Gone from the store: said so.
    std::fs::remove_file(&file).unwrap();
    said(
        StatusCode::SERVICE_UNAVAILABLE,
        format!("{api}/resource/resource"),
        "no longer in the store",
    )
    .await;
    // A list of a later format than this build reads: named, and the
    // provider's page still served.
    let list = w
        .setup
        .cache_dir()
        .join("docs/versions/registry.origin.test/acme/widget/1.2.0.json");
    let mut later: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&list).unwrap()).unwrap();
    later["format"] = serde_json::json!(2);
    std::fs::write(&list, later.to_string()).unwrap();
    said(
        StatusCode::SERVICE_UNAVAILABLE,
        api.clone(),
        "of format 2; this build reads formats up to 1",
    )
    .await;
    let provider = c
        .get(&m.url("/-/api/providers/registry.origin.test/acme/widget"))
        .await;
    assert_eq!(provider.status, StatusCode::OK);
    assert_eq!(
        provider.json()["versions"][0]["docs_pages"],
        serde_json::Value::Null
    );
    // A list naming a page no path can hold is refused as it is read.
    later["format"] = serde_json::json!(1);
    later["pages"][0]["name"] = serde_json::json!("../../etc/passwd");
    std::fs::write(&list, later.to_string()).unwrap();
    said(
        StatusCode::SERVICE_UNAVAILABLE,
        api,
        "documentation page name",
    )
    .await;
}
