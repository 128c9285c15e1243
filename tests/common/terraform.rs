//! The real Terraform CLI run in a working directory of its own: a clean
//! environment, a CLI configuration, the mirror's authority trusted.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The Terraform CLI `bin` to run in `work`, with a clean environment,
/// the CLI configuration file `cli_config` and `ca` trusted.
pub fn command(bin: &Path, work: &Path, cli_config: &Path, ca: &Path) -> Command {
    let mut cmd = Command::new(bin);
    cmd.current_dir(work)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", work)
        .env("TF_CLI_CONFIG_FILE", cli_config)
        .env("SSL_CERT_FILE", ca)
        .env("CHECKPOINT_DISABLE", "1")
        .env("TF_IN_AUTOMATION", "1");
    cmd
}

/// Whether a finished command succeeded, and what it printed.
pub fn outcome(out: &std::process::Output) -> (bool, String) {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

/// Runs `terraform init` in `work` with `cli_config` (the text of its CLI
/// configuration, written beside it) and `ca` trusted; returns whether it
/// succeeded and what it printed.
pub fn init(bin: &Path, work: &Path, cli_config: &str, ca: &Path) -> (bool, String) {
    let config = work.join("cli.tfrc");
    std::fs::write(&config, cli_config).unwrap();
    let out = command(bin, work, &config, ca)
        .args(["init", "-input=false", "-no-color"])
        .output()
        .unwrap();
    outcome(&out)
}

/// The CLI configuration that installs every provider through the
/// network mirror at `url`.
pub fn network_mirror(url: &str) -> String {
    format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"{}/\"\n  }}\n}}\n",
        url.trim_end_matches('/')
    )
}

/// The Terraform platform of this machine (`linux_amd64`).
pub fn platform() -> String {
    let arch = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        other => other,
    };
    format!("{}_{arch}", std::env::consts::OS)
}

/// The Terraform CLIs to compare with: v1.0.3 (`TERRAFORM_BIN`, which the
/// README's test command installs) and a newer one: `TERRAFORM_NEWER_BIN`
/// (which the test command sets to the `terraform` on `PATH` when that is
/// newer), or else the `terraform` on `PATH` when it is another version.
/// Their paths only the newer CLI takes (`TF_TOKEN_…` credentials, test
/// files) run wherever one is found; under `CI=true` a missing one fails
/// the test, elsewhere the test says what it left out.
pub fn clis() -> Vec<(String, PathBuf)> {
    let pinned = match std::env::var_os("TERRAFORM_BIN") {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        other => panic!("TERRAFORM_BIN must name the Terraform v1.0.3 binary (got {other:?}); run the README's test command"),
    };
    let version = |bin: &Path| -> String {
        let out = Command::new(bin).arg("version").output().unwrap();
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or_default()
            .to_owned()
    };
    let mut out = vec![(version(&pinned), pinned)];
    let named = std::env::var_os("TERRAFORM_NEWER_BIN")
        .filter(|p| !p.is_empty())
        .map(PathBuf::from);
    let on_path = || {
        std::env::var_os("PATH")
            .map(|p| {
                std::env::split_paths(&p)
                    .map(|d| d.join("terraform"))
                    .collect::<Vec<_>>()
            })
            .unwrap_or_default()
            .into_iter()
            .find(|p| p.is_file())
    };
    let newer = named
        .or_else(on_path)
        .filter(|bin| version(bin) != out[0].0);
    match newer {
        Some(bin) => out.push((version(&bin), bin)),
        None if std::env::var("CI").as_deref() == Ok("true") => panic!(
            "no Terraform newer than {} (TERRAFORM_NEWER_BIN, or terraform on PATH): the paths only a newer CLI takes cannot run",
            out[0].0
        ),
        None => eprintln!(
            "no Terraform newer than {} on PATH (or TERRAFORM_NEWER_BIN): the paths only a newer CLI takes are left out",
            out[0].0
        ),
    }
    out
}
