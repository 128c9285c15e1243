//! What real origins and the CDNs in front of them do, each against the
//! mirror: redirects of every kind, compressed and chunked answers, rate
//! limits with `Retry-After`, an origin that speaks HTTP/2 only, a slow
//! first byte, and an HTML page where JSON was expected. (Short bodies
//! behind a `Content-Length` that lies, resets and stalls are in
//! `tests/faults.rs`.)

mod common;

use std::time::Duration;

use common::*;
use http::StatusCode;

const VERSIONS: &str = "/v1/providers/acme/widget/versions";
const ANSWER: &str = "/v1/providers/acme/widget/1.0.0/download/linux/amd64";
const SUMS: &str = "/files/terraform-provider-widget_1.0.0_SHA256SUMS";
const ZIP: &str = "/files/terraform-provider-widget_1.0.0_linux_amd64.zip";

/// Installs `acme/widget` 1.0.0 through the mirror as a client would: the
/// version list, the version document, the archive. Returns the archive.
async fn install(sc: &Scene) -> Vec<u8> {
    let index = sc.client.get(&sc.url("widget/index.json")).await;
    assert_eq!(index.status, StatusCode::OK, "{}", index.error_text());
    assert_eq!(index.json(), serde_json::json!({"versions": {"1.0.0": {}}}));
    let doc = sc.client.get(&sc.url("widget/1.0.0.json")).await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    let zh = format!("zh:{}", sha256_hex(&sc.archives["linux_amd64"]));
    assert!(doc.json()["archives"]["linux_amd64"]["hashes"]
        .as_array()
        .unwrap()
        .contains(&zh.into()));
    let archive = sc
        .client
        .get(&sc.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(archive.status, StatusCode::OK, "{}", archive.error_text());
    archive.body.to_vec()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn redirects_of_every_kind_are_followed_for_every_answer() {
    for status in [
        StatusCode::MOVED_PERMANENTLY,
        StatusCode::FOUND,
        StatusCode::TEMPORARY_REDIRECT,
        StatusCode::PERMANENT_REDIRECT,
    ] {
        for relative in [true, false] {
            let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
            for path in [VERSIONS, ANSWER, SUMS, ZIP] {
                sc.origin
                    .set_fault(path, Some(Fault::Redirect(status, relative)));
            }
            let label = format!("{status}, relative {relative}");
            assert_eq!(install(&sc).await, sc.archives["linux_amd64"], "{label}");
            for path in [VERSIONS, ANSWER, SUMS, ZIP] {
                assert_eq!(sc.origin.hits(path), 1, "{label}: {path}");
                assert_eq!(
                    sc.origin.hits(&format!("/moved{path}")),
                    1,
                    "{label}: {path}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn gzip_and_chunked_answers_are_read() {
    for fault in [Fault::Gzip, Fault::Chunked] {
        let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
        for path in [VERSIONS, ANSWER, SUMS] {
            sc.origin.set_fault(path, Some(fault.clone()));
        }
        // The archive goes chunked; a gzip-encoded zip would be another
        // file, which the checksum refuses (as it should).
        sc.origin.set_fault(ZIP, Some(Fault::Chunked));
        assert_eq!(install(&sc).await, sc.archives["linux_amd64"], "{fault:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate_limits_are_waited_out_when_short_and_stale_copies_served_when_long() {
    // 429 and 503 with a short Retry-After: asked again, then answered.
    for status in [
        StatusCode::TOO_MANY_REQUESTS,
        StatusCode::SERVICE_UNAVAILABLE,
    ] {
        let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
        let throttle = Fault::Throttle {
            status,
            retry_after: Some("1"),
            count: 1,
        };
        for path in [VERSIONS, ANSWER, ZIP] {
            sc.origin.set_fault(path, Some(throttle.clone()));
        }
        assert_eq!(install(&sc).await, sc.archives["linux_amd64"], "{status}");
        for path in [VERSIONS, ANSWER, ZIP] {
            assert_eq!(sc.origin.hits(path), 2, "{status}: {path}");
        }
    }

    // Still limited after the retries (each asks for a second, twice):
    // an error that names the status, as an outage.
    let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    sc.origin.set_fault(
        VERSIONS,
        Some(Fault::Throttle {
            status: StatusCode::TOO_MANY_REQUESTS,
            retry_after: None,
            count: 100,
        }),
    );
    let refused = sc.client.get(&sc.url("widget/index.json")).await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    assert!(
        refused.error_text().contains("429"),
        "{}",
        refused.error_text()
    );
    assert_eq!(sc.origin.hits(VERSIONS), 3, "one request and two retries");

    // A long Retry-After is not waited for: the stale list is served.
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
        c.cache.index_ttl = Duration::from_secs(60);
    })
    .await;
    assert_eq!(
        sc.client.get(&sc.url("widget/index.json")).await.status,
        StatusCode::OK
    );
    sc.mirror.clock.advance(Duration::from_secs(61));
    sc.origin.set_fault(
        VERSIONS,
        Some(Fault::Throttle {
            status: StatusCode::TOO_MANY_REQUESTS,
            retry_after: Some("3600"),
            count: 100,
        }),
    );
    let stale = sc.client.get(&sc.url("widget/index.json")).await;
    assert_eq!(stale.status, StatusCode::OK, "{}", stale.error_text());
    assert_eq!(stale.json(), serde_json::json!({"versions": {"1.0.0": {}}}));
    assert_eq!(sc.origin.hits(VERSIONS), 2, "asked once more, not retried");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_origin_that_speaks_only_http2_serves_installs() {
    let setup = Setup::new();
    let origin = FakeOrigin::start_http2_only(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let sc = Scene::on(setup, origin, signer, archives, |_| {}).await;
    assert_eq!(install(&sc).await, sc.archives["linux_amd64"]);
    let seen = sc.origin.versions_seen();
    assert!(!seen.is_empty());
    assert!(seen.iter().all(|v| *v == http::Version::HTTP_2), "{seen:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_first_byte_within_the_timeout_is_waited_for() {
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
        c.upstream.request_timeout = Duration::from_secs(4);
    })
    .await;
    for path in [VERSIONS, ANSWER, SUMS, ZIP] {
        sc.origin
            .set_fault(path, Some(Fault::SlowStart(Duration::from_millis(1500))));
    }
    assert_eq!(install(&sc).await, sc.archives["linux_amd64"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_html_page_where_json_was_expected_is_named_as_such() {
    let sc = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    sc.origin.set_fault(VERSIONS, Some(Fault::HtmlPage));
    let refused = sc.client.get(&sc.url("widget/index.json")).await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    let text = refused.error_text();
    for says in [
        "not JSON",
        "Content-Type text/html",
        "<!DOCTYPE html>",
        &format!("{}{}", sc.origin.providers_url(), "acme/widget/versions"),
    ] {
        assert!(text.contains(says), "{says:?} missing from {text}");
    }
    // The page is not taken for an empty list: once the origin answers
    // again, so does the mirror.
    sc.origin.set_fault(VERSIONS, None);
    assert_eq!(install(&sc).await, sc.archives["linux_amd64"]);
}

/// Runs `tfmirror check-upstream` against `origin` with `items`; its exit
/// status, standard output and standard error.
async fn check_upstream(
    setup: &Setup,
    origin: &FakeOrigin,
    items: &[&str],
) -> (bool, String, String) {
    let file = setup.dir.path().join("check.toml");
    std::fs::write(
        &file,
        format!(
            "[upstream]\nca_file = \"{}\"\nallow_private_addresses = true\nallowed_hosts = [\"{}\"]\n",
            setup.dir.path().join("origin-ca.pem").display(),
            origin.hostname()
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_tfmirror"))
        .arg("check-upstream")
        .arg("--config")
        .arg(&file)
        .args(["--platform", "linux_amd64", &origin.hostname()])
        .args(items)
        .output()
        .await
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_upstream_reports_each_step_and_names_what_is_broken() {
    let (setup, origin, _signer, _archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    origin.publish_archive_module(("acme", "net", "aws"), "1.0.0", b"not checked".to_vec());

    let (ok, out, err) = check_upstream(&setup, &origin, &["acme/widget", "acme/net/aws"]).await;
    assert!(ok, "{out}\n{err}");
    for step in [
        "discovery",
        "versions",
        "download",
        "signature",
        "checksum",
        "archive",
        "location",
    ] {
        assert!(
            out.lines()
                .any(|l| l.trim_start().starts_with(step) && l.contains(" ok ")),
            "{step} missing from:\n{out}"
        );
    }
    assert!(out.contains("1 versions, newest 1.0.0"), "{out}");
    assert!(out.contains("a zip archive"), "{out}");
    assert!(out.contains("(archive source at"), "{out}");
    assert!(out.contains("all 9 checks of"), "{out}");
    assert_eq!(
        origin.hits("/files/acme-net-aws-1.0.0.tar.gz"),
        0,
        "module sources are not fetched"
    );

    // A key the clients cannot use, and an HTML page for the module list:
    // each named with its field or content and its URL.
    origin.set_fault(
        ANSWER,
        Some(Fault::Body(
            br#"{"os":"linux","arch":"amd64","filename":"f.zip","download_url":"/f.zip","shasums_url":"/s","shasums_signature_url":"/s.sig","shasum":"00","signing_keys":{"gpg_public_keys":[null]}}"#.to_vec(),
        )),
    );
    origin.set_fault("/v1/modules/acme/net/aws/versions", Some(Fault::HtmlPage));
    let (ok, out, err) = check_upstream(&setup, &origin, &["acme/widget", "acme/net/aws"]).await;
    assert!(!ok, "{out}");
    let failed: Vec<&str> = out.lines().filter(|l| l.contains("FAILED")).collect();
    assert_eq!(failed.len(), 2, "{out}");
    assert!(
        failed[0].contains("download")
            && failed[0].contains("`signing_keys.gpg_public_keys[0]`: is null"),
        "{out}"
    );
    assert!(
        failed[0].contains(&format!(
            "https://{}/v1/providers/acme/widget/1.0.0/download/linux/amd64",
            origin.hostname()
        )),
        "{out}"
    );
    assert!(
        failed[1].contains("versions")
            && failed[1].contains("not JSON")
            && failed[1].contains("text/html"),
        "{out}"
    );
    assert!(err.contains("2 of 5 checks of"), "{err}");
}
