//! `[[auth.oidc]]`: identity providers whose tokens open the mirror, and
//! the rules that say what each identity may do.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

/// What an identity may do; each grant includes the ones before it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Grant {
    /// `read`: the protocol routes, downloads and pages.
    Read,
    /// `approve`: `read`, and approving or denying versions from the pages.
    Approve,
    /// `admin`: `approve`, and the operator's views (the status page).
    Admin,
}

impl Grant {
    /// The grant's name as the configuration spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Grant::Read => "read",
            Grant::Approve => "approve",
            Grant::Admin => "admin",
        }
    }
    /// The grant [`Grant::as_str`] names, if it names one.
    pub fn from_name(name: &str) -> Option<Grant> {
        [Grant::Read, Grant::Approve, Grant::Admin]
            .into_iter()
            .find(|g| g.as_str() == name)
    }
}

/// One `[[auth.oidc]]` entry: an OpenID Connect issuer.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OidcIssuerConfig {
    /// `name`: what logs, metrics, the audit trail and the sign-in page
    /// call this issuer (`github`, `gitlab`, `cluster`, `sso`). Letters,
    /// digits, `-` and `_`; unique.
    pub name: String,
    /// `issuer`: the issuer URL, exactly as tokens carry it in `iss`
    /// (`https://token.actions.githubusercontent.com`). Its discovery
    /// document is `<issuer>/.well-known/openid-configuration`.
    pub issuer: Url,
    /// `audience`: the `aud` a token must carry (one of its values, when it
    /// carries several). For people signing in, the client ID is expected
    /// instead.
    pub audience: String,
    /// `algorithms`: the signature algorithms accepted. Default
    /// `["RS256", "ES256"]`. Only asymmetric algorithms are allowed
    /// (`RS256`, `RS384`, `RS512`, `PS256`, `PS384`, `PS512`, `ES256`,
    /// `ES384`, `EdDSA`).
    #[serde(default = "default_algorithms")]
    pub algorithms: Vec<String>,
    /// `max_lifetime`: the longest a token may live, from `iat` (or from
    /// now, without `iat`) to `exp`. Default `1h`.
    #[serde(default = "default_max_lifetime", with = "humantime_serde")]
    pub max_lifetime: Duration,
    /// `clock_skew`: how far the issuer's clock may be from the mirror's
    /// when `exp`, `nbf` and `iat` are checked. Default `60s`.
    #[serde(default = "default_clock_skew", with = "humantime_serde")]
    pub clock_skew: Duration,
    /// `keys_file`: a JSON Web Key Set file to take the issuer's keys from
    /// instead of its discovery document, for sites that cannot reach it
    /// (a Kubernetes cluster's `kubectl get --raw /openid/v1/jwks`).
    /// Re-read on SIGHUP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_file: Option<PathBuf>,
    /// `keys_max_age`: how long fetched keys are used before they are
    /// fetched again (the last good keys stay in force while the issuer is
    /// unreachable). Default `1h`.
    #[serde(default = "default_keys_max_age", with = "humantime_serde")]
    pub keys_max_age: Duration,
    /// `keys_refetch_interval`: the least time between two fetches of the
    /// keys made because a token named a key ID the mirror does not know.
    /// Default `1m`.
    #[serde(default = "default_refetch", with = "humantime_serde")]
    pub keys_refetch_interval: Duration,
    /// `client_id`: set for the issuer people sign in to the pages with
    /// (authorization code with PKCE); the ID the mirror is registered
    /// under at the issuer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    /// `client_secret_file`: a file holding the client secret, for an
    /// issuer that registered the mirror as a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret_file: Option<PathBuf>,
    /// `scopes`: what sign-in asks for besides `openid`. Default
    /// `["profile", "email"]`.
    #[serde(default = "default_scopes")]
    pub scopes: Vec<String>,
    /// `userinfo_signed_response_alg`: set when the mirror's registration
    /// at the issuer asks for signed UserInfo answers (the registration
    /// field of the same name): the algorithm they are signed with, one of
    /// `algorithms`. A UserInfo answer in plain JSON is then refused.
    /// Absent by default: plain JSON is taken, and so is a signed answer
    /// that verifies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub userinfo_signed_response_alg: Option<String>,
    /// `claims_parameter`: whether a sign-in asks for the claims the rules
    /// read with the `claims` request parameter (OpenID Connect Core 5.5),
    /// in the ID token and from UserInfo alike: `auto` (when the issuer's
    /// discovery document says `claims_parameter_supported`), `always` or
    /// `never`. Default `auto`. Scopes (`scopes`) ask for claims too; an
    /// issuer may need either.
    #[serde(default)]
    pub claims_parameter: ClaimsParameter,
    /// `[[auth.oidc.rules]]`: what identities of this issuer may do. The
    /// first rule whose claims all match decides; no match, no access.
    #[serde(default)]
    pub rules: Vec<OidcRuleConfig>,
}

/// When a sign-in sends the `claims` request parameter.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ClaimsParameter {
    /// When the issuer's discovery document says it takes it.
    #[default]
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// One `[[auth.oidc.rules]]` entry.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct OidcRuleConfig {
    /// `claims`: claim name to pattern; every one must match. A pattern
    /// matches a string claim whole, with `*` standing for any run of
    /// characters; a list claim (`groups`) matches when any item does; a
    /// boolean or number matches its JSON text (`"true"`).
    pub claims: BTreeMap<String, String>,
    /// `grant`: what a matching identity may do: `read`, `approve` or
    /// `admin`.
    pub grant: Grant,
}

fn default_algorithms() -> Vec<String> {
    vec!["RS256".into(), "ES256".into()]
}

fn default_max_lifetime() -> Duration {
    Duration::from_secs(3600)
}

fn default_clock_skew() -> Duration {
    Duration::from_secs(60)
}

fn default_keys_max_age() -> Duration {
    Duration::from_secs(3600)
}

fn default_refetch() -> Duration {
    Duration::from_secs(60)
}

fn default_scopes() -> Vec<String> {
    vec!["profile".into(), "email".into()]
}

/// The algorithms `algorithms` may name.
pub const ASYMMETRIC: [&str; 9] = [
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA",
];

impl OidcIssuerConfig {
    /// Checks the entry at `index` (`auth.oidc[index]`), naming the key at
    /// fault.
    pub fn validate(&self, index: usize) -> anyhow::Result<()> {
        let at = format!("auth.oidc[{index}]");
        let name_ok = !self.name.is_empty()
            && self.name.len() <= 64
            && (self.name.bytes()).all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            anyhow::bail!(
                "{at}.name: {:?} must be letters, digits, - and _ (at most 64)",
                self.name
            );
        }
        let at = format!("auth.oidc \"{}\"", self.name);
        if self.issuer.scheme() != "https" && self.keys_file.is_none() {
            anyhow::bail!(
                "{at}: issuer {} must be an https URL (keys are fetched from it)",
                self.issuer
            );
        }
        if self.audience.trim().is_empty() {
            anyhow::bail!("{at}: audience must name the audience tokens are minted for");
        }
        if self.algorithms.is_empty() {
            anyhow::bail!("{at}: algorithms must allow at least one algorithm");
        }
        for alg in &self.algorithms {
            if !ASYMMETRIC.contains(&alg.as_str()) {
                anyhow::bail!(
                    "{at}: algorithms: {alg:?} is not allowed; use one of {}",
                    ASYMMETRIC.join(", ")
                );
            }
        }
        for (what, d) in [
            ("max_lifetime", self.max_lifetime),
            ("keys_max_age", self.keys_max_age),
        ] {
            if d.is_zero() {
                anyhow::bail!("{at}: {what} must be longer than zero");
            }
        }
        if let Some(alg) = &self.userinfo_signed_response_alg {
            if !self.algorithms.contains(alg) {
                anyhow::bail!(
                    "{at}: userinfo_signed_response_alg {alg:?} is not among algorithms ({})",
                    self.algorithms.join(", ")
                );
            }
        }
        if self.client_secret_file.is_some() && self.client_id.is_none() {
            anyhow::bail!("{at}: client_secret_file is set without client_id");
        }
        if self.rules.is_empty() {
            anyhow::bail!("{at}: has no [[auth.oidc.rules]]: no token of it would be let in");
        }
        for (n, rule) in self.rules.iter().enumerate() {
            if rule.claims.is_empty() {
                anyhow::bail!(
                    "{at}: rules[{n}] names no claim; a rule must say which identities it admits (sub = \"*\" admits every one)"
                );
            }
            for (claim, pattern) in &rule.claims {
                if claim.is_empty() || pattern.is_empty() {
                    anyhow::bail!("{at}: rules[{n}]: claim names and patterns must not be empty");
                }
            }
        }
        Ok(())
    }
}
