//! OpenTofu's `oci_mirror` paths (`/v2/…`), driven the way OpenTofu's
//! client drives them (its request sequence and every check it makes on
//! each answer, replayed from its code: `GET /v2/`, `tags/list`, `HEAD`
//! of the tag, the index and the platform's manifest by digest, then the
//! blob), for two platforms; `HEAD` answers; digests that stay the same
//! after a restart and offline; unknown repositories answered
//! `404 NAME_UNKNOWN`; a denied version absent from the tags and refused
//! by tag and digest; a tampered archive never served as a blob.

mod common;

use common::oci::{digest_of as sha256, header, Tofu};
use common::*;
use http::{Method, StatusCode};
use tfmirror::config::Config;
use tfmirror::policy::{Action, RuleConfig};

const HOST: &str = "registry.origin.test";
const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];
fn deny(config: &mut Config, versions: &str) {
    config.policy.rules.push(RuleConfig {
        verification: None,
        advisories: None,
        source: format!("{HOST}/acme/widget"),
        versions: Some(versions.into()),
        action: Action::Deny,
        reason: "withdrawn".into(),
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opentofu_installs_through_the_oci_paths_with_digests_that_never_change() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let config = setup.config(&origin, &[], &[HOST]);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let repo = format!("{HOST}/acme/widget");
    let tofu = Tofu {
        client: &c,
        base: base.clone(),
        authorization: None,
    };

    let mut digests = Vec::new();
    for platform in PLATFORMS {
        let (zip, digest) = tofu.install(&repo, "1.0.0", platform).await;
        assert_eq!(
            zip, archives[platform],
            "{platform}: the origin's archive, byte for byte"
        );
        digests.push(digest);
    }
    assert_eq!(digests[0], digests[1]);
    // The empty config is there for other OCI tools.
    let empty = "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
    let config_blob = c.get(&format!("{base}/v2/{repo}/blobs/{empty}")).await;
    assert_eq!(&config_blob.body[..], b"{}");
    let head = c
        .request(
            Method::HEAD,
            &format!("{base}/v2/{repo}/manifests/{}", digests[0]),
        )
        .await;
    assert_eq!(head.status, StatusCode::OK);
    assert!(head.body.is_empty());
    assert_eq!(header(&head, "docker-content-digest"), digests[0]);
    assert!(header(&head, "content-length").parse::<u64>().unwrap() > 100);

    // Unknown repositories send the client on to its next method.
    for path in [
        format!("/v2/{HOST}/acme/nothing/tags/list"),
        format!("/v2/{HOST}/acme/tags/list"),
        format!("/v2/{HOST}/a/b/c/d/tags/list"),
    ] {
        let a = c.get(&format!("{base}{path}")).await;
        assert_eq!(
            a.status,
            StatusCode::NOT_FOUND,
            "{path}: {}",
            a.error_text()
        );
        assert_eq!(a.json()["errors"][0]["code"], "NAME_UNKNOWN", "{path}");
    }
    let missing = c
        .get(&format!(
            "{base}/v2/{repo}/manifests/sha256:{}",
            "0".repeat(64)
        ))
        .await;
    assert_eq!(missing.json()["errors"][0]["code"], "MANIFEST_UNKNOWN");
    let served = metric_line(
        &c,
        &m,
        "tfmirror_http_requests_total{endpoint=\"oci\",status=\"200\"}",
    )
    .await;
    assert!(!served.is_empty());
    m.stop().await;

    // After a restart, offline with the origin gone: the same digest.
    origin.stop();
    let mut offline = config.clone();
    offline.upstream.offline = true;
    let m = RunningMirror::start(offline.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let tofu = Tofu {
        client: &c,
        base: base.clone(),
        authorization: None,
    };
    let (zip, digest) = tofu.install(&repo, "1.0.0", "linux_amd64").await;
    assert_eq!(digest, digests[0]);
    assert_eq!(zip, archives["linux_amd64"]);
    m.stop().await;

    // A denied version: not listed, refused by tag and by digest.
    let mut strict = offline;
    deny(&mut strict, "= 1.0.0");
    let m = RunningMirror::start(strict).await;
    let c = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let tags = c.get(&format!("{base}/v2/{repo}/tags/list")).await;
    assert_eq!(tags.json()["tags"], serde_json::json!([]));
    for reference in ["1.0.0", digests[0].as_str()] {
        let a = c
            .get(&format!("{base}/v2/{repo}/manifests/{reference}"))
            .await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{reference}");
        assert_eq!(a.json()["errors"][0]["code"], "DENIED");
    }
    m.stop().await;
}

async fn metric_line(c: &Client, m: &RunningMirror, prefix: &str) -> String {
    let text = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    text.lines()
        .find(|l| l.starts_with(prefix))
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tags_are_paged_a_tampered_archive_is_never_a_blob_and_tokens_are_asked_for() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    for version in ["1.0.0", "1.1.0", "2.0.0"] {
        origin.publish("acme", "widget", version, &PLATFORMS, &signer, &[&signer]);
    }
    let mut config = setup.config(&origin, &[], &[HOST]);
    config.auth.tokens = vec!["oci-token-0123456789abcdef".into()];
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let repo = format!("{HOST}/acme/widget");

    // Without credentials: 401 with a Basic challenge, in the OCI shape.
    let refused = c.get(&format!("{base}/v2/")).await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        header(&refused, "www-authenticate"),
        "Basic realm=\"tfmirror\""
    );
    assert_eq!(refused.json()["errors"][0]["code"], "UNAUTHORIZED");
    // The token as a Basic password, as `oci_credentials` sends it.
    let basic = "Basic dGZtaXJyb3I6b2NpLXRva2VuLTAxMjM0NTY3ODlhYmNkZWY=";
    let get = |path: String| {
        let c = &c;
        async move { c.request_with(Method::GET, &path, Some(basic)).await }
    };
    let page = get(format!("{base}/v2/{repo}/tags/list?n=2")).await;
    assert_eq!(page.json()["tags"], serde_json::json!(["1.0.0", "1.1.0"]));
    let link = header(&page, "link");
    assert_eq!(
        link,
        format!("</v2/{repo}/tags/list?n=2&last=1.1.0>; rel=\"next\"")
    );
    let next = get(format!("{base}/v2/{repo}/tags/list?n=2&last=1.1.0")).await;
    assert_eq!(next.json()["tags"], serde_json::json!(["2.0.0"]));
    assert!(next.headers.get("link").is_none());

    // A tampered archive: the blob is refused, never served.
    let index = get(format!("{base}/v2/{repo}/manifests/2.0.0")).await;
    let index: serde_json::Value = serde_json::from_slice(&index.body).unwrap();
    let linux = index["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["platform"]["os"] == "linux")
        .unwrap()["digest"]
        .as_str()
        .unwrap()
        .to_owned();
    let manifest = get(format!("{base}/v2/{repo}/manifests/{linux}")).await;
    let manifest: serde_json::Value = serde_json::from_slice(&manifest.body).unwrap();
    let layer = manifest["layers"][0]["digest"].as_str().unwrap().to_owned();
    origin.replace_file(
        "terraform-provider-widget_2.0.0_linux_amd64.zip",
        b"PK\x03\x04 not what was signed".to_vec(),
    );
    let blob = get(format!("{base}/v2/{repo}/blobs/{layer}")).await;
    assert_eq!(
        blob.status,
        StatusCode::BAD_GATEWAY,
        "{}",
        blob.error_text()
    );
    assert_ne!(sha256(&blob.body), layer);
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn digests_are_the_same_on_a_second_instance_sharing_a_bucket_and_across_an_air_gap() {
    use common::daemon::{config_file, run_ok, site_config};
    use common::seaweed::{use_bucket, Seaweed};
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let git_root = setup.dir.path().join("git");
    let net = Repo::new(&git_root, "net");
    net.commit(&[("main.tf", "variable \"a\" {}\n")], "v1");
    net.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
    weed.create_bucket("oci").await;
    let mut config = setup.module_config(&origin, HOST);
    use_bucket(&mut config, weed.s3_config("oci", setup.dir.path()));
    let provider_repo = format!("{HOST}/acme/widget");
    let module_repo = format!("{HOST}/acme/net/aws");

    // Instance a installs one platform; the other's size comes from the
    // origin without its archive.
    let a = RunningMirror::start(config.clone()).await;
    let ca = Client::trusting(&a.ca_file);
    let tofu = Tofu::at_mirror(&ca, &a);
    let (zip, index) = tofu.install(&provider_repo, "1.0.0", "linux_amd64").await;
    assert_eq!(zip, archives["linux_amd64"]);
    let (module_zip, module) = tofu.module(&module_repo, "1.0.0").await;
    a.stop().await;

    // Instance b: its own directories, the same bucket, offline.
    let mut second = config.clone();
    second.cache.dir = setup.dir.path().join("b-cache");
    second.server.data_dir = setup.dir.path().join("b-data");
    second.upstream.offline = true;
    let b = RunningMirror::start(second).await;
    let cb = Client::trusting(&b.ca_file);
    let tofu = Tofu::at_mirror(&cb, &b);
    let (zip, digest) = tofu.install(&provider_repo, "1.0.0", "linux_amd64").await;
    assert_eq!(
        (digest.as_str(), &zip),
        (index.as_str(), &archives["linux_amd64"])
    );
    let (zip, digest) = tofu.module(&module_repo, "1.0.0").await;
    assert_eq!((digest.as_str(), &zip), (module.as_str(), &module_zip));
    b.stop().await;

    // Across an air gap: export from the bucket, import into a site's
    // disk cache, answered offline there.
    let home = setup.dir.path();
    let s = |p: &std::path::Path| p.display().to_string();
    let connected = config_file(&setup, &origin, &weed.storage_toml("oci", home));
    let bundle = home.join("oci.tar");
    run_ok(
        home,
        &[
            "export",
            "--config",
            &s(&connected),
            "--output",
            &s(&bundle),
        ],
    )
    .await;
    let site = site_config(home, "site", "");
    run_ok(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    let mut offline = setup.module_config(&origin, HOST);
    offline.cache.dir = home.join("site-cache");
    offline.server.data_dir = home.join("site-mirror-data");
    offline.upstream.offline = true;
    origin.stop();
    let m = RunningMirror::start(offline).await;
    let cm = Client::trusting(&m.ca_file);
    let tofu = Tofu::at_mirror(&cm, &m);
    let (zip, digest) = tofu.install(&provider_repo, "1.0.0", "linux_amd64").await;
    assert_eq!(
        (digest.as_str(), &zip),
        (index.as_str(), &archives["linux_amd64"])
    );
    let (zip, digest) = tofu.module(&module_repo, "1.0.0").await;
    assert_eq!((digest.as_str(), &zip), (module.as_str(), &module_zip));
    m.stop().await;
}
