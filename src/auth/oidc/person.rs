//! A person's sign-in to the pages, once the issuer sent the browser back
//! with a code: the code traded ([`super::exchange`]), the ID token
//! verified as every token is (for the client ID, with the sign-in's
//! nonce), the claims the rules read and the ID token lacks asked of the
//! UserInfo endpoint ([`super::userinfo`]), and the issuer's rules applied
//! to the two merged (the ID token's value wins where both hold a claim).
//! Each sign-in is counted once, with its outcome.

use std::time::Duration;

use serde_json::Value;

use super::exchange::Code;
use super::token::Refusal;
use super::userinfo::{merge, NOT_FOLLOWED};
use super::{identity_of, rules, Oidc};
use crate::auth::identity::{Identity, WhoKind};
use crate::verify::Sha256;

/// How long a sign-in may take at the issuer, from its start to its
/// callback.
pub const SIGNIN_LIFETIME: Duration = Duration::from_secs(600);

impl Oidc {
    /// Notes that the sign-in whose `state` came back has come back:
    /// `false` when it already had (a replayed callback). Kept for
    /// [`SIGNIN_LIFETIME`], as long as a sign-in may take.
    pub fn first_return(&self, state: &str) -> bool {
        let digest = Sha256::digest(state.as_bytes());
        self.finished.entry(digest).or_insert(()).is_fresh()
    }

    /// The identity of the person whose sign-in through the issuer at
    /// `index` brought back `code`, with the `nonce` it began with.
    /// Counted, and logged, once with its outcome.
    pub async fn sign_in(
        &self,
        index: usize,
        code: &Code<'_>,
        nonce: &str,
    ) -> Result<Identity, Refusal> {
        let outcome = self.person(index, code, nonce).await;
        let issuer = self.issuers[index].config.name.as_str();
        match &outcome {
            Ok(identity) => {
                self.count(issuer, "accepted");
                if let Some(who) = &identity.who {
                    tracing::info!(issuer, subject = %who.subject, grant = identity.grant.as_str(), "a person signed in");
                }
            }
            Err(refusal) => {
                self.count(issuer, refusal.reason);
                tracing::info!(issuer, reason = refusal.reason, detail = %refusal.detail, "refused a sign-in");
            }
        }
        outcome
    }

    async fn person(
        &self,
        index: usize,
        code: &Code<'_>,
        nonce: &str,
    ) -> Result<Identity, Refusal> {
        let issuer = &self.issuers[index];
        let tokens = self.exchange(index, code).await?;
        let mut claims = (self.id_token_claims(&tokens.id_token, index, nonce)).await?;
        for name in NOT_FOLLOWED {
            claims.remove(name);
        }
        let lacking = !rules::missing(&issuer.config.rules, &claims).is_empty();
        let endpoint = (issuer.keys.endpoints().await).is_ok_and(|e| e.userinfo.is_some());
        if let (true, true, Some(access)) = (lacking, endpoint, tokens.access_token.as_deref()) {
            let sub = (claims.get("sub").and_then(Value::as_str))
                .unwrap_or_default()
                .to_owned();
            let from_userinfo = self.userinfo(index, access, &sub).await?;
            merge(&mut claims, from_userinfo);
        }
        identity_of(issuer, &claims, WhoKind::Person).map_err(|refusal| {
            if refusal.reason == "no_rule" {
                let read = rules::named(&issuer.config.rules).join(", ");
                Refusal::new(
                    "no_rule",
                    format!("no rule of this mirror admits the identity (its rules read {read})"),
                )
            } else {
                refusal
            }
        })
    }
}

/// What a person whose sign-in was refused for `refusal` is told: the
/// claims missing, or that no rule admits them, by name; otherwise only
/// which step failed, with the detail left to the log.
pub fn told(refusal: &Refusal) -> String {
    match refusal.reason {
        "missing_claim" | "no_rule" => refusal.detail.clone(),
        "code_exchange" => "the issuer did not take the sign-in's code".into(),
        reason if reason.starts_with("userinfo") => {
            "the issuer's UserInfo answer could not be used".into()
        }
        _ => "the issuer's ID token was refused".into(),
    }
}
