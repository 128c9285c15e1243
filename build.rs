//! Decides which tests can run on this machine. A test that needs a tool
//! or a privilege the machine lacks is marked ignored, with the reason,
//! through a `cfg` set here; it never runs and reports a pass. Under
//! `CI=true` nothing is marked: every such test runs, and fails when what
//! it needs is missing.

use std::path::Path;
use std::process::Command;

/// Each `cfg` a test can be ignored by.
const CFGS: &[&str] = &[
    "tfmirror_no_terraform",
    "tfmirror_no_seaweedfs",
    "tfmirror_no_chromium",
    "tfmirror_no_systemd_tools",
    "tfmirror_not_root",
    "tfmirror_no_prometheus",
    "tfmirror_no_oci_tools",
    "tfmirror_no_podman",
    "tfmirror_no_kubectl",
];

/// `tfmirror --version`'s line: the package's version and, when built
/// from a git checkout, the commit and the build date (`SOURCE_DATE_EPOCH`
/// when set, for reproducible builds; else the commit's date), as
/// `0.1.0 (commit 1a2b3c4d5e6f, built 2026-11-27)`.
fn version_line() -> String {
    let version = std::env::var("CARGO_PKG_VERSION").unwrap_or_default();
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
            .filter(|s| !s.is_empty())
    };
    let Some(commit) = git(&["rev-parse", "--short=12", "HEAD"]) else {
        return version;
    };
    if let Some(dir) = git(&["rev-parse", "--git-dir"]) {
        // Only paths that exist: cargo takes a missing one as changed, and
        // would build the crate again every time. (`git pack-refs`, which
        // makes `packed-refs`, empties `refs/heads` as it does.)
        for path in ["HEAD", "refs/heads", "packed-refs"] {
            if std::path::Path::new(&dir).join(path).exists() {
                println!("cargo::rerun-if-changed={dir}/{path}");
            }
        }
    }
    println!("cargo::rerun-if-env-changed=SOURCE_DATE_EPOCH");
    let date = match std::env::var("SOURCE_DATE_EPOCH") {
        Ok(epoch) => epoch.trim().parse::<u64>().ok().map(|secs| {
            let when = std::time::UNIX_EPOCH + std::time::Duration::from_secs(secs);
            humantime::format_rfc3339(when).to_string()[..10].to_owned()
        }),
        Err(_) => git(&["log", "-1", "--date=short", "--format=%cd"]),
    };
    match date {
        Some(date) => format!("{version} (commit {commit}, built {date})"),
        None => format!("{version} (commit {commit})"),
    }
}

fn main() {
    println!("cargo::rustc-env=VERSION_LINE={}", version_line());
    for cfg in CFGS {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
    }
    for var in [
        "CI",
        "TERRAFORM_BIN",
        "WEED_BIN",
        "CHROMIUM",
        "PATH",
        "ORAS_PY",
        "CONTAINER_BASE_IMAGE",
        "CONTAINERS_CONF",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CI").as_deref() == Ok("true") {
        return;
    }
    let runs = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let terraform = std::env::var_os("TERRAFORM_BIN").is_some_and(|p| Path::new(&p).is_file());
    let seaweedfs = std::env::var_os("WEED_BIN").is_some_and(|p| Path::new(&p).is_file());
    let chromium = std::env::var_os("CHROMIUM").map_or_else(
        || Path::new("/usr/bin/chromium").is_file(),
        |p| Path::new(&p).is_file(),
    );
    let systemd =
        runs("systemd-analyze", "--version") && runs("systemd-socket-activate", "--version");
    let prometheus = runs("promtool", "--version") && runs("prometheus", "--version");
    // Debian's docker-registry and PyPI's oras SDK (the push-oci tests).
    let oci = Path::new("/usr/bin/docker-registry").is_file()
        && std::env::var_os("ORAS_PY").is_some_and(|p| Path::new(&p).join("oras").is_dir());
    // Podman and the base image scripts/install-container-base makes (the
    // container tests, which also need root).
    let podman = runs("podman", "--version") && std::env::var_os("CONTAINER_BASE_IMAGE").is_some();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    for (present, cfg) in [
        (terraform, "tfmirror_no_terraform"),
        (seaweedfs, "tfmirror_no_seaweedfs"),
        (chromium, "tfmirror_no_chromium"),
        (systemd, "tfmirror_no_systemd_tools"),
        (root, "tfmirror_not_root"),
        (prometheus, "tfmirror_no_prometheus"),
        (oci, "tfmirror_no_oci_tools"),
        (podman && root, "tfmirror_no_podman"),
        (runs("kubectl", "help"), "tfmirror_no_kubectl"),
    ] {
        if !present {
            println!("cargo::rustc-cfg={cfg}");
        }
    }
}
