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
