//! `--client`, `--client-version` and `--test-directory`: how the
//! commands that read a configuration read it.

/// `--client terraform|opentofu`: whose rules read a configuration.
#[derive(Debug, Clone, clap::Args)]
pub struct ClientArg {
    /// Read the configuration as this client reads it (`terraform` or
    /// `opentofu`); default: OpenTofu when it holds .tofu files, else
    /// Terraform.
    #[arg(long)]
    pub client: Option<crate::address::Product>,
    /// The client's release that will run `init`, for the rules that
    /// changed between releases (test files: Terraform 1.6 and later read
    /// them); default: the newest.
    #[arg(long)]
    pub client_version: Option<crate::address::Version>,
    /// The test directory `init` reads test files from
    /// (`-test-directory`); default: `tests`.
    #[arg(long)]
    pub test_directory: Option<String>,
}

impl ClientArg {
    /// How the configurations are read.
    pub fn options(&self) -> crate::module_source::configuration::ReadOptions {
        crate::module_source::configuration::ReadOptions {
            client: self.client,
            client_version: self.client_version.clone(),
            test_directory: self.test_directory.clone(),
        }
    }
}
