//! The archive index across restarts: the daemon writes a snapshot of it
//! when it stops and reads that instead of walking the cache when it
//! starts, unless another process changed the cache's archives since, or
//! the daemon did not stop cleanly; a walk of the store that fails is
//! tried again while the daemon serves.

mod common;

use common::*;
use http::StatusCode;

const KIB: usize = 1024;

fn snapshot(setup: &Setup) -> std::path::PathBuf {
    setup.cache_dir().join("index/archives.snapshot")
}

fn archive_file(setup: &Setup, v: &str) -> std::path::PathBuf {
    setup.cache_dir().join(format!(
        "providers/registry.origin.test/acme/big/{v}/terraform-provider-big_{v}_linux_amd64.zip"
    ))
}

/// The versions [`three_published`] publishes.
const THREE: [&str; 3] = ["1.0.0", "2.0.0", "3.0.0"];

/// An origin publishing [`THREE`] versions of a provider with a 64 KiB
/// archive each, a mirror's configuration for it (archives stored whole),
/// and the archives' size.
async fn three_published(setup: &Setup) -> (FakeOrigin, tfmirror::config::Config, u64) {
    let origin = FakeOrigin::start(&setup.ca).await;
    let published = publish_big(&origin, &Signer::new("acme"), "big", &THREE, 64 * KIB);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    (origin, config, published["1.0.0"].len() as u64)
}

/// Fetches each of `versions`' archive through `m`.
async fn fetch_each(m: &RunningMirror, c: &Client, versions: &[&str]) {
    for v in versions {
        let url = m.url(&format!(
            "/registry.origin.test/acme/big/terraform-provider-big_{v}_linux_amd64.zip"
        ));
        assert_eq!(c.get(&url).await.status, StatusCode::OK, "{v}");
    }
}

/// [`three_published`] on a new bucket `index` of `weed`, each archive
/// fetched through a mirror on that bucket, which then stopped cleanly.
async fn three_in_a_bucket(
    weed: &common::seaweed::Seaweed,
    setup: &Setup,
) -> (FakeOrigin, tfmirror::config::Config, u64) {
    let (origin, mut config, size) = three_published(setup).await;
    weed.create_bucket("index").await;
    common::seaweed::use_bucket(&mut config, weed.s3_config("index", setup.dir.path()));
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &THREE).await;
    m.stop().await;
    (origin, config, size)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_stop_leaves_a_snapshot_the_next_start_reads_instead_of_the_cache() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let versions = ["1.0.0", "2.0.0", "3.0.0", "4.0.0"];
    let published = publish_big(&origin, &signer, "big", &versions, 64 * KIB);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    // Room for three archives.
    let size = published["1.0.0"].len() as u64;
    config.cache.max_size = Some(bytesize::ByteSize(3 * size));

    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let url = |m: &RunningMirror, v: &str| {
        m.url(&format!(
            "/registry.origin.test/acme/big/terraform-provider-big_{v}_linux_amd64.zip"
        ))
    };
    // 1.0.0 is used again after 2.0.0 arrived: 2.0.0 is the oldest use.
    for v in ["1.0.0", "2.0.0", "1.0.0", "3.0.0"] {
        assert_eq!(c.get(&url(&m, v)).await.status, StatusCode::OK);
    }
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    assert!(!snapshot(&setup).exists(), "no snapshot while running");
    m.stop().await;
    assert!(
        snapshot(&setup).is_file(),
        "a clean stop writes the snapshot"
    );

    // Behind the daemon's back, 3.0.0 leaves the cache without a note: a
    // walk would not count it, the snapshot does.
    std::fs::remove_file(archive_file(&setup, "3.0.0")).unwrap();
    let m = RunningMirror::start(config.clone()).await;
    assert!(!snapshot(&setup).exists(), "the start takes the snapshot");
    assert_eq!(
        m.mirror.usage(),
        (3 * size, 3),
        "the index came from the snapshot"
    );
    // The order of use survived the restart: 2.0.0 goes first.
    let c = Client::trusting(&m.ca_file);
    assert_eq!(c.get(&url(&m, "4.0.0")).await.status, StatusCode::OK);
    assert!(!archive_file(&setup, "2.0.0").exists(), "2.0.0 was evicted");
    assert!(archive_file(&setup, "1.0.0").exists());
    assert!(archive_file(&setup, "4.0.0").exists());
    m.stop().await;

    // `gc` with nothing over its size changes nothing and notes nothing:
    // the snapshot still stands (it counts 3.0.0, which a walk would not).
    let gc = |max: u64| {
        let gc_config = config.clone();
        tokio::task::spawn_blocking(move || {
            tfmirror::commands::gc::command(&gc_config, Some(bytesize::ByteSize(max)))
        })
    };
    gc(3 * size).await.unwrap().unwrap();
    let note = setup.cache_dir().join("index/changed.json");
    assert!(!note.exists(), "a gc that removed nothing noted a change");
    let m = RunningMirror::start(config.clone()).await;
    assert_eq!(m.mirror.usage(), (3 * size, 3), "the snapshot still stood");
    m.stop().await;

    // `gc`, another process, changes the cache's archives: the snapshot
    // the daemon wrote before is not trusted, and the start walks.
    assert!(snapshot(&setup).is_file());
    gc(size).await.unwrap().unwrap();
    assert!(note.is_file(), "gc noted its change");
    let held: Vec<bool> = ["1.0.0", "4.0.0"]
        .iter()
        .map(|v| archive_file(&setup, v).exists())
        .collect();
    assert_eq!(
        held.iter().filter(|h| **h).count(),
        1,
        "gc left one archive"
    );
    let m = RunningMirror::start(config.clone()).await;
    assert_eq!(m.mirror.usage(), (size, 1), "the start walked the cache");
    assert!(!snapshot(&setup).exists(), "the stale snapshot is gone");
    m.stop().await;

    // A snapshot that cannot be read is set aside the same way.
    std::fs::write(snapshot(&setup), b"not a snapshot").unwrap();
    let m = RunningMirror::start(config).await;
    assert_eq!(m.mirror.usage(), (size, 1));
    assert!(!snapshot(&setup).exists());
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_that_walks_the_cache_evicts_what_is_over_its_size_once_the_walk_ends() {
    let setup = Setup::new();
    let (_origin, mut config, size) = three_published(&setup).await;
    let versions = THREE;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &versions).await;
    m.stop().await;
    // No snapshot, as after a crash; the store records 3.0.0 as used
    // last, then 1.0.0, then 2.0.0 (an hour apart).
    std::fs::remove_file(snapshot(&setup)).unwrap();
    let hours_ago =
        |h: u64| std::time::SystemTime::now() - std::time::Duration::from_secs(h * 3600);
    for (v, h) in [("1.0.0", 2), ("2.0.0", 3), ("3.0.0", 1)] {
        let mut h1 = archive_file(&setup, v).into_os_string();
        h1.push(".h1");
        std::fs::File::options()
            .write(true)
            .open(h1)
            .unwrap()
            .set_modified(hours_ago(h))
            .unwrap();
    }

    // Room for one archive now: the walk, not the start, evicts the two
    // used least recently.
    config.cache.max_size = Some(bytesize::ByteSize(size));
    let m = RunningMirror::start(config).await;
    assert!(!m.mirror.index_walking());
    // The start returned once the index was built and what the walk's end
    // evicted was removed.
    assert!(!archive_file(&setup, "1.0.0").exists(), "1.0.0 was evicted");
    assert!(!archive_file(&setup, "2.0.0").exists(), "2.0.0 was evicted");
    assert!(archive_file(&setup, "3.0.0").exists());
    assert_eq!(m.mirror.usage(), (size, 1));
    let metrics = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_cache_index_walking 0\n"),
        "{metrics}"
    );
    m.stop().await;
    assert!(
        snapshot(&setup).is_file(),
        "a stop after the walk writes the snapshot"
    );
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_bucket_the_snapshot_stands_for_the_listing_until_another_process_changes_it() {
    use common::seaweed::*;
    use futures_util::TryStreamExt;
    use object_store::{ObjectStore, ObjectStoreExt};
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let (_origin, config, size) = three_in_a_bucket(&weed, &setup).await;
    assert!(snapshot(&setup).is_file(), "the snapshot is kept locally");

    // 2.0.0's objects leave the bucket without a note (as another
    // instance's eviction would): the restart counts what the snapshot
    // says, without listing the bucket.
    let bucket = weed.object_store("index");
    let gone: Vec<object_store::path::Path> = bucket
        .list(Some(&"mirror/providers".into()))
        .map_ok(|o| o.location)
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.as_ref().contains("/2.0.0/terraform-provider-"))
        .collect();
    assert_eq!(gone.len(), 2, "the archive and its h1: {gone:?}");
    for p in &gone {
        bucket.delete(p).await.unwrap();
    }
    let m = RunningMirror::start(config.clone()).await;
    assert_eq!(m.mirror.usage(), (3 * size, 3), "read from the snapshot");
    m.stop().await;

    // A command's change is noted in the bucket: the next start lists it.
    let store = tfmirror::store::open(&config, false).await.unwrap();
    tfmirror::store::changes::note(store.as_ref())
        .await
        .unwrap();
    assert!(weed
        .keys("index")
        .await
        .contains(&"mirror/index/changed.json".to_owned()));
    // The listing, directory by directory, finds 1.0.0 and 3.0.0 on
    // either side of 2.0.0's directory, which holds no archive now.
    let m = RunningMirror::start(config).await;
    assert_eq!(m.mirror.usage(), (2 * size, 2), "the bucket was listed");
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_walk_the_bucket_refuses_is_tried_again_while_the_daemon_serves() {
    use common::s3_gate::S3Gate;
    use common::seaweed::*;
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let (_origin, mut config, size) = three_in_a_bucket(&weed, &setup).await;
    // No snapshot, as after a crash: the next start lists the bucket.
    std::fs::remove_file(snapshot(&setup)).unwrap();

    // The bucket refuses the first listing of its archives.
    let gate = S3Gate::start(weed.s3_addr(), "mirror/providers", 1).await;
    config.storage.s3.as_mut().unwrap().endpoint = Some(gate.endpoint().parse().unwrap());
    let m = RunningMirror::start_unbuilt(config).await;
    let c = Client::trusting(&m.ca_file);
    wait_until(
        "the walk's first listing",
        std::time::Duration::from_secs(30),
        || gate.listings() >= 1,
    )
    .await;
    // Refused: still walking, nothing counted from the bucket, and
    // serving meanwhile (from the bucket, through the gate).
    assert!(m.mirror.index_walking());
    assert_eq!(m.mirror.usage(), (0, 0));
    let metrics = String::from_utf8(c.get(&m.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_cache_index_walking 1\n"),
        "{metrics}"
    );
    fetch_each(&m, &c, &["2.0.0"]).await;

    // The retry (5 s later) lists the bucket whole; 2.0.0, used since the
    // start, is not counted twice.
    tokio::time::timeout(std::time::Duration::from_secs(30), m.mirror.index_built())
        .await
        .expect("the walk was tried again and succeeded");
    assert_eq!(gate.listings(), 2);
    assert!(!m.mirror.index_walking());
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    m.stop().await;
    assert!(
        snapshot(&setup).is_file(),
        "a stop after the walk writes it"
    );
}
