//! The mirror protocol end to end against the fake origin: discovery,
//! documents, archives, verification failures, outages, restarts, access
//! and hostile paths, and one upstream fetch for many concurrent misses.

mod common;

use std::time::Duration;

use common::*;
use http::{Method, StatusCode};

const PLATFORMS: [&str; 3] = ["darwin_arm64", "linux_amd64", "windows_amd64"];

#[tokio::test]
async fn serves_documents_and_archives_found_by_discovery() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.2.0", &PLATFORMS, &signer, &[&signer]);
    origin.publish(
        "acme",
        "widget",
        "1.10.0-beta1",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let host = origin.hostname();
    let m = RunningMirror::start(setup.config(&origin, &[&host], &[])).await;
    let c = Client::trusting(&m.ca_file);

    // Upper-case spelling and an explicit :443-free host are the same provider.
    let index = c
        .get(&m.url(&format!("/{host}/ACME/Widget/index.json")))
        .await;
    assert_eq!(index.status, StatusCode::OK);
    assert_eq!(index.headers["content-type"], "application/json");
    assert_eq!(
        index.json(),
        serde_json::json!({"versions": {"1.2.0": {}, "1.10.0-beta1": {}}})
    );
    assert_eq!(origin.hits("/.well-known/terraform.json"), 1);

    let doc_url = m.url(&format!("/{host}/acme/widget/1.2.0.json"));
    let doc = c.get(&doc_url).await.json();
    let entries = doc["archives"].as_object().unwrap();
    assert_eq!(
        entries.keys().collect::<Vec<_>>(),
        PLATFORMS.iter().collect::<Vec<_>>()
    );
    for p in PLATFORMS {
        assert_eq!(
            doc["archives"][p]["hashes"],
            serde_json::json!([format!("zh:{}", sha256_hex(&archives[p]))]),
            "before download only the signed zh: hash is known"
        );
        assert_eq!(
            doc["archives"][p]["url"],
            format!("terraform-provider-widget_1.2.0_{p}.zip")
        );
    }

    // The archive URL resolves next to the document and serves the bytes as published.
    let zip_url = m.url(&format!(
        "/{host}/acme/widget/terraform-provider-widget_1.2.0_linux_amd64.zip"
    ));
    let head = c.request(Method::HEAD, &zip_url).await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    assert_eq!(
        head.headers["content-length"],
        archives["linux_amd64"].len().to_string()
    );
    let zip = c.get(&zip_url).await;
    assert_eq!(zip.status, StatusCode::OK);
    assert_eq!(zip.headers["content-type"], "application/zip");
    assert_eq!(&zip.body[..], &archives["linux_amd64"][..]);

    // Now the h1: hash is known too, and equals the hash of what was served.
    let doc = c.get(&doc_url).await.json();
    let h1 = tfmirror::verify::h1_of_zip(std::io::Cursor::new(&archives["linux_amd64"])).unwrap();
    assert_eq!(
        doc["archives"]["linux_amd64"]["hashes"],
        serde_json::json!([h1, format!("zh:{}", sha256_hex(&archives["linux_amd64"]))])
    );
    assert_eq!(
        origin.hits("/files/terraform-provider-widget_1.2.0_linux_amd64.zip"),
        1
    );
    // The SHA256SUMS and its signature were fetched once for all platforms.
    assert_eq!(
        origin.hits("/files/terraform-provider-widget_1.2.0_SHA256SUMS"),
        1
    );
    assert_eq!(
        origin.hits("/files/terraform-provider-widget_1.2.0_SHA256SUMS.sig"),
        1
    );

    // Unknown providers and versions are 404; HEAD works on JSON too.
    let unknown = c
        .get(&m.url(&format!("/{host}/acme/nothing/index.json")))
        .await;
    assert_eq!(
        unknown.status,
        StatusCode::NOT_FOUND,
        "{}",
        unknown.error_text()
    );
    let missing = c
        .get(&m.url(&format!("/{host}/acme/widget/9.9.9.json")))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let head = c.request(Method::HEAD, &doc_url).await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(head.headers["content-type"], "application/json");
    m.stop().await;
}

#[tokio::test]
async fn tampered_archive_is_refused_and_nothing_is_stored() {
    let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    let (origin, setup, c) = (&sc.origin, &sc.setup, &sc.client);
    let mut evil = sc.archives["linux_amd64"].clone();
    let last = evil.len() - 30;
    evil[last] ^= 0xff;
    origin.replace_file("terraform-provider-widget_1.0.0_linux_amd64.zip", evil);
    let zip_url = sc.archive_url("widget", "1.0.0", "linux_amd64");

    let zip = c.get(&zip_url).await;
    assert_eq!(zip.status, StatusCode::BAD_GATEWAY);
    let msg = zip.error_text();
    for part in [
        "registry.origin.test/acme/widget",
        "1.0.0",
        "linux_amd64",
        "does not match the signed SHA256SUMS",
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg}");
    }
    let stored = files_below(&setup.cache_dir());
    assert!(
        !stored
            .iter()
            .any(|f| f.ends_with(".zip") || f.ends_with(".h1")),
        "{stored:?}"
    );
    assert!(!stored.iter().any(|f| f.starts_with("tmp/")), "{stored:?}");
    // The version document never offers an h1: for it.
    let doc = c.get(&sc.url("widget/1.0.0.json")).await.json();
    let hashes = doc["archives"]["linux_amd64"]["hashes"].as_array().unwrap();
    assert_eq!(hashes.len(), 1);

    // Once the origin serves the right bytes again, the next request succeeds.
    origin.replace_file(
        "terraform-provider-widget_1.0.0_linux_amd64.zip",
        sc.archives["linux_amd64"].clone(),
    );
    assert_eq!(c.get(&zip_url).await.status, StatusCode::OK);
}

#[tokio::test]
async fn signature_by_an_unlisted_key_is_refused() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let listed = Signer::new("listed");
    let intruder = Signer::new("intruder");
    origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &intruder,
        &[&listed],
    );
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);

    let doc = c
        .get(&m.url("/registry.origin.test/acme/widget/1.0.0.json"))
        .await;
    assert_eq!(doc.status, StatusCode::BAD_GATEWAY);
    let msg = doc.error_text();
    for part in [
        "registry.origin.test/acme/widget 1.0.0",
        "linux_amd64",
        &listed.key_id(),
        &intruder.key_id(),
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg}");
    }
    let zip = c
        .get(&m.url(
            "/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip",
        ))
        .await;
    assert_eq!(zip.status, StatusCode::BAD_GATEWAY);
    assert_eq!(
        origin.hits("/files/terraform-provider-widget_1.0.0_linux_amd64.zip"),
        0
    );
    let stored = files_below(&setup.cache_dir());
    assert!(
        !stored
            .iter()
            .any(|f| f.ends_with("version.json") || f.ends_with(".zip")),
        "{stored:?}"
    );
    m.stop().await;
}

#[tokio::test]
async fn registry_shasum_must_match_the_signed_sums_and_armored_signatures_work() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    // Armored signature over correct sums: accepted.
    let archives: std::collections::BTreeMap<String, Vec<u8>> = [(
        "linux_amd64".to_string(),
        build_archive("armored", "1.0.0", "x"),
    )]
    .into();
    let sums = sums_document("armored", "1.0.0", &archives);
    let sig = signer.sign_armored(&sums);
    let keys = vec![(signer.key_id(), signer.public_armored())];
    origin.publish_raw(
        "acme",
        "armored",
        "1.0.0",
        &archives,
        sums,
        sig,
        keys.clone(),
    );
    // Signed sums that list a different checksum than the archive's: refused.
    let other: std::collections::BTreeMap<String, Vec<u8>> = [(
        "linux_amd64".to_string(),
        build_archive("other", "1.0.0", "y"),
    )]
    .into();
    let wrong_sums = sums_document(
        "other",
        "1.0.0",
        &[("linux_amd64".to_string(), b"different".to_vec())].into(),
    );
    let sig = signer.sign_binary(&wrong_sums);
    origin.publish_raw("acme", "other", "1.0.0", &other, wrong_sums, sig, keys);
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);

    let ok = c
        .get(&m.url(
            "/registry.origin.test/acme/armored/terraform-provider-armored_1.0.0_linux_amd64.zip",
        ))
        .await;
    assert_eq!(ok.status, StatusCode::OK);
    assert_eq!(&ok.body[..], &archives["linux_amd64"][..]);
    let bad = c
        .get(&m.url("/registry.origin.test/acme/other/1.0.0.json"))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_GATEWAY);
    assert!(
        bad.error_text()
            .contains("differs from the signed SHA256SUMS"),
        "{}",
        bad.error_text()
    );
    m.stop().await;
}

#[tokio::test]
async fn origin_outage_serves_stale_and_survives_a_restart() {
    let (setup, origin, _signer, archives) = published("widget", "2.0.0", &["linux_amd64"]).await;
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.cache.index_ttl = Duration::from_millis(300);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let index = "/registry.origin.test/acme/widget/index.json";
    let doc = "/registry.origin.test/acme/widget/2.0.0.json";
    let zip = "/registry.origin.test/acme/widget/terraform-provider-widget_2.0.0_linux_amd64.zip";
    assert_eq!(c.get(&m.url(index)).await.status, StatusCode::OK);
    assert_eq!(c.get(&m.url(zip)).await.status, StatusCode::OK);

    // The origin answers 503: once the list is stale it is still served.
    origin.fail_with(Some(StatusCode::SERVICE_UNAVAILABLE));
    m.clock.advance(Duration::from_millis(400));
    let before = origin.hits("/v1/providers/acme/widget/versions");
    let stale = c.get(&m.url(index)).await;
    assert_eq!(stale.status, StatusCode::OK);
    assert_eq!(stale.json(), serde_json::json!({"versions": {"2.0.0": {}}}));
    assert!(
        origin.hits("/v1/providers/acme/widget/versions") > before,
        "the origin was asked first"
    );

    // The origin is gone entirely; the mirror restarts on the same cache.
    origin.stop();
    m.stop().await;
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    m.clock.advance(Duration::from_millis(400));
    let stale = c.get(&m.url(index)).await;
    assert_eq!(stale.status, StatusCode::OK, "{:?}", stale.body);
    let d = c.get(&m.url(doc)).await;
    assert_eq!(d.status, StatusCode::OK);
    assert_eq!(
        d.json()["archives"]["linux_amd64"]["hashes"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let z = c.get(&m.url(zip)).await;
    assert_eq!(z.status, StatusCode::OK);
    assert_eq!(&z.body[..], &archives["linux_amd64"][..]);
    // What was never cached cannot be served: a clear gateway error.
    let other = c
        .get(&m.url("/registry.origin.test/acme/other/index.json"))
        .await;
    assert_eq!(
        other.status,
        StatusCode::BAD_GATEWAY,
        "{}",
        other.error_text()
    );
    m.stop().await;
}

#[tokio::test]
async fn hosts_not_allowed_are_refused_without_traffic() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let m = RunningMirror::start(setup.config(&origin, &["registry.terraform.io"], &[])).await;
    let c = Client::trusting(&m.ca_file);
    let host = origin.hostname();
    for path in [
        format!("/{host}/acme/widget/index.json"),
        format!("/{host}/acme/widget/1.0.0.json"),
        format!("/{host}/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip"),
    ] {
        let a = c.get(&m.url(&path)).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{path}");
        assert!(
            a.error_text().contains("upstream.allowed_hosts"),
            "{}",
            a.error_text()
        );
    }
    assert_eq!(origin.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
    m.stop().await;
}

#[tokio::test]
async fn hostile_paths_are_bad_requests() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);
    let long = format!(
        "/registry.origin.test/{}/widget/index.json",
        "a".repeat(5000)
    );
    for path in [
        "/registry.origin.test/acme/../../../etc/passwd",
        "/registry.origin.test/acme/%2e%2e/index.json",
        "/registry.origin.test/acme%2Fx/widget/index.json",
        "/registry.origin.test/acme/widget%00/index.json",
        "/registry.origin.test/acme/widget/..%2f..%2findex.json",
        "/registry.origin.test//widget/index.json",
        "/registry.origin.test/acme/widget/1.0.json",
        "/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux.zip",
        "/a%20b/acme/widget/index.json",
        long.as_str(),
    ] {
        let a = c.get(&m.url(path)).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(a.headers["content-type"], "application/json");
        assert!(a.json()["errors"][0].is_string());
    }
    let post = c
        .request(
            Method::POST,
            &m.url("/registry.origin.test/acme/widget/index.json"),
        )
        .await;
    assert_eq!(post.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(origin.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
    let home = c.get(&m.url("/")).await;
    assert_eq!(home.status, StatusCode::OK);
    let page = home.page_text();
    assert!(
        page.contains(&format!("url = \"{}\"", m.url("/"))),
        "{page}"
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_cold_downloads_share_one_upstream_fetch() {
    let sc = Scene::start("widget", "3.0.0", &["linux_amd64"]).await;
    sc.origin.set_archive_delay(Duration::from_millis(300));
    let c = std::sync::Arc::new(Client::trusting(&sc.mirror.ca_file));
    let url = sc.archive_url("widget", "3.0.0", "linux_amd64");
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (c, url) = (c.clone(), url.clone());
        tasks.push(tokio::spawn(async move { c.get(&url).await }));
    }
    for t in tasks {
        let a = t.await.unwrap();
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(&a.body[..], &sc.archives["linux_amd64"][..]);
    }
    assert_eq!(
        sc.origin
            .hits("/files/terraform-provider-widget_3.0.0_linux_amd64.zip"),
        1
    );
    assert_eq!(sc.origin.hits("/v1/providers/acme/widget/versions"), 1);
    assert_eq!(
        sc.origin
            .hits("/v1/providers/acme/widget/3.0.0/download/linux/amd64"),
        1
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_whose_client_gave_up_still_completes_once() {
    let sc = Scene::start("widget", "4.0.0", &["linux_amd64"]).await;
    sc.origin.set_archive_delay(Duration::from_millis(500));
    let (c, setup) = (&sc.client, &sc.setup);
    let url = sc.archive_url("widget", "4.0.0", "linux_amd64");
    let gave_up = tokio::time::timeout(Duration::from_millis(150), c.get(&url)).await;
    assert!(gave_up.is_err(), "the first client should have given up");
    wait_until(
        "the abandoned download to be stored",
        Duration::from_secs(10),
        || {
            files_below(&setup.cache_dir())
                .iter()
                .any(|f| f.ends_with("terraform-provider-widget_4.0.0_linux_amd64.zip"))
        },
    )
    .await;
    let a = c.get(&url).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], &sc.archives["linux_amd64"][..]);
    assert_eq!(
        sc.origin
            .hits("/files/terraform-provider-widget_4.0.0_linux_amd64.zip"),
        1
    );
}

#[tokio::test]
async fn discovery_follows_redirects_and_platforms_may_be_unlisted() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.redirect_discovery();
    origin.omit_platforms();
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "5.0.0",
        &["linux_arm64", "windows_amd64"],
        &signer,
        &[&signer],
    );
    let host = origin.hostname();
    let m = RunningMirror::start(setup.config(&origin, &[&host], &[])).await;
    let c = Client::trusting(&m.ca_file);
    let doc = c
        .get(&m.url(&format!("/{host}/acme/widget/5.0.0.json")))
        .await;
    assert_eq!(
        doc.status,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&doc.body)
    );
    let doc = doc.json();
    let platforms: Vec<&String> = doc["archives"].as_object().unwrap().keys().collect();
    assert_eq!(platforms, ["linux_arm64", "windows_amd64"]);
    assert_eq!(origin.hits("/registry/discovery.json"), 1);
    m.stop().await;
}

#[tokio::test]
async fn the_origins_404_is_remembered_briefly() {
    for (ttl, lookups) in [(Duration::from_secs(60), 1), (Duration::ZERO, 3)] {
        let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
            c.cache.negative_ttl = ttl;
        })
        .await;
        for _ in 0..3 {
            let a = sc.client.get(&sc.url("nothing/index.json")).await;
            assert_eq!(a.status, StatusCode::NOT_FOUND);
        }
        assert_eq!(
            sc.origin.hits("/v1/providers/acme/nothing/versions"),
            lookups,
            "{ttl:?}"
        );
    }
}

#[tokio::test]
async fn archives_over_the_size_limit_are_refused() {
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
        c.upstream.max_archive_size = bytesize::ByteSize::b(100);
    })
    .await;
    let a = sc
        .client
        .get(&sc.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    assert!(
        a.error_text().contains("upstream.max_archive_size"),
        "{}",
        a.error_text()
    );
    let stored = files_below(&sc.setup.cache_dir());
    assert!(
        !stored
            .iter()
            .any(|f| f.ends_with(".zip") || f.starts_with("tmp/")),
        "{stored:?}"
    );
}

#[tokio::test]
async fn leftovers_of_a_killed_run_are_swept_at_start() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let tmp = setup.cache_dir().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::write(tmp.join("part-abc123"), b"half an archive").unwrap();
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    m.stop().await;
}

#[tokio::test]
async fn plain_http_upstreams_need_insecure_http() {
    for insecure in [false, true] {
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
        let host = config.upstream.hosts.values_mut().next().unwrap();
        let http_url = origin.providers_url().replace("https://", "http://");
        host.services
            .insert("providers.v1".into(), http_url.parse().unwrap());
        host.insecure_http = insecure;
        let m = RunningMirror::start(config).await;
        let c = Client::trusting(&m.ca_file);
        let a = c
            .get(&m.url("/registry.origin.test/acme/widget/index.json"))
            .await;
        assert_eq!(a.status, StatusCode::BAD_GATEWAY);
        // Refused before any connection unless the host allows plain http;
        // then it is attempted (and fails here: the origin speaks only TLS).
        assert_eq!(
            a.error_text().contains("insecure_http"),
            !insecure,
            "{}",
            a.error_text()
        );
        m.stop().await;
    }
}

/// Documents carry a strong `ETag`; a client that has the current one gets
/// 304, and the tag changes when the document does (an archive's `h1:`
/// joins it once cached).
#[tokio::test]
async fn documents_answer_304_to_the_current_etag() {
    let scene = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    let c = &scene.client;
    for path in ["widget/index.json", "widget/1.0.0.json"] {
        let first = c.get(&scene.url(path)).await;
        assert_eq!(first.status, StatusCode::OK);
        assert_eq!(first.headers["cache-control"], "no-cache");
        let etag = first.headers["etag"].to_str().unwrap().to_string();
        assert!(etag.starts_with('"') && etag.len() == 34, "{etag}");
        let again = c
            .get_with_header(&scene.url(path), "if-none-match", &etag)
            .await;
        assert_eq!(again.status, StatusCode::NOT_MODIFIED, "{path}");
        assert!(again.body.is_empty());
        assert_eq!(again.headers["etag"], etag.as_str());
        let other = c
            .get_with_header(&scene.url(path), "if-none-match", "\"0\"")
            .await;
        assert_eq!(other.status, StatusCode::OK);
        assert_eq!(other.body, first.body);
    }
    let before = c.get(&scene.url("widget/1.0.0.json")).await;
    let zip = c
        .get(&scene.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(zip.status, StatusCode::OK);
    let after = c
        .get_with_header(
            &scene.url("widget/1.0.0.json"),
            "if-none-match",
            before.headers["etag"].to_str().unwrap(),
        )
        .await;
    assert_eq!(
        after.status,
        StatusCode::OK,
        "the h1: hash was added: a new document"
    );
    assert!(after.json()["archives"]["linux_amd64"]["hashes"][0]
        .as_str()
        .unwrap()
        .starts_with("h1:"));
    assert_ne!(after.headers["etag"], before.headers["etag"]);
    scene.mirror.stop().await;
}

#[tokio::test]
async fn a_namespace_with_underscores_is_mirrored_and_a_type_with_one_refused() {
    // An HCP Terraform organisation's namespace, which Terraform reads from
    // 1.16 on: the mirror, the facade and the OCI paths take it as the
    // origin spells it, case-folded; a provider type never holds one.
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("openai_inc");
    let archives = origin.publish(
        "openai_inc",
        "kube",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let host = origin.hostname();
    let m = RunningMirror::start(setup.config(&origin, &[&host], &[])).await;
    let c = Client::trusting(&m.ca_file);
    let index = c
        .get(&m.url(&format!("/{host}/OpenAI_Inc/kube/index.json")))
        .await;
    assert_eq!(index.status, StatusCode::OK, "{}", index.error_text());
    assert_eq!(index.json(), serde_json::json!({"versions": {"1.0.0": {}}}));
    let zip = c
        .get(&m.url(&format!(
            "/{host}/openai_inc/kube/terraform-provider-kube_1.0.0_linux_amd64.zip"
        )))
        .await;
    assert_eq!(zip.status, StatusCode::OK, "{}", zip.error_text());
    assert_eq!(&zip.body[..], &archives["linux_amd64"][..]);
    let facade = c
        .get(&m.url(&format!(
            "/-/facade/{host}/v1/providers/openai_inc/kube/versions"
        )))
        .await;
    assert_ne!(
        facade.status,
        StatusCode::BAD_REQUEST,
        "{}",
        facade.error_text()
    );
    let refused = c
        .get(&m.url(&format!("/{host}/hashicorp/google_beta/index.json")))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert!(
        refused.error_text().contains("provider type"),
        "{}",
        refused.error_text()
    );
    m.stop().await;
}
