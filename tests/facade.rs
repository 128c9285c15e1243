//! The provider registry facade (`/v1/providers/:hostname/…`) at the
//! protocol level: the origin's signed answer passed through with links
//! into the mirror, verification before anything is answered, and access
//! control with signed links. `tests/terraform.rs` drives it with the real
//! Terraform CLI.

mod common;

use common::*;
use http::{Method, StatusCode};

const PLATFORMS: [&str; 3] = ["linux_amd64", "darwin_arm64", "windows_amd64"];

fn facade(m: &RunningMirror, below: &str) -> String {
    m.url(&format!("/v1/providers/registry.origin.test/acme/{below}"))
}

#[tokio::test]
async fn the_origins_signed_answer_comes_through_with_links_into_the_mirror() {
    let sc = Scene::start("widget", "1.0.0", &PLATFORMS).await;
    let (m, c) = (&sc.mirror, &sc.client);

    let versions = c.get(&facade(m, "widget/versions")).await;
    assert_eq!(versions.status, StatusCode::OK);
    let listed = versions.json();
    assert_eq!(listed["versions"][0]["version"], "1.0.0");
    assert_eq!(
        listed["versions"][0]["protocols"],
        serde_json::json!(["5.0"])
    );
    let mut platforms: Vec<String> = listed["versions"][0]["platforms"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            format!(
                "{}_{}",
                p["os"].as_str().unwrap(),
                p["arch"].as_str().unwrap()
            )
        })
        .collect();
    platforms.sort();
    assert_eq!(platforms, ["darwin_arm64", "linux_amd64", "windows_amd64"]);

    let answer_url = facade(m, "widget/1.0.0/download/linux/amd64");
    let answer = c.get(&answer_url).await;
    assert_eq!(answer.status, StatusCode::OK);
    let doc = answer.json();
    let zip = "terraform-provider-widget_1.0.0_linux_amd64.zip";
    assert_eq!(doc["os"], "linux");
    assert_eq!(doc["arch"], "amd64");
    assert_eq!(doc["filename"], zip);
    assert_eq!(doc["protocols"], serde_json::json!(["5.0"]));
    assert_eq!(doc["shasum"], sha256_hex(&sc.archives["linux_amd64"]));
    let key = &doc["signing_keys"]["gpg_public_keys"][0];
    assert_eq!(key["ascii_armor"], sc.signer.public_armored());
    assert_eq!(key["key_id"], sc.signer.key_id());
    // The origin answers as the public registry does: the key's source is
    // its namespace and its source_url null, which the clients read as
    // the empty string and which the facade passes on as such.
    assert_eq!(key["source"], "acme");
    assert_eq!(key["source_url"], "");
    assert_eq!(key["trust_signature"], "");

    // Every link points into the mirror, and what it serves is what the
    // origin published, byte for byte.
    let own = m.url("/");
    for field in ["download_url", "shasums_url", "shasums_signature_url"] {
        let link = resolve(&answer_url, doc[field].as_str().unwrap());
        assert!(link.starts_with(&own), "{field}: {link}");
    }
    let origin_client = Client::trusting(&sc.setup.dir.path().join("origin-ca.pem"));
    let origin_file = |name: &str| {
        format!(
            "{}files/{name}",
            sc.origin.providers_url().trim_end_matches("v1/providers/")
        )
    };
    let sums = c
        .get(&resolve(&answer_url, doc["shasums_url"].as_str().unwrap()))
        .await;
    assert_eq!(sums.status, StatusCode::OK);
    let published = origin_client
        .get(&origin_file("terraform-provider-widget_1.0.0_SHA256SUMS"))
        .await;
    assert_eq!(sums.body, published.body);
    let sig = c
        .get(&resolve(
            &answer_url,
            doc["shasums_signature_url"].as_str().unwrap(),
        ))
        .await;
    assert_eq!(sig.status, StatusCode::OK);
    let published_sig = origin_client
        .get(&origin_file(
            "terraform-provider-widget_1.0.0_SHA256SUMS.sig",
        ))
        .await;
    assert_eq!(sig.body, published_sig.body);
    let archive = c
        .get(&resolve(&answer_url, doc["download_url"].as_str().unwrap()))
        .await;
    assert_eq!(archive.status, StatusCode::OK);
    assert_eq!(&archive.body[..], &sc.archives["linux_amd64"][..]);

    // One download serves both protocols: the network mirror's archive is
    // the one the facade fetched.
    let via_mirror = c
        .get(&sc.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(&via_mirror.body[..], &sc.archives["linux_amd64"][..]);
    // Two requests reached the origin's file: one asked its size for the
    // `packages` field (its body left unread), one downloaded it for both
    // protocols.
    assert_eq!(sc.origin.hits(&format!("/files/{zip}")), 2);

    // A platform the version has no package for, and one that is no platform.
    let none = c.get(&facade(m, "widget/1.0.0/download/linux/arm64")).await;
    assert_eq!(none.status, StatusCode::NOT_FOUND);
    let bad = c
        .get(&facade(m, "widget/1.0.0/download/linux/ARM%2F64"))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    let no_doc = c.get(&facade(m, "widget/1.0.0/sums/7")).await;
    assert_eq!(no_doc.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn nothing_is_answered_for_what_fails_verification() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let stranger = Signer::new("stranger");
    origin.publish_unverifiable(&signer, &stranger, "2.0.0");
    let config = setup.config(&origin, &[], &["registry.origin.test"]);
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);

    let refused = c
        .get(&facade(&m, "widget/1.0.0/download/linux/amd64"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    assert!(
        refused.error_text().contains("verification"),
        "{}",
        refused.error_text()
    );
    let sums = c.get(&facade(&m, "widget/1.0.0/sums/0")).await;
    assert_eq!(sums.status, StatusCode::BAD_GATEWAY);

    let answer_url = facade(&m, "gadget/2.0.0/download/linux/amd64");
    let answer = c.get(&answer_url).await;
    assert_eq!(answer.status, StatusCode::OK, "the metadata verifies");
    let archive = c
        .get(&resolve(
            &answer_url,
            answer.json()["download_url"].as_str().unwrap(),
        ))
        .await;
    assert_eq!(archive.status, StatusCode::BAD_GATEWAY);
    let stored = files_below(&setup.cache_dir());
    assert!(
        !stored.iter().any(|f| f.ends_with(".zip")),
        "a tampered archive was kept: {stored:?}"
    );
    assert!(
        !stored.iter().any(|f| f.contains("widget/1.0.0")),
        "an unverified version was recorded: {stored:?}"
    );
    m.stop().await;
}

#[tokio::test]
async fn the_mirrors_tokens_open_the_facade_and_its_links_are_signed() {
    const TOKEN: &str = "facade-token";
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.auth.tokens = vec![TOKEN.into()];
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let versions = facade(m, "widget/versions");
    for (authorization, want) in [
        (None, StatusCode::UNAUTHORIZED),
        (Some("Bearer not-the-token"), StatusCode::UNAUTHORIZED),
        (Some("Bearer facade-token"), StatusCode::OK),
    ] {
        let a = c.request_with(Method::GET, &versions, authorization).await;
        assert_eq!(a.status, want, "{authorization:?}");
    }
    let answer_url = facade(m, "widget/1.0.0/download/linux/amd64");
    let answer = c
        .request_with(Method::GET, &answer_url, Some("Bearer facade-token"))
        .await;
    assert_eq!(answer.status, StatusCode::OK);
    let doc = answer.json();
    // Clients send no credentials when they follow these links: each is
    // signed, and refused without its signature.
    for field in ["download_url", "shasums_url", "shasums_signature_url"] {
        let link = resolve(&answer_url, doc[field].as_str().unwrap());
        assert!(link.contains("sig="), "{field}: {link}");
        assert_eq!(c.get(&link).await.status, StatusCode::OK, "{field}");
        let bare = link.split('?').next().unwrap().to_string();
        assert_eq!(c.get(&bare).await.status, StatusCode::FORBIDDEN, "{field}");
    }
    // The checksum link of one version opens no other document.
    let sums = resolve(&answer_url, doc["shasums_url"].as_str().unwrap());
    let other = sums.replace("/sums/0?", "/sums/1?");
    assert_eq!(c.get(&other).await.status, StatusCode::FORBIDDEN);
    // The client's token never goes upstream.
    for path in [
        "/v1/providers/acme/widget/versions",
        "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
    ] {
        let sent = sc.origin.authorization(path);
        assert!(!sent.is_empty(), "{path} was asked");
        assert!(
            sent.iter()
                .all(|a| !a.as_deref().unwrap_or("").contains(TOKEN)),
            "{path}: {sent:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefetch_platforms_are_fetched_once_in_the_background() {
    let sc = Scene::start_with("widget", "1.0.0", &PLATFORMS, |config| {
        config.cache.prefetch_platforms = ["linux_amd64", "darwin_arm64"]
            .iter()
            .map(|p| p.parse().unwrap())
            .collect();
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let zip = |p: &str| format!("terraform-provider-widget_1.0.0_{p}.zip");
    let hits = |p: &str| sc.origin.hits(&format!("/files/{}", zip(p)));
    // Slow enough that a client asks while the prefetch is under way.
    sc.origin
        .set_archive_delay(std::time::Duration::from_millis(300));

    let doc_url = sc.url("widget/1.0.0.json");
    assert_eq!(c.get(&doc_url).await.status, StatusCode::OK);
    wait_until(
        "the prefetch to reach the origin",
        std::time::Duration::from_secs(10),
        || hits("linux_amd64") == 1,
    )
    .await;
    let meanwhile = c
        .get(&sc.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(&meanwhile.body[..], &sc.archives["linux_amd64"][..]);
    let cache = sc.setup.cache_dir();
    wait_until(
        "both prefetched archives to be stored",
        std::time::Duration::from_secs(10),
        || {
            let stored = files_below(&cache);
            ["linux_amd64", "darwin_arm64"]
                .iter()
                .all(|p| stored.iter().any(|f| f.ends_with(&zip(p))))
        },
    )
    .await;

    // Their h1: is known to every client now; the platform not listed is
    // left to clients.
    let doc = c.get(&doc_url).await.json();
    for p in ["linux_amd64", "darwin_arm64"] {
        let hashes = doc["archives"][p]["hashes"].as_array().unwrap();
        assert!(
            hashes[0].as_str().unwrap().starts_with("h1:"),
            "{p}: {hashes:?}"
        );
        assert_eq!(hits(p), 1, "{p}: one upstream fetch");
    }
    let windows = doc["archives"]["windows_amd64"]["hashes"]
        .as_array()
        .unwrap();
    assert_eq!(windows.len(), 1, "{windows:?}");
    assert_eq!(hits("windows_amd64"), 0);
    wait_until(
        "both prefetches to be counted",
        std::time::Duration::from_secs(10),
        || {
            m.mirror
                .metrics()
                .render()
                .contains("tfmirror_prefetches_total{outcome=\"fetched\"} 2\n")
        },
    )
    .await;
    let metrics = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_prefetches_total{outcome=\"failed\"} 0\n"),
        "{metrics}"
    );
}
