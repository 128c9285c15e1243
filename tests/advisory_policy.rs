//! The policy on advisories (`[policy.rule.advisories]`, `tfmirror
//! accept`) with the real Terraform CLI: the origin publishes
//! `acme/tfcli` 1.0.0, whose executable is a shell script (no Go build
//! information, no finding), and 1.1.0, whose executable is the real
//! Terraform v1.0.3 binary. The pinned real advisory entries are imported:
//! the Go database's, which rate nothing, and GitHub's
//! GHSA-4374-p667-p6c8, which rates HIGH the x/net half of GO-2023-2102
//! and is its alias. A rule denies versions with an advisory rated high
//! or above, unrated entries ignored: 1.1.0 falls under it, by
//! GO-2023-2102 alone, counted once under both its IDs.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::daemon::{config_file, run_ok, run_tfmirror, second_instance, tfmirror, Daemon};
use common::go::{import_advisories, publish_tfcli_pair};
use common::workspace::Workspace;
use common::*;
use http::StatusCode;

const SOURCE: &str = "registry.origin.test/acme/tfcli";

/// The rule the tests configure: deny what an advisory rated high or
/// above is against, unrated entries ignored. 1.0.0's executable is a
/// shell script, whose advisories are not known: the site lets such
/// versions through (`unknown = "allow"`), so that its findings alone
/// decide ([`a_binary_the_mirror_cannot_tell_is_refused_unless_the_rule_allows_it`]
/// tries the default).
const RULE: &str = r#"
[[policy.rule]]
source = "registry.origin.test/acme/*"
action = "deny"
reason = "no high advisories on build hosts"
[policy.rule.advisories]
severity = "high"
unrated = "ignored"
unknown = "allow"
"#;

/// A set-up with the origin of [`publish_tfcli_pair`] and a configuration
/// file with `extra` (given the set-up's directory) in it, the advisory
/// fixtures imported through it.
async fn imported(extra: impl FnOnce(&Path) -> String) -> (Setup, FakeOrigin, PathBuf) {
    let setup = Setup::new();
    let (origin, entries) = publish_tfcli_pair(&setup).await;
    let config = config_file(&setup, &origin, &extra(setup.dir.path()));
    import_advisories(setup.dir.path(), &config, &[&entries]).await;
    (setup, origin, config)
}

/// One file trusting the origin's authority and the mirror's.
fn both_authorities(setup: &Setup, mirror_ca: &Path) -> PathBuf {
    let path = setup.dir.path().join("both.pem");
    let pem = setup.ca.ca_pem.clone() + &std::fs::read_to_string(mirror_ca).unwrap();
    std::fs::write(&path, pem).unwrap();
    path
}

/// The archive of `version` for this machine's platform, at `base`.
fn archive_url(base: &str, version: &str) -> String {
    format!(
        "{base}registry.origin.test/acme/tfcli/terraform-provider-tfcli_{version}_{}.zip",
        common::terraform::platform()
    )
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_the_version_no_high_advisory_is_against() {
    let (setup, _origin, config) = imported(|home| {
        let audit = home.join("audit.jsonl");
        format!(
            "[log]\nformat = \"json\"\naudit_file = \"{}\"\n{RULE}",
            audit.display()
        )
    })
    .await;
    let home = setup.dir.path();
    let audit = home.join("audit.jsonl");
    let mut cmd = tfmirror(home);
    cmd.args(["serve", "--config"]).arg(&config);
    let mut d = Daemon::start(cmd);
    d.wait_for("SSL_CERT_FILE=");
    let mirror_ca = home.join("data/tls/ca.pem");
    let c = Client::trusting(&mirror_ca);
    let index = format!("{}registry.origin.test/acme/tfcli/index.json", d.url);
    let listed = |doc: serde_json::Value| -> Vec<String> {
        doc["versions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };

    // Neither binary read yet: both versions are offered.
    assert_eq!(listed(c.get(&index).await.json()), ["1.0.0", "1.1.0"]);
    let doc = format!("{}registry.origin.test/acme/tfcli/1.1.0.json", d.url);
    assert_eq!(c.get(&doc).await.status, StatusCode::OK);

    // Its first download is read before it is served, and refused; from
    // then on the version is refused by name and left out of the list.
    let named = |text: &str| {
        text.contains("policy.rule[0]")
            && text.contains("advisory GO-2023-2102 (high; also ")
            && text.contains("GHSA-4374-p667-p6c8")
            && text.contains("no high advisories on build hosts")
    };
    for url in [archive_url(&d.url, "1.1.0"), doc.clone()] {
        let refused = c.get(&url).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{url}");
        assert!(named(&refused.error_text()), "{}", refused.error_text());
    }
    assert_eq!(listed(c.get(&index).await.json()), ["1.0.0"]);

    let ca = both_authorities(&setup, &mirror_ca);
    let facade = format!("{}v1/providers/registry.origin.test/", d.url);
    let platform = common::terraform::platform();
    for (cli, tf) in common::terraform::clis() {
        // Through the network mirror, `>= 1.0.0` resolves to 1.0.0.
        let wanted = [("tfcli", SOURCE, ">= 1.0.0")];
        let mirror = format!("  network_mirror {{\n    url = \"{}\"\n  }}\n", d.url);
        let ws = Workspace::with(&tf, &mirror, &mirror_ca, &wanted);
        let (ok, out) = ws.init().await;
        assert!(ok, "{cli}: terraform init failed:\n{out}");
        assert!(
            ws.installed(SOURCE, "1.0.0", &platform).exists(),
            "{cli}:\n{out}"
        );
        assert!(
            !ws.installed(SOURCE, "1.1.0", &platform).exists(),
            "{cli}:\n{out}"
        );

        // Through the facade the same, and Terraform prints the warning
        // that names the advisory and the rule.
        let ws = Workspace::through_host_block(&tf, "registry.origin.test", &facade, &ca, &wanted);
        let (ok, out) = ws.init().await;
        assert!(
            ok,
            "{cli}: terraform init through the facade failed:\n{out}"
        );
        assert!(
            ws.installed(SOURCE, "1.0.0", &platform).exists(),
            "{cli}:\n{out}"
        );
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(flat.contains("registry returned warnings"), "{cli}:\n{out}");
        assert!(named(&flat), "{cli}:\n{out}");

        // Asked for by name, it is not installed.
        let exact = [("tfcli", SOURCE, "1.1.0")];
        let ws = Workspace::with(&tf, &mirror, &mirror_ca, &exact);
        let (ok, out) = ws.init().await;
        assert!(!ok, "{cli}: the refused version was installed:\n{out}");
        assert!(!ws.installed(SOURCE, "1.1.0", &platform).exists());

        // A lock file that pinned it before the database knew: `init`
        // fails rather than move to another version, and through the
        // facade the warning says why.
        let ws = Workspace::through_host_block(&tf, "registry.origin.test", &facade, &ca, &wanted);
        std::fs::write(
            ws.dir.path().join(".terraform.lock.hcl"),
            format!("provider \"{SOURCE}\" {{\n  version     = \"1.1.0\"\n  constraints = \">= 1.0.0\"\n}}\n"),
        )
        .unwrap();
        let (ok, out) = ws.init().await;
        assert!(!ok, "{cli}: the refused version was installed:\n{out}");
        let flat = out.split_whitespace().collect::<Vec<_>>().join(" ");
        assert!(named(&flat), "{cli}:\n{out}");
        assert!(
            flat.contains("the previously-selected version 1.1.0 is no longer available"),
            "{cli}:\n{out}"
        );
    }

    // The provider's page names the advisory and the rule.
    let page = c
        .get(&format!("{}-/api/providers/{SOURCE}", d.url))
        .await
        .json();
    let policy = page["versions"][0]["policy"].as_str().unwrap();
    assert_eq!(page["versions"][0]["version"], "1.1.0");
    assert!(
        policy.starts_with("not installable: ") && named(policy),
        "{policy}"
    );

    // The audit trail names each refusal, its rule and its advisory.
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
    let refusals: Vec<serde_json::Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        .filter(|l| l["fields"]["message"] == "refused")
        .collect();
    assert!(refusals.len() >= 2, "{refusals:#?}");
    for r in &refusals {
        let f = &r["fields"];
        assert_eq!(f["source"], SOURCE, "{f}");
        assert_eq!(f["version"], "1.1.0", "{f}");
        assert_eq!(f["rule"], "policy.rule[0]", "{f}");
        assert!(
            f["advisories"]
                .as_str()
                .unwrap()
                .starts_with("GO-2023-2102 (high"),
            "{f}"
        );
    }
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acceptance_lets_the_version_through_until_it_expires() {
    let (setup, _origin, config_path) = imported(|_| RULE.to_owned()).await;
    let home = setup.dir.path();
    let config = tfmirror::config::Config::load(Some(&config_path)).unwrap();
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let base = m.url("/");
    let doc = m.url("/registry.origin.test/acme/tfcli/1.1.0.json");
    assert_eq!(
        c.get(&archive_url(&base, "1.1.0")).await.status,
        StatusCode::FORBIDDEN
    );

    // Accepted for a minute by the command, which names who accepted it.
    let config = config_path.to_str().unwrap();
    let refused = run_tfmirror(
        home,
        &[
            "accept",
            "--config",
            config,
            "GHSA-4374-p667-p6c8",
            SOURCE,
            "1.1.0",
            "--expires",
            "1m",
        ],
    )
    .await;
    assert!(!refused.ok, "an acceptance without a reason was kept");
    assert!(refused.stderr.contains("--reason"), "{}", refused.stderr);
    let accepted = run_ok(
        home,
        &[
            "accept",
            "--config",
            config,
            "GHSA-4374-p667-p6c8",
            SOURCE,
            "1.1.0",
            "--reason",
            "HTTP/2 is not served by this provider",
            "--expires",
            "1m",
        ],
    )
    .await;
    assert!(
        accepted.stdout.contains(&format!(
            "accepted GHSA-4374-p667-p6c8 for {SOURCE} 1.1.0 until "
        )),
        "{}",
        accepted.stdout
    );
    wait_until_answered(
        "the acceptance to reach the mirror",
        Duration::from_secs(20),
        || async { c.get(&doc).await.status == StatusCode::OK },
    )
    .await;
    let archive = c.get(&archive_url(&base, "1.1.0")).await;
    assert_eq!(archive.status, StatusCode::OK, "{}", archive.error_text());
    let index = m.url("/registry.origin.test/acme/tfcli/index.json");
    let listed = c.get(&index).await.json();
    assert!(listed["versions"].get("1.1.0").is_some(), "{listed}");
    let shown = run_ok(home, &["policy", "ls", "--config", config]).await;
    assert!(
        shown.stdout.contains(&format!(
            "accepted GHSA-4374-p667-p6c8 for {SOURCE} 1.1.0 until "
        )) && shown.stdout.contains("by command line (")
            && shown
                .stdout
                .contains(": HTTP/2 is not served by this provider"),
        "{}",
        shown.stdout
    );
    assert!(
        shown.stdout.contains(
            "deny registry.origin.test/acme/* with advisories (severity >= high, unrated ignored)"
        ),
        "{}",
        shown.stdout
    );
    // The provider's page says what let it through.
    let page = c
        .get(&m.url("/-/api/providers/registry.origin.test/acme/tfcli"))
        .await
        .json();
    let policy = page["versions"][0]["policy"].as_str().unwrap().to_owned();
    assert!(
        policy.contains("GO-2023-2102 accepted until")
            && policy.contains("HTTP/2 is not served by this provider"),
        "{policy}"
    );

    // Past its expiry on the mirror's clock, the version is refused again.
    m.clock.advance(Duration::from_secs(120));
    wait_until_answered(
        "the expired acceptance to stop counting",
        Duration::from_secs(20),
        || async { c.get(&doc).await.status == StatusCode::FORBIDDEN },
    )
    .await;
    assert_eq!(
        c.get(&archive_url(&base, "1.1.0")).await.status,
        StatusCode::FORBIDDEN
    );
    let listed = c.get(&index).await.json();
    assert!(listed["versions"].get("1.1.0").is_none(), "{listed}");
    m.stop().await;
}

#[cfg_attr(
    any(tfmirror_no_terraform, tfmirror_no_seaweedfs),
    ignore = "needs TERRAFORM_BIN (Terraform v1.0.3) and WEED_BIN (SeaweedFS); scripts/test installs both"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_on_one_bucket_take_an_acceptance_within_seconds() {
    use common::seaweed::Seaweed;
    let weed = Seaweed::start().await;
    weed.create_bucket("terraform").await;
    let setup = Setup::new();
    let (origin, entries) = publish_tfcli_pair(&setup).await;
    let home = setup.dir.path();
    let first_file = config_file(
        &setup,
        &origin,
        &format!("{}\n{RULE}", weed.storage_toml("terraform", home)),
    );
    import_advisories(home, &first_file, &[&entries]).await;
    let second_file = second_instance(home, &first_file);
    let serve = |file: &Path| {
        let mut cmd = tfmirror(home);
        cmd.args(["serve", "--config"]).arg(file);
        let mut d = Daemon::start(cmd);
        d.wait_for("SSL_CERT_FILE=");
        d
    };
    let (first, second) = (serve(&first_file), serve(&second_file));
    let clients = [
        (&first, Client::trusting(&home.join("data/tls/ca.pem"))),
        (
            &second,
            Client::trusting(&home.join("second-data/tls/ca.pem")),
        ),
    ];
    // The first instance fetches and reads the binary; both refuse it.
    for (d, c) in &clients {
        let refused = c.get(&archive_url(&d.url, "1.1.0")).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", d.url);
        assert!(
            refused.error_text().contains("GO-2023-2102"),
            "{}",
            refused.error_text()
        );
    }

    run_ok(
        home,
        &[
            "accept",
            "--config",
            first_file.to_str().unwrap(),
            "GO-2023-2102",
            SOURCE,
            "--reason",
            "HTTP/2 is not served by this provider",
            "--expires",
            "30d",
        ],
    )
    .await;
    for (d, c) in &clients {
        let url = archive_url(&d.url, "1.1.0");
        wait_until_answered(
            "an instance to take up the acceptance",
            Duration::from_secs(15),
            || async { c.get(&url).await.status == StatusCode::OK },
        )
        .await;
    }
}

/// A root module requiring acme/tfcli `>= 1.0.0`, in `dir`, with a lock
/// file pinning `pinned` when given.
fn configuration(dir: &Path, pinned: Option<&str>) -> PathBuf {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("main.tf"),
        format!("terraform {{\n  required_providers {{\n    tfcli = {{\n      source  = \"{SOURCE}\"\n      version = \">= 1.0.0\"\n    }}\n  }}\n}}\n"),
    )
    .unwrap();
    if let Some(version) = pinned {
        std::fs::write(
            dir.join(".terraform.lock.hcl"),
            format!("provider \"{SOURCE}\" {{\n  version     = \"{version}\"\n  constraints = \">= 1.0.0\"\n}}\n"),
        )
        .unwrap();
    }
    dir.to_path_buf()
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_and_check_decide_as_read_through_does() {
    let (setup, _origin, config) = imported(|_| RULE.to_owned()).await;
    let home = setup.dir.path();
    let config = config.to_str().unwrap();
    let platform = common::terraform::platform();
    let fresh = configuration(&home.join("fresh"), None);
    let fresh = fresh.to_str().unwrap();

    // `sync` takes the newest version `>= 1.0.0` admits, reads its
    // binary, is refused, and takes the next.
    let synced = run_ok(home, &["sync", "--config", config, "--from", fresh]).await;
    let out = &synced.stdout;
    assert!(
        out.contains(&format!(
            "REFUSED archive {SOURCE} 1.1.0 {platform}: {SOURCE} 1.1.0 is denied by this mirror's policy (policy.rule[0]): advisory GO-2023-2102 (high"
        )),
        "{out}"
    );
    assert!(out.contains("refused by the policy once read: 1"), "{out}");
    assert!(out.contains("failures: 0"), "{out}");
    let held = |v: &str| {
        let zip = format!("terraform-provider-tfcli_{v}_{platform}.zip");
        files_below(&setup.cache_dir())
            .iter()
            .any(|f| f.ends_with(&zip))
    };
    assert!(held("1.0.0") && held("1.1.0"), "{out}");

    // `check` says the configuration installs, and to which version, and
    // names the newer version the rule hides from its constraints, with
    // the rule and the advisory.
    let checked = run_tfmirror(home, &["check", "--config", config, "--from", fresh]).await;
    assert!(checked.ok, "{}{}", checked.stdout, checked.stderr);
    assert!(
        checked
            .stdout
            .contains(&format!("HELD     provider {SOURCE} 1.0.0 {platform}")),
        "{}",
        checked.stdout
    );
    let hidden = format!(
        "HIDDEN   provider {SOURCE} 1.1.0: {SOURCE} 1.1.0 is denied by this mirror's policy (policy.rule[0]): advisory GO-2023-2102 (high"
    );
    assert!(checked.stdout.contains(&hidden), "{}", checked.stdout);
    assert!(
        checked.stdout.contains("no high advisories on build hosts"),
        "{}",
        checked.stdout
    );
    let json = run_tfmirror(
        home,
        &["check", "--json", "--config", config, "--from", fresh],
    )
    .await;
    let json: serde_json::Value = serde_json::from_str(&json.stdout).unwrap();
    let listed = json.to_string();
    assert!(listed.contains("\"hidden\":[{"), "{json}");
    assert!(listed.contains("\"version\":\"1.1.0\""), "{json}");

    // A lock file that pins the refused version: `check` says why it will
    // not install, before `init` is run.
    let pinned = configuration(&home.join("pinned"), Some("1.1.0"));
    let checked = run_tfmirror(
        home,
        &[
            "check",
            "--config",
            config,
            "--from",
            pinned.to_str().unwrap(),
        ],
    )
    .await;
    assert!(!checked.ok, "{}", checked.stdout);
    assert!(
        checked.stdout.contains("policy.rule[0]") && checked.stdout.contains("GO-2023-2102"),
        "{}",
        checked.stdout
    );
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bundles_leave_out_and_sites_refuse_what_the_rule_denies() {
    use common::daemon::{export_bundle, site_config};
    // The connected side has no rule by advisory, and holds both versions
    // with their binaries read.
    let (setup, _origin, open) = imported(|_| String::new()).await;
    let home = setup.dir.path();
    let open_str = open.to_str().unwrap();
    for version in ["1.0.0", "1.1.0"] {
        let dir = configuration(&home.join(format!("pin-{version}")), Some(version));
        run_ok(
            home,
            &[
                "sync",
                "--config",
                open_str,
                "--from",
                dir.to_str().unwrap(),
            ],
        )
        .await;
    }
    let records = files_below(&setup.cache_dir().join("builds"));
    assert_eq!(records.len(), 2, "{records:?}");

    // Exported under the rule, the affected version is left out, named.
    let strict = home.join("strict.toml");
    std::fs::write(&strict, std::fs::read_to_string(&open).unwrap() + RULE).unwrap();
    let left = export_bundle(home, &strict, &home.join("strict.tar"), &[]).await;
    assert!(
        left.stdout.contains(&format!(
            "LEFT OUT {SOURCE} 1.1.0 is denied by this mirror's policy (policy.rule[0]): advisory GO-2023-2102 (high"
        )),
        "{}",
        left.stdout
    );
    assert!(left.stdout.contains("1 versions"), "{}", left.stdout);

    // Exported without it, both go; the site, with the rule, reads the
    // binaries as it imports them and refuses the affected version, which
    // its mirror then leaves out and refuses by name.
    let bundle = home.join("open.tar");
    export_bundle(home, &open, &bundle, &[]).await;
    let site = site_config(home, "site", RULE);
    let imported = run_ok(
        home,
        &[
            "import",
            "--config",
            site.to_str().unwrap(),
            bundle.to_str().unwrap(),
        ],
    )
    .await;
    assert!(
        imported.stdout.contains(&format!(
            "REFUSED {SOURCE} 1.1.0: {SOURCE} 1.1.0 is denied by this mirror's policy (policy.rule[0]): advisory GO-2023-2102 (high"
        )) && imported.stdout.contains("(kept in the cache; not served)"),
        "{}",
        imported.stdout
    );
    let config = tfmirror::config::Config::load(Some(&site)).unwrap();
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let index = c
        .get(&m.url("/registry.origin.test/acme/tfcli/index.json"))
        .await
        .json();
    assert_eq!(index["versions"], serde_json::json!({"1.0.0": {}}));
    let refused = c
        .get(&m.url("/registry.origin.test/acme/tfcli/1.1.0.json"))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.error_text().contains("GO-2023-2102"),
        "{}",
        refused.error_text()
    );
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_affected_platform_refuses_the_whole_version() {
    use common::go::{archive_of, copy_advisory_fixtures, publish_archives, terraform_1_0_3};
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let script = setup.dir.path().join("provider.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    // linux_arm64 is a shell script: clean. linux_amd64 is affected.
    let archives = std::collections::BTreeMap::from([
        (
            "linux_amd64".to_owned(),
            archive_of("tfcli", "2.0.0", &terraform_1_0_3()),
        ),
        (
            "linux_arm64".to_owned(),
            archive_of("tfcli", "2.0.0", &script),
        ),
    ]);
    publish_archives(&origin, &Signer::new("acme"), ("tfcli", "2.0.0"), &archives);
    let entries = setup.dir.path().join("osv");
    copy_advisory_fixtures(&entries);
    let config_path = config_file(&setup, &origin, RULE);
    import_advisories(setup.dir.path(), &config_path, &[&entries]).await;
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    let c = Client::trusting(&m.ca_file);
    let zip = |platform: &str| {
        m.url(&format!(
            "/registry.origin.test/acme/tfcli/terraform-provider-tfcli_2.0.0_{platform}.zip"
        ))
    };
    // The clean platform alone: served.
    let clean = c.get(&zip("linux_arm64")).await;
    assert_eq!(clean.status, StatusCode::OK, "{}", clean.error_text());
    // The affected one read: refused, and the clean one with it.
    for platform in ["linux_amd64", "linux_arm64"] {
        let refused = c.get(&zip(platform)).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{platform}");
        assert!(
            refused.error_text().contains("GO-2023-2102"),
            "{}",
            refused.error_text()
        );
    }
    let doc = c
        .get(&m.url("/registry.origin.test/acme/tfcli/2.0.0.json"))
        .await;
    assert_eq!(doc.status, StatusCode::FORBIDDEN);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_binary_the_mirror_cannot_tell_is_refused_unless_the_rule_allows_it() {
    use common::go::{archive_of, copy_advisory_fixtures, publish_archives};
    let setup = Setup::new();
    let home = setup.dir.path();
    let origin = FakeOrigin::start(&setup.ca).await;
    let script = home.join("provider.sh");
    std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
    let archives = std::collections::BTreeMap::from([(
        "linux_amd64".to_owned(),
        archive_of("tfcli", "3.0.0", &script),
    )]);
    publish_archives(&origin, &Signer::new("acme"), ("tfcli", "3.0.0"), &archives);
    let entries = home.join("osv");
    copy_advisory_fixtures(&entries);
    // The rule as an operator writes it first, saying nothing of binaries
    // it cannot tell.
    let by_default = RULE.replace("unknown = \"allow\"\n", "");
    let config_path = config_file(&setup, &origin, &by_default);
    import_advisories(home, &config_path, &[&entries]).await;
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    let c = Client::trusting(&m.ca_file);
    let zip_at = |m: &RunningMirror| {
        m.url("/registry.origin.test/acme/tfcli/terraform-provider-tfcli_3.0.0_linux_amd64.zip")
    };
    let zip = zip_at(&m);
    let refused = c.get(&zip).await;
    assert_eq!(
        refused.status,
        StatusCode::FORBIDDEN,
        "{}",
        refused.error_text()
    );
    let said = refused.error_text();
    assert!(
        said.contains("policy.rule[0]")
            && said.contains(
                "what it falls under is not known, because linux_amd64: terraform-provider-tfcli"
            )
            && said.contains("has no Go build information"),
        "{said}"
    );
    // The page says "not known", never "none known".
    let page = c
        .get(&m.url(&format!("/-/api/providers/{SOURCE}")))
        .await
        .json();
    let advisories = &page["versions"][0]["advisories"];
    assert_eq!(advisories["known"], false, "{page}");
    assert_eq!(advisories["count"], 0, "{page}");
    assert_eq!(
        advisories["unknown"]["linux_amd64"][0]["reason"], "no_go_build",
        "{page}"
    );
    let html = c.get(&m.url(&format!("/-/providers/{SOURCE}"))).await;
    let html = String::from_utf8_lossy(&html.body).to_string();
    assert!(html.contains("<strong>not known</strong>"), "{html}");
    assert!(!html.contains("none known"), "{html}");
    // The census counts it as not known, and so do the metrics.
    let census = m
        .mirror
        .count_advisories()
        .await
        .expect("a database is kept");
    assert_eq!(
        (census.versions, census.affected, census.not_known),
        (1, 0, 1)
    );
    let metrics = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_advisory_not_known_versions 1\n"),
        "{metrics}"
    );
    m.stop().await;

    // The commands say the same.
    let config = config_path.to_str().unwrap();
    let shown = run_ok(
        home,
        &["advisories", "show", "--config", config, SOURCE, "3.0.0"],
    )
    .await;
    assert!(
        shown
            .stdout
            .contains("advisories not known, because linux_amd64: terraform-provider-tfcli")
            && shown.stdout.contains("has no Go build information"),
        "{}",
        shown.stdout
    );
    let listed = run_ok(home, &["ls", "--json", "--config", config]).await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed[0]["advisories"]["known"], false, "{listed}");
    let table = run_ok(home, &["ls", "--config", config]).await;
    assert!(
        table.stdout.contains("1 read and not known"),
        "{}",
        table.stdout
    );

    // Told to allow what it cannot tell, the rule lets it through.
    let allowing = config_file(&setup, &origin, RULE);
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&allowing)).unwrap()).await;
    let c = Client::trusting(&m.ca_file);
    let served = c.get(&zip_at(&m)).await;
    assert_eq!(served.status, StatusCode::OK, "{}", served.error_text());
    m.stop().await;
}
