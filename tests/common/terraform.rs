//! The real Terraform CLI run in a working directory of its own: a clean
//! environment, a CLI configuration, the mirror's authority trusted.

use std::path::Path;
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
