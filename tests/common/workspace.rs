//! A working directory for the real Terraform CLI: a configuration that
//! requires providers, a CLI configuration (a network mirror, a `host`
//! block, or any `provider_installation`), the mirror's authority trusted.

use std::path::{Path, PathBuf};

use super::{Client, RunningMirror};

/// A Terraform working directory and the CLI to run in it.
pub struct Workspace {
    /// The working directory.
    pub dir: tempfile::TempDir,
    terraform: PathBuf,
    cli_config: PathBuf,
    ca_file: PathBuf,
}

impl Workspace {
    pub fn new(
        terraform: &Path,
        mirror: &RunningMirror,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let installation = format!(
            "  network_mirror {{\n    url = \"{}\"\n  }}\n",
            mirror.url("/")
        );
        Workspace::with(terraform, &installation, &mirror.ca_file, providers)
    }

    /// A workspace whose CLI configuration installs providers as the given
    /// `provider_installation` body says, trusting `ca_file`.
    pub fn with(
        terraform: &Path,
        installation: &str,
        ca_file: &Path,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let cli_config = format!("provider_installation {{\n{installation}}}\n");
        Workspace::configured(terraform, &cli_config, ca_file, providers)
    }

    /// A workspace whose CLI configuration is only a `host` block naming
    /// `providers_v1` as `host`'s provider registry.
    pub fn through_host_block(
        terraform: &Path,
        host: &str,
        providers_v1: &str,
        ca_file: &Path,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let cli_config = format!(
            "host \"{host}\" {{\n  services = {{\n    \"providers.v1\" = \"{providers_v1}\"\n  }}\n}}\n"
        );
        Workspace::configured(terraform, &cli_config, ca_file, providers)
    }

    /// A workspace whose CLI configuration is the `host` block for `host`
    /// that the mirror's status page shows.
    pub async fn from_status_page(
        terraform: &Path,
        mirror: &RunningMirror,
        host: &str,
        ca_file: &Path,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let page = Client::trusting(&mirror.ca_file)
            .get(&mirror.url("/"))
            .await;
        let html = page.page_text();
        let start = format!("<pre tabindex=\"0\" id=\"host-{host}\">");
        let block = html
            .split_once(&start)
            .and_then(|(_, rest)| rest.split_once("</pre>"))
            .unwrap_or_else(|| panic!("no host block for {host} on the status page:\n{html}"))
            .0
            .replace("&quot;", "\"")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&");
        Workspace::configured(terraform, &block, ca_file, providers)
    }

    /// A workspace with this CLI configuration, trusting `ca_file`.
    pub fn configured(
        terraform: &Path,
        cli_config_text: &str,
        ca_file: &Path,
        providers: &[(&str, &str, &str)],
    ) -> Workspace {
        let dir = tempfile::tempdir().unwrap();
        let required: String = providers
            .iter()
            .map(|(name, source, version)| {
                format!("    {name} = {{\n      source  = \"{source}\"\n      version = \"{version}\"\n    }}\n")
            })
            .collect::<Vec<_>>()
            .concat();
        std::fs::write(
            dir.path().join("main.tf"),
            format!("terraform {{\n  required_providers {{\n{required}  }}\n}}\n"),
        )
        .unwrap();
        let cli_config = dir.path().join("cli.tfrc");
        std::fs::write(&cli_config, cli_config_text).unwrap();
        Workspace {
            dir,
            terraform: terraform.to_path_buf(),
            cli_config,
            ca_file: ca_file.to_path_buf(),
        }
    }

    /// Runs terraform with `args`; returns success and the combined output.
    pub async fn run(&self, args: &[&str]) -> (bool, String) {
        let mut cmd = super::terraform::command(
            &self.terraform,
            self.dir.path(),
            &self.cli_config,
            &self.ca_file,
        );
        cmd.args(args);
        let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
            .await
            .unwrap();
        super::terraform::outcome(&out)
    }

    /// Adds `module` blocks (name, registry source, version) to the
    /// configuration.
    pub fn add_modules(&self, modules: &[(&str, &str, &str)]) {
        use std::fmt::Write;
        let mut blocks = String::new();
        for (name, source, version) in modules {
            let _ = write!(
                blocks,
                "module \"{name}\" {{\n  source  = \"{source}\"\n  version = \"{version}\"\n}}\n"
            );
        }
        let main = self.dir.path().join("main.tf");
        let text = std::fs::read_to_string(&main).unwrap();
        std::fs::write(main, text + &blocks).unwrap();
    }

    /// The directory Terraform installed a module call into, from
    /// `.terraform/modules/modules.json` (`key` such as `net.sub`).
    pub fn module_dir(&self, key: &str) -> PathBuf {
        let manifest: serde_json::Value = serde_json::from_slice(
            &std::fs::read(self.dir.path().join(".terraform/modules/modules.json")).unwrap(),
        )
        .unwrap();
        let dir = manifest["Modules"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["Key"] == key)
            .unwrap_or_else(|| panic!("no module {key} in {manifest}"))["Dir"]
            .as_str()
            .unwrap()
            .to_owned();
        self.dir.path().join(dir)
    }

    pub async fn init(&self) -> (bool, String) {
        self.run(&["init", "-input=false", "-no-color"]).await
    }

    pub fn lock_file(&self) -> String {
        std::fs::read_to_string(self.dir.path().join(".terraform.lock.hcl")).unwrap_or_default()
    }

    pub fn installed(&self, source: &str, version: &str, platform: &str) -> PathBuf {
        self.dir
            .path()
            .join(".terraform/providers")
            .join(source)
            .join(version)
            .join(platform)
    }
}
