//! Keeping a site ready: the daemon's watch passes on the mirror's clock
//! (new versions fetched for the watched platforms only, the policy
//! respected, an outage reported and tried again sooner), `tfmirror watch
//! --once`, `tfmirror check` before and after a sync (and after eviction,
//! a policy rule and a lock file that matches nothing held), and
//! transfers that carry only what a site lacks (`inventory`, `export
//! --missing-from`, `export --since`). The real Terraform's part is in
//! `tests/terraform.rs`.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use common::daemon::*;
use common::*;

const HOST: &str = "registry.origin.test";

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

fn zip(kind: &str, version: &str, platform: &str) -> String {
    format!("/files/terraform-provider-{kind}_{version}_{platform}.zip")
}

/// The metric line that starts with `name`, or an empty string.
fn metric(text: &str, name: &str) -> String {
    text.lines()
        .find(|l| l.starts_with(name))
        .unwrap_or("")
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_fetches_new_versions_for_its_platforms_on_the_mirrors_clock() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let all = ["linux_amd64", "darwin_arm64", "windows_amd64"];
    origin.publish("acme", "widget", "1.0.0", &all, &signer, &[&signer]);
    origin.publish("acme", "gadget", "1.0.0", &all, &signer, &[&signer]);
    let sc = Scene::on(setup, origin, signer, BTreeMap::new(), |c| {
        c.watch = toml::from_str(&format!(
            "interval = \"6h\"\nplatforms = [\"linux_amd64\", \"darwin_arm64\"]\n[[provider]]\nsource = \"{HOST}/acme/widget\"\nversions = \"~> 1.0\"\n"
        ))
        .unwrap();
        c.policy = toml::from_str(&format!(
            "[[rule]]\nsource = \"{HOST}/acme/widget\"\nversions = \"= 1.2.0\"\naction = \"deny\"\nreason = \"a known regression\"\n"
        ))
        .unwrap();
    })
    .await;
    let watch = sc.mirror.app.watch.clone().expect("a watch is configured");
    let clock = sc.mirror.clock.clone();
    let pass_done = |n: u64| {
        let watch = watch.clone();
        move || watch.status().passes == n && watch.status().next_ms.is_some()
    };
    let stored = |n: u64| {
        let status = watch.status();
        assert_eq!(status.passes, n);
        let mut stored = status.last.unwrap().stored;
        stored.sort();
        stored
    };
    let hour_ms = 3_600_000;

    // The first pass runs at start: the watched provider's version, for the
    // two platforms listed and not the third; nothing of the provider that
    // is not watched.
    wait_until(
        "the first watch pass",
        Duration::from_secs(30),
        pass_done(1),
    )
    .await;
    assert_eq!(stored(1), watched_archives("1.0.0"));
    assert_eq!(sc.origin.hits(&zip("widget", "1.0.0", "windows_amd64")), 0);
    assert_eq!(sc.origin.hits("/v1/providers/acme/gadget/versions"), 0);
    let first = watch.status();
    let due = first.next_ms.unwrap();
    let at_first = first.last.as_ref().unwrap().finished_ms;
    assert!(
        (at_first + 54 * hour_ms / 10..=at_first + 66 * hour_ms / 10).contains(&due),
        "the next pass is due about 6 h on (a tenth either way), not at {due} after {at_first}"
    );

    // Published later: a version to fetch, one the policy denies, one
    // outside the constraints. The pass waits for its time on the clock.
    for v in ["1.1.0", "1.2.0", "2.0.0"] {
        sc.origin
            .publish("acme", "widget", v, &all, &sc.signer, &[&sc.signer]);
    }
    clock.advance(Duration::from_millis(due - clock_ms(&sc) - 60_000));
    clock.advance(Duration::from_secs(60));
    wait_until(
        "the second watch pass",
        Duration::from_secs(30),
        pass_done(2),
    )
    .await;
    let second = watch.status().last.unwrap();
    assert!(
        second.started_ms >= due,
        "the second pass ran before it was due"
    );
    assert!(second.failures.is_empty(), "{:?}", second.failures);
    assert_eq!(stored(2), watched_archives("1.1.0"));
    for (v, platform) in [
        ("1.1.0", "windows_amd64"),
        ("1.2.0", "linux_amd64"),
        ("2.0.0", "linux_amd64"),
    ] {
        assert_eq!(
            sc.origin.hits(&zip("widget", v, platform)),
            0,
            "{v} {platform}"
        );
    }
    assert_eq!(sc.origin.hits("/v1/providers/acme/gadget/versions"), 0);

    // The origin fails during the next pass: the failure is reported and
    // tried again a minute on, not six hours.
    sc.origin.fail_with(Some(http::StatusCode::BAD_GATEWAY));
    let due = watch.status().next_ms.unwrap();
    clock.advance(Duration::from_millis(due - clock_ms(&sc)));
    wait_until(
        "the third watch pass",
        Duration::from_secs(30),
        pass_done(3),
    )
    .await;
    let failed = watch.status();
    let pass = failed.last.clone().unwrap();
    assert!(pass.stored.is_empty());
    assert!(
        pass.failures.iter().any(|f| f.contains("502")),
        "{:?}",
        pass.failures
    );
    assert_eq!(failed.failed_in_a_row, 1);
    let retry = failed.next_ms.unwrap() - pass.finished_ms;
    assert!((54_000..=66_000).contains(&retry), "retried {retry} ms on");
    let page = sc.client.get(&sc.mirror.url("/-/status")).await;
    let html = page.page_text();
    assert!(
        html.contains("1 providers and 0 modules are watched"),
        "{html}"
    );
    assert!(
        html.contains("0 stored, 0 already cached, 1 failed"),
        "{html}"
    );
    assert!(
        html.contains("<td>failed</td><td>provider registry.origin.test/acme/widget"),
        "{html}"
    );

    // The origin is back, with one more release: the retry fetches it, and
    // the schedule returns to the interval.
    sc.origin
        .publish("acme", "widget", "1.3.0", &all, &sc.signer, &[&sc.signer]);
    sc.origin.fail_with(None);
    clock.advance(Duration::from_millis(
        failed.next_ms.unwrap() - clock_ms(&sc),
    ));
    wait_until(
        "the retried watch pass",
        Duration::from_secs(30),
        pass_done(4),
    )
    .await;
    assert_eq!(stored(4), watched_archives("1.3.0"));
    let recovered = watch.status();
    assert_eq!(recovered.failed_in_a_row, 0);
    let wait = recovered.next_ms.unwrap() - recovered.last.unwrap().finished_ms;
    assert!(wait >= 54 * hour_ms / 10, "back to the interval: {wait} ms");

    let metrics = sc.client.get(&sc.mirror.url("/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body).into_owned();
    assert_eq!(
        metric(&text, "tfmirror_watch_runs_total{outcome=\"ok\"}"),
        "tfmirror_watch_runs_total{outcome=\"ok\"} 3"
    );
    assert_eq!(
        metric(&text, "tfmirror_watch_runs_total{outcome=\"failed\"}"),
        "tfmirror_watch_runs_total{outcome=\"failed\"} 1"
    );
    assert_eq!(
        metric(&text, "tfmirror_watch_fetched_total{kind=\"archive\"}"),
        "tfmirror_watch_fetched_total{kind=\"archive\"} 6"
    );
    assert!(
        !metric(&text, "tfmirror_watch_last_success_timestamp_seconds").ends_with(" 0"),
        "{text}"
    );
    sc.mirror.stop().await;
}

/// How a watch pass names the archives of widget `version` it stored.
fn watched_archives(version: &str) -> [String; 2] {
    ["darwin_arm64", "linux_amd64"].map(|p| format!("{HOST}/acme/widget {version} {p}"))
}

/// The mirror's clock now, in milliseconds since the Unix epoch.
fn clock_ms(sc: &Scene) -> u64 {
    use tfmirror::clock::Clock;
    sc.mirror.clock.unix_ms()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_once_runs_one_pass_from_the_command_line() {
    let (setup, origin, _signer, _archives) =
        published("widget", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;
    let dir = setup.dir.path();
    let config = config_file(
        &setup,
        &origin,
        &format!(
            "[watch]\nplatforms = [\"linux_amd64\"]\n[[watch.provider]]\nsource = \"{HOST}/acme/widget\"\n"
        ),
    );
    let first = run_ok(dir, &["watch", "--once", "--config", s(&config)]).await;
    assert!(
        first
            .stdout
            .contains("archives: 1 (1 downloaded, 0 already cached)"),
        "{}",
        first.stdout
    );
    assert_eq!(origin.hits(&zip("widget", "1.0.0", "darwin_arm64")), 0);
    // A second pass lists afresh and finds nothing new.
    let again = run_ok(dir, &["watch", "--once", "--config", s(&config)]).await;
    assert!(
        again
            .stdout
            .contains("archives: 1 (0 downloaded, 1 already cached)"),
        "{}",
        again.stdout
    );
    assert_eq!(origin.hits("/v1/providers/acme/widget/versions"), 2);
    // An origin that fails is a failed pass.
    origin.fail_with(Some(http::StatusCode::BAD_GATEWAY));
    let failed = run_tfmirror(dir, &["watch", "--once", "--config", s(&config)]).await;
    assert!(!failed.ok);
    assert!(
        failed.stdout.contains("FAILED provider"),
        "{}",
        failed.stdout
    );
    // Without --once, or with nothing watched, it says what to do instead.
    let plain = run_tfmirror(dir, &["watch", "--config", s(&config)]).await;
    assert!(
        !plain.ok && plain.stderr.contains("--once"),
        "{}",
        plain.stderr
    );
    let bare = config_file(&setup, &origin, "");
    let empty = run_tfmirror(dir, &["watch", "--once", "--config", s(&bare)]).await;
    assert!(
        !empty.ok && empty.stderr.contains("[watch] lists no provider"),
        "{}",
        empty.stderr
    );
}

/// The lines of a `check` report that name items.
fn items(out: &str) -> Vec<String> {
    out.lines()
        .map(str::trim_start)
        .filter(|l| l.starts_with("HELD") || l.starts_with("MISSING") || l.starts_with("MISMATCH"))
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_says_what_a_configuration_lacks_and_why() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_net_and_sub(&setup, &origin);
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("main.tf"),
        format!(
            "terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"{HOST}/acme/widget\"\n      version = \"~> 1.0\"\n    }}\n  }}\n}}\n\nmodule \"net\" {{\n  source  = \"{HOST}/acme/net/aws\"\n  version = \"~> 1.0\"\n}}\n"
        ),
    )
    .unwrap();
    let check = |config: PathBuf, extra: &'static [&'static str]| {
        let conf = conf.clone();
        async move {
            let mut args = vec![
                "check".to_owned(),
                "--config".into(),
                s(&config).into(),
                "--from".into(),
                s(&conf).into(),
                "--platform".into(),
                "linux_amd64".into(),
            ];
            args.extend(extra.iter().map(|a| (*a).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_tfmirror(dir, &args).await
        }
    };

    // `sync` and `lock` of the configuration, on the connected side.
    let on_conf = |verb: &'static str| {
        let (connected, conf) = (connected.clone(), conf.clone());
        async move {
            let args = [
                verb,
                "--config",
                s(&connected),
                "--from",
                s(&conf),
                "--platform",
                "linux_amd64",
            ];
            run_ok(dir, &args).await
        }
    };

    // Before anything was fetched: the provider and the module, never
    // listed; what the module calls cannot be known yet.
    let before = check(connected.clone(), &[]).await;
    assert!(!before.ok, "{}", before.stdout);
    assert_eq!(
        items(&before.stdout),
        [
            format!("MISSING provider {HOST}/acme/widget: never listed by this mirror"),
            format!("MISSING module {HOST}/acme/net/aws: never listed by this mirror"),
        ]
    );
    assert!(
        before.stdout.contains("not ready: 0 held, 2 missing"),
        "{}",
        before.stdout
    );
    assert_eq!(
        origin.requests.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "check asks no origin"
    );

    on_conf("sync").await;
    let after = check(connected.clone(), &[]).await;
    assert!(after.ok, "{}{}", after.stdout, after.stderr);
    assert_eq!(
        items(&after.stdout),
        [
            format!("HELD provider {HOST}/acme/widget 1.0.0 linux_amd64"),
            format!("HELD module {HOST}/acme/net/aws 1.0.0"),
            format!("HELD module {HOST}/acme/sub/aws 1.0.0"),
        ]
    );
    let json = check(connected.clone(), &["--json"]).await;
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["ready"], true);
    assert_eq!(report["items"].as_array().unwrap().len(), 3);
    assert_eq!(report["items"][0]["status"], "held");

    // A lock file whose hashes match nothing held: init would refuse it.
    let lock = conf.join(".terraform.lock.hcl");
    std::fs::write(
        &lock,
        format!("provider \"{HOST}/acme/widget\" {{\n  version = \"1.0.0\"\n  hashes = [\n    \"h1:0000000000000000000000000000000000000000000=\",\n    \"zh:0000000000000000000000000000000000000000000000000000000000000000\",\n  ]\n}}\n"),
    )
    .unwrap();
    let mismatch = check(connected.clone(), &[]).await;
    assert!(!mismatch.ok);
    let lines = items(&mismatch.stdout);
    assert!(
        lines[0].starts_with(&format!(
            "MISMATCH provider {HOST}/acme/widget 1.0.0 linux_amd64: the lock file's hashes (h1:000"
        )),
        "{}",
        mismatch.stdout
    );
    let json = check(connected.clone(), &["--json"]).await;
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["items"][0]["status"], "lock_mismatch");
    // The lock file `tfmirror lock` writes matches.
    let locked = on_conf("lock").await;
    std::fs::write(&lock, &locked.stdout).unwrap();
    assert!(check(connected.clone(), &[]).await.ok);

    // A rule denies the locked version.
    let strict = dir.join("strict.toml");
    std::fs::write(
        &strict,
        std::fs::read_to_string(&connected).unwrap()
            + &format!("[[policy.rule]]\nsource = \"{HOST}/acme/widget\"\nversions = \"= 1.0.0\"\naction = \"deny\"\nreason = \"withdrawn\"\n"),
    )
    .unwrap();
    let denied = check(strict, &[]).await;
    assert!(!denied.ok);
    assert_eq!(
        items(&denied.stdout)[0],
        format!("MISSING provider {HOST}/acme/widget 1.0.0: denied by the policy (policy.rule[0]): withdrawn")
    );

    // Evicted: the archive, and the module package (its pin stays, so what
    // it calls is no longer known).
    run_ok(dir, &["gc", "--config", s(&connected), "--max-size", "0B"]).await;
    let evicted = check(connected.clone(), &[]).await;
    assert!(!evicted.ok);
    let lines = items(&evicted.stdout);
    assert!(
        lines[0].starts_with(&format!(
            "MISSING provider {HOST}/acme/widget 1.0.0 linux_amd64: evicted 20"
        )),
        "{}",
        evicted.stdout
    );
    assert_eq!(
        lines[1],
        format!("MISSING module {HOST}/acme/net/aws 1.0.0: evicted (its pin stays)")
    );
    assert_eq!(lines.len(), 2, "{}", evicted.stdout);

    // --fetch fills what is missing, then the answer is yes.
    let fetched = check(connected.clone(), &["--fetch"]).await;
    assert!(fetched.ok, "{}{}", fetched.stdout, fetched.stderr);
    assert_eq!(items(&fetched.stdout).len(), 3);
    assert!(
        fetched.stdout.contains("ready: 3 held"),
        "{}",
        fetched.stdout
    );
}

/// A bundle's entry names.
fn entry_names(path: &Path) -> Vec<String> {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    let mut names: Vec<String> = tar
        .entries()
        .unwrap()
        .map(|e| e.unwrap().path().unwrap().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".zip"))
        .collect();
    names.sort();
    names
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transfers_carry_only_what_the_site_lacks() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archive_size = 512 * 1024;
    publish_big(
        &origin,
        &signer,
        "widget",
        &["1.0.0", "1.1.0"],
        archive_size,
    );
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let zip_entry = |v: &str| {
        format!("tfmirror-bundle/providers/{HOST}/acme/widget/{v}/terraform-provider-widget_{v}_linux_amd64.zip")
    };

    // Both sites first receive 1.0.0 in a full bundle.
    sync_widget(dir, &connected, "= 1.0.0").await;
    let first = dir.join("first.tfm");
    export_bundle(dir, &connected, &first, &[]).await;
    let site_a = site_config(dir, "a", "");
    let site_b = site_config(dir, "b", "");
    for site in [&site_a, &site_b] {
        run_ok(dir, &["import", "--config", s(site), s(&first)]).await;
    }
    // The connected side moves on to 1.1.0.
    sync_widget(dir, &connected, "~> 1.0").await;
    let full = dir.join("full.tfm");
    export_bundle(dir, &connected, &full, &[]).await;
    assert_eq!(entry_names(&full), [zip_entry("1.0.0"), zip_entry("1.1.0")]);

    // Site A sends its inventory back; the delta carries 1.1.0 alone.
    let inventory = dir.join("site.json");
    let written = write_inventory(dir, &site_a, &inventory).await;
    assert!(
        written.stdout.contains("1 archives, 0 module versions"),
        "{}",
        written.stdout
    );
    let listed: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&inventory).unwrap()).unwrap();
    let hashes = &listed["providers"][format!("{HOST}/acme/widget")]["1.0.0"]["linux_amd64"];
    assert!(hashes[0].as_str().unwrap().starts_with("h1:"), "{listed}");
    assert!(hashes[1].as_str().unwrap().starts_with("zh:"), "{listed}");
    let again = dir.join("site-again.json");
    write_inventory(dir, &site_a, &again).await;
    assert_eq!(
        std::fs::read(&inventory).unwrap(),
        std::fs::read(&again).unwrap(),
        "stable"
    );

    let delta = dir.join("delta.tfm");
    let exported = export_bundle(dir, &connected, &delta, &["--missing-from", s(&inventory)]).await;
    assert!(
        exported.stdout.contains("1 versions, 1 archives")
            && exported
                .stdout
                .contains("a delta: 1 archives and module versions the site holds left out"),
        "{}",
        exported.stdout
    );
    assert_eq!(entry_names(&delta), [zip_entry("1.1.0")]);
    let one = archive_size as u64;
    assert!(
        size(&delta) > one && size(&delta) < one + one / 4,
        "the delta is about one archive: {} bytes, the full bundle {}",
        size(&delta),
        size(&full)
    );
    assert!(size(&full) > 2 * one);
    let imported = run_ok(dir, &["import", "--config", s(&site_a), s(&delta)]).await;
    assert!(
        imported
            .stdout
            .contains("1 versions verified, 1 archives stored, 0 already cached, 0 rejected"),
        "{}",
        imported.stdout
    );
    assert!(!imported.stdout.contains("NOT HELD"), "{}", imported.stdout);

    // Site B sends nothing back: the delta since the first bundle.
    let since = dir.join("since.tfm");
    export_bundle(dir, &connected, &since, &["--since", s(&first)]).await;
    assert_eq!(entry_names(&since), [zip_entry("1.1.0")]);
    assert!(size(&since) < one + one / 4);
    run_ok(dir, &["import", "--config", s(&site_b), s(&since)]).await;
    // Both sites hold the same now.
    let inventory_b = dir.join("site-b.json");
    write_inventory(dir, &site_b, &inventory_b).await;
    let after_a = dir.join("site-a.json");
    write_inventory(dir, &site_a, &after_a).await;
    assert_eq!(
        std::fs::read(&after_a).unwrap(),
        std::fs::read(&inventory_b).unwrap()
    );

    // Since a delta: it covers what came before it too, so nothing is new;
    // an empty bundle is still a bundle.
    let nothing = dir.join("nothing.tfm");
    let empty = export_bundle(dir, &connected, &nothing, &["--since", s(&since)]).await;
    assert!(
        empty.stdout.contains("0 versions, 0 archives"),
        "{}",
        empty.stdout
    );
    assert!(entry_names(&nothing).is_empty());
    run_ok(dir, &["import", "--config", s(&site_b), s(&nothing)]).await;

    // A site that never received what a delta builds on is told so.
    let site_c = site_config(dir, "c", "");
    let orphan = run_ok(dir, &["import", "--config", s(&site_c), s(&since)]).await;
    assert!(
        orphan.stdout.contains(&format!(
            "NOT HELD {HOST}/acme/widget 1.0.0 linux_amd64: this bundle builds on it"
        )),
        "{}",
        orphan.stdout
    );
    // The two kinds of delta cannot be asked for at once, nor for a static
    // directory.
    let both = run_tfmirror(
        dir,
        &[
            "export",
            "--config",
            s(&connected),
            "--output",
            s(&dir.join("x.tfm")),
            "--missing-from",
            s(&inventory),
            "--since",
            s(&first),
        ],
    )
    .await;
    assert!(!both.ok, "{}", both.stdout);
    let bad = dir.join("bad.json");
    std::fs::write(
        &bad,
        "{\"tfmirror_inventory\": 1, \"providers\": {\"widget\": {}}}",
    )
    .unwrap();
    let refused = run_tfmirror(
        dir,
        &[
            "export",
            "--config",
            s(&connected),
            "--output",
            s(&dir.join("y.tfm")),
            "--missing-from",
            s(&bad),
        ],
    )
    .await;
    assert!(
        !refused.ok && refused.stderr.contains("providers.\"widget\""),
        "{}",
        refused.stderr
    );
    assert!(!dir.join("y.tfm").exists());
}

/// Publishes `acme/app/aws` 1.0.0, which requires `acme/gadget >= 2.0`
/// and calls `acme/deep/aws`, which requires `acme/widget ~> 1.0`; and
/// gadget 1.0.0, 2.1.0 and 2.6.0 (widget is left to the caller).
fn publish_modules_with_providers(setup: &Setup, origin: &FakeOrigin, signer: &Signer) {
    let git_root = setup.dir.path().join("git");
    let app = Repo::new(&git_root, "app");
    app.commit(
        &[(
            "main.tf",
            &format!("terraform {{\n  required_providers {{\n    gadget = {{\n      source  = \"{HOST}/acme/gadget\"\n      version = \">= 2.0\"\n    }}\n  }}\n}}\n\nmodule \"deep\" {{\n  source  = \"{HOST}/acme/deep/aws\"\n  version = \"~> 1.0\"\n}}\n"),
        )],
        "app v1",
    );
    app.tag("v1.0.0");
    let deep = Repo::new(&git_root, "deep");
    deep.commit(
        &[(
            "versions.tf",
            &format!("terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"{HOST}/acme/widget\"\n      version = \"~> 1.0\"\n    }}\n  }}\n}}\n"),
        )],
        "deep v1",
    );
    deep.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("app", "1.0.0", "app", "v1.0.0");
    origin.publish_git_module("deep", "1.0.0", "deep", "v1.0.0");
    for version in ["1.0.0", "2.1.0", "2.6.0"] {
        origin.publish("acme", "gadget", version, &[LINUX], signer, &[signer]);
    }
}

const LINUX: &str = "linux_amd64";

/// `sync --from` and `check --from` follow the providers registry modules
/// require in their own `required_providers`, at any depth: a provider the
/// configuration requires too meets both constraints (as `terraform init`
/// resolves them), a provider only a nested module requires is fetched
/// for the platforms asked for, and what is missing is named with the
/// module that requires it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_and_check_follow_the_providers_modules_require() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    publish_modules_with_providers(&setup, &origin, &signer);
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("main.tf"),
        format!("terraform {{\n  required_providers {{\n    gadget = {{\n      source  = \"{HOST}/acme/gadget\"\n      version = \"< 2.5\"\n    }}\n  }}\n}}\n\nmodule \"app\" {{\n  source  = \"{HOST}/acme/app/aws\"\n  version = \"1.0.0\"\n}}\n"),
    )
    .unwrap();
    let on_conf = |verb: &'static str| {
        let (connected, conf) = (connected.clone(), conf.clone());
        async move {
            let args = [
                verb,
                "--config",
                s(&connected),
                "--from",
                s(&conf),
                "--platform",
                LINUX,
            ];
            run_tfmirror(dir, &args).await
        }
    };
    let app = format!("module {HOST}/acme/app/aws 1.0.0");
    let deep = format!("module {HOST}/acme/deep/aws 1.0.0");

    // widget is not published yet: the sync fetches the rest and names
    // the module that requires what it could not have.
    let synced = on_conf("sync").await;
    assert!(!synced.ok, "{}", synced.stdout);
    let said = format!("{}{}", synced.stdout, synced.stderr);
    assert!(
        said.contains(&format!("{HOST}/acme/widget"))
            && said.contains(&format!("(required by {deep})")),
        "{said}"
    );
    assert_eq!(origin.hits(&zip("gadget", "2.1.0", LINUX)), 1);
    assert_eq!(origin.hits(&zip("gadget", "2.6.0", LINUX)), 0);
    let checked = on_conf("check").await;
    assert!(!checked.ok);
    assert_eq!(
        items(&checked.stdout),
        [
            format!("HELD provider {HOST}/acme/gadget 2.1.0 {LINUX} (required by {app})"),
            format!("MISSING provider {HOST}/acme/widget (required by {deep}): never listed by this mirror"),
            format!("HELD {app}"),
            format!("HELD {deep}"),
        ],
        "{}",
        checked.stdout
    );

    // Published: the next sync fetches it and the check is satisfied.
    origin.publish("acme", "widget", "1.3.0", &[LINUX], &signer, &[&signer]);
    let synced = on_conf("sync").await;
    assert!(synced.ok, "{}{}", synced.stdout, synced.stderr);
    assert_eq!(origin.hits(&zip("widget", "1.3.0", LINUX)), 1);
    let checked = on_conf("check").await;
    assert!(checked.ok, "{}", checked.stdout);
    assert!(
        items(&checked.stdout).contains(&format!(
            "HELD provider {HOST}/acme/widget 1.3.0 {LINUX} (required by {deep})"
        )),
        "{}",
        checked.stdout
    );
    let args = [
        "check",
        "--config",
        s(&connected),
        "--from",
        s(&conf),
        "--platform",
        LINUX,
        "--json",
    ];
    let json = run_ok(dir, &args).await;
    let report: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let widget = report["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["source"] == format!("{HOST}/acme/widget"))
        .unwrap()
        .clone();
    assert_eq!(widget["required_by"], serde_json::json!([deep]), "{widget}");

    // `lock --from` locks them as `terraform init` would.
    let locked = on_conf("lock").await;
    assert!(locked.ok, "{}", locked.stderr);
    for block in [
        format!("provider \"{HOST}/acme/gadget\" {{\n  version     = \"2.1.0\"\n  constraints = \"< 2.5, >= 2.0\""),
        format!("provider \"{HOST}/acme/widget\" {{\n  version     = \"1.3.0\"\n  constraints = \"~> 1.0\""),
    ] {
        assert!(locked.stdout.contains(&block), "{block}\n{}", locked.stdout);
    }
}

/// `--output` given as a bare file name is written in the directory the
/// command runs in (the helper every `--output` uses once flushed the
/// directory `""` and failed after writing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_output_given_as_a_bare_file_name_is_written_where_the_command_runs() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let config = config_file(&setup, &origin, "");
    let work = setup.dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    let mut cmd = tfmirror(setup.dir.path());
    cmd.current_dir(&work)
        .args(["inventory", "--config", s(&config), "--output", "rel.json"]);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let written: serde_json::Value =
        serde_json::from_slice(&std::fs::read(work.join("rel.json")).unwrap()).unwrap();
    assert!(written.is_object(), "{written}");
}
