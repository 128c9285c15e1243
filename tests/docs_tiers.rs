//! Documentation through tiers: an upper mirror serves what it keeps in
//! the OpenTofu Registry's static shape below `/-/registry-docs/HOST/`,
//! and a lower mirror whose `[upstream.hosts."HOST"] services` names that
//! root as `tfmirror-docs.v1` reads each version's documentation there
//! when it keeps one of the version's archives. The oracle is the null
//! provider's real v3.2.4 tree (`tests/fixtures/docs/`), which the origin
//! serves in registry.terraform.io's shape: each page the lower tier keeps
//! is the tree's file, byte for byte. The shape's keys and folders are
//! written here from registry-ui's own code (`tests/fixtures/docs/
//! SOURCE.md`), not from the mirror's reader.

mod common;

use std::time::Duration;

use common::docs::{docs_from, serve_terraform_shape, tree_docs};
use common::*;
use http::StatusCode;
use tfmirror::config::Config;

const HOST: &str = "registry.origin.test";

/// The folder of the OpenTofu Registry's files holding a category's
/// documents (registry-ui's `DocTypes`); `None` for the overview.
fn folder(category: &str) -> Option<&'static str> {
    match category {
        "overview" => None,
        "resources" => Some("resources"),
        "data-sources" => Some("datasources"),
        "guides" => Some("guides"),
        other => panic!("no folder for {other}"),
    }
}

/// The token the upper tier's access control takes.
const TOKEN: &str = "between-the-tiers-0123456789abcdef";

/// `url`, asked with the upper tier's token.
async fn authed(c: &Client, url: &str) -> Answer {
    c.get_with_header(url, "authorization", &format!("Bearer {TOKEN}"))
        .await
}

/// Fetches acme/null `version`'s `linux_amd64` archive through `m`'s
/// protocol (with the token).
async fn fetch_archive(c: &Client, m: &RunningMirror, version: &str) {
    let version_url = m.url(&format!("/{HOST}/acme/null/{version}.json"));
    let listed = authed(c, &version_url).await;
    assert_eq!(listed.status, StatusCode::OK, "{version}");
    let link = listed.json()["archives"]["linux_amd64"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let got = authed(c, &resolve(&version_url, &link)).await;
    assert_eq!(got.status, StatusCode::OK, "{version}");
}

/// The lower tier's configuration: the upper tier's registry facade for
/// the host's providers and, where `docs` names one, its documentation.
fn lower_config(setup: &Setup, origin: &FakeOrigin, upper: &RunningMirror, docs: &str) -> Config {
    let mut c = setup.config(origin, &[], &[HOST]);
    c.cache.dir = setup.dir.path().join("lower-cache");
    c.server.data_dir = setup.dir.path().join("lower-data");
    c.upstream.ca_file = Some(upper.ca_file.clone());
    let host = c.upstream.hosts.get_mut(&HOST.parse().unwrap()).unwrap();
    host.services.insert(
        "providers.v1".into(),
        upper
            .url(&format!("/v1/providers/{HOST}/"))
            .parse()
            .unwrap(),
    );
    host.services
        .insert("tfmirror-docs.v1".into(), upper.url(docs).parse().unwrap());
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lower_tier_reads_the_documentation_the_upper_one_keeps() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let tree = tree_docs("null-v3.2.4");
    for version in ["3.2.4", "3.2.1"] {
        origin.publish(
            "acme",
            "null",
            version,
            &["linux_amd64"],
            &signer,
            &[&signer],
        );
    }
    serve_terraform_shape(&origin, ("null", "3.2.4"), &tree, 8_000);
    // The upper tier's access control on: the lower tier sends the host's
    // token, to the documentation files as to the facade.
    let mut upper_config = setup.module_config(&origin, HOST);
    upper_config.auth.tokens = vec![TOKEN.to_owned()];
    docs_from(&mut upper_config, HOST, &origin);
    let upper = RunningMirror::start(upper_config).await;
    let root = format!("/-/registry-docs/{HOST}/");
    let mut lower_config = lower_config(&setup, &origin, &upper, &root);
    (lower_config
        .upstream
        .hosts
        .get_mut(&HOST.parse().unwrap())
        .unwrap())
    .token = Some(TOKEN.to_owned());
    let lower = RunningMirror::start(lower_config).await;
    let c = Client::trusting(&upper.ca_file);
    let lc = Client::trusting(&lower.ca_file);

    // The archive through both tiers; the lower tier's documentation
    // comes from the upper's files, whichever of the two captures ends
    // first (the upper one captures when asked).
    fetch_archive(&lc, &lower, "3.2.4").await;
    let docs_api = lower.url(&format!("/-/api/providers/{HOST}/acme/null/3.2.4/docs"));
    wait_until_answered(
        "the lower tier keeps the documentation",
        Duration::from_secs(60),
        || {
            let (lc, url) = (&lc, &docs_api);
            async move { !lc.get(url).await.json()["kept"].is_null() }
        },
    )
    .await;
    let kept = lc.get(&docs_api).await.json();
    let source = kept["kept"]["source"].as_str().unwrap();
    assert_eq!(
        source,
        upper.url(&format!("{root}providers/acme/null/v3.2.4/index.json"))
    );
    let sections = kept["kept"]["sections"].as_array().unwrap();
    let pages: usize = sections
        .iter()
        .map(|s| s["pages"].as_array().unwrap().len())
        .sum();
    assert_eq!(pages, tree.len(), "{kept:#}");
    for doc in &tree {
        let kind = common::docs::kind_of(doc.category);
        let page = lc
            .get(&lower.url(&format!(
                "/-/api/providers/{HOST}/acme/null/3.2.4/docs/{kind}/{}",
                doc.name
            )))
            .await;
        assert_eq!(page.status, StatusCode::OK, "{}", doc.name);
        assert_eq!(
            page.json()["markdown"].as_str().unwrap().as_bytes(),
            doc.content,
            "{}",
            doc.name
        );
    }

    // One capture kept on the lower tier, counted (once its list is
    // written, which the pages see first).
    let metrics_url = lower.url("/metrics");
    wait_until_answered("the capture is counted", Duration::from_secs(30), || {
        let (lc, url) = (&lc, &metrics_url);
        async move {
            let metrics = lc.get(url).await.page_text();
            metrics.contains("tfmirror_docs_captures_total{outcome=\"kept\"} 1\n")
        }
    })
    .await;
    let metrics = lc.get(&metrics_url).await.page_text();
    assert!(
        metrics.contains("tfmirror_docs_captures_total{outcome=\"failed\"} 0\n"),
        "{metrics}"
    );

    // The upper tier's files, as a tool built for the OpenTofu Registry's
    // API reads them.
    let file = |path: &str| upper.url(&format!("{root}providers/acme/null/{path}"));
    let refused = c.get(&file("v3.2.4/index.json")).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let index = authed(&c, &file("v3.2.4/index.json")).await;
    assert_eq!(index.status, StatusCode::OK);
    let index = index.json();
    assert_eq!(index["id"], "v3.2.4");
    for doc in &tree {
        let (listed, path) = match folder(doc.category) {
            None => (index["docs"]["index"].clone(), "index.md".to_owned()),
            Some(f) => {
                let item = (index["docs"][f].as_array().unwrap().iter())
                    .find(|i| i["name"] == doc.name.as_str())
                    .cloned()
                    .unwrap_or_default();
                (item, format!("{f}/{}.md", doc.name))
            }
        };
        assert_eq!(listed["name"], doc.name.as_str(), "{index:#}");
        let got = authed(&c, &file(&format!("v3.2.4/{path}"))).await;
        assert_eq!(got.status, StatusCode::OK, "{path}");
        assert!(got.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/markdown"));
        assert_eq!(got.body.as_ref(), doc.content.as_slice(), "{path}");
    }
    let provider = authed(&c, &file("index.json")).await.json();
    assert_eq!(provider["addr"]["namespace"], "acme");
    assert_eq!(provider["addr"]["name"], "null");
    let versions: Vec<&str> = (provider["versions"].as_array().unwrap().iter())
        .map(|v| v["id"].as_str().unwrap())
        .collect();
    assert_eq!(versions, ["v3.2.4"]);
    // What is not there is a 404 naming it, as JSON.
    for (path, says) in [
        ("v3.2.4/resources/nothing.md", "no resource page nothing"),
        ("v3.2.4/cdktf/python/index.md", "no documentation file"),
        ("v3.2.4/resources/resource.html", "no documentation file"),
        ("v9.9.9/index.json", "holds no archive"),
    ] {
        let got = authed(&c, &file(path)).await;
        assert_eq!(got.status, StatusCode::NOT_FOUND, "{path}");
        let said = got.json()["errors"][0].as_str().unwrap().to_owned();
        assert!(said.contains(says), "{path}: {said}");
    }

    // A version the upper tier holds without its documentation (its
    // origin had none when the archive was kept) is captured when its
    // list is asked for.
    fetch_archive(&c, &upper, "3.2.1").await;
    let list = file("v3.2.1/index.json");
    wait_until_answered(
        "the upper tier's capture of 3.2.1 has failed",
        Duration::from_secs(60),
        || {
            let (c, list) = (&c, &list);
            async move {
                let got = authed(c, list).await;
                got.status == StatusCode::NOT_FOUND
                    && got.json()["errors"][0]
                        .as_str()
                        .unwrap()
                        .contains("fetching it failed")
            }
        },
    )
    .await;
    let old_tree = tree_docs("null-v3.2.1");
    serve_terraform_shape(&origin, ("null", "3.2.1"), &old_tree, 9_000);
    let got = authed(&c, &list).await;
    assert_eq!(got.status, StatusCode::OK);
    let got = got.json();
    assert_eq!(got["docs"]["resources"][0]["name"], "resource", "{got:#}");
    let overview = authed(&c, &file("v3.2.1/index.md")).await;
    assert_eq!(overview.body.as_ref(), old_tree[0].content.as_slice());

    lower.stop().await;
    upper.stop().await;
}

/// An upper tier that serves no documentation files (an older tfmirror
/// answers 404 at the root): the lower tier installs all the same, and its
/// pages say none is kept.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upper_tier_with_no_documentation_fails_no_install() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "null",
        "3.2.4",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let upper = RunningMirror::start(setup.module_config(&origin, HOST)).await;
    let lower =
        RunningMirror::start(lower_config(&setup, &origin, &upper, "/-/older-tfmirror/")).await;
    let lc = Client::trusting(&lower.ca_file);
    fetch_archive(&lc, &lower, "3.2.4").await;
    // A drain waits for the background capture, as `sync` does.
    assert!(lower.mirror.drain(Duration::from_secs(30)).await);
    let docs = lc
        .get(&lower.url(&format!("/-/api/providers/{HOST}/acme/null/3.2.4/docs")))
        .await
        .json();
    assert!(docs["kept"].is_null(), "{docs:#}");
    assert!(
        docs["none_kept"]
            .as_str()
            .unwrap()
            .contains("none is kept yet"),
        "{docs:#}"
    );
    lower.stop().await;
    upper.stop().await;
}
