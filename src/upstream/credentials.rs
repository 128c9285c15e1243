//! Tokens that tfmirror presents to origin registries, for mirroring
//! private registries. They are looked up by the registry hostname of the
//! provider address, from (highest first):
//!
//! 1. `[upstream.hosts."<host>"] token` or `token_file`;
//! 2. `TF_TOKEN_<host>` environment variables, named as Terraform names them
//!    (`.` → `_`, `-` → `__`, e.g. `TF_TOKEN_app_terraform_io`);
//! 3. the `credentials` of a Terraform `credentials.tfrc.json` file named by
//!    `upstream.credentials_file`.
//!
//! A token is sent as `Authorization: Bearer` to service discovery and to the
//! registry's API, never to download hosts, never across a redirect to
//! another host, and never logged.

use std::collections::HashMap;
use std::path::Path;

use anyhow::Context;
use serde::Deserialize;

use crate::address::Hostname;
use crate::config::UpstreamConfig;

/// Tokens for origin registries, by hostname.
#[derive(Default, Clone)]
pub struct Credentials {
    by_host: HashMap<Hostname, String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Hosts only: tokens never reach a log.
        f.debug_set().entries(self.by_host.keys()).finish()
    }
}

/// The shape of Terraform's `credentials.tfrc.json`.
#[derive(Deserialize)]
struct CredentialsFile {
    #[serde(default)]
    credentials: HashMap<String, CredentialsEntry>,
}

#[derive(Deserialize)]
struct CredentialsEntry {
    token: String,
}

impl Credentials {
    /// Collects the tokens from the configuration, the given environment
    /// (`std::env::vars()` in the daemon) and the credentials file.
    pub fn load(
        config: &UpstreamConfig,
        env: impl IntoIterator<Item = (String, String)>,
    ) -> anyhow::Result<Credentials> {
        let mut by_host = HashMap::new();
        if let Some(path) = &config.credentials_file {
            for (host, token) in read_credentials_file(path)? {
                by_host.insert(host, token);
            }
        }
        for (name, value) in env {
            let Some(encoded) = name.strip_prefix("TF_TOKEN_") else {
                continue;
            };
            // `__` stands for `-` and `_` for `.`.
            let decoded = encoded
                .replace("__", "\u{0}")
                .replace('_', ".")
                .replace('\u{0}', "-");
            match Hostname::parse(&decoded) {
                Ok(host) if !value.trim().is_empty() => {
                    by_host.insert(host, value.trim().to_owned());
                }
                _ => {
                    tracing::warn!(variable = %name, "ignoring a TF_TOKEN_ variable that names no valid hostname");
                }
            }
        }
        for (host, hc) in &config.hosts {
            let token = configured_token(
                hc.token.as_deref(),
                hc.token_file.as_deref(),
                &format!("upstream.hosts.\"{host}\".token_file"),
            )?;
            if let Some(token) = token {
                by_host.insert(host.clone(), token);
            }
        }
        Ok(Credentials { by_host })
    }

    /// The token for a registry host, if any.
    pub fn token(&self, host: &Hostname) -> Option<&str> {
        self.by_host.get(host).map(String::as_str)
    }
}

/// A token given inline (`token`) or in a file (`token_file`, named
/// `what` in errors), trimmed; `None` when neither gives one.
pub fn configured_token(
    token: Option<&str>,
    file: Option<&Path>,
    what: &str,
) -> anyhow::Result<Option<String>> {
    let token = match (token, file) {
        (Some(t), _) => t.to_owned(),
        (None, Some(path)) => std::fs::read_to_string(path)
            .with_context(|| format!("reading {what} {}", path.display()))?,
        (None, None) => return Ok(None),
    };
    Ok(Some(token.trim().to_owned()).filter(|t| !t.is_empty()))
}

fn read_credentials_file(path: &Path) -> anyhow::Result<Vec<(Hostname, String)>> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("reading upstream.credentials_file {}", path.display()))?;
    let file: CredentialsFile = serde_json::from_str(&text)
        .with_context(|| format!("parsing upstream.credentials_file {}", path.display()))?;
    file.credentials
        .into_iter()
        .map(|(host, entry)| {
            let host = Hostname::parse(&host).with_context(|| {
                format!(
                    "upstream.credentials_file {}: {host:?} is not a hostname",
                    path.display()
                )
            })?;
            Ok((host, entry.token))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{Config, HostConfig};

    fn host(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn sources_in_order_of_precedence() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("credentials.tfrc.json");
        std::fs::write(
            &file,
            r#"{"credentials": {"App.Terraform.io": {"token": "from-file"}, "only-file.example": {"token": "f2"}}}"#,
        )
        .unwrap();
        let token_file = dir.path().join("tok");
        std::fs::write(&token_file, "from-token-file\n").unwrap();
        let mut up = Config::default().upstream;
        up.credentials_file = Some(file);
        up.hosts.insert(
            host("my-registry.example"),
            HostConfig {
                token_file: Some(token_file),
                ..HostConfig::default()
            },
        );
        let env = [
            ("TF_TOKEN_app_terraform_io", "from-env"),
            ("TF_TOKEN_my__registry_example", "env-loses-to-config"),
            ("TF_TOKEN_", "nothing"),
            ("HOME", "/root"),
        ]
        .map(|(k, v)| (k.to_string(), v.to_string()));
        let creds = Credentials::load(&up, env).unwrap();
        assert_eq!(creds.token(&host("app.terraform.io")), Some("from-env"));
        assert_eq!(creds.token(&host("only-file.example")), Some("f2"));
        assert_eq!(
            creds.token(&host("my-registry.example")),
            Some("from-token-file")
        );
        assert_eq!(creds.token(&host("registry.terraform.io")), None);
        assert!(
            !format!("{creds:?}").contains("from-"),
            "tokens in Debug output"
        );
    }
}
