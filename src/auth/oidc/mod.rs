//! OpenID Connect identities: tokens minted by the issuers of
//! `[[auth.oidc]]` (a CI job's, a pod's projected service-account token, a
//! person's ID token at sign-in), verified on the issuer's published keys
//! and let in by the issuer's rules.
//!
//! A token that passes is remembered (by its SHA-256) until it expires, so
//! that the next request with it costs a lookup. A refused one is named in
//! the log with why; the answer only says it is not valid.
//!
//! A person's sign-in ([`person`]) trades the code the issuer sent back
//! ([`exchange`]), verifies the ID token as every token is verified, and
//! asks the issuer's UserInfo endpoint ([`userinfo`]) for the claims the
//! rules read that the ID token lacks.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::clock::SharedClock;
use crate::config::OidcIssuerConfig;
use crate::metrics::Metrics;
use crate::upstream::Client;
use crate::verify::Sha256;

use super::identity::{Identity, Who, WhoKind};

pub mod exchange;
pub mod keys;
pub mod limiter;
pub mod person;
pub mod rules;
#[cfg(test)]
mod tests;
pub mod token;
pub mod userinfo;

use keys::{Key, Keys, Lookup};
use token::Refusal;

/// The most verified tokens remembered.
const REMEMBERED: u64 = 100_000;

/// How long a refused token is remembered as refused (so that a client
/// retrying it, or a flood of it, costs a lookup). Refusals that time or a
/// key fetch may mend (not yet valid, an unknown key) are not remembered.
const REFUSAL_REMEMBERED: Duration = Duration::from_secs(30);

/// One configured issuer and its keys.
pub struct Issuer {
    /// Its `[[auth.oidc]]` entry.
    pub config: OidcIssuerConfig,
    /// Its signing keys.
    pub keys: Keys,
}

/// A verified token, remembered until it expires.
#[derive(Clone)]
struct Verified {
    identity: Identity,
    /// `exp` plus the issuer's allowance for skew.
    until: u64,
}

/// The configured issuers.
pub struct Oidc {
    issuers: Vec<Issuer>,
    verified: moka::sync::Cache<[u8; 32], Verified>,
    refused: moka::sync::Cache<[u8; 32], ()>,
    /// The client the issuers are asked through (none: keys files only).
    client: Option<Client>,
    /// The sign-ins whose state came back, so that each comes back once.
    finished: moka::sync::Cache<[u8; 32], ()>,
    /// Sign-in starts and callbacks per client address.
    limiter: limiter::SigninLimiter,
    clock: SharedClock,
    metrics: Option<Arc<Metrics>>,
}

/// What one attempt at a token came to.
enum Step {
    Done(Result<Identity, ()>),
    /// The issuer at this index needs its keys fetched first.
    Fetch(usize),
}

/// What a token is checked for: a workload's token (the issuer's
/// audience), or a person's ID token at sign-in (the client ID, and the
/// nonce the sign-in sent).
#[derive(Clone, Copy)]
enum Purpose<'a> {
    /// `Authorization: Bearer` from a CLI, a script, a CI job.
    Bearer,
    /// The ID token of a sign-in through the issuer at this index.
    SignIn(usize, &'a str),
}

impl Oidc {
    /// The issuers of `configs`. Keys files are read now; other keys are
    /// fetched through `client` when first needed. People may begin or end
    /// `signins_per_minute` sign-ins a minute from one address.
    pub fn new(
        configs: &[OidcIssuerConfig],
        client: Option<&Client>,
        clock: SharedClock,
        metrics: Option<Arc<Metrics>>,
        signins_per_minute: u32,
    ) -> anyhow::Result<Oidc> {
        let mut issuers = Vec::new();
        let mut longest = Duration::from_secs(60);
        for config in configs {
            longest = longest.max(config.max_lifetime + config.clock_skew);
            issuers.push(Issuer {
                keys: Keys::new(config, client.cloned(), clock.clone(), metrics.clone())?,
                config: config.clone(),
            });
        }
        if let Some(metrics) = metrics.as_ref().filter(|_| !issuers.is_empty()) {
            let names: Vec<String> = issuers.iter().map(|i| i.config.name.clone()).collect();
            metrics.export_issuer_series(&names);
        }
        Ok(Oidc {
            client: client.cloned(),
            finished: moka::sync::Cache::builder()
                .max_capacity(REMEMBERED)
                .time_to_live(person::SIGNIN_LIFETIME)
                .build(),
            limiter: limiter::SigninLimiter::new(signins_per_minute, clock.clone()),
            issuers,
            verified: moka::sync::Cache::builder()
                .max_capacity(REMEMBERED)
                .time_to_live(longest)
                .build(),
            refused: moka::sync::Cache::builder()
                .max_capacity(REMEMBERED)
                .time_to_live(REFUSAL_REMEMBERED)
                .build(),
            clock,
            metrics,
        })
    }

    /// Whether any issuer is configured.
    pub fn is_empty(&self) -> bool {
        self.issuers.is_empty()
    }

    /// The issuers.
    pub fn issuers(&self) -> &[Issuer] {
        &self.issuers
    }

    /// Re-reads every keys file; a file that cannot be read keeps the keys
    /// in force and is named in the log.
    pub fn reload_key_files(&self) {
        for issuer in &self.issuers {
            match issuer.keys.reload_file() {
                Ok(0) => {}
                Ok(n) => {
                    tracing::info!(issuer = %issuer.config.name, keys = n, "re-read the issuer's keys file");
                }
                Err(e) => {
                    tracing::error!(issuer = %issuer.config.name, error = %format!("{e:#}"), "the keys file could not be read; the keys in force stay");
                }
            }
        }
    }

    /// Checks a bearer token without waiting: `None` when the issuer's
    /// keys must be fetched first ([`Oidc::check`] does that).
    pub fn check_now(&self, token: &str) -> Option<Result<Identity, ()>> {
        match self.attempt(token, true) {
            Step::Done(done) => Some(done),
            Step::Fetch(_) => None,
        }
    }

    /// Checks a bearer token, fetching its issuer's keys when they are
    /// missing, old, or lack the token's key ID.
    pub async fn check(&self, token: &str) -> Result<Identity, ()> {
        match self.attempt(token, true) {
            Step::Done(done) => done,
            Step::Fetch(index) => {
                // A failed fetch is logged; the keys in force decide.
                let _ = self.issuers[index].keys.refetch().await;
                match self.attempt(token, false) {
                    Step::Done(done) => done,
                    Step::Fetch(_) => unreachable!("no fetch is asked for twice"),
                }
            }
        }
    }

    fn attempt(&self, token: &str, may_fetch: bool) -> Step {
        let digest = Sha256::digest(token.as_bytes());
        let now = self.clock.unix_secs();
        if let Some(hit) = self.verified.get(&digest) {
            if now <= hit.until {
                return Step::Done(Ok(hit.identity));
            }
            self.verified.invalidate(&digest);
        }
        if self.refused.contains_key(&digest) {
            return Step::Done(Err(()));
        }
        let checked = self
            .verify(token, Purpose::Bearer, may_fetch, now)
            .and_then(|checked| {
                let index = checked.index;
                identity_of(&self.issuers[index], &checked.claims, WhoKind::Oidc)
                    .map(|identity| (checked, identity))
                    .map_err(|r| Failure::Refused(Some(index), r))
            });
        match checked {
            Ok((checked, identity)) => {
                let issuer = &self.issuers[checked.index].config.name;
                self.count(issuer, "accepted");
                if let Some(who) = &identity.who {
                    tracing::info!(issuer = %issuer, subject = %who.subject, grant = identity.grant.as_str(), "accepted a token");
                }
                let remembered = Verified {
                    identity: identity.clone(),
                    until: checked.until,
                };
                self.verified.insert(digest, remembered);
                Step::Done(Ok(identity))
            }
            Err(Failure::Fetch(index)) => Step::Fetch(index),
            Err(Failure::Refused(index, refusal)) => {
                let issuer = index.map_or("unknown", |i| self.issuers[i].config.name.as_str());
                self.count(issuer, refusal.reason);
                tracing::info!(issuer, reason = refusal.reason, detail = %refusal.detail, "refused a token");
                let mendable = matches!(
                    refusal.reason,
                    "not_yet_valid" | "issued_in_future" | "unknown_key" | "keys_unavailable"
                );
                if !mendable {
                    self.refused.insert(digest, ());
                }
                Step::Done(Err(()))
            }
        }
    }

    /// The claims of a person's ID token from the issuer at `index`,
    /// verified as every token is, for the client ID and with the
    /// sign-in's `nonce`; the issuer's keys fetched when they must be.
    async fn id_token_claims(
        &self,
        token: &str,
        index: usize,
        nonce: &str,
    ) -> Result<Map<String, Value>, Refusal> {
        let purpose = Purpose::SignIn(index, nonce);
        let now = self.clock.unix_secs();
        let checked = match self.verify(token, purpose, true, now) {
            Err(Failure::Fetch(_)) => {
                // A failed fetch is logged; the keys in force decide.
                let _ = self.issuers[index].keys.refetch().await;
                self.verify(token, purpose, false, now)
            }
            other => other,
        };
        match checked {
            Ok(checked) => Ok(checked.claims),
            Err(Failure::Refused(_, refusal)) => Err(refusal),
            Err(Failure::Fetch(_)) => unreachable!("no fetch is asked for twice"),
        }
    }

    /// Counts a person's sign-in at the pages (or a step of it) through
    /// the issuer called `issuer` with `outcome`.
    pub fn count_signin(&self, issuer: &str, outcome: &'static str) {
        self.count(issuer, outcome);
    }

    /// The limit on sign-ins per client address.
    pub fn limiter(&self) -> &limiter::SigninLimiter {
        &self.limiter
    }

    fn count(&self, issuer: &str, outcome: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.oidc_signin(issuer, outcome);
        }
    }

    /// Verifies `token` for `purpose`: the issuer's index, the claims, and
    /// the time until which it holds.
    fn verify(
        &self,
        token: &str,
        purpose: Purpose<'_>,
        may_fetch: bool,
        now: u64,
    ) -> Result<Checked, Failure> {
        let refused = |index, r| Failure::Refused(index, r);
        // The issuer is picked by what the token claims (and checked again
        // once the signature holds); a sign-in's is the one it began at.
        let index = match purpose {
            Purpose::SignIn(index, _) => Some(index),
            Purpose::Bearer => token::claimed_issuer(token).and_then(|iss| {
                (self.issuers.iter())
                    .position(|i| keys::same_issuer(&iss, i.config.issuer.as_str()))
            }),
        };
        let Some(index) = index else {
            let read = token::read(token, &[]).err();
            let refusal = read.filter(|r| r.reason != "algorithm").unwrap_or_else(|| {
                Refusal::new(
                    "issuer",
                    "no issuer is configured for the iss the token claims",
                )
            });
            return Err(refused(None, refusal));
        };
        let read = token::read(token, &self.issuers[index].config.algorithms)
            .map_err(|r| refused(Some(index), r))?;
        let config = &self.issuers[index].config;
        let (found, held) = self.keys_for(index, &read, may_fetch)?;
        let candidates: Vec<&Key> = found.iter().map(|i| &held[*i]).collect();
        let audience = match purpose {
            Purpose::Bearer => config.audience.as_str(),
            Purpose::SignIn(..) => config.client_id.as_deref().unwrap_or(&config.audience),
        };
        let claims = token::verify(token, &read, &candidates, config, audience, now)
            .map_err(|r| refused(Some(index), r))?;
        if let Purpose::SignIn(_, nonce) = purpose {
            let sent = claims.get("nonce").and_then(Value::as_str);
            if !sent.is_some_and(|n| {
                bool::from(subtle::ConstantTimeEq::ct_eq(
                    n.as_bytes(),
                    nonce.as_bytes(),
                ))
            }) {
                return Err(refused(
                    Some(index),
                    Refusal::new("nonce", "the ID token's nonce is not the sign-in's"),
                ));
            }
        }
        let exp = (claims.get("exp").and_then(Value::as_f64))
            .and_then(token::whole_seconds)
            .unwrap_or(0);
        let until = exp.saturating_add(config.clock_skew.as_secs());
        Ok(Checked {
            index,
            claims,
            until,
        })
    }

    /// The keys of the issuer at `index` that may verify a token `read`
    /// describes: `Fetch` when they must be fetched first (and `may_fetch`).
    fn keys_for(
        &self,
        index: usize,
        read: &token::Unverified,
        may_fetch: bool,
    ) -> Result<(Vec<usize>, Arc<Vec<Key>>), Failure> {
        let keys = &self.issuers[index].keys;
        match keys.lookup(read.kid.as_deref(), &read.alg) {
            Lookup::Found(found, held) => Ok((found, held)),
            Lookup::Fetch if may_fetch => Err(Failure::Fetch(index)),
            Lookup::Fetch | Lookup::Unknown => {
                let why = if keys.held_any() {
                    "unknown_key"
                } else {
                    "keys_unavailable"
                };
                Err(Failure::Refused(
                    Some(index),
                    Refusal::new(
                        why,
                        format!(
                            "no key of the issuer has kid {:?} for {}",
                            read.kid, read.alg
                        ),
                    ),
                ))
            }
        }
    }
}

/// A token verified: its issuer's index, its claims, and until when it
/// holds (`exp` plus the issuer's allowance for skew).
struct Checked {
    index: usize,
    claims: Map<String, Value>,
    until: u64,
}

/// Why [`Oidc::verify`] did not give an identity.
enum Failure {
    /// The issuer at this index needs its keys fetched.
    Fetch(usize),
    /// Refused, by the issuer at this index (`None`: none was found).
    Refused(Option<usize>, Refusal),
}

/// The identity `issuer`'s rules give verified `claims`. When none
/// matches and every rule reads a claim the identity lacks, the refusal is
/// `missing_claim` and names them; `no_rule` when the claims are there and
/// match no rule.
fn identity_of(
    issuer: &Issuer,
    claims: &Map<String, Value>,
    kind: WhoKind,
) -> Result<Identity, Refusal> {
    let Some(matched) = rules::decide(&issuer.config.rules, claims) else {
        let missing = rules::missing(&issuer.config.rules, claims);
        let every_rule_lacks = (issuer.config.rules.iter())
            .all(|rule| rule.claims.keys().any(|name| missing.contains(name)));
        return Err(if every_rule_lacks {
            Refusal::new(
                "missing_claim",
                format!(
                    "the identity carries no {} claim, which the rules read",
                    missing.join(", ")
                ),
            )
        } else {
            Refusal::new(
                "no_rule",
                "no rule of the issuer matches the token's claims",
            )
        });
    };
    let subject = claims
        .get("sub")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(Identity {
        who: Some(Arc::new(Who {
            kind,
            issuer: issuer.config.name.clone(),
            subject: subject.to_owned(),
            claims: matched.claims,
        })),
        grant: matched.grant,
    })
}
