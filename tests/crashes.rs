//! SIGKILL at many points of a write: the daemon while it downloads
//! archives and packages modules, `sync`, `import` and `gc`, on disk and
//! on a bucket. After each kill, everything the cache holds is whole and
//! verified (each archive byte for byte, each record and pin readable,
//! each package a whole tarball, `tfmirror verify` quarantining nothing),
//! and the next start or run completes the interrupted work.
//!
//! The points are picked by a seeded generator: each round kills once a
//! staging file holds a number of bytes (mid-download), once a number of
//! objects are kept, or after a delay, each drawn from the seed. The seed
//! is printed; `CRASH_SEED=<n>` repeats a run.
//!
//! Every kill must land: the process was still running, and the write it
//! targets not complete (the origin holds one archive back until the kill;
//! `import` and `gc`, which read nothing from the origin, run under strace
//! with their renames or removals slowed). A round whose kill came after
//! the work was done fails, and each test says how many of its kills
//! landed.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use common::daemon::*;
use common::seaweed::Seaweed;
use common::*;
use http::StatusCode;

const HOST: &str = "registry.origin.test";
const VERSIONS: [&str; 4] = ["1.0.0", "1.1.0", "1.2.0", "1.3.0"];
const SIZE: usize = 192 * 1024;

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// Kill points drawn from a seed (xorshift64*).
struct Points(u64);

impl Points {
    /// The generator of `CRASH_SEED`, or of a fixed seed; says which.
    fn from_env(test: &str) -> Points {
        let seed = std::env::var("CRASH_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(0x5eed_0056_u64);
        eprintln!("{test}: CRASH_SEED={seed}");
        Points(seed.max(1))
    }

    fn below(&mut self, n: u64) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d) % n.max(1)
    }

    /// A point of a run that keeps up to `objects` objects in the local
    /// cache before its kill (none on a bucket), downloading them
    /// (`downloads`) or copying them.
    fn pick(&mut self, objects: usize, downloads: bool) -> Point {
        let kinds = if objects == 0 { 1 } else { 2 } + u64::from(downloads);
        match self.below(kinds) {
            0 => Point::After(Duration::from_millis(self.below(if downloads {
                400
            } else {
                150
            }))),
            1 if objects > 0 => {
                Point::Kept(1 + usize::try_from(self.below(objects as u64)).unwrap())
            }
            // Below the whole archive, so that the kill comes before it is
            // kept.
            _ => Point::Staged(1 + self.below(SIZE as u64 * 9 / 10)),
        }
    }
}

/// Where a round kills.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// Once at most this many archives and packages are left (eviction).
    Left(usize),
    /// Once a staging file under `tmp/` holds this many bytes.
    Staged(u64),
    /// Once this many archives and packages are kept.
    Kept(usize),
    /// This long after the start.
    After(Duration),
}

/// The archives and module packages kept below `cache`.
fn kept(cache: &Path) -> Vec<String> {
    files_below(cache)
        .into_iter()
        .filter(|f| {
            !f.starts_with("tmp/") && (f.ends_with(".zip") || f.ends_with("package.tar.gz"))
        })
        .collect()
}

fn staged_bytes(cache: &Path) -> u64 {
    std::fs::read_dir(cache.join("tmp")).map_or(0, |d| {
        d.flatten()
            .filter_map(|e| e.metadata().ok())
            .map(|m| m.len())
            .max()
            .unwrap_or(0)
    })
}

/// What a kill found.
#[derive(Debug, Clone, Copy)]
struct Kill {
    /// Archives and packages kept when it came.
    kept: usize,
    /// Whether the process was still running and died of it.
    killed: bool,
}

/// Waits for `point` (or for the process to end first), then kills the
/// process `pid` (`child` itself, or what it runs) with SIGKILL, and waits
/// for `child`.
async fn kill_at(child: &mut Child, pid: u32, cache: &Path, point: Point) -> Kill {
    use std::os::unix::process::ExitStatusExt;
    let start = tokio::time::Instant::now();
    let what = format!("{point:?}, or the process's end");
    wait_until(&what, Duration::from_secs(30), || {
        let reached = match point {
            // Or everything but what is held back is kept: a poll can miss
            // a staging file on a busy machine (each is written whole once
            // it arrived), and nothing else is left to stage.
            Point::Staged(bytes) => {
                staged_bytes(cache) >= bytes || kept(cache).len() + 1 >= every_path().len()
            }
            Point::Kept(n) => kept(cache).len() >= n,
            Point::Left(n) => kept(cache).len() <= n,
            Point::After(d) => start.elapsed() >= d,
        };
        reached || child.try_wait().unwrap().is_some()
    })
    .await;
    let running = child.try_wait().unwrap().is_none();
    let _ = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status();
    let status = child.wait().unwrap();
    Kill {
        kept: kept(cache).len(),
        killed: running && status.signal() == Some(9),
    }
}

/// The process `child` runs under strace: its first child.
fn traced(child: &Child) -> u32 {
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    let mut pid = None;
    for _ in 0..500 {
        pid = std::fs::read_to_string(&children)
            .ok()
            .and_then(|c| c.split_whitespace().next()?.parse().ok());
        if pid.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    pid.expect("strace started the command")
}

/// `tfmirror args` under strace, every call of `calls` delayed by a
/// quarter second on its way back: the command does the same work, slowly
/// enough that a kill lands between two of those calls even when the
/// machine is busy.
fn slowed(home: &Path, args: &[&str], calls: &str) -> Command {
    let plain = tfmirror(home);
    let mut cmd = Command::new("strace");
    cmd.env_clear();
    for (key, value) in plain.get_envs() {
        if let Some(value) = value {
            cmd.env(key, value);
        }
    }
    cmd.args(["-f", "-qq", "-o", "/dev/null", "-e"])
        .arg(format!("trace={calls}"))
        .arg("-e")
        .arg(format!("inject={calls}:delay_exit=250000"))
        .arg("--")
        .arg(plain.get_program())
        .args(args);
    cmd
}

/// Counts a kill that landed: the process died of it, and what it left
/// (`unfinished`, read once it is dead) shows its work was not complete.
/// A process that ended before the kill (a busy machine let it outrun the
/// poller) proves nothing and is not counted; each test asserts that
/// nearly all its kills landed.
fn landed(kill: Kill, unfinished: bool, what: &str, point: Point, count: &mut usize) {
    if !kill.killed {
        eprintln!("{what}: the process had ended before the kill at {point:?}; not counted");
        return;
    }
    assert!(
        unfinished,
        "{what}: the kill at {point:?} came after the work was done ({} kept)",
        kill.kept
    );
    *count += 1;
}

/// What the origin publishes: `bulk` (four big archives, each sent in ten
/// slow pieces) and the module tests' `net` and `sub` modules from git
/// (with `widget`). Returns the archives by file name.
async fn origin(setup: &Setup) -> (FakeOrigin, BTreeMap<String, Vec<u8>>) {
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_net_and_sub(setup, &origin);
    let signer = Signer::new("acme");
    let mut archives = BTreeMap::new();
    for (v, bytes) in publish_big(&origin, &signer, "bulk", &VERSIONS, SIZE) {
        let name = format!("terraform-provider-bulk_{v}_linux_amd64.zip");
        origin.set_fault(
            &format!("/files/{name}"),
            Some(Fault::Trickle(Duration::from_millis(25))),
        );
        archives.insert(name, bytes);
    }
    (origin, archives)
}

/// A configuration file `name`.toml like [`config_file`]'s, on `cache`.
fn config_on(setup: &Setup, origin: &FakeOrigin, name: &str, cache: &Path, extra: &str) -> PathBuf {
    let text = std::fs::read_to_string(config_file(setup, origin, extra))
        .unwrap()
        .replace(s(&setup.cache_dir()), s(cache));
    let path = setup.dir.path().join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Every archive in `cache` is byte for byte the published one, every
/// JSON record parses, every package is a whole gzip tarball, and
/// `verify` quarantines nothing.
async fn assert_whole(
    home: &Path,
    config: &Path,
    cache: &Path,
    archives: &BTreeMap<String, Vec<u8>>,
) {
    for f in files_below(cache) {
        if f.starts_with("tmp/") {
            continue;
        }
        let bytes = std::fs::read(cache.join(&f)).unwrap();
        let name = f.rsplit('/').next().unwrap();
        if let Some(published) = archives.get(name) {
            assert!(bytes == *published, "{f} is not the published archive");
        } else if f.ends_with(".json") {
            serde_json::from_slice::<serde_json::Value>(&bytes)
                .unwrap_or_else(|e| panic!("{f} is not a whole record: {e}"));
        } else if f.ends_with(".tar.gz") {
            let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&bytes[..]));
            for entry in tar.entries().unwrap() {
                let mut entry = entry.unwrap_or_else(|e| panic!("{f}: {e}"));
                std::io::copy(&mut entry, &mut std::io::sink())
                    .unwrap_or_else(|e| panic!("{f} is not a whole package: {e}"));
            }
        }
    }
    let verified = run_tfmirror(home, &["verify", "--config", s(config)]).await;
    assert!(
        verified.ok && verified.stdout.contains(", quarantined 0"),
        "{}{}",
        verified.stdout,
        verified.stderr
    );
}

/// The paths a client asks the daemon for: every archive and both module
/// packages.
fn every_path() -> Vec<String> {
    let mut out: Vec<String> = VERSIONS
        .iter()
        .map(|v| format!("{HOST}/acme/bulk/terraform-provider-bulk_{v}_linux_amd64.zip"))
        .collect();
    for m in ["net", "sub"] {
        out.push(format!(
            "v1/modules/{HOST}/acme/{m}/aws/1.0.0/package.tar.gz"
        ));
    }
    out
}

/// Asks a daemon for everything at once, ignoring the answers (it is
/// killed under them).
fn ask_everything(daemon: &Daemon, ca: &Path) -> Vec<tokio::task::JoinHandle<()>> {
    let client = std::sync::Arc::new(Client::trusting(ca));
    every_path()
        .into_iter()
        .map(|p| {
            let (client, url) = (client.clone(), format!("{}{p}", daemon.url));
            tokio::spawn(async move {
                let _ = tokio::time::timeout(Duration::from_secs(30), client.try_get(&url)).await;
            })
        })
        .collect()
}

/// Asks a daemon for everything, each answered 200 with the published
/// bytes for archives.
async fn assert_everything_served(
    daemon: &Daemon,
    ca: &Path,
    archives: &BTreeMap<String, Vec<u8>>,
) {
    let client = Client::trusting(ca);
    for p in every_path() {
        let got = client.get(&format!("{}{p}", daemon.url)).await;
        assert_eq!(got.status, StatusCode::OK, "{p}");
        if let Some(published) = archives.get(p.rsplit('/').next().unwrap()) {
            assert!(got.body[..] == published[..], "{p} is not whole");
        }
    }
}

fn serve(home: &Path, config: &Path) -> Daemon {
    let mut cmd = tfmirror(home);
    cmd.args(["serve", "--config", s(config)]);
    Daemon::start(cmd)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_daemon_killed_at_any_point_keeps_only_whole_verified_objects_and_completes_on_restart() {
    let setup = Setup::new();
    let (origin, archives) = origin(&setup).await;
    let home = setup.dir.path();
    let ca = home.join("data/tls/ca.pem");
    let mut points = Points::from_env("daemon");
    let all = every_path().len();
    let mut count = 0;
    for round in 0..6 {
        let cache = home.join(format!("cache-{round}"));
        let config = config_on(&setup, &origin, "daemon", &cache, "");
        // One archive is held back until the kill: the daemon cannot have
        // finished before it.
        let point = points.pick(all - 1, true);
        let held_back = origin.hold_file(HELD);
        let mut daemon = serve(home, &config);
        let asked = ask_everything(&daemon, &ca);
        let pid = daemon.child.id();
        let kill = kill_at(&mut daemon.child, pid, &cache, point).await;
        drop(held_back);
        eprintln!("round {round}: killed at {point:?} with {} kept", kill.kept);
        landed(
            kill,
            kill.kept < all,
            &format!("round {round}"),
            point,
            &mut count,
        );
        for a in asked {
            a.abort();
        }
        assert_whole(home, &config, &cache, &archives).await;

        // The restart sweeps what the kill left unfinished and completes
        // every download on the next request.
        let left = files_below(&cache.join("tmp"));
        let mut daemon = serve(home, &config);
        let unswept: Vec<_> = files_below(&cache.join("tmp"))
            .into_iter()
            .filter(|f| left.contains(f))
            .collect();
        assert!(unswept.is_empty(), "round {round}: {unswept:?} not swept");
        // What it counts is what it holds whole: no partial archive.
        let held = kept(&cache)
            .iter()
            .filter(|f| f.starts_with("providers/"))
            .count();
        // The restart walks the cache while it serves: the count is read
        // once the walk is done.
        let built = "archive index built from the store";
        if !daemon.log.contains(built) {
            daemon.wait_for(built);
        }
        let metrics = Client::trusting(&ca)
            .get(&format!("{}metrics", daemon.url))
            .await;
        let counted = format!("tfmirror_cache_archives {held}\n");
        assert!(
            String::from_utf8_lossy(&metrics.body).contains(&counted),
            "round {round}: not {counted}"
        );
        assert_everything_served(&daemon, &ca, &archives).await;
        daemon.signal("TERM");
        let (status, log) = daemon.wait().await;
        assert!(status.success(), "{log}");
        assert_eq!(kept(&cache).len(), all, "round {round}");
        assert_whole(home, &config, &cache, &archives).await;
    }
    eprintln!("daemon: {count} of 6 kills landed mid-write");
    assert!(count >= 5, "only {count} of 6 kills landed mid-write");
}

/// The sync manifest of everything the origin publishes.
fn manifest(home: &Path) -> PathBuf {
    let path = home.join("everything.toml");
    std::fs::write(
        &path,
        format!(
            "platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"{HOST}/acme/bulk\"\n[[module]]\nsource = \"{HOST}/acme/net/aws\"\nversions = \"1.0.0\"\n"
        ),
    )
    .unwrap();
    path
}

/// Runs `cmd` and kills it at `point` (under strace, what strace runs).
async fn run_killed(mut cmd: Command, cache: &Path, point: Point) -> Kill {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let traced_by_strace = cmd.get_program() == "strace";
    let mut child = cmd.spawn().unwrap();
    let pid = if traced_by_strace {
        traced(&child)
    } else {
        child.id()
    };
    kill_at(&mut child, pid, cache, point).await
}

/// `tfmirror args`.
fn command(home: &Path, args: &[&str]) -> Command {
    let mut cmd = tfmirror(home);
    cmd.args(args);
    cmd
}

/// The archive the origin holds back until a kill.
const HELD: &str = "terraform-provider-bulk_1.3.0_linux_amd64.zip";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_import_and_gc_killed_at_any_point_leave_whole_caches_and_complete_when_run_again() {
    let setup = Setup::new();
    let (origin, archives) = origin(&setup).await;
    let home = setup.dir.path();
    let manifest = manifest(home);
    let mut points = Points::from_env("commands");
    let all = every_path().len();
    let full = home.join("full");
    let bundle = home.join("everything.tar");
    let mut count = 0;
    for round in 0..4 {
        // sync
        let cache = home.join(format!("sync-{round}"));
        let config = config_on(&setup, &origin, "sync", &cache, "");
        let sync = ["sync", "--config", s(&config), "--manifest", s(&manifest)];
        let point = points.pick(all - 1, true);
        let held_back = origin.hold_file(HELD);
        let kill = run_killed(command(home, &sync), &cache, point).await;
        drop(held_back);
        eprintln!(
            "sync round {round}: killed at {point:?} with {} kept",
            kill.kept
        );
        let what = format!("sync round {round}");
        landed(kill, kill.kept < all, &what, point, &mut count);
        assert_whole(home, &config, &cache, &archives).await;
        run_ok(home, &sync).await;
        assert_eq!(kept(&cache).len(), all, "sync round {round}");
        assert_whole(home, &config, &cache, &archives).await;
        if round == 0 {
            copy_tree(&cache, &full, &["tmp/"]);
            let config = config_on(&setup, &origin, "full", &full, "");
            run_ok(
                home,
                &["export", "--config", s(&config), "--output", s(&bundle)],
            )
            .await;
        }

        // import
        let site = home.join(format!("import-{round}"));
        let config = config_on(&setup, &origin, "import", &site, "");
        let import = ["import", "--config", s(&config), s(&bundle)];
        // A point the import's own progress reaches (a file staged, some
        // kept), never a time: a busy machine could let a whole import
        // finish within any fixed time after its start.
        let point = match points.below(2) {
            0 => Point::Staged(1 + points.below(SIZE as u64 * 9 / 10)),
            _ => Point::Kept(1 + usize::try_from(points.below(all as u64 - 1)).unwrap()),
        };
        // Each file kept costs three slowed calls (its flush, its rename,
        // the flush of its directory), so that a kill at a count of kept
        // files lands before the next one even when the poller is late.
        let renames = "rename,renameat,renameat2,fsync,fdatasync";
        let kill = run_killed(slowed(home, &import, renames), &site, point).await;
        eprintln!(
            "import round {round}: killed at {point:?} with {} kept",
            kill.kept
        );
        let what = format!("import round {round}");
        landed(kill, kill.kept < all, &what, point, &mut count);
        assert_whole(home, &config, &site, &archives).await;
        run_ok(home, &import).await;
        assert_eq!(kept(&site).len(), all, "import round {round}");
        assert_whole(home, &config, &site, &archives).await;

        // gc, down to two archives' worth
        let limit = format!("{}B", 2 * SIZE + SIZE / 2);
        let gc = ["gc", "--config", s(&config), "--max-size", &limit];
        // As it starts, or after the first of the two evictions it makes
        // (each removal slowed by strace): points of its own progress,
        // never a time, which a busy machine could let it outrun.
        let point = match points.below(3) {
            0 => Point::Left(all),
            _ => Point::Left(all - 1),
        };
        let held_bytes = |site: &Path| -> u64 {
            kept(site)
                .iter()
                .map(|f| std::fs::metadata(site.join(f)).unwrap().len())
                .sum()
        };
        let kill = run_killed(slowed(home, &gc, "unlink,unlinkat"), &site, point).await;
        eprintln!(
            "gc round {round}: killed at {point:?} with {} kept",
            kill.kept
        );
        let over = held_bytes(&site) > (2 * SIZE + SIZE / 2) as u64;
        landed(kill, over, &format!("gc round {round}"), point, &mut count);
        assert_whole(home, &config, &site, &archives).await;
        run_ok(home, &gc).await;
        let held_bytes = held_bytes(&site);
        assert!(
            held_bytes <= (2 * SIZE + SIZE / 2) as u64,
            "gc round {round}: {held_bytes} B left"
        );
        assert_whole(home, &config, &site, &archives).await;
    }
    eprintln!("commands: {count} of 12 kills landed mid-write");
    assert!(count >= 10, "only {count} of 12 kills landed mid-write");
}

/// How many archives are among `held`'s objects.
fn zips(held: &BTreeMap<String, bytes::Bytes>) -> usize {
    held.keys().filter(|k| k.ends_with(".zip")).count()
}

/// Every object in `bucket` below `prefix`, with its bytes.
async fn objects(weed: &Seaweed, bucket: &str, prefix: &str) -> BTreeMap<String, bytes::Bytes> {
    let store = weed.object_store(bucket);
    let mut out = BTreeMap::new();
    for key in weed.keys(bucket).await {
        if !key.starts_with(&format!("{prefix}/")) {
            continue;
        }
        let bytes = object_store::ObjectStoreExt::get(&store, &key.as_str().into())
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        out.insert(key, bytes);
    }
    out
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_a_bucket_a_killed_daemon_or_sync_leaves_only_whole_objects() {
    let weed = Seaweed::start().await;
    let setup = Setup::new();
    let (origin, archives) = origin(&setup).await;
    let home = setup.dir.path();
    let ca = home.join("data/tls/ca.pem");
    let manifest = manifest(home);
    let mut points = Points::from_env("bucket");
    // One bucket, a prefix for each run: SeaweedFS gives each bucket
    // volumes of its own, and has few.
    let bucket = "crash";
    weed.create_bucket(bucket).await;
    let mut count = 0;
    let storage = |prefix: &str| {
        weed.storage_toml(bucket, home)
            .replace("prefix = \"mirror\"", &format!("prefix = \"{prefix}\""))
    };
    for round in 0..3 {
        let cache = home.join(format!("local-{round}"));
        let daemon_prefix = format!("daemon-{round}");
        let config = config_on(&setup, &origin, "bucket", &cache, &storage(&daemon_prefix));
        let assert_bucket_whole = |held: BTreeMap<String, bytes::Bytes>| {
            for (key, bytes) in held {
                if let Some(published) = archives.get(key.rsplit('/').next().unwrap()) {
                    assert!(bytes[..] == published[..], "{key} is not whole");
                } else if key.ends_with(".json") {
                    serde_json::from_slice::<serde_json::Value>(&bytes)
                        .unwrap_or_else(|e| panic!("{key} is not a whole record: {e}"));
                }
            }
        };

        // The daemon, killed while it downloads; restarted, it waits out
        // its own dead claims and completes.
        let held_back = origin.hold_file(HELD);
        let mut daemon = serve(home, &config);
        let asked = ask_everything(&daemon, &ca);
        let point = points.pick(0, true);
        let pid = daemon.child.id();
        let kill = kill_at(&mut daemon.child, pid, &cache, point).await;
        drop(held_back);
        for a in asked {
            a.abort();
        }
        eprintln!("bucket round {round}: daemon killed at {point:?}");
        let held = objects(&weed, bucket, &daemon_prefix).await;
        let what = format!("bucket round {round}: daemon");
        landed(kill, zips(&held) < VERSIONS.len(), &what, point, &mut count);
        assert_bucket_whole(held);
        let daemon = serve(home, &config);
        assert_everything_served(&daemon, &ca, &archives).await;
        daemon.signal("TERM");
        let _ = daemon.wait().await;
        assert_bucket_whole(objects(&weed, bucket, &daemon_prefix).await);
        let verified = run_ok(home, &["verify", "--config", s(&config)]).await;
        assert!(
            verified.stdout.contains(", quarantined 0"),
            "{}",
            verified.stdout
        );

        // sync into a fresh bucket, killed, then run again.
        let sync_prefix = format!("sync-{round}");
        let config = config_on(
            &setup,
            &origin,
            "bucket-sync",
            &cache,
            &storage(&sync_prefix),
        );
        let sync = ["sync", "--config", s(&config), "--manifest", s(&manifest)];
        let point = points.pick(0, true);
        let held_back = origin.hold_file(HELD);
        let kill = run_killed(command(home, &sync), &cache, point).await;
        drop(held_back);
        eprintln!("bucket round {round}: sync killed at {point:?}");
        let held = objects(&weed, bucket, &sync_prefix).await;
        let what = format!("bucket round {round}: sync");
        landed(kill, zips(&held) < VERSIONS.len(), &what, point, &mut count);
        assert_bucket_whole(held);
        run_ok(home, &sync).await;
        let held = objects(&weed, bucket, &sync_prefix).await;
        assert_eq!(
            zips(&held),
            VERSIONS.len(),
            "round {round}: {:?}",
            held.keys()
        );
        assert_bucket_whole(held);
        let verified = run_ok(home, &["verify", "--config", s(&config)]).await;
        assert!(
            verified.stdout.contains(", quarantined 0"),
            "{}",
            verified.stdout
        );
    }
    eprintln!("bucket: {count} of 6 kills landed mid-write");
    assert!(count >= 5, "only {count} of 6 kills landed mid-write");
}
