//! A cache that cannot be written: a full disk (a small tmpfs mounted over
//! the cache directory, filled up) and a read-only one. The request that
//! needs to store something answers 503 with the reason, `/readyz` reports
//! it, what is cached keeps being served, and everything works again once
//! space is freed. Mounting needs root; under `CI=true` its absence fails.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

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

    fn remount(&self, options: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{options}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(status.success());
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
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
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
    let new_archive = c.get(&big_zip).await;
    assert_eq!(new_archive.status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        new_archive.error_text().contains("cannot be written"),
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
