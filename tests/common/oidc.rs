//! npm's oidc-provider (`tests/oidc/provider.mjs`, installed by
//! `scripts/install-oidc-provider`), run on loopback with TLS from the
//! test's authority: the issuer the identity tests sign in against, and
//! what mints their tokens. A person's sign-in can be driven through its
//! login and consent pages over plain HTTP ([`Provider::authorize`]), as a
//! browser would, without one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use tokio::io::AsyncBufReadExt;

use tfmirror::config::{Grant, OidcIssuerConfig, OidcRuleConfig};

use super::TestCa;

/// The audience CI tokens are minted for.
pub const AUDIENCE: &str = "https://mirror.tfmirror.test";

/// The issuer's entry: acme's main branch may read; `alice`'s group may
/// approve.
pub fn issuer_config(issuer: &str) -> OidcIssuerConfig {
    let rule = |claims: &[(&str, &str)], grant| OidcRuleConfig {
        claims: claims
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        grant,
    };
    OidcIssuerConfig {
        name: "ci".into(),
        issuer: issuer.parse().unwrap(),
        audience: AUDIENCE.into(),
        algorithms: vec!["ES256".into(), "RS256".into()],
        max_lifetime: Duration::from_secs(3600),
        clock_skew: Duration::from_secs(60),
        keys_file: None,
        keys_max_age: Duration::from_secs(3600),
        // At most one fetch a minute, by the mirror's clock: the rotation
        // below waits it out on a paused clock.
        keys_refetch_interval: Duration::from_secs(60),
        client_id: Some("tfmirror".into()),
        client_secret_file: None,
        // The provider's own scope for the `groups` claim, which a
        // conforming provider puts in the UserInfo answer only.
        scopes: vec!["profile".into(), "groups".into()],
        userinfo_signed_response_alg: None,
        claims_parameter: tfmirror::config::ClaimsParameter::Auto,
        rules: vec![
            rule(
                &[("repository_owner", "acme"), ("ref", "refs/heads/main")],
                Grant::Read,
            ),
            rule(&[("groups", "platform-approvers")], Grant::Approve),
            rule(&[("groups", "dev")], Grant::Read),
        ],
    }
}

/// The installed provider's directory (`OIDC_PROVIDER_DIR`).
pub fn provider_dir() -> PathBuf {
    let dir = std::env::var_os("OIDC_PROVIDER_DIR")
        .map(PathBuf::from)
        .filter(|d| d.join("node_modules/oidc-provider").is_dir());
    dir.expect("OIDC_PROVIDER_DIR must name scripts/install-oidc-provider's directory; run the README's test command")
}

/// The Node.js the provider runs on: `NODE_BIN` (which the README's test
/// command sets when it installs one), else `node` on `PATH`.
pub fn node() -> PathBuf {
    std::env::var_os("NODE_BIN").map_or_else(|| PathBuf::from("node"), PathBuf::from)
}

/// How the provider hands out a person's claims.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claims {
    /// As the library does by default, and OpenID Connect Core 5.4 says:
    /// the claims scopes ask for are in the UserInfo answer only.
    Conforming,
    /// Conforming, and it takes the `claims` request parameter, which puts
    /// the claims asked for by name in the ID token.
    ConformingWithClaimsParameter,
    /// In the ID token as well, as Keycloak and Dex do.
    InTheIdToken,
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
    claims: Claims,
    ca_file: PathBuf,
    userinfo_asked: Arc<AtomicUsize>,
}

/// Each provider's script file is its own: every test of a binary may run
/// one, and one ending must not take another's file away.
static SCRIPTS: AtomicUsize = AtomicUsize::new(0);

/// What one run of the provider's script is started with.
struct Started<'a> {
    script: &'a Path,
    files: &'a Path,
    redirect: &'a str,
    claims: Claims,
    asked: &'a Arc<AtomicUsize>,
}

impl Provider {
    /// Starts the provider, its keys named by `kid`, sending people back
    /// to `redirect`, conforming.
    pub async fn start(ca: &TestCa, redirect: &str, kid: &str) -> Provider {
        Provider::start_with(ca, redirect, kid, Claims::Conforming).await
    }

    /// [`Provider::start`], handing out claims as `claims` says.
    pub async fn start_with(ca: &TestCa, redirect: &str, kid: &str, claims: Claims) -> Provider {
        let files = tempfile::tempdir().unwrap();
        std::fs::write(files.path().join("cert.pem"), &ca.cert_pem).unwrap();
        std::fs::write(files.path().join("key.pem"), &ca.key_pem).unwrap();
        std::fs::write(files.path().join("ca.pem"), &ca.ca_pem).unwrap();
        // Beside its modules, where Node resolves its imports from.
        let n = SCRIPTS.fetch_add(1, Ordering::SeqCst);
        let script = provider_dir().join(format!("provider-{}-{n}.mjs", std::process::id()));
        let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oidc/provider.mjs");
        std::fs::copy(source, &script).unwrap();
        let ca_file = files.path().join("ca.pem");
        let userinfo_asked = Arc::new(AtomicUsize::new(0));
        let started = Started {
            script: &script,
            files: files.path(),
            redirect,
            claims,
            asked: &userinfo_asked,
        };
        let (child, issuer, port) = started.spawn(kid, 0).await;
        Provider {
            issuer,
            port,
            child,
            files,
            script,
            redirect: redirect.into(),
            claims,
            ca_file,
            userinfo_asked,
        }
    }

    /// Stops the provider and starts it again on the same port with new
    /// keys (named by `kid`): the issuer rotated its keys.
    pub async fn rotate(&mut self, kid: &str) {
        self.child.kill().await.unwrap();
        let started = Started {
            script: &self.script,
            files: self.files.path(),
            redirect: &self.redirect,
            claims: self.claims,
            asked: &self.userinfo_asked,
        };
        let (child, issuer, _) = started.spawn(kid, self.port).await;
        assert_eq!(issuer, self.issuer);
        self.child = child;
    }
}

impl Started<'_> {
    /// Runs the script on `port` (0: any), keys named by `kid`: the child,
    /// the issuer URL and the port it listens on.
    async fn spawn(&self, kid: &str, port: u16) -> (tokio::process::Child, String, u16) {
        let files = self.files;
        let (conform, parameter) = match self.claims {
            Claims::Conforming => ("1", "0"),
            Claims::ConformingWithClaimsParameter => ("1", "1"),
            Claims::InTheIdToken => ("0", "0"),
        };
        let mut child = tokio::process::Command::new(node())
            .arg(self.script)
            .env("OIDC_PORT", port.to_string())
            .env("OIDC_CERT", files.join("cert.pem"))
            .env("OIDC_KEY", files.join("key.pem"))
            .env("OIDC_AUDIENCE", AUDIENCE)
            .env("OIDC_REDIRECT", self.redirect)
            .env("OIDC_KID", kid)
            .env("OIDC_CONFORM", conform)
            .env("OIDC_CLAIMS_PARAMETER", parameter)
            .env("OIDC_KEYS_OUT", files.join("signing-keys.json"))
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
        // What it prints from now on: a line per UserInfo request.
        let asked = self.asked.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                if line == "userinfo" {
                    asked.fetch_add(1, Ordering::SeqCst);
                }
            }
        });
        let port = line.rsplit(':').next().unwrap().parse().unwrap();
        (child, line, port)
    }
}

impl Provider {
    /// The authority its certificate comes from.
    pub fn ca_file(&self) -> &Path {
        &self.ca_file
    }

    /// How many UserInfo requests it has answered.
    pub fn userinfo_requests(&self) -> usize {
        self.userinfo_asked.load(Ordering::SeqCst)
    }

    /// Its signing key `kid` (`k1-ec`, `k1-rsa`), private half and all,
    /// for tokens only this issuer could sign.
    pub fn signing_key(&self, kid: &str) -> jsonwebtoken::EncodingKey {
        let text = std::fs::read(self.files.path().join("signing-keys.json")).unwrap();
        let keys: serde_json::Value = serde_json::from_slice(&text).unwrap();
        let der = keys[kid]
            .as_str()
            .unwrap_or_else(|| panic!("no key {kid}: {keys}"));
        let der = base64::engine::general_purpose::STANDARD
            .decode(der)
            .unwrap();
        if kid.ends_with("-rsa") {
            jsonwebtoken::EncodingKey::from_rsa_der(&der)
        } else {
            jsonwebtoken::EncodingKey::from_ec_der(&der)
        }
    }

    /// A CI job's token: the client credentials grant of `client`
    /// (`acme-infra-main`, `acme-infra-rs256`, `other-owner`), for
    /// `audience`.
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

    /// Signs `person` in at the provider, as a browser would, for the
    /// authorization request `authorize` (where the mirror sent the
    /// browser): its login page, then its consent page. Returns the URL the
    /// provider sends the browser back to (the mirror's callback, with
    /// the code and the state).
    pub async fn authorize(&self, authorize: &str, person: &str) -> url::Url {
        let http = self.http_without_redirects();
        let mut jar: BTreeMap<String, String> = BTreeMap::new();
        let mut at = url::Url::parse(authorize).unwrap();
        let mut form: Option<String> = None;
        for _ in 0..20 {
            let mut request = match &form {
                Some(body) => http
                    .post(at.clone())
                    .header("content-type", "application/x-www-form-urlencoded")
                    .body(body.clone()),
                None => http.get(at.clone()),
            };
            if !jar.is_empty() {
                let cookies: Vec<String> = jar.iter().map(|(k, v)| format!("{k}={v}")).collect();
                request = request.header("cookie", cookies.join("; "));
            }
            let answer = request.send().await.unwrap();
            for set in answer.headers().get_all("set-cookie") {
                let set = set.to_str().unwrap();
                let (pair, attributes) = set.split_once(';').unwrap_or((set, ""));
                let (name, value) = pair.split_once('=').unwrap();
                if attributes.contains("1970") || value.is_empty() {
                    jar.remove(name.trim());
                } else {
                    jar.insert(name.trim().to_owned(), value.to_owned());
                }
            }
            let status = answer.status();
            if status.is_redirection() {
                let location = answer.headers()["location"].to_str().unwrap().to_owned();
                at = at.join(&location).unwrap();
                form = None;
                if !at.as_str().starts_with(&self.issuer) {
                    return at;
                }
                continue;
            }
            let page = answer.text().await.unwrap();
            assert!(status.is_success(), "{at}: {status}\n{page}");
            let action = page
                .split("action=\"")
                .nth(1)
                .and_then(|rest| rest.split('"').next())
                .unwrap_or_else(|| panic!("{at}: no form\n{page}"));
            at = at.join(&action.replace("&amp;", "&")).unwrap();
            form = Some(if page.contains("name=\"login\"") {
                format!("prompt=login&login={person}&password=any")
            } else {
                "prompt=consent".to_owned()
            });
        }
        panic!("the provider did not send the browser back within 20 steps");
    }

    fn http(&self) -> reqwest::Client {
        let tls = tfmirror::upstream::client::tls_config(Some(&self.ca_file), "test").unwrap();
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .build()
            .unwrap()
    }

    fn http_without_redirects(&self) -> reqwest::Client {
        let tls = tfmirror::upstream::client::tls_config(Some(&self.ca_file), "test").unwrap();
        reqwest::Client::builder()
            .use_preconfigured_tls(tls)
            .redirect(reqwest::redirect::Policy::none())
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
