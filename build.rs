//! Decides which tests can run on this machine. A test that needs a tool
//! or a privilege the machine lacks is marked ignored, with the reason,
//! through a `cfg` set here; it never runs and reports a pass, and the
//! build warns which tools are missing. The decision is made again when a
//! tool appears: this script reruns when a directory on `PATH` or a tool's
//! path changes. Under `CI=true` nothing is marked: every such test runs,
//! and fails when what it needs is missing.

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
    "tfmirror_no_kustomize",
    "tfmirror_no_oidc_provider",
    "tfmirror_no_go",
    "tfmirror_no_govulncheck",
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
    // A worktree has its own HEAD, and shares the branches of the common
    // directory.
    for dir in [
        git(&["rev-parse", "--git-dir"]),
        git(&["rev-parse", "--git-common-dir"]),
    ]
    .into_iter()
    .flatten()
    {
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

/// Reruns this script when a file or directory at `path` (or, when it
/// does not exist yet, the nearest directory above it that does) changes,
/// so that a tool installed after a build is seen by the next one.
fn watch(path: &Path) {
    let existing = path.ancestors().find(|p| p.exists());
    if let Some(p) = existing.filter(|p| *p != Path::new("/")) {
        println!("cargo::rerun-if-changed={}", p.display());
    }
}

/// Whether kubectl's built-in Kustomize is 4.1 or newer (the overlays'
/// `labels` field needs it); its version as it says it, for the notice.
fn kubectl_kustomize() -> (bool, String) {
    let Ok(out) = Command::new("kubectl")
        .args(["version", "--client"])
        .output()
    else {
        return (false, "no kubectl".into());
    };
    let text = String::from_utf8_lossy(&out.stdout);
    let Some(version) = text
        .lines()
        .find_map(|l| l.strip_prefix("Kustomize Version: v"))
    else {
        return (false, "kubectl without a Kustomize version".into());
    };
    let mut parts = version.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let (major, minor) = (parts.next().unwrap_or(0), parts.next().unwrap_or(0));
    (
        (major, minor) >= (4, 1),
        format!("kubectl's Kustomize v{major}.{minor}"),
    )
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
        "KUSTOMIZE_BIN",
        "AXE_JS",
        "CHROMEDRIVER",
        "OIDC_PROVIDER_DIR",
        "NODE_BIN",
        "TERRAFORM_NEWER_BIN",
    ] {
        println!("cargo::rerun-if-env-changed={var}");
    }
    println!("cargo::rerun-if-changed=build.rs");
    if std::env::var("CI").as_deref() == Ok("true") {
        return;
    }
    // What the decisions below look at: a tool installed (or removed)
    // later changes one of these, and the next build decides again.
    for dir in std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()) {
        watch(&dir);
    }
    for var in [
        "TERRAFORM_BIN",
        "WEED_BIN",
        "CHROMIUM",
        "ORAS_PY",
        "KUSTOMIZE_BIN",
        "AXE_JS",
        "CHROMEDRIVER",
        "OIDC_PROVIDER_DIR",
        "NODE_BIN",
        "TERRAFORM_NEWER_BIN",
    ] {
        if let Some(path) = std::env::var_os(var) {
            watch(Path::new(&path));
        }
    }
    watch(Path::new("/usr/bin/chromium"));
    watch(Path::new("/usr/bin/chromedriver"));
    watch(Path::new("/usr/bin/docker-registry"));
    let runs = |program: &str, arg: &str| {
        Command::new(program)
            .arg(arg)
            .output()
            .is_ok_and(|o| o.status.success())
    };
    let terraform = std::env::var_os("TERRAFORM_BIN").is_some_and(|p| Path::new(&p).is_file());
    let seaweedfs = std::env::var_os("WEED_BIN").is_some_and(|p| Path::new(&p).is_file());
    let file = |var: &str, default: &str| {
        std::env::var_os(var)
            .map_or_else(|| Path::new(default).is_file(), |p| Path::new(&p).is_file())
    };
    // Chromium, the driver the page tests drive it with, and axe-core.
    let chromium = file("CHROMIUM", "/usr/bin/chromium")
        && file("CHROMEDRIVER", "/usr/bin/chromedriver")
        && std::env::var_os("AXE_JS").is_some_and(|p| Path::new(&p).is_file());
    let systemd =
        runs("systemd-analyze", "--version") && runs("systemd-socket-activate", "--version");
    let prometheus = runs("promtool", "--version") && runs("prometheus", "--version");
    // Debian's golang-go: `go version -m` reads build information
    // independently, and `go build` makes the Mach-O and PE samples.
    let go = runs("go", "version");
    // Debian's govulncheck: the independent matcher of advisories by
    // symbol (it prints its usage, with a failing status, when asked).
    let govulncheck = go
        && Command::new("govulncheck")
            .arg("-h")
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stderr).contains("govulncheck"));
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
    // Kustomize 4.1 or newer: a standalone one (scripts/install-kustomize),
    // or kubectl's own.
    let (kubectl_new, kubectl_says) = kubectl_kustomize();
    let kustomize = kubectl_new
        || std::env::var_os("KUSTOMIZE_BIN")
            .is_some_and(|p| !p.is_empty() && Path::new(&p).is_file());
    // npm's oidc-provider (scripts/install-oidc-provider) and Node to run it
    // (`NODE_BIN`, which scripts/test sets, or `node` on PATH).
    let node = std::env::var("NODE_BIN").unwrap_or_else(|_| "node".into());
    let oidc_provider = runs(&node, "--version")
        && std::env::var_os("OIDC_PROVIDER_DIR")
            .is_some_and(|p| Path::new(&p).join("node_modules/oidc-provider").is_dir());
    // A Terraform newer than v1.0.3, for the paths only it takes: the tests
    // that compare both CLIs say what they leave out without one.
    let newer_terraform = std::env::var_os("TERRAFORM_NEWER_BIN")
        .is_some_and(|p| Path::new(&p).is_file())
        || Command::new("terraform")
            .arg("version")
            .output()
            .is_ok_and(|o| {
                let text = String::from_utf8_lossy(&o.stdout);
                text.starts_with("Terraform v") && !text.starts_with("Terraform v1.0.3")
            });
    if !newer_terraform {
        println!(
            "cargo::warning=no Terraform newer than v1.0.3 on PATH (or TERRAFORM_NEWER_BIN): the tests that compare the CLIs leave out what only a newer one does"
        );
    }
    let mut ignored = Vec::new();
    for (present, cfg, what) in [
        (
            oidc_provider,
            "tfmirror_no_oidc_provider",
            "node and OIDC_PROVIDER_DIR".to_owned(),
        ),
        (
            terraform,
            "tfmirror_no_terraform",
            "TERRAFORM_BIN".to_owned(),
        ),
        (seaweedfs, "tfmirror_no_seaweedfs", "WEED_BIN".to_owned()),
        (
            chromium,
            "tfmirror_no_chromium",
            "chromium, chromium-driver and AXE_JS".to_owned(),
        ),
        (
            systemd,
            "tfmirror_no_systemd_tools",
            "systemd's tools".to_owned(),
        ),
        (root, "tfmirror_not_root", "root".to_owned()),
        (go, "tfmirror_no_go", "go (golang-go)".to_owned()),
        (
            govulncheck,
            "tfmirror_no_govulncheck",
            "go and govulncheck".to_owned(),
        ),
        (
            prometheus,
            "tfmirror_no_prometheus",
            "prometheus".to_owned(),
        ),
        (
            oci,
            "tfmirror_no_oci_tools",
            "docker-registry and ORAS_PY".to_owned(),
        ),
        (
            podman && root,
            "tfmirror_no_podman",
            "Podman as root".to_owned(),
        ),
        (
            kustomize,
            "tfmirror_no_kustomize",
            format!("Kustomize 4.1 or newer ({kubectl_says}, no KUSTOMIZE_BIN)"),
        ),
    ] {
        if !present {
            println!("cargo::rustc-cfg={cfg}");
            ignored.push(what);
        }
    }
    // A developer's run says what it leaves out, here and in each ignored
    // test's reason; installing a tool rebuilds (see `watch` above).
    if !ignored.is_empty() {
        println!(
            "cargo::warning=tests that need these are ignored (scripts/test provides them all): {}",
            ignored.join("; ")
        );
    }
}
