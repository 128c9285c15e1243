//! `[policy]` at the protocol level: a denied provider version is left out
//! of every version list (so constraint resolution picks an allowed one)
//! and refused with its rule's reason wherever it is asked for by name;
//! bundles and static directories carry only what the policy allows, and
//! an import into a stricter site refuses the rest; a bad rule is named
//! at start. `tests/modules.rs` covers modules, `tests/terraform.rs` the
//! real CLI.

mod common;

use common::daemon::*;
use common::*;
use http::StatusCode;
use std::time::Duration;
use tfmirror::config::Config;
use tfmirror::policy::{Action, RuleConfig};

const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];
const HOST: &str = "registry.origin.test";

/// Denies `versions` of `acme/widget`, with a reason.
fn deny_widget(config: &mut Config, versions: &str) {
    config.policy.rules.push(RuleConfig {
        verification: None,
        advisories: None,
        source: format!("{HOST}/acme/widget"),
        versions: Some(versions.into()),
        action: Action::Deny,
        reason: "withdrawn by the security team".into(),
    });
}

/// A mirror (its configuration changed by `configure`) in front of an
/// origin publishing `acme/widget` 1.0.0 and 1.1.0.
async fn two_versions(configure: impl FnOnce(&mut Config)) -> Scene {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    for v in ["1.0.0", "1.1.0"] {
        origin.publish("acme", "widget", v, &PLATFORMS, &signer, &[&signer]);
    }
    Scene::on(
        setup,
        origin,
        signer,
        std::collections::BTreeMap::default(),
        configure,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_version_is_left_out_of_lists_and_refused_by_name() {
    let sc = two_versions(|c| deny_widget(c, "1.1.0")).await;
    let (m, c) = (&sc.mirror, &sc.client);

    // Network mirror: the list, the version, its archive.
    let index = c.get(&sc.url("widget/index.json")).await.json();
    assert_eq!(index["versions"], serde_json::json!({"1.0.0": {}}));
    for path in [
        "widget/1.1.0.json".to_string(),
        "widget/terraform-provider-widget_1.1.0_linux_amd64.zip".to_string(),
    ] {
        let refused = c.get(&sc.url(&path)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{path}");
        let text = refused.error_text();
        assert!(
            text.contains(&format!("{HOST}/acme/widget 1.1.0 is denied by this mirror's policy (policy.rule[0]): withdrawn by the security team")),
            "{path}: {text}"
        );
    }
    let allowed = c.get(&sc.url("widget/1.0.0.json")).await;
    assert_eq!(allowed.status, StatusCode::OK);

    // Facade: the list leaves it out and says why; the download answer
    // refuses it.
    let facade = |below: &str| m.url(&format!("/v1/providers/{HOST}/acme/widget/{below}"));
    let versions = c.get(&facade("versions")).await.json();
    let listed: Vec<&str> = versions["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["1.0.0"]);
    let warnings = versions["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 1);
    assert!(
        warnings[0]
            .as_str()
            .unwrap()
            .contains("1.1.0 is denied by this mirror's policy (policy.rule[0]): withdrawn"),
        "{versions}"
    );
    let refused = c.get(&facade("1.1.0/download/linux/amd64")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    // The decisions are counted by rule.
    let metrics = c.get(&m.url("/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    let counted = |labels: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(&format!("tfmirror_policy_decisions_total{{{labels}}} ")))
            .map_or(0, |n| n.trim().parse::<u64>().unwrap())
    };
    assert!(
        counted(r#"action="deny",rule="policy.rule[0]""#) >= 4,
        "{text}"
    );
    assert!(
        counted(r#"action="allow",rule="policy.default""#) >= 1,
        "{text}"
    );
    // Nothing of the denied version was fetched from the origin.
    let zip = "/files/terraform-provider-widget_1.1.0_linux_amd64.zip";
    assert_eq!(sc.origin.hits(zip), 0);
    assert_eq!(
        sc.origin
            .hits("/v1/providers/acme/widget/1.1.0/download/linux/amd64"),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundles_carry_what_the_policy_allows_and_a_stricter_site_refuses_the_rest() {
    let sc = two_versions(|_| {}).await;
    for v in ["1.0.0", "1.1.0"] {
        let got = sc
            .client
            .get(&sc.archive_url("widget", v, "linux_amd64"))
            .await;
        assert_eq!(got.status, StatusCode::OK, "{v}");
    }
    let home = sc.setup.dir.path();
    let s = |p: &std::path::Path| p.to_str().unwrap().to_owned();
    let config = config_file(&sc.setup, &sc.origin, "");
    let bundle = home.join("all.tar");
    run_ok(
        home,
        &["export", "--config", &s(&config), "--output", &s(&bundle)],
    )
    .await;

    // A site that denies 1.1.0: the import refuses it, with the reason,
    // and takes the rest.
    let rule = "[[policy.rule]]\nsource = \"registry.origin.test/acme/*\"\nversions = \">= 1.1\"\naction = \"deny\"\nreason = \"not approved here\"\n";
    let site = site_config(home, "strict", rule);
    let imported = run_tfmirror(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    assert!(!imported.ok, "{}", imported.stdout);
    assert!(
        imported.stdout.contains(&format!(
            "REJECTED {HOST}/acme/widget 1.1.0: {HOST}/acme/widget 1.1.0 is denied by this mirror's policy (policy.rule[0]): not approved here"
        )),
        "{}",
        imported.stdout
    );
    assert!(
        imported
            .stdout
            .contains("1 versions verified, 1 archives stored"),
        "{}",
        imported.stdout
    );
    let held = files_below(&home.join("strict-cache"));
    assert!(
        held.iter().any(|f| f.ends_with("1.0.0_linux_amd64.zip")),
        "{held:?}"
    );
    assert!(!held.iter().any(|f| f.contains("1.1.0")), "{held:?}");

    // An export under the same rule leaves 1.1.0 out and says so.
    let strict_export = home.join("strict.tar");
    let exported = run_ok(
        home,
        &[
            "export",
            "--config",
            &s(&config_file(&sc.setup, &sc.origin, rule)),
            "--output",
            &s(&strict_export),
        ],
    )
    .await;
    assert!(
        exported
            .stdout
            .contains(&format!("LEFT OUT {HOST}/acme/widget 1.1.0")),
        "{}",
        exported.stdout
    );
    assert!(
        exported.stdout.contains("1 versions, 1 archives"),
        "{}",
        exported.stdout
    );
}

#[tokio::test]
async fn a_bad_rule_is_named_by_check_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = site_config(
        dir.path(),
        "bad",
        "[[policy.rule]]\nsource = \"hashicorp/*\"\naction = \"allow\"\n[[policy.rule]]\nsource = \"acme/widget\"\nversions = \"~> banana\"\naction = \"deny\"\n",
    );
    let checked = run_tfmirror(
        dir.path(),
        &["check-config", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(!checked.ok);
    assert!(
        checked.stderr.contains("policy.rule[1]: versions"),
        "{}",
        checked.stderr
    );
}

/// Three days, the cooldown of these tests.
const THREE_DAYS: Duration = Duration::from_secs(3 * 86_400);

/// A mirror (with `min_age` as its cooldown) in front of an origin
/// publishing `acme/widget` 1.0.0, listed once.
async fn listed_once(min_age: Option<Duration>) -> Scene {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let sc = Scene::on(
        setup,
        origin,
        signer,
        std::collections::BTreeMap::default(),
        |c| c.policy.min_age = min_age,
    )
    .await;
    let first = sc.client.get(&sc.url("widget/index.json")).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.error_text());
    sc
}

/// Publishes 1.1.0 and moves the mirror's clock past the version list's
/// freshness, so that the next listing sees it.
fn publish_later(sc: &Scene) {
    sc.origin.publish(
        "acme",
        "widget",
        "1.1.0",
        &PLATFORMS,
        &sc.signer,
        &[&sc.signer],
    );
    let ttl = sc.mirror.mirror.config().cache.index_ttl;
    sc.mirror.clock.advance(ttl + Duration::from_secs(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_release_waits_out_its_cooldown_on_the_mirrors_clock() {
    let sc = Box::pin(listed_once(Some(THREE_DAYS))).await;
    let (m, c) = (&sc.mirror, &sc.client);
    let listed = |doc: serde_json::Value| -> Vec<String> {
        doc["versions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };

    // The first listing's versions are old: visible at once.
    let first = c.get(&sc.url("widget/index.json")).await;
    assert_eq!(listed(first.json()), ["1.0.0"]);
    assert_eq!(
        c.get(&sc.url("widget/1.0.0.json")).await.status,
        StatusCode::OK
    );

    // A release published later is seen at the next listing, and held.
    publish_later(&sc);
    assert_eq!(
        listed(c.get(&sc.url("widget/index.json")).await.json()),
        ["1.0.0"]
    );
    let held = c.get(&sc.url("widget/1.1.0.json")).await;
    assert_eq!(held.status, StatusCode::FORBIDDEN);
    let text = held.error_text();
    assert!(text.contains("(policy.min_age): first seen"), "{text}");
    assert!(text.contains("held back until"), "{text}");
    let versions = c
        .get(&m.url(&format!("/v1/providers/{HOST}/acme/widget/versions")))
        .await
        .json();
    assert!(
        versions["warnings"][0]
            .as_str()
            .unwrap()
            .contains("1.1.0 is denied by this mirror's policy (policy.min_age)"),
        "{versions}"
    );
    assert_eq!(
        sc.origin
            .hits("/files/terraform-provider-widget_1.1.0_linux_amd64.zip"),
        0
    );
    // The status page says what is held back, why, and until when.
    let page = c.get(&m.url("/-/status")).await.page_text();
    let held = page.split("id=\"held-back\"").nth(1).unwrap();
    assert!(
        held.contains("<td>1.1.0</td><td>policy.min_age</td>"),
        "{held}"
    );
    assert!(held.contains("held back until"), "{held}");
    let metrics = c.get(&m.url("/metrics")).await.page_text();
    assert!(metrics.contains("tfmirror_versions_held 1\n"), "{metrics}");

    // Nearly three days on, still held; then visible, the list refreshed
    // or not (the first-seen time is kept in the stored list).
    m.clock
        .advance(std::time::Duration::from_secs(3 * 86_400 - 120));
    assert_eq!(
        c.get(&sc.url("widget/1.1.0.json")).await.status,
        StatusCode::FORBIDDEN
    );
    let stored = std::fs::read_to_string(
        sc.setup
            .cache_dir()
            .join("providers/registry.origin.test/acme/widget/index.json"),
    )
    .unwrap();
    assert!(stored.contains("first_seen_ms"), "{stored}");
    m.clock.advance(std::time::Duration::from_secs(120));
    assert_eq!(
        listed(c.get(&sc.url("widget/index.json")).await.json()),
        ["1.0.0", "1.1.0"]
    );
    let page = c.get(&m.url("/-/status")).await.page_text();
    assert!(page.contains("Nothing is held back."), "{page}");
    assert_eq!(
        c.get(&sc.url("widget/1.1.0.json")).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn approve_and_deny_reach_a_running_mirror_without_a_restart() {
    let sc = Box::pin(listed_once(Some(THREE_DAYS))).await;
    let c = &sc.client;
    publish_later(&sc);
    assert_eq!(
        c.get(&sc.url("widget/1.1.0.json")).await.status,
        StatusCode::FORBIDDEN
    );

    let home = sc.setup.dir.path();
    let config = config_file(&sc.setup, &sc.origin, "[policy]\nmin_age = \"3d\"\n");
    let config = config.to_str().unwrap();
    let approved = run_ok(
        home,
        &[
            "approve",
            "--config",
            config,
            "registry.origin.test/acme/widget",
            "1.1.0",
            "--reason",
            "reviewed by the platform team",
        ],
    )
    .await;
    assert!(approved
        .stdout
        .contains("approved registry.origin.test/acme/widget 1.1.0"));
    let version = |v: &str| sc.url(&format!("widget/{v}.json"));
    wait_until_answered(
        "the approval to reach the mirror",
        Duration::from_secs(20),
        || async { c.get(&version("1.1.0")).await.status == StatusCode::OK },
    )
    .await;
    let listed = c.get(&sc.url("widget/index.json")).await.json();
    assert_eq!(
        listed["versions"],
        serde_json::json!({"1.0.0": {}, "1.1.0": {}})
    );

    // A known-bad version hidden by name, with the reason users see.
    let denied = run_tfmirror(home, &["deny", "--config", config, "acme/widget", "1.0.0"]).await;
    assert!(!denied.ok, "a deny without a reason is refused");
    assert!(denied.stderr.contains("--reason"), "{}", denied.stderr);
    run_ok(
        home,
        &[
            "deny",
            "--config",
            config,
            "registry.origin.test/acme/widget",
            "1.0.0",
            "--reason",
            "CVE-2026-0001",
        ],
    )
    .await;
    wait_until_answered(
        "the denial to reach the mirror",
        Duration::from_secs(20),
        || async { c.get(&version("1.0.0")).await.status == StatusCode::FORBIDDEN },
    )
    .await;
    let refused = c.get(&version("1.0.0")).await.error_text();
    assert!(
        refused.contains("(tfmirror deny): CVE-2026-0001"),
        "{refused}"
    );
    let listed = c.get(&sc.url("widget/index.json")).await.json();
    assert_eq!(listed["versions"], serde_json::json!({"1.1.0": {}}));

    let shown = run_ok(home, &["policy", "ls", "--config", config]).await;
    assert!(shown.stdout.contains("min_age: 3days"), "{}", shown.stdout);
    assert!(
        shown
            .stdout
            .contains("approved registry.origin.test/acme/widget 1.1.0 at "),
        "{}",
        shown.stdout
    );
    assert!(
        shown
            .stdout
            .contains("denied registry.origin.test/acme/widget 1.0.0 at "),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains(": CVE-2026-0001"), "{}", shown.stdout);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cooldown_crosses_the_air_gap_with_the_first_seen_times() {
    // The connected side has no cooldown, but notes when versions appear.
    let sc = Box::pin(listed_once(None)).await;
    let c = &sc.client;
    publish_later(&sc);
    for v in ["1.0.0", "1.1.0"] {
        let got = c.get(&sc.archive_url("widget", v, "linux_amd64")).await;
        assert_eq!(got.status, StatusCode::OK, "{v}: {}", got.error_text());
    }
    // The site has a cooldown: the version that appeared late is held
    // there too, counted from when the connected side first saw it.
    let gap = across_the_gap(&sc, "[policy]\nmin_age = \"3d\"\n", |c| {
        c.policy.min_age = Some(THREE_DAYS);
    })
    .await;
    let gc = Client::trusting(&gap.ca_file);
    let at = |v: &str| gap.url(&format!("/{HOST}/acme/widget/{v}.json"));
    assert_eq!(gc.get(&at("1.0.0")).await.status, StatusCode::OK);
    let held = gc.get(&at("1.1.0")).await;
    assert_eq!(held.status, StatusCode::FORBIDDEN);
    assert!(
        held.error_text().contains("(policy.min_age)"),
        "{}",
        held.error_text()
    );
    gap.clock.advance(THREE_DAYS + Duration::from_secs(3_600));
    assert_eq!(gc.get(&at("1.1.0")).await.status, StatusCode::OK);
}
