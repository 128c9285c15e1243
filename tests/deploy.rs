//! The systemd units as shipped in `deploy/` pass `systemd-analyze verify`
//! with no warning at all.

use std::path::Path;
use std::process::Command;

/// `systemd-analyze`; the test that calls this is ignored where it is
/// missing, outside CI (see `build.rs`).
fn systemd_analyze() -> &'static str {
    let found = Command::new("systemd-analyze")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        found,
        "systemd-analyze (Debian's systemd package) is needed; run the README's test command"
    );
    "systemd-analyze"
}

#[cfg_attr(
    tfmirror_no_systemd_tools,
    ignore = "needs systemd-analyze (Debian's systemd); scripts/test installs it"
)]
#[test]
fn units_pass_systemd_analyze_verify() {
    let tool = systemd_analyze();
    let deploy = Path::new(env!("CARGO_MANIFEST_DIR")).join("deploy");
    let dir = tempfile::tempdir().unwrap();
    // verify checks that ExecStart's program exists; the package installs it
    // as /usr/bin/tfmirror, so that one path is pointed at the built binary.
    let unit = std::fs::read_to_string(deploy.join("tfmirror.service")).unwrap();
    assert!(unit.contains("ExecStart=/usr/bin/tfmirror serve --config /etc/tfmirror/tfmirror.toml"));
    let unit = unit.replace("/usr/bin/tfmirror", env!("CARGO_BIN_EXE_tfmirror"));
    std::fs::write(dir.path().join("tfmirror.service"), unit).unwrap();
    std::fs::copy(
        deploy.join("tfmirror.socket"),
        dir.path().join("tfmirror.socket"),
    )
    .unwrap();
    let out = Command::new(tool)
        .arg("verify")
        .arg(dir.path().join("tfmirror.service"))
        .arg(dir.path().join("tfmirror.socket"))
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert_eq!(said.trim(), "", "systemd-analyze verify has remarks");
}

/// What `tfmirror check-config` prints for a sample configuration under
/// `deploy/`, as systemd starts it (the unit's directories in the
/// environment); the check must pass.
fn checked(sample: &str) -> String {
    let file = Path::new(env!("CARGO_MANIFEST_DIR")).join(sample);
    let out = Command::new(env!("CARGO_BIN_EXE_tfmirror"))
        .args(["check-config", "--config"])
        .arg(&file)
        .env_clear()
        .env("CACHE_DIRECTORY", "/var/cache/tfmirror")
        .env("STATE_DIRECTORY", "/var/lib/tfmirror")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

#[test]
fn the_production_sample_configuration_is_valid() {
    let text = checked("deploy/tfmirror.toml");
    for line in [
        "dir = \"/var/cache/tfmirror\"",
        "data_dir = \"/var/lib/tfmirror\"",
        "listen = \"0.0.0.0:443\"",
        "max_size = \"50.0 GiB\"",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
}

#[test]
fn the_several_instances_sample_configuration_is_valid() {
    let text = checked("deploy/several/tfmirror.toml");
    for line in [
        "backend = \"s3\"",
        "bucket = \"tfmirror-cache\"",
        "public_url = \"https://tfmirror.example.internal/\"",
        "trusted_proxies = [\"10.0.0.10/32\"]",
        "max_size = \"20.0 GiB\"",
    ] {
        assert!(text.contains(line), "{line} not in\n{text}");
    }
}
