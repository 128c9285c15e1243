//! The Grafana dashboard (`deploy/grafana/tfmirror.json`) and the
//! Prometheus rules (`deploy/prometheus/tfmirror-rules.yml`), proven:
//! `promtool` checks the rules and runs their unit tests (every alert
//! fires when it should and stays quiet when it should not), and a real
//! Prometheus scrapes a running tfmirror after real traffic (cold and warm
//! installs, a refused signature, a denied version, an eviction, a watch
//! pass, an origin outage), where every dashboard query and every
//! recording rule must return series and every metric an alert names must
//! exist. A renamed metric breaks this test, not an operator's dashboard.
//!
//! Debian's `prometheus` package provides both programs; the README's test
//! command installs it. Without it these tests are ignored with a message,
//! except under `CI=true`, where they fail.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::*;
use http::StatusCode;

fn deploy(path: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("deploy")
        .join(path)
}

fn dashboard() -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(deploy("grafana/tfmirror.json")).unwrap()).unwrap()
}

/// Every query of the dashboard's panels, with `$instance` matching all.
fn dashboard_queries() -> Vec<(String, String)> {
    let mut out = Vec::new();
    for panel in dashboard()["panels"].as_array().unwrap() {
        for target in panel["targets"].as_array().into_iter().flatten() {
            let expr = target["expr"].as_str().unwrap().replace("$instance", ".*");
            out.push((panel["title"].as_str().unwrap().to_owned(), expr));
        }
    }
    out
}

/// The rules file: each recording rule's name, each alert's expression.
fn rules() -> (Vec<String>, Vec<(String, String)>) {
    let doc: serde_json::Value = serde_norway::from_str(
        &std::fs::read_to_string(deploy("prometheus/tfmirror-rules.yml")).unwrap(),
    )
    .unwrap();
    let mut records = Vec::new();
    let mut alerts = Vec::new();
    for group in doc["groups"].as_array().unwrap() {
        for rule in group["rules"].as_array().unwrap() {
            if let Some(record) = rule["record"].as_str() {
                records.push(record.to_owned());
            }
            if let Some(alert) = rule["alert"].as_str() {
                alerts.push((alert.to_owned(), rule["expr"].as_str().unwrap().to_owned()));
            }
        }
    }
    (records, alerts)
}

/// The metric and recording-rule names an expression reads.
fn names_in(expr: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = expr;
    while let Some(at) = rest.find("tfmirror") {
        let name: String = rest[at..]
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == ':')
            .collect();
        rest = &rest[at + name.len().max(1)..];
        // `job="tfmirror"` is a label value, not a name.
        if name.contains('_') || name.contains(':') {
            out.insert(name);
        }
    }
    out
}

#[cfg_attr(
    tfmirror_no_prometheus,
    ignore = "needs promtool (Debian's prometheus package); scripts/test installs it"
)]
#[test]
fn the_rules_pass_promtool_and_their_unit_tests() {
    let dir = deploy("prometheus");
    for args in [
        ["check", "rules", "tfmirror-rules.yml"],
        ["test", "rules", "tfmirror-rules.test.yml"],
    ] {
        let out = Command::new("promtool")
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("promtool runs");
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(out.status.success(), "promtool {args:?}:\n{text}");
        assert!(text.contains("SUCCESS"), "promtool {args:?}:\n{text}");
    }
    // Every alert has its unit test.
    let tests = std::fs::read_to_string(dir.join("tfmirror-rules.test.yml")).unwrap();
    for (alert, _) in rules().1 {
        assert!(
            tests.contains(&format!("alertname: {alert}")),
            "{alert} has no unit test"
        );
    }
}

#[test]
fn the_dashboard_is_importable_anywhere() {
    let dash = dashboard();
    assert_eq!(dash["__inputs"][0]["name"], "DS_PROMETHEUS");
    let text = std::fs::read_to_string(deploy("grafana/tfmirror.json")).unwrap();
    // The only datasource is the input; no UID of any one Grafana.
    let uids: BTreeSet<&str> = text
        .match_indices("\"uid\": \"")
        .map(|(at, m)| {
            let rest = &text[at + m.len()..];
            &rest[..rest.find('"').unwrap()]
        })
        .collect();
    assert_eq!(uids, BTreeSet::from(["${DS_PROMETHEUS}"]));
    let panels = dash["panels"].as_array().unwrap();
    let mut titles = BTreeSet::new();
    for panel in panels.iter().filter(|p| p["type"] != "row") {
        let title = panel["title"].as_str().unwrap();
        assert!(titles.insert(title), "two panels called {title}");
        assert!(
            panel["description"].as_str().is_some_and(|d| d.len() > 20),
            "{title} does not say what a healthy value looks like"
        );
        assert!(
            panel["targets"].as_array().is_some_and(|t| !t.is_empty()),
            "{title} has no query"
        );
    }
    assert!(titles.len() >= 15, "{titles:?}");
}

/// A Prometheus process, ended when dropped.
struct Prometheus {
    child: Child,
    url: String,
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts Prometheus scraping `targets` over TLS (trusting `ca_file`) every
/// second, with the rules loaded.
fn start_prometheus(dir: &Path, targets: &[String], ca_file: &Path) -> Prometheus {
    let config = dir.join("prometheus.yml");
    let target = targets.join("', '");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nrule_files:\n  - {rules}\nscrape_configs:\n  - job_name: tfmirror\n    scheme: https\n    tls_config:\n      ca_file: {ca}\n    static_configs:\n      - targets: ['{target}']\n",
            rules = deploy("prometheus/tfmirror-rules.yml").display(),
            ca = ca_file.display(),
        ),
    )
    .unwrap();
    let port = free_port();
    let child = Command::new("prometheus")
        .arg(format!("--config.file={}", config.display()))
        .arg(format!(
            "--storage.tsdb.path={}",
            dir.join("tsdb").display()
        ))
        .arg(format!("--web.listen-address=127.0.0.1:{port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("prometheus starts");
    Prometheus {
        child,
        url: format!("http://127.0.0.1:{port}"),
    }
}

/// Prometheus scraping `mirrors` (with the rules loaded), once it answers
/// as ready; with a client for its API.
async fn prometheus_scraping(dir: &Path, mirrors: &[&RunningMirror]) -> (Prometheus, Client) {
    // One file of every mirror's authority, which Prometheus trusts.
    let ca_file = dir.join("mirrors-ca.pem");
    let pems: Vec<String> = (mirrors.iter())
        .map(|m| std::fs::read_to_string(&m.ca_file).unwrap())
        .collect();
    std::fs::write(&ca_file, pems.join("\n")).unwrap();
    let targets: Vec<String> = (mirrors.iter())
        .map(|m| format!("127.0.0.1:{}", m.addr.port()))
        .collect();
    let mirror = mirrors[0];
    let prometheus = start_prometheus(dir, &targets, &ca_file);
    let api = Client::allowing_http(&mirror.ca_file);
    wait_until_answered(
        "Prometheus to be ready",
        Duration::from_secs(60),
        || async {
            api.try_get(&format!("{}/-/ready", prometheus.url))
                .await
                .is_some_and(|a| a.status == StatusCode::OK)
        },
    )
    .await;
    (prometheus, api)
}

/// The series a query (in Prometheus's query language) returns now.
async fn query(client: &Client, prometheus: &Prometheus, expr: &str) -> Vec<serde_json::Value> {
    let encoded: String = url::form_urlencoded::byte_serialize(expr.as_bytes()).collect();
    let answer = client
        .get(&format!("{}/api/v1/query?query={encoded}", prometheus.url))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{expr}: {}",
        answer.error_text()
    );
    let doc = answer.json();
    assert_eq!(doc["status"], "success", "{expr}: {doc}");
    doc["data"]["result"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

#[cfg_attr(
    tfmirror_no_prometheus,
    ignore = "needs prometheus (Debian's prometheus package); scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_query_and_rule_returns_series_from_a_real_prometheus() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let stranger = Signer::new("stranger");
    let archives = origin.publish(
        "acme",
        "thing",
        "1.0.0",
        &["linux_amd64", "darwin_arm64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "thing",
        "1.1.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    origin.publish_unverifiable(&signer, &stranger, "2.0.0");
    let largest = archives.values().map(Vec::len).max().unwrap() as u64;

    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    // Room for one archive: a second evicts the first.
    config.cache.max_size = Some(bytesize::ByteSize::b(largest + largest / 2));
    config.policy = toml::from_str(
        "[[rule]]\nsource = \"registry.origin.test/acme/thing\"\nversions = \"= 1.1.0\"\naction = \"deny\"\nreason = \"withdrawn\"\n",
    )
    .unwrap();
    config.watch = toml::from_str(
        "platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"registry.origin.test/acme/thing\"\nversions = \"= 1.0.0\"\n",
    )
    .unwrap();
    let mirror = RunningMirror::start(config).await;
    let c = Client::trusting(&mirror.ca_file);
    let thing = |p: &str| mirror.url(&format!("/registry.origin.test/acme/thing/{p}"));

    // Cold and warm installs, an eviction, a denied version, a refused
    // signature, a tampered archive.
    assert_eq!(c.get(&thing("index.json")).await.status, StatusCode::OK);
    assert_eq!(c.get(&thing("1.0.0.json")).await.status, StatusCode::OK);
    for platform in ["linux_amd64", "linux_amd64", "darwin_arm64"] {
        let got = c
            .get(&thing(&format!(
                "terraform-provider-thing_1.0.0_{platform}.zip"
            )))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    }
    assert_eq!(
        c.get(&thing("1.1.0.json")).await.status,
        StatusCode::FORBIDDEN
    );
    let refused = c
        .get(&mirror.url("/registry.origin.test/acme/widget/1.0.0.json"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    let tampered = c
        .get(&mirror.url(
            "/registry.origin.test/acme/gadget/terraform-provider-gadget_2.0.0_linux_amd64.zip",
        ))
        .await;
    assert_eq!(tampered.status, StatusCode::BAD_GATEWAY);
    // An origin outage: the stored list is served stale.
    origin.stop();
    mirror.clock.advance(Duration::from_secs(3600));
    assert_eq!(c.get(&thing("index.json")).await.status, StatusCode::OK);

    let dir = tempfile::tempdir().unwrap();
    // A second mirror, whose people and jobs sign in through an issuer: the
    // sign-in series the alerts read, with a token refused.
    let issuer_mirror = mirror_with_an_issuer(&setup, &origin, "issuer").await;
    let refused = (Client::trusting(&issuer_mirror.ca_file))
        .get_with_header(
            &issuer_mirror.url("/registry.origin.test/acme/thing/index.json"),
            "authorization",
            "Bearer not-a-token",
        )
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let (prometheus, api) = prometheus_scraping(dir.path(), &[&mirror, &issuer_mirror]).await;
    wait_until_answered(
        "a scrape and a rule evaluation",
        Duration::from_secs(60),
        || async {
            !query(&api, &prometheus, "tfmirror:cache_hit_ratio:rate5m")
                .await
                .is_empty()
                && !query(&api, &prometheus, "up{job=\"tfmirror\"} == 1")
                    .await
                    .is_empty()
        },
    )
    .await;

    let (records, alerts) = rules();
    assert!(
        records.len() >= 4 && alerts.len() >= 8,
        "{records:?} {alerts:?}"
    );
    let mut empty = Vec::new();
    let mut checked = Vec::new();
    for (title, expr) in dashboard_queries() {
        checked.push(expr.clone());
        let found = answered_within(Duration::from_secs(20), || {
            let (api, prometheus, expr) = (&api, &prometheus, expr.clone());
            async move { !query(api, prometheus, &expr).await.is_empty() }
        })
        .await;
        if !found {
            empty.push(format!("panel {title:?}: {expr}"));
        }
    }
    for record in &records {
        if query(&api, &prometheus, record).await.is_empty() {
            empty.push(format!("recording rule {record}"));
        }
    }
    let named: BTreeSet<String> = alerts.iter().flat_map(|(_, e)| names_in(e)).collect();
    for name in &named {
        let series = query(&api, &prometheus, &format!("{{__name__=\"{name}\"}}")).await;
        if series.is_empty() {
            empty.push(format!("metric {name}, which an alert reads"));
        }
    }
    assert!(
        empty.is_empty(),
        "queries that return no series from a real Prometheus scraping tfmirror:\n{}",
        empty.join("\n")
    );
    assert!(checked.len() >= 20, "{checked:?}");
    assert!(named.contains("tfmirror_tls_certificate_expiry_timestamp_seconds"));
    assert!(named.contains("tfmirror_oidc_signins_total"));
    drop(prometheus);
    issuer_mirror.stop().await;
    mirror.stop().await;
}

/// A mirror on `origin` whose tokens come from an issuer (`ci`, its keys in
/// a file of `setup`'s directory, named `name`).
async fn mirror_with_an_issuer(setup: &Setup, origin: &FakeOrigin, name: &str) -> RunningMirror {
    let keys = setup.dir.path().join(format!("{name}-jwks.json"));
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    let b64 = |b: &[u8]| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b)
    };
    let set = serde_json::json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}]});
    std::fs::write(&keys, set.to_string()).unwrap();
    let mut config = setup.config(origin, &[], &["registry.origin.test"]);
    config.cache.dir = setup.dir.path().join(format!("{name}-cache"));
    config.server.data_dir = setup.dir.path().join(format!("{name}-data"));
    config.auth.oidc = toml::from_str::<OidcEntries>(&format!(
        "[[oidc]]\nname = \"ci\"\nissuer = \"https://ci.prometheus.test\"\naudience = \"https://mirror.prometheus.test\"\nkeys_file = \"{}\"\n[[oidc.rules]]\nclaims = {{ sub = \"*\" }}\ngrant = \"read\"\n",
        keys.display()
    ))
    .unwrap()
    .oidc;
    RunningMirror::start(config).await
}

/// `[[oidc]]` entries, as a test writes them.
#[derive(serde::Deserialize)]
struct OidcEntries {
    oidc: Vec<tfmirror::config::OidcIssuerConfig>,
}

/// A burst of refused tokens raises `TfmirrorSigninRefusals` in a real
/// Prometheus, under the issuer the tokens claim; a few do not.
#[cfg_attr(
    tfmirror_no_prometheus,
    ignore = "needs prometheus (Debian's prometheus package); scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_refused_tokens_raises_the_alert() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let mirror = mirror_with_an_issuer(&setup, &origin, "burst").await;
    let dir = tempfile::tempdir().unwrap();
    let (prometheus, api) = prometheus_scraping(dir.path(), &[&mirror]).await;
    let at_zero = "tfmirror_oidc_signins_total{issuer=\"unknown\",outcome=\"malformed\"} == 0";
    wait_until_answered(
        "a scrape of the series at 0",
        Duration::from_secs(60),
        || async { !query(&api, &prometheus, at_zero).await.is_empty() },
    )
    .await;
    let firing = "ALERTS{alertname=\"TfmirrorSigninRefusals\", alertstate=\"firing\"}";
    let c = Client::trusting(&mirror.ca_file);
    let index = mirror.url("/registry.origin.test/acme/thing/index.json");
    let refuse = |n: usize| {
        let (c, index) = (&c, index.clone());
        async move {
            let answer = c
                .get_with_header(&index, "authorization", &format!("Bearer not-a-token-{n}"))
                .await;
            assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
        }
    };
    // A few: quiet, once Prometheus has seen them.
    for n in 0..5 {
        refuse(n).await;
    }
    let seen = "tfmirror_oidc_signins_total{issuer=\"unknown\",outcome=\"malformed\"} == 5";
    wait_until_answered("a scrape of the five", Duration::from_secs(60), || async {
        !query(&api, &prometheus, seen).await.is_empty()
    })
    .await;
    assert!(query(&api, &prometheus, firing).await.is_empty());
    // A burst.
    for n in 5..30 {
        refuse(n).await;
    }
    wait_until_answered(
        "TfmirrorSigninRefusals to fire",
        Duration::from_secs(60),
        || async { !query(&api, &prometheus, firing).await.is_empty() },
    )
    .await;
    let alert = &query(&api, &prometheus, firing).await[0];
    assert_eq!(alert["metric"]["issuer"], "unknown", "{alert}");
    drop(prometheus);
    mirror.stop().await;
}

/// After a fresh start, the first refused signature raises
/// `TfmirrorVerificationFailing` in a real Prometheus: the series is
/// exported at 0 from the start, so that one event is an increase.
#[cfg_attr(
    tfmirror_no_prometheus,
    ignore = "needs prometheus (Debian's prometheus package); scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_refused_signature_after_a_start_raises_the_alert() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let stranger = Signer::new("stranger");
    origin.publish_unverifiable(&signer, &stranger, "2.0.0");
    let mirror = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let dir = tempfile::tempdir().unwrap();
    let (prometheus, api) = prometheus_scraping(dir.path(), &[&mirror]).await;
    let invalid = "tfmirror_signature_verifications_total{outcome=\"invalid\"} == 0";
    wait_until_answered(
        "a scrape of the series at 0",
        Duration::from_secs(60),
        || async { !query(&api, &prometheus, invalid).await.is_empty() },
    )
    .await;
    let firing = "ALERTS{alertname=\"TfmirrorVerificationFailing\", alertstate=\"firing\"}";
    assert!(query(&api, &prometheus, firing).await.is_empty());

    // One refused signature.
    let c = Client::trusting(&mirror.ca_file);
    let refused = c
        .get(&mirror.url("/registry.origin.test/acme/widget/1.0.0.json"))
        .await;
    assert_eq!(refused.status, StatusCode::BAD_GATEWAY);
    wait_until_answered(
        "TfmirrorVerificationFailing to fire",
        Duration::from_secs(60),
        || async { !query(&api, &prometheus, firing).await.is_empty() },
    )
    .await;
    drop(prometheus);
    mirror.stop().await;
}

#[test]
fn the_rule_reader_reads_the_rules() {
    let (records, alerts) = rules();
    assert!(records.contains(&"tfmirror:cache_hit_ratio:rate5m".to_owned()));
    let (_, expr) = alerts
        .iter()
        .find(|(a, _)| a == "TfmirrorCertificateExpiring")
        .unwrap();
    assert!(names_in(expr).contains("tfmirror_tls_certificate_expiry_timestamp_seconds"));
    assert!(!names_in("up{job=\"tfmirror\"} == 0").contains("tfmirror"));
}
