//! Providers the OpenTofu Registry publishes without a signing key: refused
//! by default, naming the setting; with `unsigned = "checked"` on
//! `registry.opentofu.org` only, installed after every check that needs no
//! key, pinned on first sight, labelled everywhere, held to the pin (also
//! after a restart and on another instance), re-pinned only when an
//! operator says so, turned into "pinned key" by a `[[trust]]` author key,
//! and carried across the gap with label and pin.
//!
//! The origin answers in the OpenTofu Registry's keyless shapes
//! (`tests/fixtures/registries/opentofu-registry/provider-download-keyless-*.json`):
//! `null`, `[]`, and a blank key entry, each with `packages`.

mod common;

use std::path::Path;
use std::time::Duration;

use common::daemon::*;
use common::seaweed::{use_bucket, Seaweed};
use common::*;
use http::StatusCode;
use tfmirror::config::Config;
use tfmirror::verify::Unsigned;

const HOST: &str = "registry.opentofu.org";
const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];
const SHAPES: [&str; 3] = [
    "provider-download-keyless-null.json",
    "provider-download-keyless-empty.json",
    "provider-download-keyless-blank.json",
];

/// An origin in the OpenTofu Registry's shape whose provider downloads
/// list no key, and the author's key that signs its SHA256SUMS anyway.
async fn keyless_origin(setup: &Setup, answer: &str) -> (FakeOrigin, Signer) {
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.use_shape("opentofu-registry");
    origin.use_download_answer(answer);
    (origin, Signer::new("Widget Author"))
}

/// Publishes `acme/widget` `version` signed by `author`, with no key
/// listed; returns the archives by platform.
fn publish(origin: &FakeOrigin, author: &Signer, version: &str) -> Archives {
    origin.publish("acme", "widget", version, &PLATFORMS, author, &[])
}

type Archives = std::collections::BTreeMap<String, Vec<u8>>;

/// A mirror configuration mapping `registry.opentofu.org` (and
/// `registry.origin.test`) to the origin; `checked` opts the OpenTofu
/// Registry into keyless providers, narrowed to `sources`.
fn config(setup: &Setup, origin: &FakeOrigin, checked: bool, sources: &[&str]) -> Config {
    let mut c = setup.config(origin, &[], &[HOST, "registry.origin.test"]);
    if checked {
        let hc = c.upstream.hosts.get_mut(&HOST.parse().unwrap()).unwrap();
        hc.unsigned = Unsigned::Checked;
        hc.unsigned_sources = sources.iter().map(|s| (*s).to_owned()).collect();
    }
    c
}

/// The same as a file, for the `tfmirror` commands.
fn config_toml(setup: &Setup, origin: &FakeOrigin, extra: &str) -> std::path::PathBuf {
    let extra = format!(
        "[upstream.hosts.\"{HOST}\"]\nservices = {{ \"providers.v1\" = \"{}\" }}\n{extra}",
        origin.providers_url()
    );
    config_file(setup, origin, &extra)
}

fn mirror_path(host: &str, below: &str) -> String {
    format!("/{host}/acme/widget/{below}")
}

fn archive_name(version: &str, platform: &str) -> String {
    format!("terraform-provider-widget_{version}_{platform}.zip")
}

/// Files below the cache that belong to `acme/widget` `version`, and pins.
fn kept(setup: &Setup, version: &str) -> Vec<String> {
    files_below(&setup.cache_dir())
        .into_iter()
        .filter(|f| f.contains(&format!("widget/{version}")) || f.starts_with("pins/"))
        .collect()
}

/// Asks for `url` and expects `status` with an error that says `says`;
/// returns the error.
async fn refused(c: &Client, url: &str, status: StatusCode, says: &str) -> String {
    let answer = c.get(url).await;
    let text = answer.error_text();
    assert_eq!(answer.status, status, "{url}: {text}");
    assert!(text.contains(says), "{url}: {text}");
    text
}

async fn metrics(mirror: &RunningMirror, client: &Client) -> String {
    String::from_utf8(client.get(&mirror.url("/metrics")).await.body.to_vec()).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_answers_are_refused_by_default_and_installed_checked_when_opted_in() {
    for (n, answer) in SHAPES.iter().enumerate() {
        let setup = Setup::new();
        let (origin, author) = keyless_origin(&setup, answer).await;
        let archives = publish(&origin, &author, "1.0.0");

        // Refused by default: the error names the provider, the host and
        // the setting; nothing is kept.
        let m = RunningMirror::start(config(&setup, &origin, false, &[])).await;
        let c = Client::trusting(&m.ca_file);
        let refused = c.get(&m.url(&mirror_path(HOST, "1.0.0.json"))).await;
        assert_eq!(refused.status, StatusCode::BAD_GATEWAY, "{answer}");
        let text = refused.json()["errors"][0].as_str().unwrap().to_owned();
        for says in [
            "registry.opentofu.org/acme/widget",
            "publishes no signing key",
            "upstream.hosts.\"registry.opentofu.org\".unsigned = \"checked\"",
        ] {
            assert!(text.contains(says), "{answer}: {text}");
        }
        assert!(kept(&setup, "1.0.0").is_empty(), "{answer}");
        m.stop().await;

        // Opted in: every platform verified, served byte for byte.
        let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
        let version = c.get(&m.url(&mirror_path(HOST, "1.0.0.json"))).await;
        assert_eq!(version.status, StatusCode::OK, "{}", version.error_text());
        let doc = version.json();
        assert_eq!(doc["archives"].as_object().unwrap().len(), 2, "{doc}");
        for (platform, bytes) in &archives {
            let got = c
                .get(&m.url(&mirror_path(HOST, &archive_name("1.0.0", platform))))
                .await;
            assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
            assert_eq!(&got.body[..], &bytes[..]);
        }
        // The facade passes on no key, serves the signature file, and warns.
        let download = c
            .get(
                &m.url(
                    "/v1/providers/registry.opentofu.org/acme/widget/1.0.0/download/linux/amd64",
                ),
            )
            .await
            .json();
        assert_eq!(
            download["signing_keys"]["gpg_public_keys"],
            serde_json::json!([]),
            "{download}"
        );
        let sig_url = resolve(
            &m.url("/v1/providers/registry.opentofu.org/acme/widget/1.0.0/download/linux/amd64"),
            download["shasums_signature_url"].as_str().unwrap(),
        );
        let sig = c.get(&sig_url).await;
        assert_eq!(sig.status, StatusCode::OK);
        let sums_url = resolve(
            &m.url("/v1/providers/registry.opentofu.org/acme/widget/1.0.0/download/linux/amd64"),
            download["shasums_url"].as_str().unwrap(),
        );
        let sums = c.get(&sums_url).await;
        assert_eq!(
            &sums.body[..],
            &sums_document("widget", "1.0.0", &archives)[..]
        );
        // The signature file is the author's, as published: the author's
        // key (which the registry does not list) verifies it.
        let author_ring =
            tfmirror::verify::Keyring::from_armored([author.public_armored().as_str()]).unwrap();
        author_ring
            .verify(&sums.body, &sig.body, "the author's key")
            .expect("the served signature file is the author's");
        let versions = c
            .get(&m.url("/v1/providers/registry.opentofu.org/acme/widget/versions"))
            .await
            .json();
        let warnings = versions["warnings"].to_string();
        assert!(
            warnings.contains("version 1.0.0 is published without a signing key")
                && warnings.contains("pinned"),
            "{versions}"
        );
        // Labelled: metrics, status page, the pin kept.
        let text = metrics(&m, &c).await;
        assert!(text.contains("tfmirror_keyless_versions 1\n"), "{text}");
        assert!(
            text.contains("verification=\"keyless\""),
            "the stored-archive counter is labelled: {text}"
        );
        assert!(
            text.contains("tfmirror_signature_verifications_total{outcome=\"keyless\"} 1\n"),
            "{text}"
        );
        let page = c.get(&m.url("/-/status")).await.page_text();
        assert!(page.contains("1 keyless provider versions held"), "{page}");
        assert!(
            page.contains("<td>registry.opentofu.org/acme/widget</td><td>1.0.0</td><td>darwin_arm64, linux_amd64</td>"),
            "{page}"
        );
        let pin = widget_pin(&setup.cache_dir(), "1.0.0");
        assert_eq!(pin["packages"].as_object().unwrap().len(), 2, "{pin}");
        assert!(
            pin["packages"]["linux_amd64"]["h1"]
                .as_str()
                .unwrap()
                .starts_with("h1:"),
            "{pin}"
        );
        m.stop().await;
        assert!(n < SHAPES.len());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_the_opentofu_registry_may_be_opted_in_and_sources_narrow_it() {
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[0]).await;
    publish(&origin, &author, "1.0.0");

    // The setting on another host is refused at start, saying why.
    let mut wrong = config(&setup, &origin, false, &[]);
    wrong
        .upstream
        .hosts
        .get_mut(&"registry.origin.test".parse().unwrap())
        .unwrap()
        .unsigned = Unsigned::Checked;
    let err = wrong.validate().unwrap_err().to_string();
    assert!(
        err.contains("upstream.hosts.\"registry.origin.test\".unsigned")
            && err.contains("only for registry.opentofu.org"),
        "{err}"
    );
    let home = setup.dir.path();
    let bad = home.join("bad.toml");
    std::fs::write(
        &bad,
        "[upstream.hosts.\"registry.terraform.io\"]\nunsigned = \"checked\"\n",
    )
    .unwrap();
    let ran = run_tfmirror(home, &["check-config", "--config", bad.to_str().unwrap()]).await;
    assert!(!ran.ok);
    assert!(
        ran.stderr
            .contains("allowed only for registry.opentofu.org"),
        "{}",
        ran.stderr
    );

    // The same keyless answers from another host stay refused while the
    // OpenTofu Registry is opted in.
    let m = RunningMirror::start(config(&setup, &origin, true, &["netbirdio/*"])).await;
    let c = Client::trusting(&m.ca_file);
    refused(
        &c,
        &m.url(&mirror_path("registry.origin.test", "1.0.0.json")),
        StatusCode::BAD_GATEWAY,
        "keyless providers are accepted only from registry.opentofu.org",
    )
    .await;
    // A provider outside unsigned_sources is refused, naming the list.
    refused(
        &c,
        &m.url(&mirror_path(HOST, "1.0.0.json")),
        StatusCode::BAD_GATEWAY,
        "unsigned_sources",
    )
    .await;
    assert!(kept(&setup, "1.0.0").is_empty());
    m.stop().await;
    let m = RunningMirror::start(config(&setup, &origin, true, &["acme/wid*"])).await;
    let c = Client::trusting(&m.ca_file);
    let ok = c.get(&m.url(&mirror_path(HOST, "1.0.0.json"))).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.error_text());
    m.stop().await;

    // A policy rule can refuse keyless versions by source: listed (their
    // verification is not known yet), refused by name.
    let mut cfg = config(&setup, &origin, true, &[]);
    cfg.policy = toml::from_str(
        "[[rule]]\nsource = \"registry.opentofu.org/acme/*\"\nverification = \"keyless\"\naction = \"deny\"\nreason = \"no keyless acme\"\n",
    )
    .unwrap();
    let m = RunningMirror::start(cfg).await;
    let c = Client::trusting(&m.ca_file);
    let index = c.get(&m.url(&mirror_path(HOST, "index.json"))).await.json();
    assert!(index["versions"]["1.0.0"].is_object(), "{index}");
    refused(
        &c,
        &m.url(&mirror_path(HOST, "1.0.0.json")),
        StatusCode::FORBIDDEN,
        "no keyless acme",
    )
    .await;
    let archive = c
        .get(&m.url(&mirror_path(HOST, &archive_name("1.0.0", "linux_amd64"))))
        .await;
    assert_eq!(archive.status, StatusCode::FORBIDDEN);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_contradicts_the_checks_is_refused_and_nothing_is_kept() {
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[0]).await;
    for v in ["1.0.0", "1.1.0", "1.2.0", "1.3.0"] {
        publish(&origin, &author, v);
    }
    // 1.0.0: an archive that differs from its SHA256SUMS line.
    origin.replace_file(
        &archive_name("1.0.0", "linux_amd64"),
        build_archive("widget", "1.0.0", "tampered"),
    );
    // 1.3.0: the signature file answers 404.
    origin.set_fault(
        "/files/terraform-provider-widget_1.3.0_SHA256SUMS.sig",
        Some(Fault::Status(StatusCode::NOT_FOUND)),
    );
    let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
    let c = Client::trusting(&m.ca_file);

    refused(
        &c,
        &m.url(&mirror_path(HOST, &archive_name("1.0.0", "linux_amd64"))),
        StatusCode::BAD_GATEWAY,
        "is not the pinned",
    )
    .await;

    // 1.1.0 and 1.2.0: a package_size, and an h1:, that the archive
    // contradicts.
    origin.misreport_size("darwin_arm64", 12345);
    let sized = c
        .get(&m.url(&mirror_path(HOST, &archive_name("1.1.0", "darwin_arm64"))))
        .await;
    assert_eq!(sized.status, StatusCode::BAD_GATEWAY);
    assert!(
        sized.error_text().contains("size") && sized.error_text().contains("12345"),
        "{}",
        sized.error_text()
    );
    origin.misreport_package(
        "linux_amd64",
        "h1:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=",
    );
    refused(
        &c,
        &m.url(&mirror_path(HOST, &archive_name("1.2.0", "linux_amd64"))),
        StatusCode::BAD_GATEWAY,
        "h1:AAAA",
    )
    .await;

    refused(
        &c,
        &m.url(&mirror_path(HOST, "1.3.0.json")),
        StatusCode::BAD_GATEWAY,
        "SHA256SUMS.sig",
    )
    .await;
    for (version, platform) in [
        ("1.0.0", "linux_amd64"),
        ("1.1.0", "darwin_arm64"),
        ("1.2.0", "linux_amd64"),
    ] {
        let name = archive_name(version, platform);
        assert!(
            !files_below(&setup.cache_dir())
                .iter()
                .any(|f| f.ends_with(&name)),
            "{name} was kept"
        );
    }
    assert!(kept(&setup, "1.3.0").iter().all(|f| !f.contains("1.3.0")));
    // Only the tampered archive contradicts a pin; the registry's own
    // inconsistent reports are refused as such.
    assert_eq!(
        pin_mismatches(&m, &c).await,
        "tfmirror_keyless_pin_mismatches_total 1"
    );
    assert!(sized.error_text().contains("packages field does not match"));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pinned_author_key_turns_keyless_into_signed() {
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[1]).await;
    publish(&origin, &author, "1.0.0");
    let stranger = Signer::new("Someone Else");
    publish(&origin, &stranger, "2.0.0");
    let keys = setup.dir.path().join("acme.asc");
    std::fs::write(&keys, author.public_armored()).unwrap();
    let mut cfg = config(&setup, &origin, false, &[]);
    cfg.trust.push(
        serde_json::from_value(serde_json::json!({
            "hostname": HOST, "namespace": "acme", "keys_file": keys,
        }))
        .unwrap(),
    );
    let m = RunningMirror::start(cfg).await;
    let c = Client::trusting(&m.ca_file);
    let ok = c.get(&m.url(&mirror_path(HOST, "1.0.0.json"))).await;
    assert_eq!(ok.status, StatusCode::OK, "{}", ok.error_text());
    let record = m
        .mirror
        .store()
        .read_version(
            &tfmirror::address::Provider::from_source("registry.opentofu.org/acme/widget").unwrap(),
            &tfmirror::address::Version::parse("1.0.0").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        record.verification(),
        tfmirror::verify::Verification::PinnedKey
    );
    assert_eq!(record.signed_by(), author.key_id());
    assert!(m.mirror.keyless_versions().is_empty());
    // A signature the pinned key did not make is refused.
    refused(
        &c,
        &m.url(&mirror_path(HOST, "2.0.0.json")),
        StatusCode::BAD_GATEWAY,
        "keys pinned by [[trust]] rules",
    )
    .await;
    assert!(kept(&setup, "2.0.0").is_empty());
    m.stop().await;
}

/// Publishes `acme/widget` 1.0.0 again with other archives and a
/// consistent SHA256SUMS, signed by `author`: a re-publication.
fn republish(origin: &FakeOrigin, author: &Signer) -> Archives {
    let archives: Archives = PLATFORMS
        .iter()
        .map(|p| {
            (
                (*p).to_owned(),
                build_archive("widget", "1.0.0", &format!("again-{p}")),
            )
        })
        .collect();
    let sums = sums_document("widget", "1.0.0", &archives);
    let sig = author.sign_binary(&sums);
    origin.publish_raw("acme", "widget", "1.0.0", &archives, sums, sig, Vec::new());
    archives
}

async fn pin_mismatches(mirror: &RunningMirror, client: &Client) -> String {
    metrics(mirror, client)
        .await
        .lines()
        .find(|l| l.starts_with("tfmirror_keyless_pin_mismatches_total"))
        .unwrap_or_default()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_republished_keyless_version_is_refused_until_an_operator_repins_it() {
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[2]).await;
    let first = publish(&origin, &author, "1.0.0");
    // The first look at the version misses darwin (the origin is busy for
    // it), so the version is pinned with linux alone and looked at again.
    let darwin = "/v1/providers/acme/widget/1.0.0/download/darwin/arm64";
    origin.set_fault(darwin, Some(Fault::Status(StatusCode::SERVICE_UNAVAILABLE)));
    let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
    let c = Client::trusting(&m.ca_file);
    let linux = mirror_path(HOST, &archive_name("1.0.0", "linux_amd64"));
    let got = c.get(&m.url(&linux)).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    assert_eq!(&got.body[..], &first["linux_amd64"][..]);
    m.stop().await;
    origin.set_fault(darwin, None);

    let second = republish(&origin, &author);
    let darwin_file = mirror_path(HOST, &archive_name("1.0.0", "darwin_arm64"));
    // After a restart, and on a second instance on the same cache: refused,
    // counted, shown.
    for instance in ["restarted", "second"] {
        let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
        let refused = c.get(&m.url(&darwin_file)).await;
        assert_eq!(refused.status, StatusCode::BAD_GATEWAY, "{instance}");
        assert!(
            refused.error_text().contains("pinned on first sight")
                && refused.error_text().contains("--repin"),
            "{instance}: {}",
            refused.error_text()
        );
        assert_eq!(
            pin_mismatches(&m, &c).await,
            "tfmirror_keyless_pin_mismatches_total 1",
            "{instance}"
        );
        let page = c.get(&m.url("/-/status")).await.page_text();
        assert!(
            page.contains("1 answers refused since start") && page.contains("SHA256SUMS now has"),
            "{instance}: {page}"
        );
        // What was kept stays as it was.
        let still = c.get(&m.url(&linux)).await;
        assert_eq!(&still.body[..], &first["linux_amd64"][..], "{instance}");
        m.stop().await;
    }

    // An operator accepts the documented re-publication; a running
    // instance takes it up within seconds.
    let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
    let home = setup.dir.path();
    let file = config_toml(&setup, &origin, "");
    let without_reason = run_tfmirror(
        home,
        &[
            "approve",
            "--config",
            file.to_str().unwrap(),
            "registry.opentofu.org/acme/widget",
            "1.0.0",
            "--repin",
        ],
    )
    .await;
    assert!(!without_reason.ok);
    assert!(
        without_reason.stderr.contains("--reason"),
        "{}",
        without_reason.stderr
    );
    let ran = run_ok(
        home,
        &[
            "approve",
            "--config",
            file.to_str().unwrap(),
            "registry.opentofu.org/acme/widget",
            "1.0.0",
            "--repin",
            "--reason",
            "re-released after a build fix (upstream issue 42)",
        ],
    )
    .await;
    assert!(ran.stdout.contains("re-pin"), "{}", ran.stdout);
    wait_until_answered(
        "the re-pin to be taken up",
        Duration::from_secs(20),
        || async { c.get(&m.url(&darwin_file)).await.status == StatusCode::OK },
    )
    .await;
    let darwin_now = c.get(&m.url(&darwin_file)).await;
    assert_eq!(&darwin_now.body[..], &second["darwin_arm64"][..]);
    let linux_now = c.get(&m.url(&linux)).await;
    assert_eq!(
        &linux_now.body[..],
        &second["linux_amd64"][..],
        "the old archive left with the old pin"
    );
    let pin = widget_pin(&setup.cache_dir(), "1.0.0");
    assert!(pin.get("repin").is_none(), "{pin}");
    assert_eq!(
        pin["replaced"][0]["reason"],
        "re-released after a build fix (upstream issue 42)"
    );
    m.stop().await;
    // A version with no pin cannot be re-pinned.
    let ran = run_tfmirror(
        home,
        &[
            "approve",
            "--config",
            file.to_str().unwrap(),
            "registry.opentofu.org/acme/widget",
            "9.9.9",
            "--repin",
            "--reason",
            "x",
        ],
    )
    .await;
    assert!(!ran.ok);
    assert!(ran.stderr.contains("has no keyless pin"), "{}", ran.stderr);
}

fn s(p: &Path) -> String {
    p.to_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keyless_versions_cross_the_gap_with_label_and_pin() {
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[0]).await;
    let archives = publish(&origin, &author, "1.0.0");
    let m = RunningMirror::start(config(&setup, &origin, true, &[])).await;
    let c = Client::trusting(&m.ca_file);
    let linux = mirror_path(HOST, &archive_name("1.0.0", "linux_amd64"));
    assert_eq!(c.get(&m.url(&linux)).await.status, StatusCode::OK);
    m.stop().await;
    let home = setup.dir.path();
    let connected = config_toml(&setup, &origin, "unsigned = \"checked\"\n");

    // ls labels the version.
    let listed = run_ok(home, &["ls", "--config", &s(&connected), "--json"]).await;
    let rows: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(rows[0]["verification"], "keyless", "{rows}");
    assert_eq!(rows[0]["signed_by"], "", "{rows}");
    let table = run_ok(home, &["ls", "--config", &s(&connected)]).await;
    assert!(
        table.stdout.contains("1 of keyless versions"),
        "{}",
        table.stdout
    );

    let bundle = home.join("keyless.tar");
    export_bundle(home, &connected, &bundle, &[]).await;

    // A site that does not opt in refuses it, naming the setting.
    let plain = site_config(home, "plain", "");
    let ran = run_tfmirror(home, &["import", "--config", &s(&plain), &s(&bundle)]).await;
    assert!(!ran.ok);
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert!(
        said.contains("unsigned = \\\"checked\\\"") || said.contains("unsigned = \"checked\""),
        "{said}"
    );
    assert!(!files_below(&home.join("plain-cache"))
        .iter()
        .any(|f| f.ends_with(".zip") || f.starts_with("pins/")));

    // A site that opts in imports it with its label, pins it, and serves it
    // offline.
    let site = site_config(home, "site", "");
    let text = std::fs::read_to_string(&site).unwrap().replace(
        "allowed_hosts = [\"registry.origin.test\"]",
        "allowed_hosts = [\"registry.origin.test\", \"registry.opentofu.org\"]",
    ) + "[upstream.hosts.\"registry.opentofu.org\"]\nunsigned = \"checked\"\n";
    std::fs::write(&site, text).unwrap();
    run_ok(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    let site_pin = home.join("site-cache/pins/registry.opentofu.org/acme/widget/1.0.0.json");
    let pin = widget_pin(&home.join("site-cache"), "1.0.0");
    let origin_pin = widget_pin(&setup.cache_dir(), "1.0.0");
    assert_eq!(pin["sums_sha256"], origin_pin["sums_sha256"]);
    let listed = run_ok(home, &["ls", "--config", &s(&site), "--json"]).await;
    assert!(
        listed.stdout.contains("\"verification\": \"keyless\""),
        "{}",
        listed.stdout
    );
    run_ok(home, &["verify", "--config", &s(&site)]).await;

    let mut cfg = config(&setup, &origin, true, &[]);
    cfg.cache.dir = home.join("site-cache");
    cfg.server.data_dir = home.join("site-data");
    cfg.upstream.offline = true;
    origin.stop();
    let offline = RunningMirror::start(cfg).await;
    let c = Client::trusting(&offline.ca_file);
    let got = c.get(&offline.url(&linux)).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    assert_eq!(&got.body[..], &archives["linux_amd64"][..]);
    offline.stop().await;

    // A bundle whose keyless record contradicts the site's pin is refused.
    let mut doctored =
        serde_json::from_slice::<serde_json::Value>(&std::fs::read(&site_pin).unwrap()).unwrap();
    doctored["sums_sha256"] = serde_json::json!("0".repeat(64));
    std::fs::write(&site_pin, serde_json::to_vec(&doctored).unwrap()).unwrap();
    let ran = run_tfmirror(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    let said = format!("{}{}", ran.stdout, ran.stderr);
    assert!(said.contains("pinned on first sight"), "{said}");
    let verified = run_tfmirror(home, &["verify", "--config", &s(&site)]).await;
    assert!(!verified.ok, "verify holds the record to the pin");
    assert!(
        format!("{}{}", verified.stdout, verified.stderr).contains("SHA256SUMS now has"),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_sharing_a_bucket_hold_a_keyless_version_to_one_pin() {
    let weed = Seaweed::start().await;
    weed.create_bucket("shared").await;
    let setup = Setup::new();
    let (origin, author) = keyless_origin(&setup, SHAPES[0]).await;
    let first = publish(&origin, &author, "1.0.0");
    let darwin = "/v1/providers/acme/widget/1.0.0/download/darwin/arm64";
    origin.set_fault(darwin, Some(Fault::Status(StatusCode::SERVICE_UNAVAILABLE)));
    let mut cfg = config(&setup, &origin, true, &[]);
    use_bucket(&mut cfg, weed.s3_config("shared", setup.dir.path()));
    let a = RunningMirror::start(cfg.clone()).await;
    let ca = Client::trusting(&a.ca_file);
    let linux = mirror_path(HOST, &archive_name("1.0.0", "linux_amd64"));
    let got = ca.get(&a.url(&linux)).await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    assert_eq!(&got.body[..], &first["linux_amd64"][..]);
    let keys = weed.keys("shared").await;
    assert!(
        keys.contains(&"mirror/pins/registry.opentofu.org/acme/widget/1.0.0.json".to_owned()),
        "{keys:?}"
    );

    // Re-published; instance b, with its own directories, knows the pin
    // from the bucket and refuses what differs from it.
    origin.set_fault(darwin, None);
    republish(&origin, &author);
    let mut other = cfg.clone();
    other.cache.dir = setup.dir.path().join("b-cache");
    other.server.data_dir = setup.dir.path().join("b-data");
    let b = RunningMirror::start(other).await;
    let cb = Client::trusting(&b.ca_file);
    assert_eq!(b.mirror.keyless_versions().len(), 1);
    refused(
        &cb,
        &b.url(&mirror_path(HOST, &archive_name("1.0.0", "darwin_arm64"))),
        StatusCode::BAD_GATEWAY,
        "SHA256SUMS now has",
    )
    .await;
    assert_eq!(
        pin_mismatches(&b, &cb).await,
        "tfmirror_keyless_pin_mismatches_total 1"
    );
    // What the bucket holds is still served, by either instance.
    assert_eq!(
        &cb.get(&b.url(&linux)).await.body[..],
        &first["linux_amd64"][..]
    );
    a.stop().await;
    b.stop().await;
}
