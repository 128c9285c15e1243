//! Bounds and the request forgery guard: private upstream addresses,
//! upstream requests in flight, client connections, request header size and
//! slow clients.

mod common;

use std::time::Duration;

use common::*;
use http::{Method, StatusCode};
use tfmirror::config::HostConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const HOST: &str = "registry.origin.test";
const ZIP: &str = "terraform-provider-widget_1.0.0_linux_amd64.zip";

#[tokio::test]
async fn private_download_hosts_are_refused_unless_configured() {
    let (setup, origin, _signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    // Checksums beside the registry API, archives on a download host.
    origin.use_shape("protocol-minimal");
    let mut config = setup.config(&origin, &[], &[HOST]);
    config.upstream.allow_private_addresses = false;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    // The registry API is at the URL the operator configured for the host
    // (127.0.0.1): allowed, and so are the checksum documents at relative
    // URLs beside it. The download URL names localhost, which resolves to
    // loopback and was not configured: refused.
    let doc = c
        .get(&m.url(&format!("/{HOST}/acme/widget/1.0.0.json")))
        .await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    let a = c.get(&m.url(&format!("/{HOST}/acme/widget/{ZIP}"))).await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    let text = a.error_text();
    assert!(text.contains("refusing to connect to localhost"), "{text}");
    assert!(text.contains("loopback"), "{text}");
    assert_eq!(origin.hits(&format!("/dl/{ZIP}")), 0);
    m.stop().await;

    // An empty [upstream.hosts."localhost:PORT"] entry allows it.
    let mut configured = config;
    configured
        .upstream
        .hosts
        .insert(origin.hostname().parse().unwrap(), HostConfig::default());
    let m = RunningMirror::start(configured).await;
    let c = Client::trusting(&m.ca_file);
    let a = c.get(&m.url(&format!("/{HOST}/acme/widget/{ZIP}"))).await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.error_text());
    assert_eq!(&a.body[..], &archives["linux_amd64"][..]);
    m.stop().await;
}

#[tokio::test]
async fn discovery_of_a_private_registry_is_refused_without_traffic() {
    let (setup, origin, _signer, _archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let host = origin.hostname();
    // Allowed as a registry, but not configured: its address is loopback.
    let mut config = setup.config(&origin, &[&host], &[]);
    config.upstream.allow_private_addresses = false;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let a = c
        .get(&m.url(&format!("/{host}/acme/widget/index.json")))
        .await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    assert!(
        a.error_text().contains("refusing to connect"),
        "{}",
        a.error_text()
    );
    assert_eq!(origin.requests.load(std::sync::atomic::Ordering::SeqCst), 0);
    m.stop().await;

    // upstream.allow_private_addresses lifts the guard for every host.
    config.upstream.allow_private_addresses = true;
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let a = c
        .get(&m.url(&format!("/{host}/acme/widget/index.json")))
        .await;
    assert_eq!(a.status, StatusCode::OK, "{}", a.error_text());
    m.stop().await;
}

/// One slow download holds the only upstream slot; another download waits
/// for it at most `request_timeout`, then answers 503 naming the limit, and
/// succeeds once the slot is free.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn upstream_requests_in_flight_are_bounded() {
    for (total, per_host, named) in [
        (1, 16, "upstream.max_fetches (1)"),
        (16, 1, "upstream.max_fetches_per_host (1) for localhost"),
    ] {
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        let signer = Signer::new("acme");
        for v in ["1.0.0", "2.0.0"] {
            origin.publish("acme", "widget", v, &["linux_amd64"], &signer, &[&signer]);
        }
        let mut config = setup.config(&origin, &[], &[HOST]);
        config.upstream.request_timeout = Duration::from_secs(1);
        config.upstream.max_fetches = total;
        config.upstream.max_fetches_per_host = per_host;
        let m = RunningMirror::start(config).await;
        let c = Client::trusting(&m.ca_file);
        let url = |v: &str| {
            m.url(&format!(
                "/{HOST}/acme/widget/terraform-provider-widget_{v}_linux_amd64.zip"
            ))
        };
        for v in ["1.0.0", "2.0.0"] {
            let doc = c
                .get(&m.url(&format!("/{HOST}/acme/widget/{v}.json")))
                .await;
            assert_eq!(doc.status, StatusCode::OK);
        }
        // Ten pieces 400 ms apart: about four seconds on the slot.
        origin.set_fault(
            &format!("/files/{ZIP}"),
            Some(Fault::Trickle(Duration::from_millis(400))),
        );
        let slow = tokio::spawn({
            let (c, url) = (Client::trusting(&m.ca_file), url("1.0.0"));
            async move { c.get(&url).await.status }
        });
        wait_until(
            "the slow download to hold its slot",
            Duration::from_secs(10),
            || origin.hits(&format!("/files/{ZIP}")) == 1,
        )
        .await;
        let waited = c.get(&url("2.0.0")).await;
        assert_eq!(waited.status, StatusCode::SERVICE_UNAVAILABLE, "{named}");
        assert!(
            waited.error_text().contains(named),
            "{}",
            waited.error_text()
        );
        assert_eq!(slow.await.unwrap(), StatusCode::OK);
        assert_eq!(c.get(&url("2.0.0")).await.status, StatusCode::OK);
        m.stop().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_connections_are_bounded() {
    let scene = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.server.max_connections = 2;
    })
    .await;
    let m = &scene.mirror;
    // Two connections that say nothing take both slots.
    let idle = [raw_tls(m).await, raw_tls(m).await];
    let fresh = Client::trusting(&m.ca_file);
    let waiting = tokio::time::timeout(Duration::from_secs(2), fresh.get(&m.url("/healthz"))).await;
    assert!(waiting.is_err(), "a third connection was served");
    drop(idle);
    let served = fresh.get(&m.url("/healthz")).await;
    assert_eq!(served.status, StatusCode::OK);
}

#[tokio::test]
async fn oversized_request_headers_answer_431() {
    let scene = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    let big = "x".repeat(20 * 1024);
    // HTTP/1.1
    let mut conn = raw_tls(&scene.mirror).await;
    let request = format!("GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Big: {big}\r\n\r\n");
    conn.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    // HTTP/2 (what the test client negotiates)
    let a = scene
        .client
        .request_with(Method::GET, &scene.mirror.url("/healthz"), Some(&big))
        .await;
    assert_eq!(a.status, StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE);
    // Normal requests still work.
    let ok = scene.client.get(&scene.mirror.url("/healthz")).await;
    assert_eq!(ok.status, StatusCode::OK);
}

#[tokio::test]
async fn slow_clients_are_cut_off() {
    let scene = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.server.header_timeout = Duration::from_secs(1);
    })
    .await;
    // Half a request line, then silence.
    let mut conn = raw_tls(&scene.mirror).await;
    conn.write_all(b"GET /healthz HT").await.unwrap();
    let mut rest = Vec::new();
    let closed = tokio::time::timeout(Duration::from_secs(5), conn.read_to_end(&mut rest)).await;
    assert!(closed.is_ok(), "the connection stayed open");
    // A TCP connection that never starts TLS is closed too.
    let mut tcp = tokio::net::TcpStream::connect(scene.mirror.addr)
        .await
        .unwrap();
    let mut buf = [0u8; 16];
    let read = tokio::time::timeout(Duration::from_secs(5), tcp.read(&mut buf)).await;
    assert!(matches!(read, Ok(Ok(0) | Err(_))), "{read:?}");
}
