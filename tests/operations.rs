//! Running the mirror as a service, in process: probes, metrics, request
//! IDs, the status page's content, and eviction under `cache.max_size`.

mod common;

use std::time::Duration;

use common::*;
use http::StatusCode;
use http_body_util::BodyExt;

/// The value of one metric line, `name{labels} value`.
fn metric(text: &str, series: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("{series} not in\n{text}"))
}

#[tokio::test]
#[allow(clippy::many_single_char_names, clippy::float_cmp)] // m, c and answers; metrics are exact counts
async fn probes_metrics_request_ids_and_status_page() {
    let Scene {
        setup,
        archives,
        mirror: m,
        client: c,
        origin: _origin,
        signer: _signer,
    } = Scene::start("widget", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;

    let health = c.get(&m.url("/healthz")).await;
    assert_eq!(
        (health.status, &health.body[..]),
        (StatusCode::OK, &b"ok\n"[..])
    );
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);

    // A cold install, then a warm one.
    let base = "/registry.origin.test/acme/widget";
    let zip = format!("{base}/terraform-provider-widget_1.0.0_linux_amd64.zip");
    for _ in 0..2 {
        assert_eq!(
            c.get(&m.url(&format!("{base}/index.json"))).await.status,
            StatusCode::OK
        );
        assert_eq!(
            c.get(&m.url(&format!("{base}/1.0.0.json"))).await.status,
            StatusCode::OK
        );
        assert_eq!(c.get(&m.url(&zip)).await.status, StatusCode::OK);
    }
    let size = f64::from(u32::try_from(archives["linux_amd64"].len()).unwrap());
    let text = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    let cases = [
        (
            "tfmirror_cache_lookups_total{kind=\"index\",outcome=\"miss\"}",
            1.0,
        ),
        (
            "tfmirror_cache_lookups_total{kind=\"index\",outcome=\"hit\"}",
            2.0,
        ),
        (
            "tfmirror_cache_lookups_total{kind=\"archive\",outcome=\"miss\"}",
            1.0,
        ),
        (
            "tfmirror_cache_lookups_total{kind=\"archive\",outcome=\"hit\"}",
            1.0,
        ),
        (
            "tfmirror_http_requests_total{endpoint=\"archive\",status=\"200\"}",
            2.0,
        ),
        (
            "tfmirror_http_requests_total{endpoint=\"version\",status=\"200\"}",
            2.0,
        ),
        (
            "tfmirror_http_request_duration_seconds_count{endpoint=\"index\"}",
            2.0,
        ),
        (
            "tfmirror_signature_verifications_total{outcome=\"valid\"}",
            1.0,
        ),
        ("tfmirror_fetched_bytes_total", size),
        ("tfmirror_served_bytes_total", 2.0 * size),
        ("tfmirror_cache_size_bytes", size),
        ("tfmirror_cache_archives", 1.0),
        ("tfmirror_downloads_in_flight", 0.0),
        ("tfmirror_archive_requests_waiting", 0.0),
        // The release host (named localhost in the public registry's
        // shape of the answers): the checksum document and its signature,
        // and the download, a redirect and then the file.
        (
            "tfmirror_upstream_requests_total{host=\"localhost\",outcome=\"ok\"}",
            4.0,
        ),
    ];
    for (series, want) in cases {
        assert_eq!(metric(&text, series), want, "{series}");
    }
    assert!(
        metric(
            &text,
            "tfmirror_upstream_requests_total{host=\"127.0.0.1\",outcome=\"ok\"}"
        ) >= 3.0
    );

    // Every answer carries its own request ID.
    let a = c.get(&m.url("/healthz")).await;
    let b = c.get(&m.url("/nope")).await;
    let (ida, idb) = (&a.headers["x-request-id"], &b.headers["x-request-id"]);
    assert_eq!(ida.len(), 16);
    assert_ne!(ida, idb);

    // The status page names this server and lists what is cached.
    let page = c.get(&m.url("/-/status")).await;
    assert_eq!(page.headers["content-type"], "text/html; charset=utf-8");
    let html = page.page_text();
    assert!(
        html.contains(&format!("url = \"{}\"", m.url("/"))),
        "{html}"
    );
    assert!(
        html.contains(
            "<tr><td><a href=\"/-/providers/registry.origin.test/acme/widget\">registry.origin.test/acme/widget</a></td><td>1.0.0</td><td>linux_amd64</td></tr>"
        ),
        "{html}"
    );
    assert!(
        !html.contains("darwin_arm64"),
        "only cached archives are listed"
    );

    // Not ready when the cache cannot be written, or when shutting down.
    // (First the stored archive's build record, read in the background,
    // is made: it stages its copy in tmp/.)
    wait_until_answered(
        "the archive's build record",
        Duration::from_secs(30),
        || async {
            let text = c.get(&m.url("/metrics")).await.body;
            String::from_utf8_lossy(&text)
                .contains("tfmirror_build_records_total{outcome=\"nothing\"} 1\n")
        },
    )
    .await;
    let tmp = setup.cache_dir().join("tmp");
    std::fs::remove_dir(&tmp).unwrap();
    std::fs::write(&tmp, b"in the way").unwrap();
    let r = c.get(&m.url("/readyz")).await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE);
    let said = r.error_text();
    assert!(said.contains("cannot be written"), "{said}");
    let named = setup.cache_dir().display().to_string();
    assert!(said.contains(&named), "{said}");
    std::fs::remove_file(&tmp).unwrap();
    std::fs::create_dir(&tmp).unwrap();
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);
    m.mirror.set_draining();
    assert_eq!(
        c.get(&m.url("/readyz")).await.status,
        StatusCode::SERVICE_UNAVAILABLE
    );
    assert_eq!(c.get(&m.url("/healthz")).await.status, StatusCode::OK);
    m.stop().await;
}

const MIB: usize = 1024 * 1024;

/// A mirror limited to `max_mib` MiB, and an origin publishing versions
/// 1.0.0, 2.0.0 and 3.0.0 of acme/big with `size_mib` MiB archives.
async fn big_cache(
    size_mib: usize,
    max_mib: u64,
) -> (
    Setup,
    FakeOrigin,
    std::collections::BTreeMap<String, Vec<u8>>,
    RunningMirror,
) {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let versions = ["1.0.0", "2.0.0", "3.0.0"];
    let published = publish_big(&origin, &signer, "big", &versions, size_mib * MIB);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.cache.max_size = Some(bytesize::ByteSize::mib(max_mib));
    // These tests look at the cache as soon as an answer is complete, so
    // answers must wait for the archive to be stored.
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    let m = RunningMirror::start(config).await;
    (setup, origin, published, m)
}

fn big_url(m: &RunningMirror, v: &str) -> String {
    m.url(&format!(
        "/registry.origin.test/acme/big/terraform-provider-big_{v}_linux_amd64.zip"
    ))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn eviction_keeps_the_cache_under_max_size_and_spares_archives_being_read() {
    let (setup, origin, published, m) = big_cache(8, 20).await;
    let c = Client::trusting(&m.ca_file);
    let url = |v: &str| big_url(&m, v);
    let cached = |v: &str| {
        setup
            .cache_dir()
            .join(format!("providers/registry.origin.test/acme/big/{v}/terraform-provider-big_{v}_linux_amd64.zip"))
            .exists()
    };

    assert_eq!(c.get(&url("1.0.0")).await.status, StatusCode::OK);
    assert_eq!(c.get(&url("2.0.0")).await.status, StatusCode::OK);
    // 1.0.0 is the least recently used, but a client is reading it now.
    let reading = c.start_get(&url("1.0.0")).await;
    assert_eq!(reading.status(), StatusCode::OK);
    assert_eq!(c.get(&url("3.0.0")).await.status, StatusCode::OK);

    assert!(cached("1.0.0"), "the archive being read was evicted");
    assert!(
        !cached("2.0.0"),
        "the least recently used idle archive stays"
    );
    assert!(cached("3.0.0"));
    let (bytes, count) = m.mirror.usage();
    assert!(bytes <= 20 * MIB as u64, "{bytes}");
    assert_eq!(count, 2);
    let body = reading.into_body().collect().await.unwrap().to_bytes();
    assert_eq!(&body[..], &published["1.0.0"][..]);

    // An evicted archive is fetched again on demand.
    let again = c.get(&url("2.0.0")).await;
    assert_eq!(&again.body[..], &published["2.0.0"][..]);
    assert_eq!(
        origin.hits("/files/terraform-provider-big_2.0.0_linux_amd64.zip"),
        2
    );
    assert!(m.mirror.usage().0 <= 20 * MIB as u64);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_downloading_while_the_cache_fills_is_not_evicted() {
    let (setup, origin, published, m) = big_cache(6, 13).await;
    let c = std::sync::Arc::new(Client::trusting(&m.ca_file));
    let url = |v: &str| big_url(&m, v);

    // 3.0.0 is slow to arrive; 1.0.0 and 2.0.0 fill the cache meanwhile.
    origin.set_file_delay(
        "terraform-provider-big_3.0.0_linux_amd64.zip",
        Duration::from_millis(1500),
    );
    let slow = {
        let (c, u) = (c.clone(), url("3.0.0"));
        tokio::spawn(async move { c.get(&u).await })
    };
    wait_until(
        "the slow download to begin",
        Duration::from_secs(10),
        || origin.hits("/files/terraform-provider-big_3.0.0_linux_amd64.zip") == 1,
    )
    .await;
    assert_eq!(c.get(&url("1.0.0")).await.status, StatusCode::OK);
    assert_eq!(c.get(&url("2.0.0")).await.status, StatusCode::OK);
    let a = slow.await.unwrap();
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], &published["3.0.0"][..]);
    // The finished download stays; the least recently used one made room.
    let names: Vec<String> = files_below(&setup.cache_dir())
        .into_iter()
        .filter(|f| f.ends_with(".zip"))
        .collect();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(names.iter().any(|f| f.contains("big_3.0.0")), "{names:?}");
    assert!(!names.iter().any(|f| f.contains("big_1.0.0")), "{names:?}");
    assert!(m.mirror.usage().0 <= 13 * MIB as u64);
}
