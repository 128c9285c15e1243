//! Archives larger than `upstream.stream_above` are sent to the waiting
//! clients while they download, the last byte held back until the whole
//! archive has verified; a failed check cuts every such response short.

mod common;

use std::time::{Duration, Instant};

use common::*;
use http::StatusCode;
use http_body_util::BodyExt;

const ZIP: &str = "terraform-provider-big_1.0.0_linux_amd64.zip";

async fn streaming_scene() -> (Setup, FakeOrigin, Vec<u8>, RunningMirror) {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let published = publish_big(&origin, &signer, "big", &["1.0.0"], 2 * 1024 * 1024);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.upstream.stream_above = bytesize::ByteSize::kib(64);
    let m = RunningMirror::start(config).await;
    (setup, origin, published["1.0.0"].clone(), m)
}

fn url(m: &RunningMirror) -> String {
    m.url(&format!("/registry.origin.test/acme/big/{ZIP}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn big_archives_reach_clients_while_they_download() {
    let (setup, origin, archive, m) = streaming_scene().await;
    let c = Client::trusting(&m.ca_file);
    let doc = c
        .get(&m.url("/registry.origin.test/acme/big/1.0.0.json"))
        .await;
    assert_eq!(doc.status, StatusCode::OK);
    // Ten pieces, 300 ms apart: about three seconds for the whole download.
    origin.set_fault(
        &format!("/files/{ZIP}"),
        Some(Fault::Trickle(Duration::from_millis(300))),
    );
    let started = Instant::now();
    let clients: Vec<_> = (0..8)
        .map(|_| {
            let (c, url) = (Client::trusting(&m.ca_file), url(&m));
            tokio::spawn(async move {
                let resp = c.start_get(&url).await;
                let headers_after = started.elapsed();
                assert_eq!(resp.status(), StatusCode::OK);
                let mut body = resp.into_body();
                let mut first_bytes_after = None;
                let mut bytes = Vec::new();
                while let Some(frame) = body.frame().await {
                    let data = frame.unwrap().into_data().unwrap();
                    first_bytes_after.get_or_insert(started.elapsed());
                    bytes.extend_from_slice(&data);
                }
                (headers_after, first_bytes_after.unwrap(), bytes)
            })
        })
        .collect();
    for client in clients {
        let (headers_after, first_bytes_after, bytes) = client.await.unwrap();
        assert!(
            headers_after < Duration::from_millis(1500),
            "{headers_after:?}"
        );
        assert!(
            first_bytes_after < Duration::from_secs(2),
            "{first_bytes_after:?}"
        );
        assert_eq!(bytes, archive);
    }
    assert!(
        started.elapsed() >= Duration::from_millis(2700),
        "the origin was not slow"
    );
    assert_eq!(
        origin.hits(&format!("/files/{ZIP}")),
        1,
        "one upstream fetch"
    );
    // And it is kept.
    let stored = setup.cache_dir().join(format!(
        "providers/registry.origin.test/acme/big/1.0.0/{ZIP}"
    ));
    wait_until(
        "the streamed archive to be stored",
        Duration::from_secs(10),
        || stored.exists(),
    )
    .await;
    assert_eq!(std::fs::read(&stored).unwrap(), archive);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_streamed_archive_that_fails_its_check_never_arrives_whole() {
    let (setup, origin, archive, m) = streaming_scene().await;
    let c = Client::trusting(&m.ca_file);
    let mut tampered = archive.clone();
    let middle = tampered.len() / 2;
    tampered[middle] ^= 1;
    origin.replace_file(ZIP, tampered);
    origin.set_fault(
        &format!("/files/{ZIP}"),
        Some(Fault::Trickle(Duration::from_millis(50))),
    );
    let clients: Vec<_> = (0..4)
        .map(|_| {
            let (c, url) = (Client::trusting(&m.ca_file), url(&m));
            tokio::spawn(async move {
                let resp = c.start_get(&url).await;
                let mut body = resp.into_body();
                let mut got = 0usize;
                let mut failed = false;
                while let Some(frame) = body.frame().await {
                    if let Ok(f) = frame {
                        got += f.into_data().map_or(0, |d| d.len());
                    } else {
                        failed = true;
                        break;
                    }
                }
                (got, failed)
            })
        })
        .collect();
    for client in clients {
        let (got, failed) = client.await.unwrap();
        assert!(
            got < archive.len(),
            "a client received the whole tampered archive"
        );
        assert!(failed, "the body ended without an error");
    }
    let stored = files_below(&setup.cache_dir());
    assert!(!stored.iter().any(|f| f.ends_with(".zip")), "{stored:?}");

    // The origin fixed: the next request gets the archive.
    origin.replace_file(ZIP, archive.clone());
    let again = c.get(&url(&m)).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(&again.body[..], &archive[..]);
    m.stop().await;
}

/// Sends `requests` (whole HTTP/1.1 requests, written at once: pipelined
/// when several) on `conn` and reads one answer per request: status line,
/// headers (lower-cased names) and exactly `Content-Length` bytes of body
/// (none for a HEAD).
async fn exchange(
    conn: &mut tokio::net::TcpStream,
    requests: &[(&str, &str)],
) -> Vec<(String, std::collections::BTreeMap<String, String>, Vec<u8>)> {
    use std::fmt::Write as _;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut wire = String::new();
    for (method, path) in requests {
        write!(wire, "{method} {path} HTTP/1.1\r\nHost: mirror\r\n\r\n").unwrap();
    }
    conn.write_all(wire.as_bytes()).await.unwrap();
    let mut pending: Vec<u8> = Vec::new();
    let mut answers = Vec::new();
    for (method, _) in requests {
        let end = loop {
            if let Some(at) = pending.windows(4).position(|w| w == b"\r\n\r\n") {
                break at;
            }
            let mut buf = vec![0u8; 16 * 1024];
            let n = conn.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed before the headers");
            pending.extend_from_slice(&buf[..n]);
        };
        let head = String::from_utf8(pending[..end].to_vec()).unwrap();
        pending.drain(..end + 4);
        let mut lines = head.split("\r\n");
        let status = lines.next().unwrap().to_owned();
        let headers: std::collections::BTreeMap<String, String> = lines
            .filter_map(|l| l.split_once(": "))
            .map(|(k, v)| (k.to_ascii_lowercase(), v.to_owned()))
            .collect();
        let length: usize = if *method == "HEAD" {
            0
        } else {
            headers["content-length"].parse().unwrap()
        };
        while pending.len() < length {
            let mut buf = vec![0u8; 256 * 1024];
            let n = conn.read(&mut buf).await.unwrap();
            assert!(n > 0, "the connection closed mid-body");
            pending.extend_from_slice(&buf[..n]);
        }
        let body: Vec<u8> = pending.drain(..length).collect();
        answers.push((status, headers, body));
    }
    answers
}

/// Fails, naming `what` and the first byte that differs, unless `got` is
/// `want` (without printing megabytes of either).
fn assert_same(got: &[u8], want: &[u8], what: &str) {
    if got != want {
        let at = got.iter().zip(want).position(|(a, b)| a != b);
        panic!(
            "{what}: {} bytes received, {} expected; first difference at {at:?}",
            got.len(),
            want.len()
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[allow(clippy::float_cmp)] // byte counts
async fn plain_http_sends_cached_archives_from_the_file_byte_for_byte() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    // Three whole parts of a sent file and a partial one.
    let big = publish_big(
        &origin,
        &signer,
        "big",
        &["1.0.0"],
        3 * 1024 * 1024 + 12_345,
    )
    .remove("1.0.0")
    .unwrap();
    let small = origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    )["linux_amd64"]
        .clone();
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.server.tls = false;
    let m = RunningMirror::start(config).await;
    let big_path = format!("/registry.origin.test/acme/big/{ZIP}");
    let small_path =
        "/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip";
    let index = "/registry.origin.test/acme/big/index.json";
    let sent_from_file = || async {
        let mut conn = tokio::net::TcpStream::connect(m.addr).await.unwrap();
        let answer = exchange(&mut conn, &[("GET", "/metrics")]).await;
        let text = String::from_utf8(answer[0].2.clone()).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("tfmirror_sent_from_file_bytes_total "))
            .unwrap_or_else(|| panic!("no sendfile counter in\n{text}"))
            .parse::<f64>()
            .unwrap()
    };

    // Cold: each archive is downloaded, and sent as it arrives.
    let mut conn = tokio::net::TcpStream::connect(m.addr).await.unwrap();
    for (path, want) in [(big_path.as_str(), &big), (small_path, &small)] {
        let answer = exchange(&mut conn, &[("GET", path)]).await;
        assert!(answer[0].0.ends_with("200 OK"), "{}", answer[0].0);
        assert_same(&answer[0].2, want, path);
    }
    let before = sent_from_file().await;

    // Warm, on that one connection: archives between a HEAD and a JSON
    // document, then three requests pipelined in one write.
    let answers = exchange(
        &mut conn,
        &[
            ("GET", big_path.as_str()),
            ("HEAD", big_path.as_str()),
            ("GET", index),
            ("GET", small_path),
        ],
    )
    .await;
    assert_same(&answers[0].2, &big, "big, first");
    assert_eq!(answers[1].1["content-length"], big.len().to_string());
    assert!(answers[1].2.is_empty());
    let doc: serde_json::Value = serde_json::from_slice(&answers[2].2).unwrap();
    assert!(doc["versions"]["1.0.0"].is_object(), "{doc}");
    assert_same(&answers[3].2, &small, "small, after the document");
    let answers = exchange(
        &mut conn,
        &[
            ("GET", small_path),
            ("GET", big_path.as_str()),
            ("GET", index),
        ],
    )
    .await;
    assert_same(&answers[0].2, &small, "small, pipelined");
    assert_same(&answers[1].2, &big, "big, pipelined");
    assert!(answers[2].0.ends_with("200 OK"));

    // Eight connections at once.
    let downloads: Vec<_> = (0..8)
        .map(|_| {
            let (addr, path) = (m.addr, big_path.clone());
            tokio::spawn(async move {
                let mut conn = tokio::net::TcpStream::connect(addr).await.unwrap();
                exchange(&mut conn, &[("GET", path.as_str())])
                    .await
                    .remove(0)
                    .2
            })
        })
        .collect();
    for d in downloads {
        assert_same(&d.await.unwrap(), &big, "big, concurrently");
    }

    // Every warm archive byte went out by sendfile: 10 big, 2 small.
    let sent = sent_from_file().await - before;
    let want = u32::try_from(10 * big.len() + 2 * small.len()).unwrap();
    assert_eq!(sent, f64::from(want));
    m.stop().await;
}
