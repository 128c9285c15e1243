//! npm's oidc-provider (`tests/oidc/provider.mjs`, installed by
//! `scripts/install-oidc-provider`), run on loopback with TLS from the
//! test's authority: the issuer the identity tests sign in against, and
//! what mints their tokens.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::io::AsyncBufReadExt;

use super::TestCa;

/// The audience CI tokens are minted for.
pub const AUDIENCE: &str = "https://mirror.tfmirror.test";

/// The installed provider's directory (`OIDC_PROVIDER_DIR`).
pub fn provider_dir() -> PathBuf {
    let dir = std::env::var_os("OIDC_PROVIDER_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("node_modules/oidc-provider").is_dir());
    dir.expect("OIDC_PROVIDER_DIR must name scripts/install-oidc-provider's directory; run the README's test command")
}

/// A running provider.
pub struct Provider {
    /// Its issuer URL (`https://127.0.0.1:<port>`).
    pub issuer: String,
    port: u16,
    child: tokio::process::Child,
    files: tempfile::TempDir,
    script: PathBuf,
    redirect: String,
    ca_file: PathBuf,
}

impl Provider {
    /// Starts the provider, its keys named by `kid`, sending people back
    /// to `redirect`.
    pub async fn start(ca: &TestCa, redirect: &str, kid: &str) -> Provider {
        let files = tempfile::tempdir().unwrap();
        std::fs::write(files.path().join("cert.pem"), &ca.cert_pem).unwrap();
        std::fs::write(files.path().join("key.pem"), &ca.key_pem).unwrap();
        std::fs::write(files.path().join("ca.pem"), &ca.ca_pem).unwrap();
        // Beside its modules, where Node resolves its imports from.
        let script = provider_dir().join(format!("provider-{}.mjs", std::process::id()));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs");
        std::fs::copy(source, &script).unwrap();
        let ca_file = files.path().join("ca.pem");
        let (child, issuer, port) = spawn(&script, files.path(), redirect, kid, 0).await;
        Provider {
            issuer,
            port,
            child,
            files,
            script,
            redirect: redirect.into(),
            ca_file,
        }
    }

    /// Stops the provider and starts it again on the same port with new
    /// keys (named by `kid`): the issuer rotated its keys.
    pub async fn rotate(&mut self, kid: &str) {
        self.child.kill().await.unwrap();
        let (child, issuer, _) = spawn(
            &self.script,
            self.files.path(),
            &self.redirect,
            kid,
            self.port,
        )
        .await;
        assert_eq!(issuer, self.issuer);
        self.child = child;
    }

    /// The authority its certificate comes from.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// A CI job's token: the client credentials grant of `client`
    /// (`acme-infra-main`, `other-owner`), for `audience`.
    pub async fn ci_token(&self, client: &str, audience: &str) -> String {
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "client_credentials")
            .append_pair("client_id", client)
            .append_pair("client_secret", &format!("{client}-secret"))
            .append_pair("scope", "mirror")
            .append_pair("resource", audience)
            .finish();
        let answer = self
            .http()
            .post(format!("{}/token", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(form)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        let doc: serde_json::Value = answer.json().await.unwrap();
        assert!(status.is_success(), "{status}: {doc}");
        doc["access_token"].as_str().unwrap().to_owned()
    }

    /// The issuer's published keys.
    pub async fn jwks(&self) -> serde_json::Value {
        let answer = self
            .http()
            .get(format!("{}/jwks", self.issuer))
            .send()
            .await
            .unwrap();
        answer.json().await.unwrap()
    }

    fn http(&self) -> reqwest::Client {
        let tls = tfmirror::upstream::client::tls_config(Some(&self.ca_file), "test").unwrap();
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .unwrap()
    }
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
        let _ = std::fs::remove_file(&self.script);
    }
}

async fn spawn(
    script: &Path,
    files: &Path,
    redirect: &str,
    kid: &str,
    port: u16,
) -> (tokio::process::Child, String, u16) {
    let mut child = tokio::process::Command::new("node")
        .arg(script)
        .env("OIDC_PORT", port.to_string())
        .env("OIDC_CERT", files.join("cert.pem"))
        .env("OIDC_KEY", files.join("key.pem"))
        .env("OIDC_AUDIENCE", AUDIENCE)
        .env("OIDC_REDIRECT", redirect)
        .env("OIDC_KID", kid)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("node must be installed to run the OpenID provider");
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let line = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(url) = line.strip_prefix("listening ") {
                return url.to_owned();
            }
        }
        panic!("the OpenID provider ended before it listened");
    })
    .await
    .expect("the OpenID provider did not listen within 30 s");
    // Its further output is not read; keep the pipe drained.
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let port = line.rsplit(':').next().unwrap().parse().unwrap();
    (child, line, port)
}
