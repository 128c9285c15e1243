//! The fault matrix: each way the origin or the download host can misbehave
//! gives every concurrent waiter a clear error, stores nothing, and leaves
//! the next request free to succeed once the origin behaves again.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use http::StatusCode;

const ZIP: &str = "terraform-provider-widget_1.0.0_linux_amd64.zip";

/// What the mirror is asked for.
#[derive(Clone, Copy, Debug)]
enum Ask {
    Index,
    Version,
    Archive,
}

struct Case {
    /// The origin path that misbehaves.
    path: String,
    fault: Fault,
    ask: Ask,
    status: StatusCode,
    /// A fragment of the error the clients get.
    says: &'static str,
}

fn case(path: &str, fault: Fault, ask: Ask, status: StatusCode, says: &'static str) -> Case {
    Case {
        path: path.to_string(),
        fault,
        ask,
        status,
        says,
    }
}

fn cases() -> Vec<Case> {
    use Ask::*;
    use Fault::*;
    let versions = "/v1/providers/acme/widget/versions";
    let package = "/v1/providers/acme/widget/1.0.0/download/linux/amd64";
    let sums = "/files/terraform-provider-widget_1.0.0_SHA256SUMS";
    let archive = format!("/files/{ZIP}");
    let redirect = format!("/dl/{ZIP}");
    let huge = format!("{{\"versions\": [{}]}}", "{},".repeat(3 * 1024 * 1024));
    let (bad, timeout) = (StatusCode::BAD_GATEWAY, StatusCode::GATEWAY_TIMEOUT);
    vec![
        case(
            versions,
            Status(StatusCode::SERVICE_UNAVAILABLE),
            Index,
            bad,
            "answered 503",
        ),
        case(
            versions,
            Body(b"{\"versions\": [".to_vec()),
            Index,
            bad,
            "not JSON",
        ),
        case(
            versions,
            Body(huge.into_bytes()),
            Index,
            bad,
            "body larger than 8388608 bytes",
        ),
        case(versions, Reset, Index, bad, "could not reach"),
        case(versions, Truncate, Index, bad, "reading the body failed"),
        case(versions, WrongLength, Index, bad, "reading the body failed"),
        case(versions, Hang, Index, timeout, "did not answer within 2s"),
        case(
            versions,
            Trickle(Duration::from_millis(400)),
            Index,
            timeout,
            "did not answer within 2s",
        ),
        case(
            package,
            Status(StatusCode::INTERNAL_SERVER_ERROR),
            Version,
            bad,
            "answered 500",
        ),
        case(
            package,
            Body(b"[]".to_vec()),
            Version,
            bad,
            "expected an object, found a list",
        ),
        case(package, Truncate, Version, bad, "reading the body failed"),
        case(
            sums,
            Status(StatusCode::BAD_GATEWAY),
            Version,
            bad,
            "answered 502",
        ),
        case(sums, Hang, Version, bad, "did not answer within 2s"),
        case(
            sums,
            Body(b"not a sums file".to_vec()),
            Version,
            bad,
            "SHA256SUMS",
        ),
        case(
            &archive,
            Status(StatusCode::INTERNAL_SERVER_ERROR),
            Archive,
            bad,
            "answered 500",
        ),
        case(&archive, Reset, Archive, bad, "could not reach"),
        case(&archive, Truncate, Archive, bad, "downloading"),
        case(&archive, WrongLength, Archive, bad, "downloading"),
        case(&archive, Hang, Archive, timeout, "stalled for 2s"),
        case(
            &archive,
            Body(b"PK\x03\x04 but not really".to_vec()),
            Archive,
            bad,
            "does not match the signed SHA256SUMS",
        ),
        case(
            &redirect,
            RedirectLoop,
            Archive,
            bad,
            "more than 5 redirects",
        ),
    ]
}

/// Files in the cache other than those present before the fault.
fn stored(scene: &Scene) -> Vec<String> {
    files_below(&scene.setup.cache_dir())
        .into_iter()
        .filter(|f| !f.starts_with("data") && !f.contains(".lock"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_fault_fails_every_waiter_cleanly_and_then_recovers() {
    for c in cases() {
        let label = format!("{:?} on {} ({:?})", c.fault, c.path, c.ask);
        let scene = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
            config.upstream.request_timeout = Duration::from_secs(2);
        })
        .await;
        let url = match c.ask {
            Ask::Index => scene.url("widget/index.json"),
            Ask::Version => {
                // The version list is fine and cached.
                let index = scene.client.get(&scene.url("widget/index.json")).await;
                assert_eq!(index.status, StatusCode::OK, "{label}");
                scene.url("widget/1.0.0.json")
            }
            Ask::Archive => {
                // The metadata is fine and cached; only the download fails.
                let doc = scene.client.get(&scene.url("widget/1.0.0.json")).await;
                assert_eq!(doc.status, StatusCode::OK, "{label}");
                scene.archive_url("widget", "1.0.0", "linux_amd64")
            }
        };
        let before = stored(&scene);
        scene.origin.set_fault(&c.path, Some(c.fault.clone()));

        let answers = futures_util::future::join_all((0..4).map(|_| scene.client.get(&url))).await;
        for a in &answers {
            assert_eq!(
                a.status,
                c.status,
                "{label}: {}",
                String::from_utf8_lossy(&a.body)
            );
            let text = a.error_text();
            // Over HTTP/2 the origin's reset of a truncated answer can
            // reach the mirror before the answer's headers are read: the
            // request fails rather than its body, with the same status.
            let reset_first =
                matches!(c.fault, Fault::Truncate) && text.contains("stream error received");
            assert!(text.contains(c.says) || reset_first, "{label}: {text}");
        }
        assert_eq!(stored(&scene), before, "{label}: something was stored");

        scene.origin.set_fault(&c.path, None);
        let again = scene.client.get(&url).await;
        assert_eq!(again.status, StatusCode::OK, "{label}: no recovery");
        if let Ask::Archive = c.ask {
            assert_eq!(
                &again.body[..],
                &scene.archives["linux_amd64"][..],
                "{label}"
            );
        }
        scene.mirror.stop().await;
    }
}

/// Slow is not broken: an archive that arrives in pieces, each within the
/// stall limit, is served whole.
#[tokio::test]
async fn a_slow_but_steady_download_completes() {
    let scene = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.upstream.request_timeout = Duration::from_secs(2);
    })
    .await;
    scene.origin.set_fault(
        &format!("/files/{ZIP}"),
        Some(Fault::Trickle(Duration::from_millis(300))),
    );
    let a = scene
        .client
        .get(&scene.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], &scene.archives["linux_amd64"][..]);
    scene.mirror.stop().await;
}

/// A package whose SHA256SUMS signs bytes that are not a zip archive: the
/// hashes match, but Terraform could not install it, and its `h1:` cannot
/// be computed. Refused, nothing stored.
#[tokio::test]
async fn a_signed_archive_that_is_not_a_zip_is_refused() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives: BTreeMap<String, Vec<u8>> = [(
        "linux_amd64".to_string(),
        b"#!/bin/sh\necho not a zip\n".to_vec(),
    )]
    .into();
    let sums = sums_document("widget", "1.0.0", &archives);
    let sig = signer.sign_binary(&sums);
    let keys = vec![(signer.key_id(), signer.public_armored())];
    origin.publish_raw("acme", "widget", "1.0.0", &archives, sums, sig, keys);
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);
    let a = c
        .get(&m.url(&format!("/registry.origin.test/acme/widget/{ZIP}")))
        .await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    assert!(
        a.error_text().contains("not a valid zip"),
        "{}",
        a.error_text()
    );
    assert!(files_below(&setup.cache_dir())
        .iter()
        .all(|f| !f.ends_with(".zip") && !f.starts_with("tmp/")));
    m.stop().await;
}
