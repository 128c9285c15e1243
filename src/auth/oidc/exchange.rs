//! The authorization code a person's sign-in brought back, traded for
//! tokens at the issuer's token endpoint (OpenID Connect Core 3.1.3): with
//! the PKCE verifier, the redirect URI the code was issued for, and the
//! client's secret (HTTP Basic) when the mirror is a confidential client.
//! Through the upstream client, so through the request forgery guard,
//! and never following a redirect.

use serde_json::Value;

use super::token::Refusal;
use super::Oidc;

/// What the token endpoint handed out for a code.
#[derive(Debug, Clone)]
pub struct Tokens {
    /// The ID token.
    pub id_token: String,
    /// The access token, which the UserInfo endpoint takes (when the
    /// answer holds one).
    pub access_token: Option<String>,
}

/// What the mirror sends to trade a code.
pub struct Code<'a> {
    /// The code the issuer sent back.
    pub code: &'a str,
    /// The PKCE code verifier the sign-in began with.
    pub verifier: &'a str,
    /// The callback URL the sign-in named.
    pub redirect_uri: &'a str,
}

impl Oidc {
    /// Trades `code` at the token endpoint of the issuer at `index`.
    pub(super) async fn exchange(&self, index: usize, code: &Code<'_>) -> Result<Tokens, Refusal> {
        let failed = |detail: String| Refusal::new("code_exchange", detail);
        let issuer = &self.issuers[index];
        let client = (self.client.as_ref()).ok_or_else(|| failed("no upstream client".into()))?;
        let endpoints = (issuer.keys.endpoints().await).map_err(|e| failed(format!("{e:#}")))?;
        let to = endpoints
            .token
            .ok_or_else(|| failed("the issuer names no token endpoint".into()))?;
        let client_id = issuer.config.client_id.as_deref().unwrap_or_default();
        let form = url::form_urlencoded::Serializer::new(String::new())
            .append_pair("grant_type", "authorization_code")
            .append_pair("code", code.code)
            .append_pair("redirect_uri", code.redirect_uri)
            .append_pair("code_verifier", code.verifier)
            .append_pair("client_id", client_id)
            .finish();
        let secret = match &issuer.config.client_secret_file {
            Some(path) => Some(
                std::fs::read_to_string(path)
                    .map_err(|e| {
                        failed(format!(
                            "reading client_secret_file {}: {e}",
                            path.display()
                        ))
                    })?
                    .trim()
                    .to_owned(),
            ),
            None => None,
        };
        let basic = secret.as_deref().map(|s| (client_id, s));
        let answer =
            (client.post_form(&to, form, basic).await).map_err(|e| failed(format!("{e}")))?;
        let text = String::from_utf8_lossy(&answer.body[..answer.body.len().min(300)]);
        if !answer.status.is_success() {
            return Err(failed(format!("{to} answered {}: {text}", answer.status)));
        }
        let doc: Value = (serde_json::from_slice(&answer.body))
            .map_err(|e| failed(format!("{to}: the answer is not JSON ({e}): {text}")))?;
        let field = |name: &str| doc.get(name).and_then(Value::as_str).map(str::to_owned);
        let id_token = field("id_token")
            .ok_or_else(|| failed(format!("{to}: the answer carries no id_token")))?;
        Ok(Tokens {
            id_token,
            access_token: field("access_token").filter(|t| !t.is_empty()),
        })
    }
}
