//! A cache that cannot be written: a full disk (a small tmpfs mounted over
//! the cache directory, filled up) and a read-only one. The request that
//! needs to store something answers 503 with the reason, `/readyz` reports
//! it, what is cached keeps being served, and everything works again once
//! space is freed. A download that would eat into `cache.min_free_space`
//! is refused before it starts, with 507. Mounting needs root; under
//! `CI=true` its absence fails.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::daemon::{run_ok, run_tfmirror};
use common::*;
use http::StatusCode;

/// A tmpfs mounted for the life of the value.
struct Tmpfs(PathBuf);

impl Tmpfs {
    fn mount(dir: &Path, size: &str) -> Tmpfs {
        std::fs::create_dir_all(dir).unwrap();
        let ok = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={size}"),
                "tfmirror-test",
            ])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "mounting a tmpfs failed; the disk tests need root");
        Tmpfs(dir.to_path_buf())
    }

    /// Remounts with `options`. Read-only is refused while a file is
    /// open for writing (the daemon's background work on what it just
    /// stored, such as a build record): tried again until it takes, within
    /// a deadline.
    fn remount(&self, options: &str) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        loop {
            let out = Command::new("mount")
                .args(["-o", &format!("remount,{options}")])
                .arg(&self.0)
                .output()
                .unwrap();
            if out.status.success() {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "remount,{options}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
    }

    /// Fills the file system up with one file, and returns its path.
    fn fill(&self) -> PathBuf {
        let path = self.0.join("filler");
        let mut f = std::fs::File::create(&path).unwrap();
        let chunk = vec![0u8; 64 * 1024];
        while f.write_all(&chunk).is_ok() {}
        path
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

#[cfg_attr(
    tfmirror_not_root,
    ignore = "mounts a tmpfs, which needs root (CI runs it as root)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_or_read_only_cache_answers_503_and_keeps_serving() {
    let setup = Setup::new();
    let fs = Tmpfs::mount(&setup.cache_dir(), "8m");
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let cached = origin.publish(
        "acme",
        "cached",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "fresh",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let big = publish_big(&origin, &signer, "big", &["1.0.0"], 2 * 1024 * 1024);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    // No reserve: the file system's own "full" is what this test is
    // about.
    config.cache.min_free_space = bytesize::ByteSize::b(0);
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let url = |p: &str| m.url(&format!("/registry.origin.test/acme/{p}"));
    let cached_zip = url("cached/terraform-provider-cached_1.0.0_linux_amd64.zip");
    let big_zip = url("big/terraform-provider-big_1.0.0_linux_amd64.zip");
    assert_eq!(c.get(&cached_zip).await.status, StatusCode::OK);
    assert_eq!(c.get(&url("big/1.0.0.json")).await.status, StatusCode::OK);
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);

    // Disk full: new metadata and a new archive cannot be stored.
    let filler = fs.fill();
    let new_list = c.get(&url("fresh/index.json")).await;
    assert_eq!(new_list.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        new_list.error_text().contains("No space left on device"),
        "{}",
        new_list.error_text()
    );
    // An archive larger than what is left is refused before its download.
    let new_archive = c.get(&big_zip).await;
    assert_eq!(new_archive.status, StatusCode::INSUFFICIENT_STORAGE);
    assert!(
        new_archive
            .error_text()
            .contains("does not fit in the cache's free space"),
        "{}",
        new_archive.error_text()
    );
    let ready = c.get(&m.url("/readyz")).await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready.error_text().contains("No space left on device"),
        "{}",
        ready.error_text()
    );
    // What is cached is still served, whole.
    let served = c.get(&cached_zip).await;
    assert_eq!(served.status, StatusCode::OK);
    assert_eq!(&served.body[..], &cached["linux_amd64"][..]);
    assert_eq!(
        c.get(&url("cached/1.0.0.json")).await.status,
        StatusCode::OK
    );
    // No partial file was left behind.
    assert!(files_below(&setup.cache_dir())
        .iter()
        .all(|f| !f.starts_with("tmp/")));

    // Space freed: the next request stores, and the mirror is ready again.
    std::fs::remove_file(filler).unwrap();
    let stored = c.get(&big_zip).await;
    assert_eq!(stored.status, StatusCode::OK);
    assert_eq!(&stored.body[..], &big["1.0.0"][..]);
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);

    // Read-only: the same, with the file system's own reason.
    fs.remount("ro");
    let refused = c.get(&url("fresh/1.0.0.json")).await;
    assert_eq!(refused.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        refused.error_text().contains("Read-only file system"),
        "{}",
        refused.error_text()
    );
    let ready = c.get(&m.url("/readyz")).await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(c.get(&cached_zip).await.status, StatusCode::OK);
    fs.remount("rw");
    assert_eq!(c.get(&url("fresh/1.0.0.json")).await.status, StatusCode::OK);
    m.stop().await;
}

/// The value of one series in a `/metrics` text.
fn series(metrics: &str, name: &str) -> u64 {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in:\n{metrics}"))
}

#[cfg_attr(
    tfmirror_not_root,
    ignore = "mounts a tmpfs, which needs root (CI runs it as root)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_download_that_would_eat_into_the_reserve_is_refused_before_it_starts() {
    const MIB: u64 = 1024 * 1024;
    let setup = Setup::new();
    let fs = Tmpfs::mount(&setup.cache_dir(), "16m");
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    for kind in ["small", "fresh"] {
        origin.publish("acme", kind, "1.0.0", &["linux_amd64"], &signer, &[&signer]);
    }
    publish_big(&origin, &signer, "big", &["1.0.0"], 6 << 20);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.cache.min_free_space = bytesize::ByteSize::mib(12);
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let url = |p: &str| m.url(&format!("/{p}"));
    let small =
        url("registry.origin.test/acme/small/terraform-provider-small_1.0.0_linux_amd64.zip");
    let big_name = "terraform-provider-big_1.0.0_linux_amd64.zip";
    let big = url(&format!("registry.origin.test/acme/big/{big_name}"));
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);
    assert_eq!(c.get(&small).await.status, StatusCode::OK);
    assert_eq!(
        c.get(&url("registry.origin.test/acme/big/1.0.0.json"))
            .await
            .status,
        StatusCode::OK
    );

    // Four requests at once: the origin's answer is held until the first
    // has reached it and all four wait for that download, then each gets
    // the same refusal from the one attempt, made before any of the body
    // was read. (A request that came after the refusal would try again.)
    let hold = origin.hold_file(big_name);
    let shared = std::sync::Arc::new(Client::trusting(&m.ca_file));
    assert_eq!(shared.get(&m.url("/readyz")).await.status, StatusCode::OK);
    let asking: Vec<_> = (0..4)
        .map(|_| {
            let (c, big) = (shared.clone(), big.clone());
            tokio::spawn(async move { c.get(&big).await })
        })
        .collect();
    let file = format!("/files/{big_name}");
    wait_until(
        "the download to reach the origin",
        Duration::from_secs(10),
        || origin.hits(&file) == 1,
    )
    .await;
    wait_until_answered(
        "all four requests to wait for the one download",
        Duration::from_secs(10),
        || async {
            let metrics = c.get(&m.url("/metrics")).await;
            let text = String::from_utf8_lossy(&metrics.body);
            series(&text, "tfmirror_archive_requests_waiting") == 4
        },
    )
    .await;
    hold.send(true).unwrap();
    for a in asking {
        let a = a.await.unwrap();
        assert_eq!(a.status, StatusCode::INSUFFICIENT_STORAGE);
        let text = a.error_text();
        assert!(
            text.contains(
                "(6.0 MiB announced by the origin) does not fit in the cache's free space ("
            ),
            "{text}"
        );
        assert!(
            text.contains(
                " free, keeping cache.min_free_space = 12.0 MiB); nothing was downloaded"
            ),
            "{text}"
        );
    }
    assert_eq!(
        origin.hits(&file),
        1,
        "a client's refusal made a second attempt"
    );
    assert!(
        !files_below(&setup.cache_dir())
            .iter()
            .any(|f| f.starts_with("tmp/") || f.ends_with(big_name)),
        "{:?}",
        files_below(&setup.cache_dir())
    );
    let metrics = c.get(&m.url("/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert_eq!(series(&text, "tfmirror_cache_min_free_bytes"), 12 * MIB);
    let free = series(&text, "tfmirror_cache_free_bytes");
    assert!((12 * MIB..16 * MIB).contains(&free), "{free}");
    assert_eq!(series(&text, "tfmirror_ready"), 1);
    let page = c.get(&m.url("/-/status")).await.page_text();
    assert!(page.contains(" free on disk</li>"), "{page}");

    // Below the reserve: not ready, and every download refused, however
    // small; what is cached is still served.
    let filler = fs.0.join("filler");
    std::fs::write(&filler, vec![0u8; usize::try_from(free - 8 * MIB).unwrap()]).unwrap();
    let ready = c.get(&m.url("/readyz")).await;
    assert_eq!(ready.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        ready
            .error_text()
            .contains("the cache's file system is low on space ("),
        "{}",
        ready.error_text()
    );
    let fresh = c
        .get(&url(
            "registry.origin.test/acme/fresh/terraform-provider-fresh_1.0.0_linux_amd64.zip",
        ))
        .await;
    assert_eq!(
        fresh.status,
        StatusCode::INSUFFICIENT_STORAGE,
        "{}",
        fresh.error_text()
    );
    assert_eq!(c.get(&small).await.status, StatusCode::OK);
    let page = c.get(&m.url("/-/status")).await.page_text();
    assert!(
        page.contains("free on disk, below cache.min_free_space: new archives are refused"),
        "{page}"
    );
    let metrics = c.get(&m.url("/metrics")).await;
    let text = String::from_utf8_lossy(&metrics.body);
    assert!(series(&text, "tfmirror_cache_free_bytes") < 12 * MIB);
    assert_eq!(series(&text, "tfmirror_ready"), 0);

    // Room again.
    std::fs::remove_file(filler).unwrap();
    assert_eq!(c.get(&m.url("/readyz")).await.status, StatusCode::OK);
    m.stop().await;
}

/// Incompressible bytes: a package of them is as large as they are.
fn noise(len: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x.to_le_bytes()[0]
        })
        .collect()
}

#[cfg_attr(
    tfmirror_not_root,
    ignore = "mounts a tmpfs, which needs root (CI runs it as root)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_write_that_grows_the_store_keeps_the_reserve() {
    let setup = Setup::new();
    // 16 MiB, of which 12 are kept free: 4 MiB for the cache.
    let _fs = Tmpfs::mount(&setup.cache_dir(), "16m");
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    publish_big(&origin, &signer, "big", &["1.0.0"], 6 << 20);
    publish_big(&origin, &signer, "chunked", &["1.0.0"], 6 << 20);
    origin.set_fault(
        "/files/terraform-provider-chunked_1.0.0_linux_amd64.zip",
        Some(Fault::Chunked),
    );
    let mut package = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    let mut header = tar::Header::new_gnu();
    let blob = noise(6 << 20);
    header.set_size(blob.len() as u64);
    header.set_mode(0o644);
    package
        .append_data(&mut header, "main.bin", &blob[..])
        .unwrap();
    let package = package.into_inner().unwrap().finish().unwrap();
    origin.publish_archive_module(("acme", "huge", "aws"), "1.0.0", package);
    let key = setup.dir.path().join("release-key.asc");
    std::fs::write(&key, signer.public_armored()).unwrap();
    let terraform = common::releases::zip_of("terraform", &noise(6 << 20));
    common::releases::publish_terraform(&origin, &signer, "1.9.0", &[("linux_amd64", terraform)]);
    common::releases::publish_terraform_index(&origin, &["1.9.0"]);
    let base = origin.file_url("x");
    let base = base.trim_end_matches("/files/x");
    let mut config = setup.module_config(&origin, "registry.origin.test");
    *config.releases = toml::from_str(&format!(
        "products = [\"terraform\"]\n[terraform]\nlist_url = \"{base}/files/index.json\"\ndownload_url = \"{base}/files/{{artifact}}\"\nkey_files = [\"{}\"]\n",
        key.display()
    ))
    .unwrap();
    config.cache.min_free_space = bytesize::ByteSize::mib(12);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let refused = |what: &str, got: &Answer, says: &str| {
        assert_eq!(got.status, StatusCode::INSUFFICIENT_STORAGE, "{what}");
        assert!(
            got.error_text().contains(says),
            "{what}: {}",
            got.error_text()
        );
    };

    // A provider archive whose size the origin does not announce: stopped
    // as it streams, when the next bytes would eat into the reserve.
    let chunked = c
        .get(&m.url(
            "/registry.origin.test/acme/chunked/terraform-provider-chunked_1.0.0_linux_amd64.zip",
        ))
        .await;
    refused(
        "a chunked archive",
        &chunked,
        "the origin announced no size, and after ",
    );
    // A module package from an archive source, and a CLI release file.
    let module = c
        .get(&m.url("/v1/modules/registry.origin.test/acme/huge/aws/1.0.0/package.tar.gz"))
        .await;
    refused(
        "a module package",
        &module,
        "does not fit in the cache's free space",
    );
    let release = c
        .get(&m.url("/terraform/1.9.0/terraform_1.9.0_linux_amd64.zip"))
        .await;
    refused(
        "a release file",
        &release,
        "(6.0 MiB announced by the origin) does not fit in the cache's free space",
    );
    m.stop().await;
    let left: Vec<String> = files_below(&setup.cache_dir())
        .into_iter()
        .filter(|f| f.starts_with("tmp/") || f.ends_with(".zip") || f.ends_with(".tar.gz"))
        .collect();
    assert!(left.is_empty(), "nothing is kept or left staged: {left:?}");

    // sync, beside no daemon: the archive is refused, and said so.
    let summary = sync_one(&config, "registry.origin.test/acme/big").await;
    assert_eq!(summary.downloaded, 0);
    assert!(
        summary
            .failures
            .iter()
            .any(|f| f.contains("does not fit in the cache's free space")),
        "{:?}",
        summary.failures
    );

    // import of a bundle holding the 6 MiB archive (made on a disk with
    // room): the archive is refused as it is copied in, and the summary
    // counts none stored.
    let roomy = setup.dir.path().join("roomy");
    let mut roomy_config = config.clone();
    roomy_config.cache.dir = roomy.clone();
    roomy_config.cache.min_free_space = bytesize::ByteSize(0);
    let filled = RunningMirror::start(roomy_config.clone()).await;
    let fc = Client::trusting(&filled.ca_file);
    let big = "/registry.origin.test/acme/big/terraform-provider-big_1.0.0_linux_amd64.zip";
    assert_eq!(fc.get(&filled.url(big)).await.status, StatusCode::OK);
    filled.stop().await;
    let home = setup.dir.path();
    let bundle = home.join("big.tar");
    let roomy_file = home.join("roomy.toml");
    std::fs::write(&roomy_file, toml::to_string(&roomy_config).unwrap()).unwrap();
    let site_file = home.join("site.toml");
    std::fs::write(&site_file, toml::to_string(&config).unwrap()).unwrap();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    run_ok(
        home,
        &[
            "export",
            "--config",
            &s(&roomy_file),
            "--output",
            &s(&bundle),
        ],
    )
    .await;
    let imported = run_tfmirror(home, &["import", "--config", &s(&site_file), &s(&bundle)]).await;
    assert!(!imported.ok, "{}{}", imported.stdout, imported.stderr);
    let said = format!("{}{}", imported.stdout, imported.stderr);
    assert!(
        said.contains("the next bytes do not fit in the cache's free space"),
        "{said}"
    );
    assert!(said.contains(", 0 archives stored, "), "{said}");
    assert!(
        !files_below(&setup.cache_dir())
            .iter()
            .any(|f| f.ends_with(".zip")),
        "nothing was kept"
    );
}
