//! Searching the documentation the mirror keeps: the null provider's real
//! v3.2.4 and v3.2.1 trees and the template provider's real 2.2.0 tree
//! (`tests/fixtures/docs/`), served in registry.terraform.io's shape and
//! kept as the versions are fetched through the protocol. The oracle
//! reads the trees itself: which pages hold a word, split on what is not a
//! letter or digit. The index is the daemon's own, made anew from the
//! store when it starts.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::docs::{docs_from, kind_of, serve_terraform_shape, tree_docs, website_docs, TreeDoc};
use common::*;
use http::StatusCode;

const HOST: &str = "registry.origin.test";

type Found = BTreeSet<(String, String, String, String)>;

/// The pages of the trees (provider type, version, docs) that hold `word`.
fn holding(trees: &[(&str, &str, &[TreeDoc])], word: &str) -> Found {
    let mut out = Found::new();
    for (kind, version, docs) in trees {
        for doc in *docs {
            let text = String::from_utf8_lossy(&doc.content);
            if text
                .split(|c: char| !c.is_alphanumeric())
                .any(|w| w.eq_ignore_ascii_case(word))
            {
                out.insert((
                    format!("{HOST}/acme/{kind}"),
                    (*version).to_owned(),
                    kind_of(doc.category).to_owned(),
                    doc.name.clone(),
                ));
            }
        }
    }
    out
}

/// What the search answers for `query`, as JSON.
async fn search(c: &Client, m: &RunningMirror, query: &str) -> serde_json::Value {
    let q: String = url::form_urlencoded::byte_serialize(query.as_bytes()).collect();
    let got = c.get(&m.url(&format!("/-/api/search?q={q}"))).await;
    assert_eq!(got.status, StatusCode::OK, "{query}");
    got.json()
}

/// The pages an answer lists, each in every version it names.
fn found(answer: &serde_json::Value) -> Found {
    let mut out = Found::new();
    for d in answer["docs"].as_array().unwrap() {
        let s = |k: &str| d[k].as_str().unwrap().to_owned();
        for version in std::iter::once(&d["version"]).chain(d["older"].as_array().unwrap()) {
            let version = version.as_str().unwrap().to_owned();
            assert!(
                out.insert((s("provider"), version, s("kind"), s("name"))),
                "listed twice: {d}"
            );
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_documentation_kept_is_found_by_name_title_and_words_and_again_after_a_restart() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let null_new = tree_docs("null-v3.2.4");
    let null_old = tree_docs("null-v3.2.1");
    let template = website_docs("template-v2.2.0");
    let trees: [(&str, &str, &[TreeDoc]); 3] = [
        ("null", "3.2.4", &null_new),
        ("null", "3.2.1", &null_old),
        ("template", "2.2.0", &template),
    ];
    for (i, (kind, version, docs)) in trees.iter().enumerate() {
        origin.publish("acme", kind, version, &["linux_amd64"], &signer, &[&signer]);
        serve_terraform_shape(&origin, (kind, version), docs, 1_000 * (i as u64 + 1));
    }
    let mut config = setup.module_config(&origin, HOST);
    docs_from(&mut config, HOST, &origin);
    let mirror = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&mirror.ca_file);
    // Nothing kept yet: the index is made, and finds nothing.
    wait_until_answered("the index is made", Duration::from_secs(60), || {
        let (c, m) = (&c, &mirror);
        async move { search(c, m, "triggers").await["docs_search"] == "complete" }
    })
    .await;
    assert_eq!(found(&search(&c, &mirror, "triggers").await), Found::new());
    for (kind, version, _) in &trees {
        let version_url = mirror.url(&format!("/{HOST}/acme/{kind}/{version}.json"));
        let listed = c.get(&version_url).await.json();
        let link = listed["archives"]["linux_amd64"]["url"].as_str().unwrap();
        assert_eq!(
            c.get(&resolve(&version_url, link)).await.status,
            StatusCode::OK
        );
    }
    // Each version is searchable once its documentation is kept: a word
    // of the null provider's and one of the template provider's.
    let wanted: Vec<(&str, Found)> = ["triggers", "cloud"]
        .into_iter()
        .map(|w| (w, holding(&trees, w)))
        .collect();
    assert!(wanted[0].1.len() >= 3, "{wanted:?}");
    wait_until_answered(
        "every version's documentation is in the index",
        Duration::from_secs(60),
        || {
            let (c, m, wanted) = (&c, &mirror, &wanted);
            async move {
                for (word, want) in wanted {
                    if found(&search(c, m, word).await) != *want {
                        return false;
                    }
                }
                true
            }
        },
    )
    .await;

    let check = |mirror: RunningMirror| async move {
        let c = Client::trusting(&mirror.ca_file);
        for word in ["triggers", "lifecycle", "Migration", "cloud", "inputs"] {
            let want = holding(&trees, word);
            assert!(!want.is_empty(), "{word}");
            assert_eq!(found(&search(&c, &mirror, word).await), want, "{word}");
        }
        // A name, with or without the provider's type before it: that
        // page first, once, with each version that has it, newest first.
        for (query, kind, name, versions) in [
            (
                "null_data_source",
                "data-source",
                "data_source",
                ["3.2.4", "3.2.1"].as_slice(),
            ),
            (
                "data_source",
                "data-source",
                "data_source",
                &["3.2.4", "3.2.1"],
            ),
            ("template_file", "data-source", "file", &["2.2.0"]),
            (
                "cloudinit_config",
                "data-source",
                "cloudinit_config",
                &["2.2.0"],
            ),
        ] {
            let answer = search(&c, &mirror, query).await;
            let first = &answer["docs"][0];
            assert_eq!(
                (first["kind"].as_str(), first["name"].as_str()),
                (Some(kind), Some(name)),
                "{query}: {answer:#}"
            );
            let mut listed = vec![first["version"].as_str().unwrap()];
            listed.extend(
                first["older"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap()),
            );
            assert_eq!(listed, versions, "{query}");
            // It leads to the newest version's page.
            let href = first["href"].as_str().unwrap();
            assert!(
                href.contains(&format!("/{}/docs/{kind}/{name}", versions[0])),
                "{href}"
            );
            let page = c.get(&mirror.url(href)).await;
            assert_eq!(page.status, StatusCode::OK, "{href}");
        }
        // The page lists them.
        let page = c.get(&mirror.url("/-/search?q=null_data_source")).await;
        let html = String::from_utf8_lossy(&page.body).into_owned();
        assert!(
            html.contains("<ul class=\"results\" id=\"docs\">"),
            "{html}"
        );
        assert!(
            html.contains(&format!(
                "href=\"/-/providers/{HOST}/acme/null/3.2.4/docs/data-source/data_source\""
            )),
            "{html}"
        );
        // Any query gets an answer.
        for query in ["(((", "\"unclosed", "title:", "*", &"x ".repeat(5_000)] {
            search(&c, &mirror, query).await;
        }
        mirror
    };
    let mirror = check(mirror).await;
    // Made anew from the store when the daemon starts again.
    mirror.stop().await;
    let index = config.server.data_dir.join("docs-index");
    assert!(index.is_dir(), "{}", index.display());
    let mirror = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&mirror.ca_file);
    wait_until_answered(
        "the index is made again from the store",
        Duration::from_secs(60),
        || {
            let (c, m) = (&c, &mirror);
            async move { search(c, m, "triggers").await["docs_search"] == "complete" }
        },
    )
    .await;
    check(mirror).await;
}

/// A version the cache no longer holds (evicted under `cache.max_size`)
/// is left out of the answers, though its pages stay in the index until
/// the next start: the search names only held versions, and its pages and
/// documentation files answer 404.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_evicted_is_left_out_of_the_answers() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let null_new = tree_docs("null-v3.2.4");
    let null_old = tree_docs("null-v3.2.1");
    // Archives of one size, and room for one with its documentation (which
    // counts toward the bound).
    let published = publish_big(&origin, &signer, "null", &["3.2.1", "3.2.4"], 1 << 20);
    serve_terraform_shape(&origin, ("null", "3.2.1"), &null_old, 1_000);
    serve_terraform_shape(&origin, ("null", "3.2.4"), &null_new, 2_000);
    let mut config = setup.config(&origin, &[], &[HOST]);
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    let room = published["3.2.1"].len() as u64 + 512 * 1024;
    config.cache.max_size = Some(bytesize::ByteSize(room));
    docs_from(&mut config, HOST, &origin);
    let mirror = RunningMirror::start(config).await;
    let c = Client::trusting(&mirror.ca_file);
    let archive = |v: &str| {
        mirror.url(&format!(
            "/{HOST}/acme/null/terraform-provider-null_{v}_linux_amd64.zip"
        ))
    };
    let versions_found = |answer: serde_json::Value| -> BTreeSet<String> {
        (found(&answer).into_iter()).map(|(_, v, _, _)| v).collect()
    };
    assert_eq!(c.get(&archive("3.2.1")).await.status, StatusCode::OK);
    wait_until_answered("3.2.1 is found", Duration::from_secs(60), || {
        let (c, m) = (&c, &mirror);
        async move { versions_found(search(c, m, "triggers").await).contains("3.2.1") }
    })
    .await;
    // 3.2.4 comes in, and 3.2.1 goes out to make room.
    assert_eq!(c.get(&archive("3.2.4")).await.status, StatusCode::OK);
    let only_new = BTreeSet::from(["3.2.4".to_owned()]);
    wait_until_answered("only 3.2.4 is found", Duration::from_secs(60), || {
        let (c, m, only_new) = (&c, &mirror, &only_new);
        async move { versions_found(search(c, m, "triggers").await) == *only_new }
    })
    .await;
    // The evicted version's pages are not offered anywhere.
    let pages = format!("/-/api/providers/{HOST}/acme/null/3.2.1/docs");
    assert_eq!(
        c.get(&mirror.url(&pages)).await.status,
        StatusCode::NOT_FOUND
    );
    let files = format!("/-/registry-docs/{HOST}/providers/acme/null/index.json");
    let listed = c.get(&mirror.url(&files)).await.json();
    assert_eq!(listed["versions"][0]["id"], "v3.2.4", "{listed:#}");
    assert_eq!(
        listed["versions"].as_array().unwrap().len(),
        1,
        "{listed:#}"
    );
    // Each search was timed.
    let metrics = c.get(&mirror.url("/metrics")).await.page_text();
    let count = (metrics.lines())
        .find_map(|l| l.strip_prefix("tfmirror_docs_search_seconds_count "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(count.is_some_and(|n| n >= 2), "{metrics}");
    mirror.stop().await;
}
