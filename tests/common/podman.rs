//! Podman, as the container and Kubernetes tests drive it: rootful, with
//! the settings of `CONTAINERS_CONF` (the README's test command writes
//! them), and the image of `deploy/container/Containerfile` built from the
//! binary under test on the base image `CONTAINER_BASE_IMAGE`.

use std::path::Path;
use std::process::{Command, Output};

/// Runs `podman` with `args` to its end.
pub fn podman(args: &[&str]) -> Output {
    Command::new("podman").args(args).output().unwrap()
}

/// What a command printed, both streams.
pub fn printed(out: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Builds tfmirror's image from the binary under test (placed where the
/// release binary would be), tagged `localhost/tfmirror-test:<tag>`, and
/// returns its name. Images this replaces are removed.
pub fn build_image(tag: &str) -> String {
    let base = std::env::var("CONTAINER_BASE_IMAGE")
        .expect("CONTAINER_BASE_IMAGE names the base image; run the README's test command");
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));
    let context = tempfile::tempdir().unwrap();
    let release = context.path().join("target/release");
    std::fs::create_dir_all(&release).unwrap();
    let Some(binary) = option_env!("CARGO_BIN_EXE_tfmirror") else {
        panic!("the tfmirror binary is known to integration tests only");
    };
    std::fs::copy(binary, release.join("tfmirror")).unwrap();
    let deploy = context.path().join("deploy/container");
    std::fs::create_dir_all(deploy.join("volume")).unwrap();
    for file in ["tfmirror.toml", "volume/.keep"] {
        std::fs::copy(repo.join("deploy/container").join(file), deploy.join(file)).unwrap();
    }
    let name = format!("localhost/tfmirror-test:{tag}");
    let before = podman(&["image", "inspect", "--format", "{{.Id}}", &name]);
    let containerfile = repo.join("deploy/container/Containerfile");
    let out = podman(&[
        "build",
        "--quiet",
        "--layers=false",
        "--format",
        "docker",
        "-f",
        containerfile.to_str().unwrap(),
        "--build-arg",
        &format!("BASE={base}"),
        "--build-arg",
        &format!("VERSION={}", env!("CARGO_PKG_VERSION")),
        "-t",
        &name,
        context.path().to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "podman build failed:\n{}",
        printed(&out)
    );
    // The image this one replaces, if it was another.
    let old = String::from_utf8_lossy(&before.stdout).trim().to_owned();
    let new = podman(&["image", "inspect", "--format", "{{.Id}}", &name]);
    if before.status.success() && old != String::from_utf8_lossy(&new.stdout).trim() {
        let _ = podman(&["rmi", &old]);
    }
    name
}

/// Whether the daemon at `url` answers `tfmirror probe --ready` within a
/// minute (asked from `home`).
pub async fn becomes_ready(home: &Path, url: &str) -> bool {
    super::answered_within(std::time::Duration::from_secs(60), || {
        let mut probe = super::daemon::tfmirror(home);
        probe.args(["probe", "--ready", "--url", url]);
        async move {
            tokio::task::spawn_blocking(move || probe.output().unwrap().status.success())
                .await
                .unwrap()
        }
    })
    .await
}
