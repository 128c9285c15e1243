//! The real Terraform CLI (v1.0.3) installing providers through tfmirror.
//!
//! The binary is found through `TERRAFORM_BIN` (the README's test
//! command installs it). Without it these tests are skipped with a message,
//! except under `CI=true`, where a missing binary fails them.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;

const PROVIDER_HOST: &str = "registry.tfmirror.test";

fn terraform() -> Option<PathBuf> {
    match std::env::var_os("TERRAFORM_BIN") {
        Some(p) if Path::new(&p).is_file() => Some(PathBuf::from(p)),
        other => {
            let msg = format!(
                "TERRAFORM_BIN must name the Terraform v1.0.3 binary (got {other:?}); run the README's test command"
            );
            if std::env::var("CI").as_deref() == Ok("true") {
                panic!("{msg}");
            }
            eprintln!("SKIPPED: {msg}");
            None
        }
    }
}

/// A Terraform working directory requiring one provider through the mirror.
struct Workspace {
    dir: tempfile::TempDir,
    terraform: PathBuf,
    cli_config: PathBuf,
    ca_file: PathBuf,
}

impl Workspace {
    fn new(
        terraform: &Path,
        mirror: &RunningMirror,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let required: String = providers
            .iter()
            .map(|(name, source, version)| {
                format!("    {name} = {{\n      source  = \"{source}\"\n      version = \"{version}\"\n    }}\n")
            })
            .collect();
        std::fs::write(
            dir.path().join("main.tf"),
            format!("terraform {{\n  required_providers {{\n{required}  }}\n}}\n"),
        )
        .unwrap();
        let cli_config = dir.path().join("cli.tfrc");
        std::fs::write(
            &cli_config,
            format!(
                "provider_installation {{\n  network_mirror {{\n    url = \"{}\"\n  }}\n}}\n",
                mirror.url("/")
            ),
        )
        .unwrap();
        Workspace {
            dir,
            terraform: terraform.to_path_buf(),
            cli_config,
            ca_file: mirror.ca_file.clone(),
        }
    }

    /// Runs terraform with `args`; returns success and the combined output.
    async fn run(&self, args: &[&str]) -> (bool, String) {
        let mut cmd = Command::new(&self.terraform);
        cmd.args(args)
            .current_dir(self.dir.path())
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.dir.path())
            .env("TF_CLI_CONFIG_FILE", &self.cli_config)
            .env("SSL_CERT_FILE", &self.ca_file)
            .env("CHECKPOINT_DISABLE", "1")
            .env("TF_IN_AUTOMATION", "1");
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    async fn init(&self) -> (bool, String) {
        self.run(&["init", "-input=false", "-no-color"]).await
    }

    fn lock_file(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(".terraform.lock.hcl")).unwrap_or_default()
    }

    fn installed(&self, source: &str, version: &str, platform: &str) -> PathBuf {
        self.dir
            .path()
            .join(".terraform/providers")
            .join(source)
            .join(version)
            .join(platform)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_cold_warm_and_with_the_origin_down() {
    let Some(tf) = terraform() else { return };
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    let mirror = RunningMirror::start(config.clone()).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let providers = [("widget", source.as_str(), "1.1.0")];

    // Cold: the mirror fetches, verifies the GnuPG signature, caches.
    let ws = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init failed:\n{out}");
    assert!(ws
        .installed(&source, "1.1.0", "linux_amd64")
        .join("terraform-provider-widget_v1.1.0")
        .is_file());
    // Terraform computed the same h1: that the real CLI recorded for this archive.
    assert!(
        ws.lock_file()
            .contains("h1:sOTXWnXSxY+hmLoQsMc+YUZZUMEIs+hKVrGB0OLMNVo="),
        "{}",
        ws.lock_file()
    );
    let zip_path = "/files/terraform-provider-widget_1.1.0_linux_amd64.zip";
    assert_eq!(origin.hits(zip_path), 1);

    // Warm: a second workspace installs without another download.
    let ws2 = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws2.init().await;
    assert!(ok, "warm terraform init failed:\n{out}");
    assert_eq!(origin.hits(zip_path), 1);

    // The origin goes away and the mirror restarts: still installable.
    origin.stop();
    mirror.stop().await;
    let mirror = RunningMirror::start(config).await;
    let ws3 = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws3.init().await;
    assert!(ok, "terraform init with the origin down failed:\n{out}");
    // And the lock file written through the mirror is accepted again.
    let (ok, out) = ws3.init().await;
    assert!(ok, "re-init against the lock file failed:\n{out}");
    mirror.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_providers_lock_for_three_platforms() {
    let Some(tf) = terraform() else { return };
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["darwin_arm64", "linux_amd64", "windows_amd64"];
    let archives = origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    let mirror = RunningMirror::start(setup.config(&origin, &[], &[PROVIDER_HOST])).await;
    let source = format!("{PROVIDER_HOST}/acme/gadget");
    let ws = Workspace::new(&tf, &mirror, &[("gadget", source.as_str(), "0.3.1")]);
    let net_mirror = format!("-net-mirror={}", mirror.url("/"));
    let mut args = vec!["providers", "lock", "-no-color", net_mirror.as_str()];
    let platform_args: Vec<String> = platforms.iter().map(|p| format!("-platform={p}")).collect();
    args.extend(platform_args.iter().map(String::as_str));
    let (ok, out) = ws.run(&args).await;
    assert!(ok, "terraform providers lock failed:\n{out}");
    let lock = ws.lock_file();

    // Each platform's h1: that Terraform computed itself is the one the
    // mirror now reports, and the archives are the published bytes.
    let c = Client::trusting(&mirror.ca_file);
    let doc = c
        .get(&mirror.url(&format!("/{PROVIDER_HOST}/acme/gadget/0.3.1.json")))
        .await
        .json();
    for p in platforms {
        let hashes = doc["archives"][p]["hashes"].as_array().unwrap();
        let h1 = hashes[0].as_str().unwrap();
        assert!(h1.starts_with("h1:"), "{p}: {hashes:?}");
        assert!(lock.contains(h1), "{p}: {h1} not in\n{lock}");
        assert_eq!(hashes[1], format!("zh:{}", sha256_hex(&archives[p])));
    }
    mirror.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_fails_cleanly_on_a_tampered_package() {
    let Some(tf) = terraform() else { return };
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let mut evil = shared_fixture("terraform-provider-widget_1.1.0_linux_amd64.zip");
    evil[40] ^= 1;
    origin.replace_file("terraform-provider-widget_1.1.0_linux_amd64.zip", evil);
    let mirror = RunningMirror::start(setup.config(&origin, &[], &[PROVIDER_HOST])).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let ws = Workspace::new(&tf, &mirror, &[("widget", source.as_str(), "1.1.0")]);
    let (ok, out) = ws.init().await;
    assert!(!ok, "terraform init accepted a tampered package:\n{out}");
    assert!(out.contains("502"), "{out}");
    assert!(!ws.installed(&source, "1.1.0", "linux_amd64").exists());
    let stored = files_below(&setup.cache_dir());
    assert!(!stored.iter().any(|f| f.ends_with(".zip")), "{stored:?}");
    mirror.stop().await;
}
