//! `[auth]`: who may use the mirror, and for how long a signed link or a
//! sign-in to the pages lasts.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

pub use super::oidc::{ClaimsParameter, Grant, OidcIssuerConfig, OidcRuleConfig};

/// `[auth]`: access control. With no token and no issuer configured, anyone
/// who can reach the mirror may use it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct AuthConfig {
    /// `tokens`: bearer tokens that may use the mirror. When any token is
    /// configured here or in `token_file`, `index.json` and `:version.json`
    /// require `Authorization: Bearer <token>`, and archive links are signed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tokens: Vec<String>,
    /// `token_file`: a file of tokens, one per line (blank lines and `#`
    /// comments skipped), re-read when it changes and on SIGHUP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// `url_key_file`: a file of at least 32 bytes keying the HMAC that signs
    /// archive links. Default: a key generated once in `server.data_dir`.
    /// Mirrors behind one load balancer must share it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url_key_file: Option<PathBuf>,
    /// `url_lifetime`: how long a signed archive link stays valid, at
    /// least. Links are signed per window (a sixtieth of this, from 1 s to
    /// 1 min) and live this long after their window ends, so at most a
    /// window longer. Default `1h`.
    #[serde(with = "humantime_serde")]
    pub url_lifetime: Duration,
    /// `session_lifetime`: how long a sign-in to the pages lasts (a token
    /// entered once, kept as a signed cookie). Default `8h`.
    #[serde(with = "humantime_serde")]
    pub session_lifetime: Duration,
    /// `token_grant`: what the tokens of `tokens` and `token_file` may do:
    /// `read`, `approve` or `admin` (see [`Grant`]). Default `admin`, the
    /// operator's own secret.
    pub token_grant: Grant,
    /// `signins_per_minute`: how many sign-ins through an issuer one client
    /// address may begin, and how many it may bring back, in a minute
    /// (each counted on its own; IPv6 addresses by their /64). Past it a
    /// sign-in is refused with `429` until the minute has room again, and
    /// counted as `rate_limited`. Default `20`.
    pub signins_per_minute: u32,
    /// `[[auth.oidc]]`: OpenID Connect issuers whose tokens open the mirror
    /// (CI jobs, Kubernetes workloads) and through which people sign in to
    /// the pages (see `docs/identities.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub oidc: Vec<OidcIssuerConfig>,
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig {
            tokens: Vec::new(),
            token_file: None,
            url_key_file: None,
            url_lifetime: Duration::from_secs(3600),
            session_lifetime: Duration::from_secs(8 * 3600),
            token_grant: Grant::Admin,
            signins_per_minute: 20,
            oidc: Vec::new(),
        }
    }
}

impl AuthConfig {
    /// Checks the issuers: each valid, their names unique.
    pub fn validate(&self) -> anyhow::Result<()> {
        let mut names = std::collections::BTreeSet::new();
        for (i, issuer) in self.oidc.iter().enumerate() {
            issuer.validate(i)?;
            if !names.insert(issuer.name.as_str()) {
                anyhow::bail!("auth.oidc: the name {:?} is used twice", issuer.name);
            }
        }
        if self.session_lifetime.is_zero() {
            anyhow::bail!("auth.session_lifetime must be longer than zero");
        }
        if self.signins_per_minute == 0 {
            anyhow::bail!(
                "auth.signins_per_minute must be at least 1 (no one could sign in through an issuer)"
            );
        }
        Ok(())
    }
}
