//! Documents kept as rendered between requests. `index.json`: kept with
//! the version list it was rendered from, and rendered again when a new
//! list is held. `:version.json` of a version whose archives are not all
//! held: rendered again as soon as this mirror stores one of its archives,
//! and at most `UNHELD_RECHECK` after that when another instance on the
//! same cache stored it.

mod common;

use common::*;
use http::StatusCode;
use serde_json::Value;
use tfmirror::mirror::documents::UNHELD_RECHECK;

const PLATFORMS: [&str; 2] = ["darwin_arm64", "linux_amd64"];

/// The `h1:` hashes a version document lists for `platform`.
fn h1s(doc: &Value, platform: &str) -> Vec<String> {
    doc["archives"][platform]["hashes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|h| h.as_str().filter(|h| h.starts_with("h1:")))
        .map(str::to_owned)
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_stored_elsewhere_shows_in_the_document_within_the_recheck() {
    let scene = Scene::start("widget", "1.0.0", &PLATFORMS).await;
    let doc_url = scene.url("widget/1.0.0.json");
    let get_doc = || async {
        let got = scene.client.get(&doc_url).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
        got.json()
    };
    let before = get_doc().await;
    for p in PLATFORMS {
        assert!(h1s(&before, p).is_empty(), "{p}: nothing is held yet");
    }

    // A second instance on the same cache directory stores linux_amd64.
    let mut other = scene
        .setup
        .config(&scene.origin, &[], &["registry.origin.test"]);
    other.server.data_dir = scene.setup.dir.path().join("other-data");
    let other = RunningMirror::start(other).await;
    let stored = Client::trusting(&other.ca_file)
        .get(&other.url(
            "/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip",
        ))
        .await;
    assert_eq!(stored.status, StatusCode::OK, "{}", stored.error_text());
    let linux_h1 =
        tfmirror::verify::h1_of_zip(std::io::Cursor::new(&scene.archives["linux_amd64"])).unwrap();

    // This instance answers as it rendered: it does not ask the store on
    // every request which archives it holds.
    let kept = get_doc().await;
    assert!(h1s(&kept, "linux_amd64").is_empty(), "{kept}");
    scene
        .mirror
        .clock
        .advance(UNHELD_RECHECK.saturating_sub(std::time::Duration::from_millis(1)));
    assert!(h1s(&get_doc().await, "linux_amd64").is_empty());

    // At the recheck it asks, and lists the stored archive's h1:.
    scene
        .mirror
        .clock
        .advance(std::time::Duration::from_millis(1));
    assert_eq!(h1s(&get_doc().await, "linux_amd64"), vec![linux_h1.clone()]);
    assert!(h1s(&get_doc().await, "darwin_arm64").is_empty());

    // An archive this instance stores is in the next answer, clock still.
    let own = scene
        .client
        .get(&scene.archive_url("widget", "1.0.0", "darwin_arm64"))
        .await;
    assert_eq!(own.status, StatusCode::OK, "{}", own.error_text());
    let darwin_h1 =
        tfmirror::verify::h1_of_zip(std::io::Cursor::new(&scene.archives["darwin_arm64"])).unwrap();
    let after = get_doc().await;
    assert_eq!(h1s(&after, "darwin_arm64"), [darwin_h1]);
    assert_eq!(h1s(&after, "linux_amd64"), [linux_h1]);
    other.stop().await;
}

#[tokio::test]
async fn a_version_list_held_anew_is_rendered_anew() {
    let scene = Scene::start_with("widget", "1.0.0", &PLATFORMS, |config| {
        config.cache.index_ttl = std::time::Duration::from_secs(60);
    })
    .await;
    let index = scene.url("widget/index.json");
    let get_index = || async {
        let got = scene.client.get(&index).await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
        let etag = got.headers["etag"].to_str().unwrap().to_owned();
        (got.json(), etag)
    };
    let (first, first_tag) = get_index().await;
    assert_eq!(first, serde_json::json!({"versions": {"1.0.0": {}}}));
    assert_eq!(get_index().await, (first.clone(), first_tag.clone()));

    // A new version at the origin: the held list answers until it expires.
    scene.origin.publish(
        "acme",
        "widget",
        "1.1.0",
        &PLATFORMS,
        &scene.signer,
        &[&scene.signer],
    );
    scene
        .mirror
        .clock
        .advance(std::time::Duration::from_secs(59));
    assert_eq!(get_index().await, (first, first_tag.clone()));

    // Expired: the list asked again, held in its place, and its document
    // rendered from it, not the one kept with the old list.
    scene
        .mirror
        .clock
        .advance(std::time::Duration::from_secs(2));
    let (second, second_tag) = get_index().await;
    assert_eq!(
        second,
        serde_json::json!({"versions": {"1.0.0": {}, "1.1.0": {}}})
    );
    assert_ne!(second_tag, first_tag);
    let revalidated = scene
        .client
        .get_with_header(&index, "if-none-match", &first_tag)
        .await;
    assert_eq!(revalidated.status, StatusCode::OK);
    assert_eq!(get_index().await, (second, second_tag));
}
