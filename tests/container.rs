//! tfmirror's container image (`deploy/container/Containerfile`), built
//! with Podman on a base image made from Debian's packages
//! (`scripts/install-container-base`, `CONTAINER_BASE_IMAGE`) and run as a
//! platform team runs it: an unprivileged user, a read-only root
//! filesystem, state and cache on volumes, the health check, a clean stop,
//! configuration from the environment, a bad configuration refused, and
//! two containers on one bucket serving the real Terraform CLI.
//!
//! Podman runs rootful with the settings of `CONTAINERS_CONF` (the README's
//! test command writes them) and the host's network, so that nothing
//! changes the host's firewall.

mod common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use common::podman::{build_image, podman, printed as text};
use common::*;

/// The unprivileged user the image runs as.
const USER: u32 = 65532;

/// The image, built once for the tests of this file.
fn image() -> &'static str {
    static IMAGE: OnceLock<String> = OnceLock::new();
    IMAGE.get_or_init(|| build_image("container"))
}

/// A running container, removed when dropped.
struct Container {
    name: String,
}

impl Container {
    /// `podman run -d` with `args` before the image and `command` after it.
    fn run(args: &[&str], command: &[&str]) -> Container {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "tfmirror-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        );
        // The health check is run by the tests (`podman healthcheck run`),
        // not on a timer of systemd's, which these machines may not run.
        let mut all = vec![
            "run",
            "-d",
            "--name",
            &name,
            "--network",
            "host",
            "--health-interval",
            "disable",
        ];
        all.extend_from_slice(args);
        all.push(image());
        all.extend_from_slice(command);
        let out = podman(&all);
        assert!(out.status.success(), "podman run failed:\n{}", text(&out));
        Container { name }
    }

    fn logs(&self) -> String {
        text(&podman(&["logs", &self.name]))
    }

    fn inspect(&self, format: &str) -> String {
        let out = podman(&["inspect", "--format", format, &self.name]);
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Waits until the image's own health check passes.
    async fn wait_healthy(&self) {
        let name = self.name.clone();
        let healthy = answered_within(Duration::from_secs(60), || {
            let name = name.clone();
            async move {
                tokio::task::spawn_blocking(move || {
                    podman(&["healthcheck", "run", &name]).status.success()
                })
                .await
                .unwrap()
            }
        })
        .await;
        assert!(healthy, "the health check never passed:\n{}", self.logs());
    }
}

impl Drop for Container {
    fn drop(&mut self) {
        let _ = podman(&["rm", "--force", "--time", "0", &self.name]);
    }
}

/// A directory for a volume, writable by the image's user.
fn volume(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(&path).unwrap();
    std::os::unix::fs::chown(&path, Some(USER), Some(USER)).unwrap();
    path
}

fn mount(host: &Path, inside: &str) -> String {
    format!("{}:{inside}", host.display())
}

#[cfg_attr(
    tfmirror_no_podman,
    ignore = "needs root, Podman and CONTAINER_BASE_IMAGE; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_image_runs_unprivileged_read_only_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (data, cache) = (volume(dir.path(), "data"), volume(dir.path(), "cache"));
    let listen = format!("TFMIRROR_SERVER__LISTEN=127.0.0.1:{}", free_port());
    let (data_mount, cache_mount) = (
        mount(&data, "/var/lib/tfmirror"),
        mount(&cache, "/var/cache/tfmirror"),
    );
    let c = Container::run(
        &[
            "--read-only",
            "-e",
            &listen,
            "-v",
            &data_mount,
            "-v",
            &cache_mount,
        ],
        &[],
    );
    c.wait_healthy().await;
    // The daemon runs as the unprivileged user, and wrote its state to
    // the volume, not to the image.
    let pid = c.inspect("{{.State.Pid}}");
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let uid = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    assert!(
        uid.split_whitespace().skip(1).all(|u| u == "65532"),
        "{uid}"
    );
    assert!(data.join("tls/ca.pem").is_file());
    let write = podman(&["exec", &c.name, "touch", "/etc/tfmirror/written"]);
    assert!(!write.status.success(), "the root filesystem is writable");
    assert!(
        text(&write).contains("Read-only file system"),
        "{}",
        text(&write)
    );
    let version = podman(&[
        "image",
        "inspect",
        "--format",
        "{{index .Labels \"org.opencontainers.image.version\"}}",
        image(),
    ]);
    assert_eq!(
        String::from_utf8_lossy(&version.stdout).trim(),
        env!("CARGO_PKG_VERSION")
    );
    // `podman stop` sends SIGTERM and waits its default 10 s before
    // SIGKILL: the daemon ends by itself, cleanly, well within it.
    let started = Instant::now();
    let stop = podman(&["stop", &c.name]);
    assert!(stop.status.success(), "{}", text(&stop));
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(c.inspect("{{.State.ExitCode}}"), "0", "{}", c.logs());
    assert!(c.logs().contains("stopped"), "{}", c.logs());
}

#[cfg_attr(
    tfmirror_no_podman,
    ignore = "needs root, Podman and CONTAINER_BASE_IMAGE; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configuration_from_the_environment_alone_serves() {
    let dir = tempfile::tempdir().unwrap();
    let (data, cache) = (volume(dir.path(), "data"), volume(dir.path(), "cache"));
    let port = free_port();
    let listen = format!("TFMIRROR_SERVER__LISTEN=127.0.0.1:{port}");
    let (data_mount, cache_mount) = (mount(&data, "/srv/state"), mount(&cache, "/srv/cache"));
    // No configuration file: `serve` alone, every setting from TFMIRROR_….
    let c = Container::run(
        &[
            "--read-only",
            "-e",
            &listen,
            "-e",
            "TFMIRROR_SERVER__TLS=false",
            "-e",
            "TFMIRROR_SERVER__DATA_DIR=/srv/state",
            "-e",
            "TFMIRROR_CACHE__DIR=/srv/cache",
            "-v",
            &data_mount,
            "-v",
            &cache_mount,
        ],
        &["serve"],
    );
    let url = format!("http://127.0.0.1:{port}");
    let ready = common::podman::becomes_ready(dir.path(), &url).await;
    assert!(ready, "never ready:\n{}", c.logs());
    let page = podman(&[
        "exec",
        &c.name,
        "/usr/local/bin/tfmirror",
        "probe",
        "--url",
        &url,
    ]);
    assert!(page.status.success(), "{}", text(&page));
    // The state went where the environment said.
    assert!(std::fs::read_dir(&data).unwrap().next().is_some());
}

#[cfg_attr(
    tfmirror_no_podman,
    ignore = "needs root, Podman and CONTAINER_BASE_IMAGE; scripts/test provides them"
)]
#[test]
fn a_bad_configuration_stops_the_container_with_the_error() {
    let out = podman(&[
        "run",
        "--rm",
        "--network",
        "host",
        "-e",
        "TFMIRROR_SERVER__SHUTDOWN_GRACE=soon",
        "--health-interval",
        "disable",
        image(),
    ]);
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr).to_lowercase();
    assert!(
        stderr.contains("tfmirror: invalid configuration") && stderr.contains("shutdown_grace"),
        "{stderr}"
    );
}

#[cfg_attr(
    any(tfmirror_no_podman, tfmirror_no_terraform, tfmirror_no_seaweedfs),
    ignore = "needs root, Podman, CONTAINER_BASE_IMAGE, TERRAFORM_BIN and WEED_BIN; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_containers_on_one_bucket_serve_terraform_with_one_download() {
    use common::seaweed::Seaweed;
    let terraform = PathBuf::from(std::env::var_os("TERRAFORM_BIN").expect("TERRAFORM_BIN"));
    let weed = Seaweed::start().await;
    weed.create_bucket("containers").await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let home = setup.dir.path();
    // The containers read the origin's authority and the bucket's secret
    // from the test's directory, mounted read-only at the same path.
    std::fs::set_permissions(home, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let config = home.join("container.toml");
    std::fs::write(
        &config,
        format!(
            "[server]\nlisten = \"0.0.0.0:8443\"\ndata_dir = \"/var/lib/tfmirror\"\nshutdown_grace = \"8s\"\n[cache]\ndir = \"/var/cache/tfmirror\"\n[upstream]\nallowed_hosts = []\nca_file = \"{ca}\"\nallow_private_addresses = true\n[upstream.hosts.\"registry.origin.test\"]\nservices = {{ \"providers.v1\" = \"{api}\" }}\n{storage}",
            ca = home.join("origin-ca.pem").display(),
            api = origin.providers_url(),
            storage = weed.storage_toml("containers", home),
        ),
    )
    .unwrap();
    let start = |n: &str| {
        let port = free_port();
        let (data, cache) = (
            volume(home, &format!("{n}-data")),
            volume(home, &format!("{n}-cache")),
        );
        let args = [
            "--read-only".to_owned(),
            "-e".to_owned(),
            format!("TFMIRROR_SERVER__LISTEN=127.0.0.1:{port}"),
            "-v".to_owned(),
            mount(&config, "/etc/tfmirror/tfmirror.toml:ro"),
            "-v".to_owned(),
            format!("{}:{}:ro", home.display(), home.display()),
            "-v".to_owned(),
            mount(&data, "/var/lib/tfmirror"),
            "-v".to_owned(),
            mount(&cache, "/var/cache/tfmirror"),
        ];
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        (Container::run(&args, &[]), port, data.join("tls/ca.pem"))
    };
    let install = |port: u16, ca: PathBuf, n: &str| {
        let work = home.join(format!("{n}-work"));
        std::fs::create_dir_all(&work).unwrap();
        std::fs::write(
            work.join("main.tf"),
            "terraform {\n  required_providers {\n    widget = {\n      source  = \"registry.origin.test/acme/widget\"\n      version = \"1.1.0\"\n    }\n  }\n}\n",
        )
        .unwrap();
        let mirror = common::terraform::network_mirror(&format!("https://127.0.0.1:{port}"));
        let (ok, out) = common::terraform::init(&terraform, &work, &mirror, &ca);
        assert!(
            ok,
            "terraform init through the {n} container failed:\n{out}"
        );
        assert!(work
            .join(".terraform/providers/registry.origin.test/acme/widget/1.1.0/linux_amd64/terraform-provider-widget_v1.1.0")
            .is_file());
    };
    let downloads = || -> usize {
        origin
            .all_hits()
            .iter()
            .filter(|(path, _)| *path == "/files/terraform-provider-widget_1.1.0_linux_amd64.zip")
            .map(|(_, n)| n)
            .sum()
    };

    let (first, port, ca) = start("first");
    first.wait_healthy().await;
    install(port, ca, "first");
    assert_eq!(downloads(), 1);

    // The origin goes away; the second container has never seen the
    // provider and serves it from the bucket.
    origin.stop();
    let (second, port, ca) = start("second");
    second.wait_healthy().await;
    install(port, ca, "second");
    assert_eq!(downloads(), 1, "one download from the origin in all");
    drop((first, second));
}
