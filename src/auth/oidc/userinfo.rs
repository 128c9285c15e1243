//! A person's claims from the issuer's UserInfo endpoint (OpenID Connect
//! Core 5.3), asked with the access token of their sign-in when the rules
//! read a claim the ID token lacks. A conforming provider puts the claims
//! that scopes such as `profile`, `email` or `groups` ask for there, and
//! not in the ID token, whenever it hands out an access token.
//!
//! The answer is JSON, or a JWT signed by the issuer when the mirror's
//! registration asks for one (`userinfo_signed_response_alg`). A signed
//! answer is checked as a token is: an algorithm the issuer entry allows
//! (never `none`), no key named in its header, a signature by one of the
//! issuer's keys, `iss` the issuer, `aud` holding the client ID, and not
//! expired. Plain JSON is refused where a signed answer was registered.
//! Either way its `sub` must be the ID token's (5.3.2): an answer about
//! someone else is never merged. Distributed and aggregated claims
//! (`_claim_names`, `_claim_sources`) are not followed.

use serde_json::{Map, Value};

use super::keys::{same_issuer, Key};
use super::token::{self, Refusal};
use super::{Failure, Oidc};

/// The largest signed UserInfo answer read (a person in many groups makes
/// a long one).
const MAX_SIGNED_BYTES: usize = 64 * 1024;

/// The claims that name where other claims are; never followed, never
/// matched by a rule.
pub const NOT_FOLLOWED: [&str; 2] = ["_claim_names", "_claim_sources"];

impl Oidc {
    /// The UserInfo claims of the person the ID token with subject `sub`
    /// names, from the issuer at `index`, asked with `access_token`.
    pub(super) async fn userinfo(
        &self,
        index: usize,
        access_token: &str,
        sub: &str,
    ) -> Result<Map<String, Value>, Refusal> {
        let unavailable = |detail: String| Refusal::new("userinfo_unavailable", detail);
        let issuer = &self.issuers[index];
        let client =
            (self.client.as_ref()).ok_or_else(|| unavailable("no upstream client".into()))?;
        let endpoints =
            (issuer.keys.endpoints().await).map_err(|e| unavailable(format!("{e:#}")))?;
        let url = endpoints
            .userinfo
            .ok_or_else(|| unavailable("the issuer names no userinfo_endpoint".into()))?;
        let (headers, body, _) = (client.get_small(&url, Some(access_token)).await)
            .map_err(|e| unavailable(format!("{e}")))?;
        let content_type = (headers.get(http::header::CONTENT_TYPE))
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_ascii_lowercase();
        let signed = content_type.starts_with("application/jwt");
        let claims = if signed {
            self.signed_userinfo(index, &body).await?
        } else if issuer.config.userinfo_signed_response_alg.is_some() {
            return Err(Refusal::new(
                "userinfo_unsigned",
                format!("{url} answered {content_type:?}, not the signed answer registered"),
            ));
        } else {
            match serde_json::from_slice::<Value>(&body) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(Refusal::new(
                        "userinfo_invalid",
                        format!("{url}: the answer is not a JSON object ({content_type:?})"),
                    ))
                }
            }
        };
        let said = claims.get("sub").and_then(Value::as_str);
        if said != Some(sub) {
            return Err(Refusal::new(
                "userinfo_subject",
                format!("{url} answered for sub {said:?}, the ID token names {sub:?}"),
            ));
        }
        Ok(claims)
    }

    /// A signed UserInfo answer's claims, once it holds.
    async fn signed_userinfo(
        &self,
        index: usize,
        body: &[u8],
    ) -> Result<Map<String, Value>, Refusal> {
        let invalid = |detail: String| Refusal::new("userinfo_invalid", detail);
        let issuer = &self.issuers[index];
        let config = &issuer.config;
        // Its length is held to MAX_SIGNED_BYTES as it is read, below.
        let text = std::str::from_utf8(body)
            .map_err(|_| invalid("the signed answer is not text".into()))?
            .trim();
        let allowed: Vec<String> = match &config.userinfo_signed_response_alg {
            Some(alg) => vec![alg.clone()],
            None => config.algorithms.clone(),
        };
        let read = token::read_within(text, &allowed, MAX_SIGNED_BYTES)
            .map_err(|r| invalid(format!("{}: {}", r.reason, r.detail)))?;
        let keys = match self.keys_for(index, &read, true) {
            Err(Failure::Fetch(_)) => {
                // A failed fetch is logged; the keys in force decide.
                let _ = issuer.keys.refetch().await;
                self.keys_for(index, &read, false)
            }
            other => other,
        };
        let (found, held) = keys.map_err(|failure| match failure {
            Failure::Refused(_, r) => invalid(format!("{}: {}", r.reason, r.detail)),
            Failure::Fetch(_) => unreachable!("no fetch is asked for twice"),
        })?;
        let candidates: Vec<&Key> = found.iter().map(|i| &held[*i]).collect();
        let claims = token::signed_payload(text, &read, &candidates)
            .map_err(|r| invalid(format!("{}: {}", r.reason, r.detail)))?;
        let iss = claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !same_issuer(iss, config.issuer.as_str()) {
            return Err(invalid(format!("the signed answer's iss is {iss:?}")));
        }
        let client_id = config.client_id.as_deref().unwrap_or_default();
        if !token::audience_holds(claims.get("aud"), client_id) {
            return Err(invalid(format!(
                "the signed answer's aud {:?} does not hold the client ID",
                claims.get("aud")
            )));
        }
        let now = self.clock.unix_secs();
        let exp = token::time_claim(&claims, "exp").map_err(|r| invalid(r.detail))?;
        if exp.is_some_and(|exp| now > exp.saturating_add(config.clock_skew.as_secs())) {
            return Err(invalid("the signed answer has expired".into()));
        }
        Ok(claims)
    }
}

/// `claims` with what `userinfo` adds: each claim the ID token lacks (or
/// holds as `null`). Where both hold a claim, the ID token's value stays:
/// it is the one signed for this sign-in and checked with its nonce.
/// `_claim_names` and `_claim_sources` are left out.
pub fn merge(claims: &mut Map<String, Value>, userinfo: Map<String, Value>) {
    for (name, value) in userinfo {
        if NOT_FOLLOWED.contains(&name.as_str()) {
            continue;
        }
        match claims.get(&name) {
            None | Some(Value::Null) => {
                claims.insert(name, value);
            }
            Some(_) => {}
        }
    }
}
