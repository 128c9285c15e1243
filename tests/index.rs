//! The archive index tells the truth: what the daemon counts, evicts and
//! reports is what the store holds. A snapshot is a fast start that the
//! daemon reconciles with the store while it serves; commands beside it
//! are seen through the store's journal within seconds; what nobody notes
//! (files removed or copied by hand, a bucket's lifecycle rules) is seen
//! at the next reconciliation (SIGHUP, `cache.reconcile_every`); and the
//! daemon never evicts an archive it had room for.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::*;
use http::StatusCode;
use tfmirror::config::Config;

const KIB: usize = 1024;

/// How long a test waits for the daemon to learn of a change the journal
/// reports (it reads it every 2 s on disk, 5 s on a bucket).
const LEARNS: Duration = Duration::from_secs(20);

fn snapshot(cache: &Path) -> PathBuf {
    cache.join("index/archives.snapshot")
}

fn version_dir(cache: &Path, v: &str) -> PathBuf {
    cache.join(format!("providers/registry.origin.test/acme/big/{v}"))
}

fn archive_file(cache: &Path, v: &str) -> PathBuf {
    version_dir(cache, v).join(format!("terraform-provider-big_{v}_linux_amd64.zip"))
}

/// The versions whose archive `cache` holds, in order.
fn on_disk(cache: &Path) -> Vec<String> {
    let mut held: Vec<String> =
        std::fs::read_dir(cache.join("providers/registry.origin.test/acme/big"))
            .map(|d| {
                d.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|v| archive_file(cache, v).is_file())
                    .collect()
            })
            .unwrap_or_default();
    held.sort();
    held
}

/// Removes an archive and its hash as a person would, noting nothing.
fn remove_by_hand(cache: &Path, v: &str) {
    let zip = archive_file(cache, v);
    std::fs::remove_file(&zip).unwrap();
    let mut h1 = zip.into_os_string();
    h1.push(".h1");
    std::fs::remove_file(h1).unwrap();
}

/// An origin publishing `versions` of a provider with a 64 KiB archive
/// each, a mirror's configuration for it (archives stored whole) with room
/// for `room` archives, and the archives' size.
async fn published(setup: &Setup, versions: &[&str], room: u64) -> (FakeOrigin, Config, u64) {
    let origin = FakeOrigin::start(&setup.ca).await;
    let published = publish_big(&origin, &Signer::new("acme"), "big", versions, 64 * KIB);
    let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    let size = published[versions[0]].len() as u64;
    config.cache.max_size = (room > 0).then(|| bytesize::ByteSize(room * size));
    (origin, config, size)
}

/// The same configuration for another instance or cache: its own local
/// directories under `name`.
fn elsewhere(config: &Config, setup: &Setup, name: &str) -> Config {
    let mut c = config.clone();
    c.cache.dir = setup.dir.path().join(format!("{name}-cache"));
    c.server.data_dir = setup.dir.path().join(format!("{name}-data"));
    c
}

/// A cache of its own (`other-cache`) into which `v` was fetched, to be
/// copied into another by hand; its configuration.
async fn fetched_elsewhere(config: &Config, setup: &Setup, v: &str) -> Config {
    let other = elsewhere(config, setup, "other");
    let m = RunningMirror::start(other.clone()).await;
    fetch_each(&m, &Client::trusting(&m.ca_file), &[v]).await;
    m.stop().await;
    other
}

fn archive_url(m: &RunningMirror, v: &str) -> String {
    m.url(&format!(
        "/registry.origin.test/acme/big/terraform-provider-big_{v}_linux_amd64.zip"
    ))
}

/// Fetches each of `versions`' archive through `m`.
async fn fetch_each(m: &RunningMirror, c: &Client, versions: &[&str]) {
    for v in versions {
        assert_eq!(
            c.get(&archive_url(m, v)).await.status,
            StatusCode::OK,
            "{v}"
        );
    }
}

async fn metrics(m: &RunningMirror, c: &Client) -> String {
    c.get(&m.url("/metrics")).await.page_text()
}

/// Waits until `m` counts `archives` archives of `size` bytes each.
async fn counts(m: &RunningMirror, archives: u64, size: u64, why: &str) {
    wait_until(why, LEARNS, || {
        m.mirror.usage() == (archives * size, archives)
    })
    .await;
}

/// Waits until a reconciliation for `reason` ended, after the `after`th.
async fn reconciled(m: &RunningMirror, reason: &str, after: u64) {
    wait_until(
        &format!("a reconciliation ({reason})"),
        LEARNS,
        || matches!(m.mirror.index_status().last, Some(l) if l.reason == reason && l.count > after),
    )
    .await;
}

/// How many reconciliations `m` ended.
fn ended(m: &RunningMirror) -> u64 {
    m.mirror.index_status().last.map_or(0, |l| l.count)
}

/// What `m`'s last reconciliation corrected.
fn corrected(m: &RunningMirror) -> tfmirror::mirror::residency::Corrections {
    m.mirror.index_status().last.unwrap().corrections
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn archives_removed_while_the_daemon_was_stopped_are_dropped_before_anything_is_evicted() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (origin, config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0", "4.0.0"], 3).await;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0", "3.0.0"]).await;
    m.stop().await;
    assert!(
        snapshot(&cache).is_file(),
        "a clean stop writes the snapshot"
    );

    // The two most recently used archives leave the cache while the daemon
    // is stopped, and nothing notes it.
    remove_by_hand(&cache, "2.0.0");
    remove_by_hand(&cache, "3.0.0");
    let m = RunningMirror::start(config.clone()).await;
    assert!(!snapshot(&cache).exists(), "the start takes the snapshot");
    // The start read the snapshot (three archives) and reconciled it.
    let last = m.mirror.index_status().last.unwrap();
    assert_eq!(last.reason, "start");
    assert_eq!((last.corrections.dropped, last.corrections.added), (2, 0));
    assert_eq!(m.mirror.usage(), (size, 1));
    let c = Client::trusting(&m.ca_file);
    let page = c.get(&m.url("/-/status")).await.page_text();
    assert!(page.contains(" in 1 archives</li>"), "{page}");
    assert!(
        page.contains("index: reconciled with the store at"),
        "{page}"
    );
    let metrics = metrics(&m, &c).await;
    for line in [
        "tfmirror_cache_index_corrections_total{change=\"dropped\"} 2\n",
        "tfmirror_cache_index_reconciliations_total{reason=\"start\"} 1\n",
        "tfmirror_cache_index_reconciling 0\n",
        "tfmirror_cache_archives 1\n",
    ] {
        assert!(metrics.contains(line), "{line}{metrics}");
    }

    // Room for two more: 4.0.0 arrives and 1.0.0 stays.
    fetch_each(&m, &c, &["4.0.0"]).await;
    assert_eq!(on_disk(&cache), ["1.0.0", "4.0.0"]);
    assert_eq!(m.mirror.usage(), (2 * size, 2));
    // With the origin gone, 1.0.0 is still served.
    origin.stop();
    fetch_each(&m, &c, &["1.0.0"]).await;
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_sees_gc_and_sync_beside_it_and_evicts_only_what_does_not_fit() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let versions = ["1.0.0", "2.0.0", "3.0.0", "4.0.0", "5.0.0"];
    let (_origin, config, size) = published(&setup, &versions, 3).await;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0", "3.0.0"]).await;

    // gc, beside the daemon, shrinks the cache to two archives: the daemon
    // learns of it through the journal.
    let gc_config = config.clone();
    tokio::task::spawn_blocking(move || {
        tfmirror::commands::gc::command(&gc_config, Some(bytesize::ByteSize(2 * size)))
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(on_disk(&cache), ["2.0.0", "3.0.0"]);
    counts(&m, 2, size, "the daemon counting what gc left").await;
    // So 4.0.0 fits beside them: nothing is evicted for it.
    fetch_each(&m, &c, &["4.0.0"]).await;
    assert_eq!(on_disk(&cache), ["2.0.0", "3.0.0", "4.0.0"]);

    // sync, beside the daemon, stores 5.0.0 and evicts what it takes to be
    // the least recently used (2.0.0); the daemon counts both changes.
    sync_one(&config, "registry.origin.test/acme/big@5.0.0").await;
    assert_eq!(on_disk(&cache), ["3.0.0", "4.0.0", "5.0.0"]);
    wait_until("the daemon's index matching sync's changes", LEARNS, || {
        let page = m.mirror.held_page(1, 10);
        let held: Vec<String> = page.rows[0].1.iter().map(|(v, _)| v.to_string()).collect();
        held == ["5.0.0", "4.0.0", "3.0.0"]
    })
    .await;
    assert_eq!(m.mirror.usage(), (3 * size, 3));

    // The daemon's next download evicts exactly one: the least recently
    // used of those it knows, 3.0.0.
    fetch_each(&m, &c, &["1.0.0"]).await;
    assert_eq!(on_disk(&cache), ["1.0.0", "4.0.0", "5.0.0"]);
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    // What the daemon read of the others' journal entries: gc's removal
    // of 1.0.0, sync's 5.0.0 kept and 2.0.0 removed. (Its own changes it
    // knows without reading them.)
    let metrics = metrics(&m, &c).await;
    assert!(
        metrics.contains("tfmirror_cache_index_journal_items_total 3\n"),
        "{metrics}"
    );
    m.stop().await;
}

/// A configuration file for `config`, for the binary's commands.
fn config_file(config: &Config, setup: &Setup, name: &str) -> PathBuf {
    let path = setup.dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, toml::to_string(config).unwrap()).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_daemon_sees_import_and_verify_beside_it() {
    use common::daemon::run_ok;
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let home = setup.dir.path();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0"], 0).await;
    // A bundle of 2.0.0 and 3.0.0, from another cache.
    let other = elsewhere(&config, &setup, "other");
    let m = RunningMirror::start(other.clone()).await;
    fetch_each(&m, &Client::trusting(&m.ca_file), &["2.0.0", "3.0.0"]).await;
    m.stop().await;
    let bundle = home.join("two.tar");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let other_file = config_file(&other, &setup, "other");
    run_ok(
        home,
        &[
            "export",
            "--config",
            &s(&other_file),
            "--output",
            &s(&bundle),
        ],
    )
    .await;

    let m = RunningMirror::start(config.clone()).await;
    fetch_each(&m, &Client::trusting(&m.ca_file), &["1.0.0"]).await;
    let site_file = config_file(&config, &setup, "site");
    // import, beside the daemon, stores two archives: counted.
    run_ok(home, &["import", "--config", &s(&site_file), &s(&bundle)]).await;
    counts(&m, 3, size, "the daemon counting what import stored").await;
    // verify finds 1.0.0 damaged (same size, other bytes) and quarantines
    // it: counted too.
    let zip = archive_file(&cache, "1.0.0");
    let mut bytes = std::fs::read(&zip).unwrap();
    let last = bytes.len() - 1;
    bytes[last / 2] ^= 0xff;
    std::fs::write(&zip, bytes).unwrap();
    let verified =
        common::daemon::run_tfmirror(home, &["verify", "--config", &s(&site_file)]).await;
    assert!(
        verified.stdout.contains(", quarantined 1"),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
    counts(&m, 2, size, "the daemon counting what verify quarantined").await;
    assert_eq!(on_disk(&cache), ["2.0.0", "3.0.0"]);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_found_in_the_cache_on_use_joins_the_index_and_makes_room_as_an_arrival() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0", "4.0.0"], 3).await;
    // 4.0.0 is fetched into another cache, to be copied in by hand.
    let other = fetched_elsewhere(&config, &setup, "4.0.0").await;

    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0", "3.0.0"]).await;
    copy_tree(
        &version_dir(&other.cache.dir, "4.0.0"),
        &version_dir(&cache, "4.0.0"),
        &[],
    );
    assert_eq!(m.mirror.usage(), (3 * size, 3), "nothing noted the copy");
    // Its first use finds it in the cache: it joins the index, and the
    // least recently used archive goes, so the cache does not stay over.
    fetch_each(&m, &c, &["4.0.0"]).await;
    assert_eq!(on_disk(&cache), ["2.0.0", "3.0.0", "4.0.0"]);
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_nobody_notes_is_counted_at_the_next_reconciliation_on_sighup_or_on_schedule() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0", "4.0.0"], 3).await;
    let other = fetched_elsewhere(&config, &setup, "4.0.0").await;

    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0"]).await;
    // Behind the daemon's back, and unnoted: 1.0.0 leaves, 4.0.0 comes.
    remove_by_hand(&cache, "1.0.0");
    copy_tree(
        &version_dir(&other.cache.dir, "4.0.0"),
        &version_dir(&cache, "4.0.0"),
        &[],
    );
    let before = ended(&m);
    m.reload().await;
    reconciled(&m, "signal", before).await;
    assert_eq!((corrected(&m).added, corrected(&m).dropped), (1, 1));
    assert_eq!(m.mirror.usage(), (2 * size, 2));

    // Again, and the schedule (cache.reconcile_every, on the daemon's
    // clock) finds it.
    remove_by_hand(&cache, "2.0.0");
    let before = ended(&m);
    m.clock.advance(config.cache.reconcile_every);
    reconciled(&m, "schedule", before).await;
    assert_eq!(m.mirror.usage(), (size, 1));
    assert_eq!(on_disk(&cache), ["4.0.0"]);
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_that_went_silent_mid_change_makes_the_daemon_reconcile() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0"], 0).await;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0"]).await;

    // A command opened its session and noted one change (2.0.0, still
    // held), then died while removing 1.0.0, before it could note it.
    let journal = cache.join("index/journal");
    std::fs::create_dir_all(&journal).unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis();
    let entry = serde_json::json!({
        "writer": "999999-dead",
        "role": "import",
        "kind": "changes",
        "items": [{"archive": {
            "provider": {"hostname": "registry.origin.test", "namespace": "acme", "type": "big"},
            "version": "2.0.0",
            "platform": "linux_amd64"
        }}]
    });
    std::fs::write(
        journal.join(format!("{now:013}-999999-dead-0000000001.json")),
        entry.to_string(),
    )
    .unwrap();
    wait_until_answered("the daemon reading the entry", LEARNS, || async {
        metrics(&m, &c)
            .await
            .contains("tfmirror_cache_index_journal_items_total 1\n")
    })
    .await;
    remove_by_hand(&cache, "1.0.0");
    assert_eq!(m.mirror.usage(), (2 * size, 2));
    // Silent for longer than a live writer ever is: the daemon takes it
    // for dead and reconciles.
    let before = ended(&m);
    m.clock.advance(Duration::from_secs(31));
    reconciled(&m, "writer_lost", before).await;
    assert_eq!(m.mirror.usage(), (size, 1));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_that_cannot_be_checked_or_is_stale_is_not_trusted() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0"], 0).await;
    let m = RunningMirror::start(config.clone()).await;
    fetch_each(&m, &Client::trusting(&m.ca_file), &["1.0.0", "2.0.0"]).await;
    m.stop().await;
    let good = std::fs::read(snapshot(&cache)).unwrap();

    // Each damaged snapshot is set aside, and the start builds the index
    // from nothing (no reconciliation counts a correction).
    let mut flipped = good.clone();
    flipped[good.len() / 2] ^= 1;
    for (what, bytes) in [
        ("truncated", good[..good.len() - 7].to_vec()),
        ("flipped", flipped),
        ("not a snapshot", b"not a snapshot".to_vec()),
    ] {
        std::fs::write(snapshot(&cache), &bytes).unwrap();
        let m = RunningMirror::start(config.clone()).await;
        assert!(corrected(&m).none(), "{what}: built from nothing");
        assert_eq!(m.mirror.usage(), (2 * size, 2), "{what}");
        assert!(!snapshot(&cache).exists(), "{what}: set aside");
        m.stop().await;
    }

    // Stale: a command changed the cache since (gc, which notes it), so
    // the snapshot is not read at all.
    assert!(snapshot(&cache).is_file());
    let gc_config = config.clone();
    tokio::task::spawn_blocking(move || {
        tfmirror::commands::gc::command(&gc_config, Some(bytesize::ByteSize(size)))
    })
    .await
    .unwrap()
    .unwrap();
    let m = RunningMirror::start(config).await;
    assert!(corrected(&m).none(), "the stale snapshot was not read");
    assert_eq!(m.mirror.usage(), (size, 1));
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_that_walks_the_cache_evicts_what_is_over_its_size_once_the_walk_ends() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let versions = ["1.0.0", "2.0.0", "3.0.0"];
    let (_origin, mut config, size) = published(&setup, &versions, 0).await;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &versions).await;
    m.stop().await;
    // No snapshot, as after a crash; the store records 3.0.0 as used
    // last, then 1.0.0, then 2.0.0 (an hour apart).
    std::fs::remove_file(snapshot(&cache)).unwrap();
    let hours_ago =
        |h: u64| std::time::SystemTime::now() - std::time::Duration::from_secs(h * 3600);
    for (v, h) in [("1.0.0", 2), ("2.0.0", 3), ("3.0.0", 1)] {
        let mut h1 = archive_file(&cache, v).into_os_string();
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
    assert_eq!(on_disk(&cache), ["3.0.0"]);
    assert_eq!(m.mirror.usage(), (size, 1));
    let metrics = metrics(&m, &c).await;
    assert!(
        metrics.contains("tfmirror_cache_index_walking 0\n"),
        "{metrics}"
    );
    m.stop().await;
    assert!(
        snapshot(&cache).is_file(),
        "a stop after the walk writes the snapshot"
    );
}

/// A bucket `name` of `weed` and `config` moved onto it.
async fn on_bucket(
    weed: &common::seaweed::Seaweed,
    setup: &Setup,
    config: &mut Config,
    name: &str,
) {
    weed.create_bucket(name).await;
    common::seaweed::use_bucket(config, weed.s3_config(name, setup.dir.path()));
    config.cache.max_size = None;
}

/// Removes an archive's objects from the bucket directly, as a lifecycle
/// rule would.
async fn expire(weed: &common::seaweed::Seaweed, bucket: &str, v: &str) {
    use futures_util::TryStreamExt;
    use object_store::{ObjectStore, ObjectStoreExt};
    let store = weed.object_store(bucket);
    let gone: Vec<object_store::path::Path> = store
        .list(Some(&"mirror/providers".into()))
        .map_ok(|o| o.location)
        .try_collect::<Vec<_>>()
        .await
        .unwrap()
        .into_iter()
        .filter(|p| p.as_ref().contains(&format!("/{v}/terraform-provider-")))
        .collect();
    assert_eq!(gone.len(), 2, "the archive and its h1: {gone:?}");
    for p in &gone {
        store.delete(p).await.unwrap();
    }
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instances_on_one_bucket_converge_on_what_it_holds() {
    use common::seaweed::*;
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let (_origin, mut config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0"], 0).await;
    on_bucket(&weed, &setup, &mut config, "converge").await;
    let b_config = elsewhere(&config, &setup, "b");
    let a = RunningMirror::start(config.clone()).await;
    let b = RunningMirror::start(b_config.clone()).await;
    assert_eq!(b.mirror.usage(), (0, 0));

    // A stores three archives; B, which never saw them, counts them.
    fetch_each(
        &a,
        &Client::trusting(&a.ca_file),
        &["1.0.0", "2.0.0", "3.0.0"],
    )
    .await;
    counts(&b, 3, size, "B counting what A stored").await;
    let page = b.mirror.held_page(1, 10);
    assert_eq!(page.rows[0].1.len(), 3);

    // A lifecycle rule removes 2.0.0: both count it at their next
    // scheduled reconciliation.
    expire(&weed, "converge", "2.0.0").await;
    for m in [&a, &b] {
        let before = ended(m);
        m.clock.advance(config.cache.reconcile_every);
        reconciled(m, "schedule", before).await;
        assert_eq!(m.mirror.usage(), (2 * size, 2));
    }
    // An instance started now counts the same.
    let c_config = elsewhere(&config, &setup, "c");
    let c = RunningMirror::start(c_config).await;
    assert_eq!(c.mirror.usage(), (2 * size, 2));
    c.stop().await;

    // B stops cleanly; meanwhile 3.0.0 expires and A stores 2.0.0 again.
    b.stop().await;
    assert!(snapshot(&b_config.cache.dir).is_file());
    expire(&weed, "converge", "3.0.0").await;
    fetch_each(&a, &Client::trusting(&a.ca_file), &["2.0.0"]).await;
    // B's start from its snapshot (1.0.0 and 3.0.0) is reconciled.
    let b = RunningMirror::start(b_config).await;
    assert_eq!((corrected(&b).added, corrected(&b).dropped), (1, 1));
    assert_eq!(b.mirror.usage(), (2 * size, 2));
    b.stop().await;
    a.stop().await;
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconciliation_the_bucket_refuses_is_tried_again_and_a_stop_meanwhile_says_so() {
    use common::s3_gate::S3Gate;
    use common::seaweed::*;
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let versions = ["1.0.0", "2.0.0", "3.0.0"];
    let (_origin, mut config, size) = published(&setup, &versions, 0).await;
    on_bucket(&weed, &setup, &mut config, "index").await;
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &versions).await;
    m.stop().await;
    let cache = config.cache.dir.clone();
    assert!(snapshot(&cache).is_file(), "the snapshot is kept locally");

    // The bucket refuses the next start's first listing of its archives:
    // the daemon serves from its snapshot meanwhile, and stops before a
    // listing succeeded.
    let mut gated = config.clone();
    let gate = S3Gate::start(weed.s3_addr(), "mirror/providers", 1).await;
    gated.storage.s3.as_mut().unwrap().endpoint = Some(gate.endpoint().parse().unwrap());
    let m = RunningMirror::start_unbuilt(gated.clone()).await;
    let c = Client::trusting(&m.ca_file);
    wait_until("the first listing", LEARNS, || gate.listings() >= 1).await;
    assert!(m.mirror.index_reconciling());
    assert!(!m.mirror.index_walking(), "it started from the snapshot");
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    let metrics = metrics(&m, &c).await;
    assert!(
        metrics.contains("tfmirror_cache_index_reconciling 1\n"),
        "{metrics}"
    );
    let page = c.get(&m.url("/-/status")).await.page_text();
    assert!(
        page.contains("index: reconciling with the store since"),
        "{page}"
    );
    m.stop().await;
    // The snapshot it wrote says no reconciliation confirmed it.
    let store = tfmirror::store::open(&config, false).await.unwrap();
    let seal = tfmirror::mirror::residency::snapshot::Seal {
        location: store.location(),
        changed: tfmirror::store::changes::last(store.as_ref())
            .await
            .unwrap(),
    };
    let (_, confirmed) = tfmirror::mirror::residency::snapshot::take(&cache, &seal).unwrap();
    assert!(!confirmed);

    // Without a snapshot, behind the gate again: the walk from nothing is
    // refused once, tried again 5 s later, and ends.
    let gate = S3Gate::start(weed.s3_addr(), "mirror/providers", 1).await;
    gated.storage.s3.as_mut().unwrap().endpoint = Some(gate.endpoint().parse().unwrap());
    let m = RunningMirror::start_unbuilt(gated).await;
    wait_until("the first listing", LEARNS, || gate.listings() >= 1).await;
    assert!(m.mirror.index_walking());
    // Served meanwhile (from the bucket, through the gate).
    fetch_each(&m, &Client::trusting(&m.ca_file), &["2.0.0"]).await;
    tokio::time::timeout(Duration::from_secs(30), m.mirror.index_built())
        .await
        .expect("the walk was tried again and succeeded");
    assert_eq!(gate.listings(), 2);
    assert!(!m.mirror.index_walking());
    assert_eq!(m.mirror.usage(), (3 * size, 3));
    m.stop().await;
    assert!(
        snapshot(&cache).is_file(),
        "a stop after the walk writes it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_archive_gone_from_the_store_when_eviction_picks_it_is_forgotten_not_evicted() {
    let setup = Setup::new();
    let cache = setup.cache_dir();
    let (_origin, config, size) = published(&setup, &["1.0.0", "2.0.0", "3.0.0"], 2).await;
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0"]).await;
    // The least recently used archive leaves the cache while the daemon
    // serves, and nothing notes it: the index still counts it.
    remove_by_hand(&cache, "1.0.0");
    assert_eq!(m.mirror.usage(), (2 * size, 2));
    // 3.0.0 needs room: eviction picks 1.0.0, finds it gone, forgets it,
    // and that makes the room; 2.0.0, which fits, stays.
    fetch_each(&m, &c, &["3.0.0"]).await;
    assert_eq!(on_disk(&cache), ["2.0.0", "3.0.0"]);
    assert_eq!(m.mirror.usage(), (2 * size, 2));
    let text = metrics(&m, &c).await;
    for line in [
        "tfmirror_cache_index_corrections_total{change=\"dropped\"} 1\n",
        "tfmirror_evictions_total{kind=\"archive\"} 0\n",
        "tfmirror_cache_archives 2\n",
    ] {
        assert!(text.contains(line), "{line}{text}");
    }
    // And 1.0.0 is fetched again when asked for, evicting 2.0.0 for real.
    fetch_each(&m, &c, &["1.0.0"]).await;
    assert_eq!(on_disk(&cache), ["1.0.0", "3.0.0"]);
    let metrics = metrics(&m, &c).await;
    assert!(
        metrics.contains("tfmirror_evictions_total{kind=\"archive\"} 1\n"),
        "{metrics}"
    );
    m.stop().await;
}

/// The versions whose archive `bucket` holds, in order.
async fn in_bucket(weed: &common::seaweed::Seaweed, bucket: &str) -> Vec<String> {
    let mut held: Vec<String> = (weed.keys(bucket).await.into_iter())
        .filter(|k| k.starts_with("mirror/providers/") && k.ends_with(".zip"))
        .map(|k| k.rsplit('/').nth(1).unwrap().to_owned())
        .collect();
    held.sort();
    held
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_bucket_the_least_recently_used_archive_is_evicted_from_the_bucket() {
    use common::seaweed::*;
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let versions = ["1.0.0", "2.0.0", "3.0.0", "4.0.0"];
    let (_origin, mut config, size) = published(&setup, &versions, 0).await;
    on_bucket(&weed, &setup, &mut config, "evict").await;
    config.cache.max_size = Some(bytesize::ByteSize(2 * size));
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    fetch_each(&m, &c, &["1.0.0", "2.0.0"]).await;
    // 1.0.0 used again: 2.0.0 is now the least recently used.
    fetch_each(&m, &c, &["1.0.0"]).await;
    assert_eq!(in_bucket(&weed, "evict").await, ["1.0.0", "2.0.0"]);
    fetch_each(&m, &c, &["3.0.0"]).await;
    assert_eq!(in_bucket(&weed, "evict").await, ["1.0.0", "3.0.0"]);
    assert_eq!(m.mirror.usage(), (2 * size, 2));
    // A lifecycle rule takes 1.0.0 meanwhile; the next arrival's eviction
    // finds it gone and forgets it, and 3.0.0 stays.
    expire(&weed, "evict", "1.0.0").await;
    fetch_each(&m, &c, &["4.0.0"]).await;
    assert_eq!(in_bucket(&weed, "evict").await, ["3.0.0", "4.0.0"]);
    let metrics = metrics(&m, &c).await;
    for line in [
        "tfmirror_evictions_total{kind=\"archive\"} 1\n",
        "tfmirror_cache_index_corrections_total{change=\"dropped\"} 1\n",
    ] {
        assert!(metrics.contains(line), "{line}{metrics}");
    }
    m.stop().await;
}
