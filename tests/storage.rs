//! Several instances on one bucket (`storage.backend = "s3"`), against a
//! real S3-compatible server: SeaweedFS on loopback, from `WEED_BIN`
//! (installed by the README's test command). Without it these tests are
//! skipped with a message, except under `CI=true`, where a missing binary
//! fails them.

mod common;

use std::time::Duration;

use common::daemon::*;
use common::seaweed::*;
use common::*;
use http::StatusCode;
use tfmirror::config::Config;

const ARCHIVE: &str = "terraform-provider-bulk_1.0.0_linux_amd64.zip";
/// Above the size stored with one PUT: uploaded in parts and copied into
/// place.
const BIG: usize = 17 << 20;

fn archive_path() -> String {
    format!("/registry.origin.test/acme/bulk/{ARCHIVE}")
}

/// The same configuration for a second instance: its own local directories.
fn second_instance(config: &Config, setup: &Setup, name: &str) -> Config {
    let mut c = config.clone();
    c.cache.dir = setup.dir.path().join(format!("{name}-cache"));
    c.server.data_dir = setup.dir.path().join(format!("{name}-data"));
    c
}

/// A counter's value in a metrics page (0 when absent).
fn counter(metrics: &str, series: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or(0)
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_instances_fetch_and_store_a_large_archive_once_between_them() {
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let big = publish_big(&origin, &signer, "bulk", &["1.0.0"], BIG)["1.0.0"].clone();
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    weed.create_bucket("shared").await;
    use_bucket(&mut config, weed.s3_config("shared", setup.dir.path()));
    let a = RunningMirror::start(config.clone()).await;
    let b = RunningMirror::start(second_instance(&config, &setup, "b")).await;
    let (ca, cb) = (Client::trusting(&a.ca_file), Client::trusting(&b.ca_file));

    // 32 cold requests at once, split across both instances. The origin
    // holds the archive back until one instance has claimed the download
    // and the other is waiting for it.
    let hold = origin.hold_file(ARCHIVE);
    let (url_a, url_b) = (a.url(&archive_path()), b.url(&archive_path()));
    let requests = futures_util::future::join_all((0..32).map(|i| {
        let (client, url) = if i % 2 == 0 {
            (&ca, &url_a)
        } else {
            (&cb, &url_b)
        };
        client.get(url)
    }));
    let claims = |outcome: &str| {
        let series = format!("tfmirror_download_claims_total{{outcome=\"{outcome}\"}}");
        counter(&a.mirror.metrics().render(), &series)
            + counter(&b.mirror.metrics().render(), &series)
    };
    let let_go = async {
        wait_until(
            "one claim granted and one waiting",
            Duration::from_secs(30),
            || claims("granted") == 1 && claims("waited") == 1,
        )
        .await;
        hold.send(true).unwrap();
    };
    let (answers, ()) = tokio::join!(requests, let_go);
    for (i, answer) in answers.iter().enumerate() {
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "request {i}: {}",
            answer.error_text()
        );
        assert!(answer.body[..] == big[..], "request {i}: the bytes differ");
    }

    // One download from the origin, one object written.
    assert_eq!(origin.hits(&format!("/files/{ARCHIVE}")), 1);
    let (ma, mb) = (a.mirror.metrics().render(), b.mirror.metrics().render());
    let created = r#"tfmirror_store_archive_writes_total{outcome="created",verification="signed"}"#;
    assert_eq!(
        counter(&ma, created) + counter(&mb, created),
        1,
        "{ma}\n{mb}"
    );
    let waited = r#"tfmirror_download_claims_total{outcome="waited"}"#;
    let granted = r#"tfmirror_download_claims_total{outcome="granted"}"#;
    assert_eq!(counter(&ma, granted) + counter(&mb, granted), 1);
    assert_eq!(counter(&ma, waited) + counter(&mb, waited), 1);

    // The bucket holds the archive and its hash; no upload parts, no
    // claim, nothing else.
    let keys = weed.keys("shared").await;
    let archives: Vec<&String> = keys.iter().filter(|k| k.ends_with(".zip")).collect();
    assert_eq!(archives.len(), 1, "{keys:?}");
    assert!(keys.iter().any(|k| k.ends_with(".zip.h1")), "{keys:?}");
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("mirror/tmp/") || k.starts_with("mirror/leases/")),
        "{keys:?}"
    );
    a.stop().await;
    b.stop().await;
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_instance_killed_mid_download_leaves_nothing_partial_and_the_other_serves() {
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let big = publish_big(&origin, &signer, "bulk", &["1.0.0"], BIG)["1.0.0"].clone();
    // The origin sends half the archive, then nothing more.
    let file = format!("/files/{ARCHIVE}");
    origin.set_fault(&file, Some(Fault::Hang));

    // The first instance is a process of its own, killed with SIGKILL
    // while it downloads.
    weed.create_bucket("killed").await;
    let storage = weed.storage_toml("killed", setup.dir.path());
    let config = config_file(&setup, &origin, &storage);
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"]).arg(&config);
    let mut first = Daemon::start(cmd);
    let client = Client::trusting(&setup.dir.path().join("data/tls/ca.pem"));
    let url = format!("{}{}", first.url.trim_end_matches('/'), archive_path());
    let asking = tokio::spawn(async move { client.try_get(&url).await });
    let weed = &weed;
    wait_until_answered(
        "the first instance's claim",
        Duration::from_secs(30),
        || async move {
            weed.keys("killed")
                .await
                .iter()
                .any(|k| k.ends_with(".lease"))
        },
    )
    .await;
    // Bytes are arriving in the first instance's staging file.
    let staging = setup.cache_dir().join("tmp");
    wait_until(
        "the first instance to be downloading",
        Duration::from_secs(30),
        || {
            std::fs::read_dir(&staging)
                .is_ok_and(|d| d.flatten().any(|e| e.metadata().is_ok_and(|m| m.len() > 0)))
        },
    )
    .await;
    first.child.kill().unwrap();
    first.child.wait().unwrap();
    let cut = asking.await.unwrap();
    assert!(
        cut.is_none_or(|a| a.status != StatusCode::OK || a.body[..] != big[..]),
        "the killed instance served the whole archive"
    );
    let keys = weed.keys("killed").await;
    assert!(!keys.iter().any(|k| k.ends_with(".zip")), "{keys:?}");

    // The second instance waits out the dead instance's claim, downloads
    // the archive itself and serves it whole.
    origin.set_fault(&file, None);
    let mut second = setup.config(&origin, &[], &["registry.origin.test"]);
    use_bucket(&mut second, weed.s3_config("killed", setup.dir.path()));
    let second = second_instance(&second, &setup, "second");
    let b = RunningMirror::start(second).await;
    let got = Client::trusting(&b.ca_file)
        .get(&b.url(&archive_path()))
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    assert!(got.body[..] == big[..]);
    let metrics = b.mirror.metrics().render();
    assert_eq!(
        counter(
            &metrics,
            r#"tfmirror_download_claims_total{outcome="waited"}"#
        ),
        1,
        "{metrics}"
    );
    // Clients may finish reading a verified download before it is stored:
    // the object and the released claim follow.
    wait_until_answered(
        "the claim's release",
        Duration::from_secs(30),
        || async move {
            !weed
                .keys("killed")
                .await
                .iter()
                .any(|k| k.ends_with(".lease"))
        },
    )
    .await;
    let keys = weed.keys("killed").await;
    assert_eq!(
        keys.iter().filter(|k| k.ends_with(".zip")).count(),
        1,
        "{keys:?}"
    );
    assert!(
        !keys.iter().any(|k| k.starts_with("mirror/tmp/")),
        "{keys:?}"
    );
    b.stop().await;

    // `ls` lists what the bucket holds.
    let args = ["ls", "--json", "--config", config.to_str().unwrap()];
    let listed = run_ok(setup.dir.path(), &args).await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["platform"], "linux_amd64");
    assert_eq!(listed[0]["size"], big.len());
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_bucket_down_the_local_tier_serves_what_it_holds_and_the_rest_returns() {
    let mut weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["linux_amd64", "darwin_arm64"];
    let archives = origin.publish("acme", "bulk", "1.0.0", &platforms, &signer, &[&signer]);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    weed.create_bucket("down").await;
    use_bucket(&mut config, weed.s3_config("down", setup.dir.path()));
    // A second instance without a tier stores the darwin archive.
    let other = RunningMirror::start(second_instance(&config, &setup, "other")).await;
    let mut s3 = weed.s3_config("down", setup.dir.path());
    s3.local_cache = Some(tfmirror::config::LocalCacheConfig {
        max_size: bytesize::ByteSize::gib(1),
    });
    use_bucket(&mut config, s3);
    let mirror = RunningMirror::start(config).await;
    let client = Client::trusting(&mirror.ca_file);
    let url = |platform: &str| {
        mirror.url(&format!(
            "/registry.origin.test/acme/bulk/terraform-provider-bulk_1.0.0_{platform}.zip"
        ))
    };
    assert_eq!(client.get(&url("linux_amd64")).await.status, StatusCode::OK);
    let darwin = "/registry.origin.test/acme/bulk/terraform-provider-bulk_1.0.0_darwin_arm64.zip";
    let stored = Client::trusting(&other.ca_file)
        .get(&other.url(darwin))
        .await;
    assert_eq!(stored.status, StatusCode::OK);
    assert_eq!(
        client.get(&mirror.url("/readyz")).await.status,
        StatusCode::OK
    );

    weed.stop();
    // What the tier holds is served; the rest is 503 naming the bucket.
    let held = client.get(&url("linux_amd64")).await;
    assert_eq!(held.status, StatusCode::OK, "{}", held.error_text());
    assert!(held.body[..] == archives["linux_amd64"][..]);
    let down = client.get(&url("darwin_arm64")).await;
    assert_eq!(down.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        down.error_text().contains("s3://down/mirror"),
        "{}",
        down.error_text()
    );
    let ready = client.get(&mirror.url("/readyz")).await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    let said = String::from_utf8_lossy(&ready.body).into_owned();
    assert!(said.contains("s3://down/mirror"), "{said}");

    // The bucket returns, and with it everything.
    weed.restart().await;
    let ready = client.get(&mirror.url("/readyz")).await;
    assert_eq!(ready.status, StatusCode::OK);
    for platform in platforms {
        let back = client.get(&url(platform)).await;
        assert_eq!(
            back.status,
            StatusCode::OK,
            "{platform}: {}",
            back.error_text()
        );
        assert!(back.body[..] == archives[platform][..], "{platform}");
        let file = format!("/files/terraform-provider-bulk_1.0.0_{platform}.zip");
        assert_eq!(origin.hits(&file), 1, "{platform}");
    }
    mirror.stop().await;
    other.stop().await;
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_cache_moves_into_a_bucket_by_export_and_import() {
    let weed = Seaweed::start().await;
    weed.create_bucket("moved").await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["linux_amd64", "darwin_arm64"];
    let archives = origin.publish("acme", "bulk", "1.0.0", &platforms, &signer, &[&signer]);

    // A disk cache, warmed through a mirror on it, exported as a bundle.
    let disk = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let client = Client::trusting(&disk.ca_file);
    for platform in platforms {
        let path =
            format!("/registry.origin.test/acme/bulk/terraform-provider-bulk_1.0.0_{platform}.zip");
        assert_eq!(client.get(&disk.url(&path)).await.status, StatusCode::OK);
    }
    disk.stop().await;
    let home = setup.dir.path();
    let bundle = home.join("moved.tar");
    let disk_file = config_file(&setup, &origin, "");
    let args = [
        "export",
        "--config",
        disk_file.to_str().unwrap(),
        "--output",
        bundle.to_str().unwrap(),
    ];
    run_ok(home, &args).await;
    std::fs::remove_dir_all(setup.cache_dir()).unwrap();

    // Imported into the bucket, with every check of an import.
    let bucket_file = config_file(&setup, &origin, &weed.storage_toml("moved", home));
    let args = [
        "import",
        "--config",
        bucket_file.to_str().unwrap(),
        bundle.to_str().unwrap(),
    ];
    let imported = run_ok(home, &args).await;
    assert!(
        imported.stdout.contains("into s3://moved/mirror"),
        "{}",
        imported.stdout
    );
    assert!(
        imported.stdout.contains("2 archives stored"),
        "{}",
        imported.stdout
    );
    let again = run_ok(home, &args).await;
    assert!(
        again.stdout.contains("2 already cached"),
        "{}",
        again.stdout
    );
    // Nothing of it stays on the importing host's disk.
    let left = files_below(&setup.cache_dir());
    assert!(!left.iter().any(|f| f.ends_with(".zip")), "{left:?}");

    // An instance on the bucket serves it with the origin down.
    origin.stop();
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    use_bucket(&mut config, weed.s3_config("moved", home));
    let mirror = RunningMirror::start(second_instance(&config, &setup, "served")).await;
    let client = Client::trusting(&mirror.ca_file);
    let doc = client
        .get(&mirror.url("/registry.origin.test/acme/bulk/1.0.0.json"))
        .await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    for platform in platforms {
        let path =
            format!("/registry.origin.test/acme/bulk/terraform-provider-bulk_1.0.0_{platform}.zip");
        let got = client.get(&mirror.url(&path)).await;
        assert_eq!(
            got.status,
            StatusCode::OK,
            "{platform}: {}",
            got.error_text()
        );
        assert!(got.body[..] == archives[platform][..], "{platform}");
    }
    mirror.stop().await;

    // And back out: a bundle exported from the bucket imports into an
    // air-gapped site's disk cache.
    let back = home.join("back.tar");
    let args = [
        "export",
        "--config",
        bucket_file.to_str().unwrap(),
        "--output",
        back.to_str().unwrap(),
    ];
    let exported = run_ok(home, &args).await;
    assert!(
        exported.stdout.contains("1 versions, 2 archives"),
        "{}",
        exported.stdout
    );
    let site = site_config(home, "site", "");
    let args = [
        "import",
        "--config",
        site.to_str().unwrap(),
        back.to_str().unwrap(),
    ];
    let imported = run_ok(home, &args).await;
    assert!(
        imported.stdout.contains("2 archives stored"),
        "{}",
        imported.stdout
    );

    // A static mirror written from the bucket.
    let static_dir = home.join("static");
    let args = [
        "export",
        "--config",
        bucket_file.to_str().unwrap(),
        "--static",
        static_dir.to_str().unwrap(),
    ];
    run_ok(home, &args).await;
    let written = files_below(&static_dir);
    assert_eq!(
        written.iter().filter(|f| f.ends_with(".zip")).count(),
        2,
        "{written:?}"
    );

    // `verify` on the bucket: an object whose bytes changed in the bucket
    // is removed from it and kept on this host; the rest stays.
    let darwin = "mirror/providers/registry.origin.test/acme/bulk/1.0.0/terraform-provider-bulk_1.0.0_darwin_arm64.zip";
    let tampered = object_store::PutPayload::from_static(b"PK\x03\x04 not the signed archive");
    object_store::ObjectStoreExt::put(&weed.object_store("moved"), &darwin.into(), tampered)
        .await
        .unwrap();
    let checked = run_tfmirror(home, &["verify", "--config", bucket_file.to_str().unwrap()]).await;
    assert!(!checked.ok, "{}{}", checked.stdout, checked.stderr);
    assert!(checked.stdout.contains("QUARANTINED"), "{}", checked.stdout);
    assert!(
        checked.stdout.contains("darwin_arm64"),
        "{}",
        checked.stdout
    );
    assert!(
        checked.stdout.contains("checked 2 archives"),
        "{}",
        checked.stdout
    );
    let keys = weed.keys("moved").await;
    assert!(!keys.iter().any(|k| k == darwin), "{keys:?}");
    assert!(
        keys.iter().any(|k| k.ends_with("linux_amd64.zip")),
        "{keys:?}"
    );
    let kept = files_below(&setup.cache_dir().join("quarantine"));
    assert!(
        kept.iter().any(|f| f.ends_with("darwin_arm64.zip")),
        "{kept:?}"
    );

    // The static mirror read into another bucket: the archive whose bytes no longer
    // match the directory's hashes is refused, the other stored there.
    weed.create_bucket("static").await;
    let linux = written
        .iter()
        .find(|f| f.ends_with("linux_amd64.zip"))
        .unwrap();
    std::fs::write(static_dir.join(linux), b"PK\x03\x04 not the listed archive").unwrap();
    let static_file = config_file(&setup, &origin, &weed.storage_toml("static", home));
    let args = [
        "import",
        "--config",
        static_file.to_str().unwrap(),
        "--static",
        static_dir.to_str().unwrap(),
    ];
    let read = run_tfmirror(home, &args).await;
    assert!(!read.ok, "{}{}", read.stdout, read.stderr);
    assert!(
        read.stdout
            .contains("REJECTED registry.origin.test/acme/bulk 1.0.0 linux_amd64"),
        "{}",
        read.stdout
    );
    assert!(read.stdout.contains("1 archives stored"), "{}", read.stdout);
    let keys = weed.keys("static").await;
    assert!(
        keys.iter().any(|k| k.ends_with("darwin_arm64.zip")),
        "{keys:?}"
    );
    assert!(
        !keys.iter().any(|k| k.ends_with("linux_amd64.zip")),
        "{keys:?}"
    );
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endpoint_means_path_style_and_virtual_hosted_style_is_refused_at_start() {
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish(
        "acme",
        "bulk",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    weed.create_bucket("styled").await;

    // An endpoint and no path_style: path-style, and it works.
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    let s3 = weed.s3_config("styled", setup.dir.path());
    assert_eq!(s3.path_style, None);
    use_bucket(&mut config, s3.clone());
    let mirror = RunningMirror::start(config.clone()).await;
    let got = Client::trusting(&mirror.ca_file)
        .get(&mirror.url(&archive_path()))
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    assert_eq!(&got.body[..], &archives["linux_amd64"][..]);
    mirror.stop().await;

    // path_style = false with that endpoint: requests would name the
    // first key segment as the bucket. The daemon does not start, and
    // says which bucket, where, how addressed, and what the server said.
    let mut wrong = s3;
    wrong.path_style = Some(false);
    use_bucket(&mut config, wrong);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let Err(refused) = tfmirror::daemon::Daemon::new(config.clone(), listener).await else {
        panic!("the daemon started on a bucket it cannot reach");
    };
    let said = format!("{refused:#}");
    for part in [
        "the cache's store cannot be used",
        "s3://styled/mirror",
        &format!("endpoint {}", weed.endpoint()),
        "virtual-hosted-style addressing",
        "path_style = true",
    ] {
        assert!(said.contains(part), "{part:?} missing from: {said}");
    }
    // The same through the command: `tfmirror serve` exits with it.
    let file = setup.dir.path().join("wrong.toml");
    std::fs::write(
        &file,
        weed.storage_toml("styled", setup.dir.path()).replace(
            "allow_http = true\n",
            "allow_http = true\npath_style = false\n",
        ) + &format!(
            "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{}\"\n[cache]\ndir = \"{}\"\n",
            setup.dir.path().join("data").display(),
            setup.dir.path().join("cache").display(),
        ),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_tfmirror"))
        .args(["serve", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("virtual-hosted-style addressing"),
        "{stderr}"
    );
    assert!(stderr.contains("s3://styled/mirror"), "{stderr}");
}

/// Documentation on a bucket: pages and lists listed as the bucket holds
/// them (the oracle lists its keys itself), with their sizes and when
/// they were written, and removed.
#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documentation_on_a_bucket_is_listed_with_sizes_and_ages_and_removed() {
    use tfmirror::address::{Provider, Version};
    use tfmirror::store::docs;
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    weed.create_bucket("documents").await;
    use_bucket(&mut config, weed.s3_config("documents", setup.dir.path()));
    let store = tfmirror::store::open(&config, false).await.unwrap();
    let content = b"# bulk_thing\n\nSome words.\n";
    let sha = docs::keep_page(store.as_ref(), content).await.unwrap();
    let before = std::time::SystemTime::now() - Duration::from_secs(60);
    let pages = docs::kept_pages(store.as_ref()).await.unwrap();
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(pages[0].sha256, sha);
    assert_eq!(pages[0].size, content.len() as u64);
    assert!(pages[0].written > before, "{pages:?}");
    let key = format!("docs/pages/{}/{sha}.md", &sha[..2]);
    assert!(
        weed.keys("documents")
            .await
            .iter()
            .any(|k| k.ends_with(&key)),
        "{key}"
    );
    let provider = Provider::from_source("registry.origin.test/acme/bulk").unwrap();
    let version = Version::parse("1.0.0").unwrap();
    let list = docs::VersionDocs {
        format: docs::DOCS_FORMAT,
        provider: provider.clone(),
        version: version.clone(),
        source: "https://registry.origin.test/".into(),
        fetched_at_ms: 0,
        licenses: Vec::new(),
        pages: Vec::new(),
        passed_over: std::collections::BTreeMap::default(),
    };
    docs::write_version(store.as_ref(), &list).await.unwrap();
    let listed = docs::listed_versions(store.as_ref()).await.unwrap();
    let written = serde_json::to_vec(&list).unwrap().len() as u64;
    assert_eq!(
        listed,
        vec![(Ok((provider.clone(), version.clone())), written)]
    );
    docs::remove_version(store.as_ref(), &provider, &version)
        .await
        .unwrap();
    docs::remove_page(store.as_ref(), &sha).await.unwrap();
    let keys = weed.keys("documents").await;
    assert!(!keys.iter().any(|k| k.contains("docs/")), "{keys:?}");
    assert!(docs::kept_pages(store.as_ref()).await.unwrap().is_empty());
}
