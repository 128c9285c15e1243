//! `[auth]`: who may use the mirror, and for how long a signed link or a
//! sign-in to the pages lasts.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `[auth]`: access control. With no token configured, anyone who can reach
/// the mirror may use it.
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
    /// `url_lifetime`: how long a signed archive link stays valid. Default `1h`.
    #[serde(with = "humantime_serde")]
    pub url_lifetime: Duration,
    /// `session_lifetime`: how long a sign-in to the pages lasts (a token
    /// entered once, kept as a signed cookie). Default `8h`.
    #[serde(with = "humantime_serde")]
    pub session_lifetime: Duration,
}

impl Default for AuthConfig {
    fn default() -> AuthConfig {
        AuthConfig {
            tokens: Vec::new(),
            token_file: None,
            url_key_file: None,
            url_lifetime: Duration::from_secs(3600),
            session_lifetime: Duration::from_secs(8 * 3600),
        }
    }
}
