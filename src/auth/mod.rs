//! Who may use the mirror, and who each caller is.
//!
//! When `[auth]` configures any token or issuer, the JSON endpoints require
//! `Authorization: Bearer <token>`, which Terraform and OpenTofu send when
//! the CLI configuration has credentials for the mirror's host (a
//! `credentials` block, `TF_TOKEN_<host>`, or a credentials helper). The
//! token is a configured one ([`tokens`]) or one minted by an OpenID
//! Connect issuer of `[[auth.oidc]]` ([`oidc`]): a CI job's, a pod's. The
//! clients send no credentials when downloading archives, so the links
//! handed out are signed instead ([`links`]).
//!
//! Tokens are never logged: a configured one is named by a fingerprint,
//! an issuer's by its issuer, subject and the claims its rule read.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use ring::hmac;
use subtle::ConstantTimeEq;

use crate::clock::SharedClock;
use crate::config::{AuthConfig, Grant};
use crate::error::RequestError;
use crate::metrics::Metrics;
use crate::store::atomic;
use crate::upstream::Client;

pub mod answers;
pub mod identity;
pub mod links;
pub mod oidc;
#[cfg(test)]
mod tests;
pub mod tokens;

pub use identity::{Identity, Who, WhoKind};
use tokens::{digest, Tokens};

/// The tokens and issuers in force, and the key that signs links and
/// sessions.
pub struct Auth {
    tokens: Tokens,
    token_grant: Grant,
    oidc: oidc::Oidc,
    url_key: hmac::Key,
    url_lifetime: Duration,
    session_lifetime: Duration,
    clock: SharedClock,
    answers: answers::SignedAnswers,
}

/// The answer to a request without valid credentials. Why the token was
/// refused is in the log, never here.
fn unauthenticated(presented: bool) -> RequestError {
    RequestError::Unauthenticated(if presented {
        "the token is not valid for this mirror".into()
    } else {
        "this mirror requires a token: add a credentials block for its host to the CLI configuration".into()
    })
}

impl Auth {
    /// Sets up authentication from `[auth]`. The URL-signing key is taken
    /// from `auth.url_key_file`, or generated once and kept as
    /// `<data_dir>/url-signing.key`. Links expire by `clock`. Issuers'
    /// keys are fetched through `client` (none: only keys files serve),
    /// and sign-ins counted in `metrics`.
    pub fn new(
        config: &AuthConfig,
        data_dir: &Path,
        clock: SharedClock,
        client: Option<&Client>,
        metrics: Option<Arc<Metrics>>,
    ) -> anyhow::Result<Auth> {
        let key_bytes = match &config.url_key_file {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("reading auth.url_key_file {}", path.display()))?;
                if bytes.len() < 32 {
                    anyhow::bail!(
                        "auth.url_key_file {} must hold at least 32 bytes",
                        path.display()
                    );
                }
                bytes
            }
            None => generated_key(data_dir)?,
        };
        Ok(Auth {
            tokens: Tokens::new(&config.tokens, config.token_file.clone())?,
            token_grant: config.token_grant,
            oidc: oidc::Oidc::new(
                &config.oidc,
                client,
                clock.clone(),
                metrics,
                config.signins_per_minute,
            )?,
            url_key: hmac::Key::new(hmac::HMAC_SHA256, &key_bytes),
            url_lifetime: config.url_lifetime,
            session_lifetime: config.session_lifetime,
            clock,
            answers: answers::SignedAnswers::new(links::window_length(config.url_lifetime)),
        })
    }

    /// Whether any token or issuer is configured (and so requests must
    /// carry credentials).
    pub fn enabled(&self) -> bool {
        self.tokens.any() || !self.oidc.is_empty()
    }

    /// The issuers.
    pub fn oidc(&self) -> &oidc::Oidc {
        &self.oidc
    }

    /// Re-reads the token file and the issuers' keys files (SIGHUP); what
    /// cannot be read keeps what is in force.
    pub fn reload(&self) -> anyhow::Result<usize> {
        self.oidc.reload_key_files();
        self.tokens.reload_file()
    }

    /// Re-reads the token file when it changed.
    pub fn reload_if_changed(&self) {
        self.tokens.reload_if_changed();
    }

    /// Whether tokens come from `auth.token_file`.
    pub fn has_token_file(&self) -> bool {
        self.tokens.has_file()
    }

    /// Who sent `authorization` (a request's header value), if that can be
    /// told without waiting: `None` when an issuer's keys must be fetched
    /// first ([`Auth::identify`]).
    pub fn identify_now(
        &self,
        authorization: Option<&str>,
    ) -> Option<Result<Identity, RequestError>> {
        if !self.enabled() {
            return Some(Ok(Identity::anyone()));
        }
        let Some(token) = bearer(authorization) else {
            return Some(Err(unauthenticated(false)));
        };
        if let Some(identity) = self.configured(token) {
            return Some(Ok(identity));
        }
        if self.oidc.is_empty() {
            return Some(Err(unauthenticated(true)));
        }
        Some(
            self.oidc
                .check_now(token)?
                .map_err(|()| unauthenticated(true)),
        )
    }

    /// Who sent `authorization`, fetching an issuer's keys if need be.
    pub async fn identify(&self, authorization: Option<&str>) -> Result<Identity, RequestError> {
        if let Some(done) = self.identify_now(authorization) {
            return done;
        }
        let token = bearer(authorization).unwrap_or_default();
        (self.oidc.check(token).await).map_err(|()| unauthenticated(true))
    }

    /// [`Auth::identify`], taking as well HTTP Basic authentication whose
    /// password is a token (any user name), which is what version managers
    /// send (tenv's `TFENV_REMOTE_PASSWORD`, curl's `.netrc` for tfenv).
    pub async fn identify_token_or_basic(
        &self,
        authorization: Option<&str>,
    ) -> Result<Identity, RequestError> {
        match basic_password(authorization) {
            Some(password) if self.enabled() => {
                self.identify(Some(&format!("Bearer {password}"))).await
            }
            _ => self.identify(authorization).await,
        }
    }

    /// The identity of a configured token.
    fn configured(&self, token: &str) -> Option<Identity> {
        self.tokens.holds(token).then(|| Identity {
            who: Some(Arc::new(Who {
                kind: WhoKind::Token,
                issuer: String::new(),
                subject: fingerprint(token),
                claims: std::collections::BTreeMap::new(),
            })),
            grant: self.token_grant,
        })
    }

    /// The keyed name of a configured token (`authorization` as a request
    /// carries it): what a session says it was opened with, which tells
    /// nothing of the token without the signing key. `None` for a token
    /// not in force.
    pub fn token_name(&self, authorization: Option<&str>) -> Option<String> {
        let token = bearer(authorization)?;
        self.tokens
            .holds(token)
            .then(|| self.name_of(&digest(token)))
    }

    fn name_of(&self, digest: &[u8; 32]) -> String {
        let tag = hmac::sign(&self.url_key, &[b"token\n".as_slice(), digest].concat());
        hex::encode(&tag.as_ref()[..16])
    }

    /// The identity of a session opened with the configured token named
    /// `name` ([`Auth::token_name`]), while that token is in force.
    pub fn session_of_token(&self, name: &str) -> Option<Identity> {
        let found = self
            .tokens
            .find(|known| self.name_of(known).as_bytes().ct_eq(name.as_bytes()));
        found.then(|| Identity {
            who: Some(Arc::new(Who {
                kind: WhoKind::Token,
                issuer: String::new(),
                subject: format!("session:{}", &name[..name.len().min(12)]),
                claims: std::collections::BTreeMap::new(),
            })),
            grant: self.token_grant,
        })
    }

    /// Signs `text` with the key that signs links (for sessions).
    pub fn sign_text(&self, text: &[u8]) -> String {
        hex::encode(hmac::sign(&self.url_key, text).as_ref())
    }

    /// Whether `signature` ([`Auth::sign_text`]) signs `text`.
    pub fn signs_text(&self, text: &[u8], signature: &str) -> bool {
        decode_hex(signature).is_some_and(|tag| hmac::verify(&self.url_key, text, &tag).is_ok())
    }

    /// How long a session lasts (`auth.session_lifetime`).
    pub fn session_lifetime(&self) -> Duration {
        self.session_lifetime
    }

    /// The time, in seconds since the epoch, by this mirror's clock.
    pub fn now_secs(&self) -> u64 {
        self.clock.unix_secs()
    }
}

/// A configured token's fingerprint, `sha256:` and the first 12 hex digits
/// of its SHA-256: enough to tell tokens apart in the trail, nothing to
/// use.
pub fn fingerprint(token: &str) -> String {
    let digest = crate::verify::hex(&digest(token));
    format!("sha256:{}", &digest[..12])
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() > 128 {
        return None;
    }
    hex::decode(s).ok()
}

/// The URL-signing key kept in the data directory, made on first use.
fn generated_key(data_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = data_dir.join("url-signing.key");
    if let Ok(bytes) = std::fs::read(&path) {
        if bytes.len() >= 32 {
            return Ok(bytes);
        }
    }
    let mut key = vec![0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
        .map_err(|_| anyhow::anyhow!("the system's random number generator failed"))?;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating server.data_dir {}", data_dir.display()))?;
    atomic::write(data_dir, &path, &key).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(key)
}

/// The token of an `Authorization: Bearer <token>` header value (the
/// scheme in any case), if it has one.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let (scheme, rest) = authorization?.split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The password of an `Authorization: Basic` header value, if it is one.
fn basic_password(authorization: Option<&str>) -> Option<String> {
    use base64::Engine as _;
    let (scheme, rest) = authorization?.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (_, password) = text.split_once(':')?;
    (!password.is_empty()).then(|| password.to_owned())
}
