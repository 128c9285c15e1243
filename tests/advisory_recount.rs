//! What a long-running mirror keeps of its advisory matches (each
//! provider's kept version list, the census's memo) against what the
//! platforms it holds say, after every arrival, in shuffled orders.
//!
//! The origin publishes `acme/tfcli` 2.0.0, 2.1.0 and 2.2.0 for two
//! platforms each; an executable is either the real Terraform v1.0.3
//! binary (GO-2023-2102, rated high: the rule denies it) or a shell
//! script (no Go build information: not known, which the rule allows).
//! The oracle is a model of the rule written here: a version is refused
//! once any platform of it held is affected, nothing of a refused version
//! is fetched, the version list leaves out exactly the refused versions,
//! and the census counts the versions held, the refused ones as affected
//! and those with a script held as not known. A database imported while
//! the mirror runs replaces the one it holds, and the summaries made
//! against the old one; a summary missing a platform is not kept.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::daemon::config_file;
use common::go::{archive_of, copy_advisory_fixtures, import_advisories, publish_archives};
use common::*;
use http::StatusCode;

/// The rule: versions with an advisory rated high or above are denied;
/// binaries that cannot be told are let through.
const RULE: &str = r#"
[[policy.rule]]
source = "registry.origin.test/acme/*"
action = "deny"
reason = "no high advisories"
[policy.rule.advisories]
severity = "high"
unrated = "ignored"
unknown = "allow"
"#;

/// Each version's platforms, and whether its executable there is the
/// affected Terraform binary.
const PUBLISHED: [(&str, [(&str, bool); 2]); 3] = [
    ("2.0.0", [("linux_amd64", true), ("linux_arm64", false)]),
    ("2.1.0", [("linux_amd64", false), ("linux_arm64", false)]),
    ("2.2.0", [("linux_amd64", false), ("linux_arm64", true)]),
];

/// The six archives in an order drawn from `seed` (a linear
/// congruential generator: the order is the seed's, run after run).
fn shuffled(seed: u64) -> Vec<(&'static str, &'static str, bool)> {
    let mut all: Vec<_> = PUBLISHED
        .iter()
        .flat_map(|(v, platforms)| platforms.iter().map(move |(p, bad)| (*v, *p, *bad)))
        .collect();
    let mut state = seed;
    for i in (1..all.len()).rev() {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let j = usize::try_from((state >> 33) % (i as u64 + 1)).unwrap();
        all.swap(i, j);
    }
    all
}

/// The origin, the two executables the archives hold, and the set-up.
struct Scene {
    setup: Setup,
    origin: FakeOrigin,
    script: std::path::PathBuf,
    terraform: std::path::PathBuf,
}

impl Scene {
    async fn new() -> Scene {
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        let script = setup.dir.path().join("provider.sh");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        Scene {
            setup,
            origin,
            script,
            terraform: common::go::terraform_1_0_3(),
        }
    }

    /// The affected Terraform binary, or the script.
    fn exe(&self, affected: bool) -> &std::path::Path {
        if affected {
            &self.terraform
        } else {
            &self.script
        }
    }

    /// Publishes `version` of `acme/tfcli` for `platforms`.
    fn publish(&self, version: &str, platforms: &[(&str, bool)]) {
        let archives: BTreeMap<String, Vec<u8>> = platforms
            .iter()
            .map(|(p, bad)| {
                (
                    (*p).to_string(),
                    archive_of("tfcli", version, self.exe(*bad)),
                )
            })
            .collect();
        publish_archives(
            &self.origin,
            &Signer::new("acme"),
            ("tfcli", version),
            &archives,
        );
    }

    /// The configuration with [`RULE`], the advisory fixtures imported
    /// through it.
    async fn imported(&self) -> std::path::PathBuf {
        let entries = self.setup.dir.path().join("osv");
        copy_advisory_fixtures(&entries);
        let config_path = config_file(&self.setup, &self.origin, RULE);
        import_advisories(self.setup.dir.path(), &config_path, &[&entries]).await;
        config_path
    }
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_lists_and_the_census_follow_every_arrival_in_any_order() {
    // Seed 12 reads the clean platform of 2.0.0 and of 2.2.0 before the
    // affected one (the kept list and the memo must then change); seed
    // 11 reads each affected one first (the clean one is then refused
    // unfetched).
    for seed in [12, 11] {
        one_order(seed).await;
    }
}

/// Fetches the archives in `seed`'s order through one mirror, checking
/// after each what it lists and counts.
async fn one_order(seed: u64) {
    let scene = Scene::new().await;
    for (version, platforms) in PUBLISHED {
        scene.publish(version, &platforms);
    }
    let config_path = scene.imported().await;
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    let c = Client::trusting(&m.ca_file);
    let index = m.url("/registry.origin.test/acme/tfcli/index.json");

    let order = shuffled(seed);
    let mut held: BTreeSet<(&str, &str, bool)> = BTreeSet::new();
    let refused = |held: &BTreeSet<(&str, &str, bool)>, version: &str| {
        held.iter().any(|(v, _, bad)| *v == version && *bad)
    };
    // The list is kept before the first arrival, and after each.
    let listed = c.get(&index).await;
    assert_eq!(listed.status, StatusCode::OK);
    for (step, (version, platform, bad)) in order.iter().copied().enumerate() {
        let said = format!("seed {seed}, step {step}: {version} {platform} in {order:?}");
        let was_refused = refused(&held, version);
        let got = c
            .get(&m.url(&format!(
                "/registry.origin.test/acme/tfcli/terraform-provider-tfcli_{version}_{platform}.zip"
            )))
            .await;
        if !was_refused {
            held.insert((version, platform, bad));
        }
        let want = if was_refused || bad {
            StatusCode::FORBIDDEN
        } else {
            StatusCode::OK
        };
        assert_eq!(got.status, want, "{said}: {}", got.error_text());

        // The version list leaves out exactly the refused versions.
        let listed = c.get(&index).await.json();
        let listed: BTreeSet<String> = listed["versions"]
            .as_object()
            .unwrap_or_else(|| panic!("{said}: {listed}"))
            .keys()
            .cloned()
            .collect();
        let expected: BTreeSet<String> = PUBLISHED
            .iter()
            .map(|(v, _)| *v)
            .filter(|v| !refused(&held, v))
            .map(String::from)
            .collect();
        assert_eq!(listed, expected, "{said}");

        // The census counts what is held, as a count from scratch would.
        let census = m.mirror.count_advisories().await.expect("a database");
        let versions: BTreeSet<&str> = held.iter().map(|(v, _, _)| *v).collect();
        let affected = versions.iter().filter(|v| refused(&held, v)).count();
        let not_known: BTreeSet<&str> = held
            .iter()
            .filter(|(_, _, bad)| !bad)
            .map(|(v, _, _)| *v)
            .collect();
        assert_eq!(
            (census.versions, census.affected, census.not_known),
            (versions.len(), affected, not_known.len()),
            "{said}: {census:?}"
        );
    }
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_kept_in_the_background_changes_the_kept_list() {
    // `cache.prefetch_platforms` fetches linux_amd64 of a version whose
    // document is asked for: its record is kept in the background, and
    // no request names the version while it is. 2.0.0's linux_amd64 is
    // the affected Terraform binary.
    let scene = Scene::new().await;
    let (version, platforms) = PUBLISHED[0];
    scene.publish(version, &platforms);
    let config_path = scene.imported().await;
    let mut config = tfmirror::config::Config::load(Some(&config_path)).unwrap();
    config.cache.prefetch_platforms = vec!["linux_amd64".parse().unwrap()];
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let index = m.url("/registry.origin.test/acme/tfcli/index.json");
    let listed = |doc: serde_json::Value| -> Vec<String> {
        doc["versions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    // Nothing held: listed, and the list kept.
    assert_eq!(listed(c.get(&index).await.json()), [version]);
    let doc = c
        .get(&m.url(&format!("/registry.origin.test/acme/tfcli/{version}.json")))
        .await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    let record = scene.setup.cache_dir().join(format!(
        "builds/registry.origin.test/acme/tfcli/{version}/linux_amd64.json"
    ));
    common::wait_until(
        "the prefetched archive's build record",
        std::time::Duration::from_secs(60),
        || record.is_file(),
    )
    .await;
    // The record is written just before the lists are told.
    common::wait_until_answered(
        "2.0.0 to leave the version list",
        std::time::Duration::from_secs(10),
        || async { listed(c.get(&index).await.json()).is_empty() },
    )
    .await;
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_evicted_for_another_provider_changes_the_kept_list() {
    // acme/tfcli 2.0.0 holds only the affected Terraform binary, 2.1.0 a
    // script; the cache has room for both and one more script less a
    // byte: acme/other's archive evicts the least recently used, 2.0.0's.
    let scene = Scene::new().await;
    let signer = Signer::new("acme");
    let one = |kind: &str, version: &str, affected: bool| {
        let zip = archive_of(kind, version, scene.exe(affected));
        let size = zip.len() as u64;
        publish_archives(
            &scene.origin,
            &signer,
            (kind, version),
            &BTreeMap::from([("linux_amd64".to_string(), zip)]),
        );
        size
    };
    let affected = one("tfcli", "2.0.0", true);
    let clean = one("tfcli", "2.1.0", false);
    let other = one("other", "1.0.0", false);
    let config_path = scene.imported().await;
    let mut config = tfmirror::config::Config::load(Some(&config_path)).unwrap();
    config.cache.max_size = Some(bytesize::ByteSize::b(affected + clean + other - 1));
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let zip = |kind: &str, version: &str| {
        m.url(&format!(
            "/registry.origin.test/acme/{kind}/terraform-provider-{kind}_{version}_linux_amd64.zip"
        ))
    };
    let index = m.url("/registry.origin.test/acme/tfcli/index.json");
    let listed = |doc: serde_json::Value| -> Vec<String> {
        doc["versions"]
            .as_object()
            .unwrap()
            .keys()
            .cloned()
            .collect()
    };
    assert_eq!(
        c.get(&zip("tfcli", "2.0.0")).await.status,
        StatusCode::FORBIDDEN
    );
    assert_eq!(c.get(&zip("tfcli", "2.1.0")).await.status, StatusCode::OK);
    // The list is kept, without 2.0.0.
    assert_eq!(listed(c.get(&index).await.json()), ["2.1.0"]);
    assert_eq!(c.get(&zip("other", "1.0.0")).await.status, StatusCode::OK);
    let evicted = scene
        .setup
        .cache_dir()
        .join("registry.origin.test/acme/tfcli/terraform-provider-tfcli_2.0.0_linux_amd64.zip");
    common::wait_until(
        "2.0.0's archive to be evicted",
        std::time::Duration::from_secs(10),
        || !evicted.exists(),
    )
    .await;
    // 2.0.0 has no platform held now: passed over by the rule until one
    // is read again, so listed.
    assert_eq!(listed(c.get(&index).await.json()), ["2.0.0", "2.1.0"]);
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_database_imported_while_the_mirror_runs_replaces_the_one_it_holds() {
    let scene = Scene::new().await;
    scene.publish("2.0.0", &[("linux_amd64", true)]);
    let config_path = scene.imported().await;
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    // The affected version is held, and refused: its summary names
    // GO-2023-2102, kept for the pages' next views.
    let c = Client::trusting(&m.ca_file);
    let zip =
        m.url("/registry.origin.test/acme/tfcli/terraform-provider-tfcli_2.0.0_linux_amd64.zip");
    assert_eq!(c.get(&zip).await.status, StatusCode::FORBIDDEN);
    let (provider, version) = (
        tfmirror::address::Provider::from_source("registry.origin.test/acme/tfcli").unwrap(),
        tfmirror::address::Version::parse("2.0.0").unwrap(),
    );
    let platforms = [tfmirror::address::Platform::parse("linux_amd64").unwrap()];
    let ids = |summary: &tfmirror::advisories::Summary| -> BTreeSet<String> {
        summary
            .advisories
            .iter()
            .map(|a| a.finding.id.clone())
            .collect()
    };
    let (_, before) = m
        .mirror
        .version_advisories(&provider, &version, &platforms)
        .await
        .unwrap();
    assert!(ids(&before).contains("GO-2023-2102"), "{:?}", ids(&before));
    let first = m.mirror.advisories().await;
    let (Some(was), Some(db)) = (first.current.clone(), first.db.clone()) else {
        panic!("the imported database is held");
    };
    let all = db.stored.advisories.len();
    // Another import, of two of the entries, through another process on
    // the same store.
    let fewer = scene.setup.dir.path().join("osv-fewer");
    std::fs::create_dir_all(&fewer).unwrap();
    let entries = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/advisories/go-vulndb/ID");
    for id in ["GO-2021-0068", "GO-2021-0113"] {
        std::fs::copy(
            entries.join(format!("{id}.json")),
            fewer.join(format!("{id}.json")),
        )
        .unwrap();
    }
    let said = import_advisories(scene.setup.dir.path(), &config_path, &[&fewer]).await;
    // As many as the import says it kept (one of the two is not about Go
    // modules).
    let kept: usize = said
        .split_once("advisory database: ")
        .and_then(|(_, rest)| rest.split_once(' '))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("{said}"));
    assert!((1..=2).contains(&kept), "{said}");
    // Within the pointer's few seconds, the mirror holds the new database,
    // not the one it had.
    let mirror = m.mirror.clone();
    wait_until_answered(
        "the mirror to hold the database imported last",
        std::time::Duration::from_secs(30),
        || {
            let (mirror, was) = (mirror.clone(), was.sha256.clone());
            async move {
                let held = mirror.advisories().await;
                held.current.as_ref().is_some_and(|c| c.sha256 != was)
                    && held
                        .db
                        .as_ref()
                        .is_some_and(|db| db.stored.advisories.len() == kept)
            }
        },
    )
    .await;
    assert!(all > kept, "{all}");
    // The version's summary is made again against it: it names only
    // advisories the new database holds.
    let held = m.mirror.advisories().await;
    let now: BTreeSet<String> = (held.db.as_ref().unwrap().stored.advisories.iter())
        .map(|a| a.id.clone())
        .collect();
    let (_, after) = m
        .mirror
        .version_advisories(&provider, &version, &platforms)
        .await
        .unwrap();
    assert!(
        ids(&after).is_subset(&now),
        "{:?} not all in {now:?}",
        ids(&after)
    );
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_summary_with_a_platform_not_read_is_made_again_on_the_next_ask() {
    let scene = Scene::new().await;
    scene.publish("2.1.0", &[("linux_amd64", false), ("linux_arm64", false)]);
    let config_path = scene.imported().await;
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    let c = Client::trusting(&m.ca_file);
    let records = (scene.setup.cache_dir()).join("builds/registry.origin.test/acme/tfcli/2.1.0");
    for platform in ["linux_amd64", "linux_arm64"] {
        let zip = m.url(&format!(
            "/registry.origin.test/acme/tfcli/terraform-provider-tfcli_2.1.0_{platform}.zip"
        ));
        assert_eq!(c.get(&zip).await.status, StatusCode::OK);
    }
    let arm = records.join("linux_arm64.json");
    wait_until(
        "both build records kept",
        std::time::Duration::from_secs(30),
        || arm.is_file() && records.join("linux_amd64.json").is_file(),
    )
    .await;
    // One platform's record does not read, in a mirror started after it
    // was damaged (so that no summary made before is held): the summary
    // says so.
    m.stop().await;
    let original = std::fs::read(&arm).unwrap();
    std::fs::write(&arm, b"{ not a record").unwrap();
    let m = RunningMirror::start(tfmirror::config::Config::load(Some(&config_path)).unwrap()).await;
    let (provider, version) = (
        tfmirror::address::Provider::from_source("registry.origin.test/acme/tfcli").unwrap(),
        tfmirror::address::Version::parse("2.1.0").unwrap(),
    );
    let platforms =
        ["linux_amd64", "linux_arm64"].map(|p| tfmirror::address::Platform::parse(p).unwrap());
    let (_, summary) = m
        .mirror
        .version_advisories(&provider, &version, &platforms)
        .await
        .unwrap();
    assert_eq!(summary.not_read, ["linux_arm64"]);
    assert!(!summary.known);
    // Once it reads, the next ask says so: the incomplete summary was not
    // kept.
    std::fs::write(&arm, original).unwrap();
    let (_, summary) = m
        .mirror
        .version_advisories(&provider, &version, &platforms)
        .await
        .unwrap();
    assert!(summary.not_read.is_empty(), "{summary:?}");
    // A complete one is kept for the next views (of the same database and
    // platforms): the record is not read again for them.
    std::fs::write(&arm, b"{ damaged again").unwrap();
    let (_, again) = m
        .mirror
        .version_advisories(&provider, &version, &platforms)
        .await
        .unwrap();
    assert_eq!(again, summary);
    m.stop().await;
}
