//! SIGKILL at many points of a write: the daemon while it downloads
//! archives and packages modules, `sync`, `import` and `gc`, on disk and
//! on a bucket. After each kill, everything the cache holds is whole and
//! verified (each archive byte for byte, each record and pin readable,
//! each package a whole tarball, `tfmirror verify` quarantining nothing),
//! and the next start or run completes the interrupted work.
//!
//! The points are picked by a seeded generator: each round waits until a
//! staging file holds a number of bytes (mid-download), or a number of
//! objects are kept, or a delay has passed, each drawn from the seed; then
//! it kills only once the process is seen, from itself, in the middle of
//! a write: the process is stopped (`SIGSTOP`), its open files and its
//! threads' system calls read from `/proc`, and it is killed (`SIGKILL`)
//! while it has a partial file open in the cache's `tmp/`, or a thread in
//! a write, rename, flush or removal of a file below the cache (the call's
//! descriptor, or its path read from the process's memory) or, on a
//! bucket, a write to a connection to the bucket's port; a write to
//! anything else (the log, a client's or the origin's connection) does not
//! count. Otherwise it is let go on (`SIGCONT`) and looked at again. The
//! system call numbers are x86-64's and aarch64's; elsewhere the tests
//! fail rather than count nothing. `import` and `gc`, which read nothing
//! from the origin, run under strace with those calls slowed, and are
//! looked at while strace holds them. The seed is printed;
//! `CRASH_SEED=<n>` repeats a run.
//!
//! A round whose process ended first, or was never seen mid-write before
//! the deadline, is killed anyway and checked the same, but not counted;
//! each test reports how many of its kills landed mid-write, and what was
//! under way at each, and asserts that nearly all did.

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
/// An archive's size: over the 1 MiB the daemon gathers before each write
/// to a staging file, so that a download is seen on disk half written.
const SIZE: usize = 2560 * 1024;

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

    /// A point while a download is written: a staging file holding some of
    /// an archive.
    fn staged(&mut self) -> Point {
        Point::Staged(1 + self.below(SIZE as u64 * 9 / 10))
    }

    /// A point of a download: a time after the start, or a staging file
    /// holding some of an archive.
    fn pick(&mut self) -> Point {
        match self.below(2) {
            0 => Point::After(Duration::from_millis(self.below(400))),
            _ => self.staged(),
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
#[derive(Debug, Clone)]
struct Kill {
    /// Archives and packages kept when it came.
    kept: usize,
    /// Whether the process was still running and died of it.
    killed: bool,
    /// What the process was seen doing when it was killed: a partial file
    /// it had open, or a system call under way (`None`: seen doing no
    /// write before the deadline).
    under_way: Option<String>,
}

/// Where a write counts: files below the cache (its `tmp/` staging
/// included), and, on a bucket, the connections to it.
#[derive(Debug, Clone, Copy)]
struct Watched<'a> {
    /// The cache directory.
    cache: &'a Path,
    /// The bucket's port, where the store is one.
    bucket: Option<u16>,
}

/// How a system call names what it writes: a descriptor among its
/// arguments (counted from 0), or a path through a pointer, relative to a
/// directory descriptor where it takes one.
#[derive(Debug, Clone, Copy)]
enum Names {
    Fd(usize),
    Path(usize),
    DirAndPath(usize, usize),
}

/// System calls that write, move or remove a file, or flush one to disk,
/// by this machine's numbers, each with where its file is named: `write`,
/// `pwrite64`, `writev`, `pwritev`, `sendfile`, `fsync`, `fdatasync`,
/// `rename`, `unlink`, `unlinkat`, `renameat`, `renameat2`,
/// `copy_file_range`. An architecture whose numbers are not here has none,
/// and [`under_way`] refuses to look.
#[cfg(target_arch = "x86_64")]
const WRITING: &[(u32, &str, Names)] = &[
    (1, "write", Names::Fd(0)),
    (18, "pwrite64", Names::Fd(0)),
    (20, "writev", Names::Fd(0)),
    (296, "pwritev", Names::Fd(0)),
    (40, "sendfile", Names::Fd(0)),
    (74, "fsync", Names::Fd(0)),
    (75, "fdatasync", Names::Fd(0)),
    (82, "rename", Names::Path(0)),
    (87, "unlink", Names::Path(0)),
    (263, "unlinkat", Names::DirAndPath(0, 1)),
    (264, "renameat", Names::DirAndPath(0, 1)),
    (316, "renameat2", Names::DirAndPath(0, 1)),
    (326, "copy_file_range", Names::Fd(2)),
];
/// As on x86-64, by aarch64's numbers (it has no `rename` or `unlink`).
#[cfg(target_arch = "aarch64")]
const WRITING: &[(u32, &str, Names)] = &[
    (64, "write", Names::Fd(0)),
    (68, "pwrite64", Names::Fd(0)),
    (66, "writev", Names::Fd(0)),
    (70, "pwritev", Names::Fd(0)),
    (71, "sendfile", Names::Fd(0)),
    (82, "fsync", Names::Fd(0)),
    (83, "fdatasync", Names::Fd(0)),
    (35, "unlinkat", Names::DirAndPath(0, 1)),
    (38, "renameat", Names::DirAndPath(0, 1)),
    (276, "renameat2", Names::DirAndPath(0, 1)),
    (285, "copy_file_range", Names::Fd(2)),
];
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const WRITING: &[(u32, &str, Names)] = &[];

/// A cache on disk: writes below it count.
fn on_disk(cache: &Path) -> Watched<'_> {
    Watched {
        cache,
        bucket: None,
    }
}

/// What process `pid` is seen writing where `watched` says, read from
/// `/proc` while it stands still: a partial file of the cache's `tmp/` it
/// has open, or a thread in one of the [`WRITING`] calls on a file below
/// the cache (or a connection to the bucket). A write to anything else
/// (the log, a client's connection, the origin's) is not counted.
fn under_way(pid: u32, watched: Watched<'_>) -> Option<String> {
    assert!(
        !WRITING.is_empty(),
        "the crash tests know the system call numbers of x86-64 and aarch64 only, not of {}",
        std::env::consts::ARCH
    );
    let cache = std::fs::canonicalize(watched.cache).unwrap_or_else(|_| watched.cache.into());
    let tmp = cache.join("tmp");
    let fds = std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?;
    for fd in fds.flatten() {
        let Ok(target) = std::fs::read_link(fd.path()) else {
            continue;
        };
        if !target.starts_with(&tmp) {
            continue;
        }
        // Its size as the process's own descriptor sees it (the file may
        // have no name any more).
        let size = std::fs::metadata(fd.path()).map_or(0, |m| m.len());
        if size > 0 {
            return Some(format!("{} open at {size} bytes", target.display()));
        }
    }
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    for task in tasks.flatten() {
        let Ok(call) = std::fs::read_to_string(task.path().join("syscall")) else {
            continue;
        };
        let mut words = call.split_whitespace();
        let Some(number) = words.next().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let args: Vec<u64> = words
            .take(6)
            .filter_map(|w| u64::from_str_radix(w.trim_start_matches("0x"), 16).ok())
            .collect();
        let Some((_, name, names)) = WRITING.iter().find(|(n, _, _)| *n == number) else {
            continue;
        };
        if let Some(what) = written(pid, *names, &args, &cache, watched.bucket) {
            return Some(format!("a thread in {name} on {what}"));
        }
    }
    None
}

/// What a call's arguments `args` name, where that is below `cache` or a
/// connection to the bucket's `port`.
fn written(
    pid: u32,
    names: Names,
    args: &[u64],
    cache: &Path,
    port: Option<u16>,
) -> Option<String> {
    let arg = |i: usize| args.get(i).copied();
    let fd_target = |fd: u64| std::fs::read_link(format!("/proc/{pid}/fd/{fd}")).ok();
    let path = match names {
        Names::Fd(i) => {
            let target = fd_target(arg(i)?)?;
            let text = target.to_string_lossy().into_owned();
            if let Some(inode) = text
                .strip_prefix("socket:[")
                .and_then(|t| t.strip_suffix(']'))
            {
                let port = port?;
                return (remote_port(pid, inode) == Some(port))
                    .then(|| format!("the bucket's connection ({text})"));
            }
            target
        }
        Names::Path(i) => PathBuf::from(string_at(pid, arg(i)?)?),
        Names::DirAndPath(d, i) => {
            let given = PathBuf::from(string_at(pid, arg(i)?)?);
            if given.is_absolute() {
                given
            } else {
                // The descriptor is an `int`: its low 32 bits, AT_FDCWD
                // (-100) for the working directory.
                let low = u32::try_from(arg(d)? & 0xffff_ffff).ok()?;
                let dir = match i32::from_ne_bytes(low.to_ne_bytes()) {
                    -100 => std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?,
                    fd => fd_target(u64::try_from(fd).ok()?)?,
                };
                dir.join(given)
            }
        }
    };
    path.starts_with(cache).then(|| path.display().to_string())
}

/// The string at address `at` of process `pid`'s memory (a path a system
/// call was given), up to its zero byte.
fn string_at(pid: u32, at: u64) -> Option<String> {
    use std::os::unix::fs::FileExt;
    let mem = std::fs::File::open(format!("/proc/{pid}/mem")).ok()?;
    let mut buf = vec![0u8; 4096];
    let got = mem.read_at(&mut buf, at).ok()?;
    let end = buf[..got].iter().position(|b| *b == 0)?;
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

/// The remote port of process `pid`'s TCP connection whose socket has
/// `inode`, from its network namespace's `/proc/…/net/tcp` and `tcp6`.
fn remote_port(pid: u32, inode: &str) -> Option<u16> {
    for table in ["tcp", "tcp6"] {
        let text = std::fs::read_to_string(format!("/proc/{pid}/net/{table}")).ok()?;
        for line in text.lines().skip(1) {
            let fields: Vec<&str> = line.split_whitespace().collect();
            if fields.get(9) == Some(&inode) {
                let port = fields.get(2)?.rsplit(':').next()?;
                return u16::from_str_radix(port, 16).ok();
            }
        }
    }
    None
}

/// Sends `signal` (`STOP`, `CONT`, `KILL`) to `pid`.
fn signal(pid: u32, signal: &str) {
    let _ = Command::new("kill")
        .args([&format!("-{signal}"), &pid.to_string()])
        .status();
}

/// Every process `pid` started, and theirs, as `/proc` lists them.
fn descendants(pid: u32) -> Vec<u32> {
    let mut found = Vec::new();
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        let tasks = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten();
        for task in tasks.flatten() {
            let children =
                std::fs::read_to_string(task.path().join("children")).unwrap_or_default();
            for child in children.split_whitespace().filter_map(|c| c.parse().ok()) {
                found.push(child);
                stack.push(child);
            }
        }
    }
    found
}

/// Waits for `point` (or for the process to end first), then kills the
/// process `pid` (`child` itself, or what it runs) with SIGKILL once it
/// is seen mid-write (see the module's documentation; `traced`: strace
/// holds it, so it is not stopped to be looked at), or after 20 s seen
/// doing no write; and waits for `child`.
async fn kill_at(
    child: &mut Child,
    pid: u32,
    watched: Watched<'_>,
    point: Point,
    traced: bool,
) -> Kill {
    use std::os::unix::process::ExitStatusExt;
    let cache = watched.cache;
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
    let mut seen = None;
    let mut polls = Vec::new();
    let found = answered_within(Duration::from_secs(20), || {
        let running = child.try_wait().unwrap().is_none();
        if running && !traced {
            signal(pid, "STOP");
        }
        seen = if running {
            under_way(pid, watched)
        } else {
            None
        };
        if std::env::var_os("CRASH_DEBUG").is_some() {
            let calls: Vec<String> = std::fs::read_dir(format!("/proc/{pid}/task"))
                .map(|d| {
                    d.flatten()
                        .filter_map(|t| std::fs::read_to_string(t.path().join("syscall")).ok())
                        .map(|c| c.split_whitespace().next().unwrap_or("").to_owned())
                        .collect()
                })
                .unwrap_or_default();
            polls.push(format!(
                "{:?} running={running} seen={seen:?} calls={calls:?}",
                start.elapsed()
            ));
        }
        if running && seen.is_none() && !traced {
            signal(pid, "CONT");
        }
        let done = !running || seen.is_some();
        async move { done }
    })
    .await;
    let running = child.try_wait().unwrap().is_none();
    // The crash takes what the process started with it (a `git` fetching a
    // module's source), as the service's end does under systemd: a child
    // left running would go on writing below `tmp/` while the next start
    // sweeps it.
    let started = descendants(pid);
    signal(pid, "KILL");
    for p in started {
        signal(p, "KILL");
    }
    let status = child.wait().unwrap();
    // strace passes its tracee's death on as its own, by the signal or
    // as the shell's 128 + 9.
    let killed = running && (status.signal() == Some(9) || status.code() == Some(137));
    if running && !killed {
        eprintln!("the process ended with {status} before the kill");
    }
    if !killed || seen.is_none() {
        for p in polls.iter().rev().take(5) {
            eprintln!("  the last looks: {p}");
        }
    }
    Kill {
        kept: kept(cache).len(),
        killed,
        under_way: seen.filter(|_| found && killed),
    }
}

/// The process `child` runs under strace: its child running tfmirror.
fn traced(child: &Child) -> u32 {
    // strace forks short-lived children of its own at start, to learn what
    // the kernel can do: the command is the child running tfmirror.
    let children = format!("/proc/{0}/task/{0}/children", child.id());
    let runs_tfmirror = |pid: &u32| {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .is_ok_and(|exe| exe.file_name().is_some_and(|n| n == "tfmirror"))
    };
    let mut pid = None;
    for _ in 0..500 {
        pid = std::fs::read_to_string(&children).ok().and_then(|c| {
            c.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .find(runs_tfmirror)
        });
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

/// Counts a kill that landed mid-write: the process died of it, and was
/// seen in the middle of a write when it did. One that was not proves
/// nothing about interrupted writes (its cache is checked all the same),
/// and is reported and not counted; each test asserts that nearly all its
/// kills landed.
fn landed(kill: &Kill, what: &str, point: Point, count: &mut usize) {
    match (&kill.under_way, kill.killed) {
        (Some(doing), true) => {
            eprintln!(
                "{what}: killed at {point:?} with {} kept, mid-write: {doing}",
                kill.kept
            );
            *count += 1;
        }
        (None, true) => {
            eprintln!("{what}: killed at {point:?} with {} kept, seen doing no write in 20 s; not counted", kill.kept);
        }
        (_, false) => {
            eprintln!("{what}: the process had ended before the kill at {point:?}; not counted");
        }
    }
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
        // finished before it. It fetches everything at once, so what it
        // keeps comes in a rush at the end: a point while it downloads.
        let point = points.pick();
        let held_back = origin.hold_file(HELD);
        let mut daemon = serve(home, &config);
        let asked = ask_everything(&daemon, &ca);
        let pid = daemon.child.id();
        let kill = kill_at(&mut daemon.child, pid, on_disk(&cache), point, false).await;
        drop(held_back);
        landed(&kill, &format!("round {round}"), point, &mut count);
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
async fn run_killed(mut cmd: Command, watched: Watched<'_>, point: Point) -> Kill {
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let traced_by_strace = cmd.get_program() == "strace";
    let mut child = cmd.spawn().unwrap();
    let pid = if traced_by_strace {
        traced(&child)
    } else {
        child.id()
    };
    kill_at(&mut child, pid, watched, point, traced_by_strace).await
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
        // sync fetches everything at once, so what it keeps comes in a
        // rush at the end: a point while it downloads.
        let point = points.staged();
        let held_back = origin.hold_file(HELD);
        let kill = run_killed(command(home, &sync), on_disk(&cache), point).await;
        drop(held_back);
        landed(&kill, &format!("sync round {round}"), point, &mut count);
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
        // (Up to two before the end, so that a file is still to be
        // written once the point is reached.)
        let point = match points.below(2) {
            0 => points.staged(),
            _ => Point::Kept(1 + usize::try_from(points.below(all as u64 - 2)).unwrap()),
        };
        // Each file kept costs three slowed calls (its flush, its rename,
        // the flush of its directory), so that a kill at a count of kept
        // files lands before the next one even when the poller is late.
        let renames = "rename,renameat,renameat2,fsync,fdatasync";
        let kill = run_killed(slowed(home, &import, renames), on_disk(&site), point).await;
        landed(&kill, &format!("import round {round}"), point, &mut count);
        assert_whole(home, &config, &site, &archives).await;
        run_ok(home, &import).await;
        assert_eq!(kept(&site).len(), all, "import round {round}");
        assert_whole(home, &config, &site, &archives).await;

        // gc, down to two archives' worth
        let limit = format!("{}B", 2 * SIZE + SIZE / 2);
        let gc = ["gc", "--config", s(&config), "--max-size", &limit];
        // As it starts (its removals, each slowed by strace, are then all
        // ahead): a point of its own progress, never a time, which a busy
        // machine could let it outrun.
        let point = Point::Left(all);
        let held_bytes = |site: &Path| -> u64 {
            kept(site)
                .iter()
                .map(|f| std::fs::metadata(site.join(f)).unwrap().len())
                .sum()
        };
        let kill = run_killed(slowed(home, &gc, "unlink,unlinkat"), on_disk(&site), point).await;
        landed(&kill, &format!("gc round {round}"), point, &mut count);
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
        // Writes below the local cache (staging) and to the bucket count.
        let watched = Watched {
            cache: &cache,
            bucket: Some(weed.s3_addr().port()),
        };
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
        let point = points.pick();
        let pid = daemon.child.id();
        let kill = kill_at(&mut daemon.child, pid, watched, point, false).await;
        drop(held_back);
        for a in asked {
            a.abort();
        }
        let held = objects(&weed, bucket, &daemon_prefix).await;
        landed(
            &kill,
            &format!("bucket round {round}: daemon"),
            point,
            &mut count,
        );
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
        let point = points.pick();
        let held_back = origin.hold_file(HELD);
        let kill = run_killed(command(home, &sync), watched, point).await;
        drop(held_back);
        let held = objects(&weed, bucket, &sync_prefix).await;
        landed(
            &kill,
            &format!("bucket round {round}: sync"),
            point,
            &mut count,
        );
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

#[test]
fn a_write_counts_as_mid_write_only_below_the_cache() {
    // Two `dd`s blocked in `write`: one on a pipe nobody reads (as the log
    // is), one on a FIFO below the cache that is opened and not read.
    let dir = tempfile::tempdir().unwrap();
    let cache = dir.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let fifo = cache.join("slow.fifo");
    assert!(Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let dd = |of: &Path, stdout: Stdio| {
        Command::new("dd")
            .args(["if=/dev/zero", "bs=65536", "count=64"])
            .arg(format!("of={}", of.display()))
            .stdout(stdout)
            .stderr(Stdio::null())
            .spawn()
            .unwrap()
    };
    let mut to_pipe = dd(Path::new("/dev/stdout"), Stdio::piped());
    let mut to_cache = dd(&fifo, Stdio::null());
    // The reading end, held open and never read.
    let reader = std::fs::File::open(&fifo).unwrap();
    let watched = on_disk(&cache);
    let in_write = |pid: u32| {
        std::fs::read_to_string(format!("/proc/{pid}/syscall")).is_ok_and(|c| {
            WRITING
                .iter()
                .any(|(n, name, _)| *name == "write" && c.starts_with(&format!("{n} ")))
        })
    };
    let give_up = std::time::Instant::now() + Duration::from_secs(20);
    while !(in_write(to_pipe.id()) && in_write(to_cache.id())) {
        assert!(
            std::time::Instant::now() < give_up,
            "the two dd never blocked in write"
        );
        std::thread::yield_now();
    }
    assert_eq!(under_way(to_pipe.id(), watched), None);
    let seen = under_way(to_cache.id(), watched).expect("a write below the cache");
    assert!(seen.contains("slow.fifo"), "{seen}");
    for child in [&mut to_pipe, &mut to_cache] {
        let _ = child.kill();
        let _ = child.wait();
    }
    drop(reader);
}
