//! Every misuse of a token the mirror must refuse, on keys made here and
//! a clock that stands still; the same cases run against a real OpenID
//! provider in `tests/oidc.rs`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};

use super::*;
use crate::clock::{Clock, ManualClock};
use crate::config::{Grant, OidcRuleConfig};

mod shape;

const ISSUER: &str = "https://ci.example";
const AUDIENCE: &str = "https://mirror.example";

/// An ES256 key pair: the signing key, and its JWK.
struct Signer {
    key: EncodingKey,
    jwk: Value,
    kid: String,
}

fn signer(kid: &str) -> Signer {
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
    Signer {
        key: EncodingKey::from_ec_der(&pair.serialize_der()),
        jwk: json!({"kty": "EC", "crv": "P-256", "use": "sig", "kid": kid,
                    "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}),
        kid: kid.into(),
    }
}

fn config(keys_file: &std::path::Path) -> OidcIssuerConfig {
    OidcIssuerConfig {
        name: "ci".into(),
        issuer: ISSUER.parse().unwrap(),
        audience: AUDIENCE.into(),
        algorithms: vec!["ES256".into(), "RS256".into()],
        max_lifetime: Duration::from_secs(3600),
        clock_skew: Duration::from_secs(30),
        keys_file: Some(keys_file.into()),
        keys_max_age: Duration::from_secs(3600),
        keys_refetch_interval: Duration::from_secs(60),
        client_id: None,
        client_secret_file: None,
        scopes: vec![],
        userinfo_signed_response_alg: None,
        claims_parameter: crate::config::ClaimsParameter::Auto,
        rules: vec![OidcRuleConfig {
            claims: BTreeMap::from([
                ("repository_owner".into(), "acme".into()),
                ("ref".into(), "refs/heads/main".into()),
            ]),
            grant: Grant::Read,
        }],
    }
}

struct Setup {
    dir: tempfile::TempDir,
    oidc: Oidc,
    clock: Arc<ManualClock>,
    signer: Signer,
    metrics: Arc<Metrics>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let signer = signer("k1");
    let file = dir.path().join("jwks.json");
    std::fs::write(&file, json!({"keys": [signer.jwk]}).to_string()).unwrap();
    let clock = ManualClock::new();
    let metrics = Arc::new(Metrics::new());
    let oidc = Oidc::new(
        &[config(&file)],
        None,
        clock.clone(),
        Some(metrics.clone()),
        20,
    )
    .unwrap();
    Setup {
        dir,
        oidc,
        clock,
        signer,
        metrics,
    }
}

impl Setup {
    fn now(&self) -> u64 {
        self.clock.unix_secs()
    }

    fn claims(&self) -> Value {
        let now = self.now();
        json!({"iss": ISSUER, "aud": AUDIENCE, "sub": "repo:acme/app:ref:refs/heads/main",
               "repository_owner": "acme", "ref": "refs/heads/main", "workflow": "ci",
               "iat": now, "nbf": now, "exp": now + 300})
    }

    fn token(&self, claims: &Value) -> String {
        let mut header = Header::new(Algorithm::ES256);
        header.kid = Some(self.signer.kid.clone());
        jsonwebtoken::encode(&header, claims, &self.signer.key).unwrap()
    }

    fn with(&self, change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> String {
        let mut claims = self.claims();
        change(claims.as_object_mut().unwrap());
        self.token(&claims)
    }

    /// `claims` under `header` exactly as given, signed with the issuer's
    /// key (ES256): a token whole but for what the header says.
    fn raw(&self, header: &Value, claims: &Value) -> String {
        let message = format!("{}.{}", b64(header), b64(claims));
        let signature =
            jsonwebtoken::crypto::sign(message.as_bytes(), &self.signer.key, Algorithm::ES256)
                .unwrap();
        format!("{message}.{signature}")
    }

    /// How many tokens were counted under `issuer` for `outcome`.
    fn count(&self, issuer: &str, outcome: &str) -> u64 {
        let line =
            format!("tfmirror_oidc_signins_total{{issuer=\"{issuer}\",outcome=\"{outcome}\"}} ");
        (self.metrics.render().lines())
            .find_map(|l| l.strip_prefix(&line).map(|n| n.trim().parse().unwrap()))
            .unwrap_or(0)
    }

    /// Refused, and counted once under `outcome`, for the issuer `ci`,
    /// and under no other outcome.
    fn refused(&self, token: &str, outcome: &str) {
        self.refused_for("ci", token, outcome);
    }

    /// [`Setup::refused`], for a token that names no configured issuer
    /// (counted under `unknown`).
    fn refused_unclaimed(&self, token: &str, outcome: &str) {
        self.refused_for("unknown", token, outcome);
    }

    fn refused_for(&self, issuer: &str, token: &str, outcome: &str) {
        let before: Vec<u64> = (crate::metrics::signins::SIGNIN_OUTCOMES.iter())
            .map(|o| self.count(issuer, o))
            .collect();
        assert_eq!(self.oidc.check_now(token), Some(Err(())), "{outcome}");
        for (o, was) in crate::metrics::signins::SIGNIN_OUTCOMES.iter().zip(before) {
            let expected = was + u64::from(*o == outcome);
            assert_eq!(
                self.count(issuer, o),
                expected,
                "{o}, for a token refused as {outcome}"
            );
        }
    }

    /// A token the issuer signed, `len` bytes long, its claims padded to
    /// that length (under one header or another, as base64 allows).
    fn sized(&self, len: usize) -> String {
        let headers = [
            json!({"alg": "ES256", "kid": "k1"}),
            json!({"alg": "ES256", "kid": "k1", "typ": "JWT"}),
            json!({"alg": "ES256", "kid": "k1", "t": 1}),
            json!({"alg": "ES256", "kid": "k1", "tt": 1}),
        ];
        for header in &headers {
            // Each padding byte is 4/3 of a byte of the token: start near.
            let bare = self.raw(header, &self.claims()).len();
            let from = (len.saturating_sub(bare) * 3 / 4).saturating_sub(32);
            for pad in from..len {
                let mut claims = self.claims();
                claims["pad"] = json!("x".repeat(pad));
                let token = self.raw(header, &claims);
                if token.len() == len {
                    return token;
                }
                if token.len() > len {
                    break;
                }
            }
        }
        panic!("no token of {len} bytes");
    }
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

#[test]
fn a_token_its_rules_admit_is_named_and_remembered_until_it_expires() {
    let s = setup();
    let token = s.token(&s.claims());
    let identity = s.oidc.check_now(&token).unwrap().unwrap();
    assert_eq!(identity.grant, Grant::Read);
    let who = identity.who.unwrap();
    assert_eq!((who.kind, who.issuer.as_str()), (WhoKind::Oidc, "ci"));
    assert_eq!(who.subject, "repo:acme/app:ref:refs/heads/main");
    assert_eq!(
        who.claims_text(),
        "ref=refs/heads/main repository_owner=acme"
    );
    // Remembered: checked once, however often it comes.
    for _ in 0..3 {
        assert!(s.oidc.check_now(&token).unwrap().is_ok());
    }
    let rendered = s.metrics.render();
    assert!(
        rendered.contains("tfmirror_oidc_signins_total{issuer=\"ci\",outcome=\"accepted\"} 1"),
        "{rendered}"
    );
    // Past exp and the skew allowance, the remembered token is refused.
    s.clock.advance(Duration::from_secs(300 + 30 + 1));
    s.refused(&token, "expired");
}

#[test]
fn unsigned_and_symmetric_tokens_are_refused() {
    let s = setup();
    // alg: none, with no signature and with one of noise.
    for (n, signature) in ["", "c2ln"].into_iter().enumerate() {
        let mut claims = s.claims();
        claims["sub"] = json!(format!("none-{n}"));
        let none = format!(
            "{}.{}.{signature}",
            b64(&json!({"alg": "none", "kid": "k1"})),
            b64(&claims)
        );
        s.refused(&none, "algorithm");
    }
    // HS256 keyed with the issuer's public key (as a JWK, and as its x).
    for secret in [
        s.signer.jwk.to_string(),
        s.signer.jwk["x"].as_str().unwrap().to_owned(),
    ] {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".into());
        let forged = jsonwebtoken::encode(
            &header,
            &s.claims(),
            &EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap();
        s.refused(&forged, "algorithm");
    }
    // A signature by another key under the known key ID.
    let other = signer("k1");
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k1".into());
    let forged = jsonwebtoken::encode(&header, &s.claims(), &other.key).unwrap();
    s.refused(&forged, "signature");
    // A payload swapped under a real signature.
    let real = s.token(&s.claims());
    let parts: Vec<&str> = real.split('.').collect();
    let mut evil = s.claims();
    evil["repository_owner"] = json!("acme");
    evil["sub"] = json!("repo:evil/app");
    let swapped = format!("{}.{}.{}", parts[0], b64(&evil), parts[2]);
    s.refused(&swapped, "signature");
}

#[tokio::test]
async fn an_id_tokens_issuer_is_checked_once_its_signature_holds() {
    // A person's ID token is checked against the issuer the sign-in began
    // at, whatever it claims: here signed by that issuer's key, for the
    // client, with the sign-in's nonce, and naming another issuer.
    let s = setup();
    // (The issuer entry has no client ID here, so its audience is the
    // one an ID token must carry.)
    let mut claims = s.claims();
    claims["nonce"] = json!("n-1");
    claims["iss"] = json!("https://elsewhere.example");
    let token = s.token(&claims);
    let refused = s.oidc.id_token_claims(&token, 0, "n-1").await.unwrap_err();
    assert_eq!(refused.reason, "issuer", "{refused:?}");
    claims["iss"] = json!(ISSUER);
    let token = s.token(&claims);
    assert!(s.oidc.id_token_claims(&token, 0, "n-1").await.is_ok());
    let refused = s.oidc.id_token_claims(&token, 0, "n-2").await.unwrap_err();
    assert_eq!(refused.reason, "nonce", "{refused:?}");
}

#[test]
fn issuer_audience_and_times_are_checked_by_the_mirrors_clock() {
    let s = setup();
    let now = s.now();
    s.refused_unclaimed(
        &s.with(|c| {
            c["iss"] = json!("https://elsewhere.example");
        }),
        "issuer",
    );
    s.refused(
        &s.with(|c| {
            c["aud"] = json!("https://other-mirror.example");
        }),
        "audience",
    );
    s.refused(
        &s.with(|c| {
            c.remove("aud");
        }),
        "audience",
    );
    assert!(s
        .oidc
        .check_now(&s.with(|c| {
            c["aud"] = json!(["x", AUDIENCE]);
        }))
        .unwrap()
        .is_ok());
    // A list without the mirror's audience, however many others it holds.
    s.refused(
        &s.with(|c| {
            c["aud"] = json!(["x", "https://other-mirror.example"]);
        }),
        "audience",
    );
    s.refused(
        &s.with(|c| {
            c["aud"] = json!([]);
        }),
        "audience",
    );
    s.refused(
        &s.with(|c| {
            c["exp"] = json!(now - 31);
            c["iat"] = json!(now - 100);
        }),
        "expired",
    );
    s.refused(
        &s.with(|c| {
            c.remove("exp");
        }),
        "malformed",
    );
    s.refused(
        &s.with(|c| {
            c["nbf"] = json!(now + 31);
        }),
        "not_yet_valid",
    );
    s.refused(
        &s.with(|c| {
            c["iat"] = json!(now + 31);
        }),
        "issued_in_future",
    );
    s.refused(
        &s.with(|c| {
            c["exp"] = json!(now + 3601);
        }),
        "lifetime",
    );
    // Within the skew allowance (30 s), all is well: up to its very edge.
    assert!(s
        .oidc
        .check_now(&s.with(|c| {
            c["nbf"] = json!(now + 29);
            c["exp"] = json!(now + 60);
        }))
        .unwrap()
        .is_ok());
    for (edge, change) in [
        ("exp", json!({"exp": now - 30, "iat": now - 100})),
        ("nbf", json!({"nbf": now + 30})),
        ("iat", json!({"iat": now + 30, "exp": now + 300})),
        ("lifetime", json!({"iat": now, "exp": now + 3600})),
    ] {
        let token = s.with(|c| c.extend(change.as_object().unwrap().clone()));
        assert!(
            s.oidc.check_now(&token).unwrap().is_ok(),
            "{edge} at its edge"
        );
    }
    s.refused(
        &s.with(|c| {
            c.remove("sub");
        }),
        "malformed",
    );
}

#[test]
fn a_rotated_keys_file_is_taken_on_reload_and_a_broken_one_keeps_the_keys() {
    let s = setup();
    let file = s.dir.path().join("jwks.json");
    let next = signer("k2");
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("k2".into());
    let token = jsonwebtoken::encode(&header, &s.claims(), &next.key).unwrap();
    s.refused(&token, "unknown_key");
    std::fs::write(&file, "{not json").unwrap();
    s.oidc.reload_key_files();
    assert!(
        s.oidc.check_now(&s.token(&s.claims())).unwrap().is_ok(),
        "kept"
    );
    // Symmetric and encryption keys in a set are left out.
    let oct = json!({"kty": "oct", "kid": "k2", "k": "c2VjcmV0"});
    let enc = json!({"kty": "EC", "crv": "P-256", "use": "enc", "kid": "k2", "x": next.jwk["x"], "y": next.jwk["y"]});
    std::fs::write(&file, json!({"keys": [s.signer.jwk, oct, enc]}).to_string()).unwrap();
    s.oidc.reload_key_files();
    s.refused(&token, "unknown_key");
    std::fs::write(&file, json!({"keys": [next.jwk]}).to_string()).unwrap();
    s.oidc.reload_key_files();
    assert!(s.oidc.check_now(&token).unwrap().is_ok());
}

#[tokio::test]
async fn an_unknown_key_fetches_the_keys_at_most_once_per_interval() {
    let clock = ManualClock::new();
    let mut upstream = crate::config::Config::default().upstream;
    upstream.allow_private_addresses = true;
    upstream.connect_timeout = Duration::from_secs(2);
    let client = crate::upstream::Client::new(&upstream, Arc::new(Metrics::new())).unwrap();
    let mut cfg = config(std::path::Path::new("/nonexistent"));
    cfg.keys_file = None;
    // Nothing listens there: every fetch fails at once.
    cfg.issuer = "https://127.0.0.1:1".parse().unwrap();
    let keys = keys::Keys::new(&cfg, Some(client), clock.clone(), None).unwrap();
    assert!(matches!(
        keys.lookup(Some("k1"), "ES256"),
        keys::Lookup::Fetch
    ));
    assert!(keys.refetch().await.is_err());
    // Within the interval, no fetch is asked for, and none is made.
    assert!(matches!(
        keys.lookup(Some("k1"), "ES256"),
        keys::Lookup::Unknown
    ));
    keys.refetch().await.unwrap();
    clock.advance(Duration::from_secs(59));
    assert!(matches!(
        keys.lookup(Some("k1"), "ES256"),
        keys::Lookup::Unknown
    ));
    clock.advance(Duration::from_secs(1));
    assert!(matches!(
        keys.lookup(Some("k1"), "ES256"),
        keys::Lookup::Fetch
    ));
    assert!(!keys.held_any());
}

#[test]
fn a_key_set_is_read_as_go_reads_it_nulls_and_extra_fields_aside() {
    let s = signer("k1");
    let mut key = s.jwk.clone();
    // Nulls where a field may be absent, fields this mirror does not know,
    // and keys it cannot use beside the one it can.
    key["alg"] = Value::Null;
    key["x5t"] = json!("abc");
    key["key_ops"] = Value::Null;
    key["extra"] = json!({"nested": [1, 2]});
    let set = json!({
        "keys": [
            {"kty": "RSA", "use": "enc", "alg": "RSA-OAEP-256", "kid": "e", "n": "AQAB", "e": "AQAB"},
            {"kty": "OKP", "crv": "X25519", "kid": "x", "x": "AAAA"},
            {"kty": "EC", "crv": "secp256k1", "kid": "k", "x": "AAAA", "y": "AAAA"},
            {"kty": "weird"},
            key,
        ],
        "extra": true,
    });
    let keys = keys::read_set(&set).unwrap();
    assert_eq!(keys.len(), 1);
    assert_eq!(keys[0].kid.as_deref(), Some("k1"));
    assert_eq!(
        keys[0].alg, None,
        "a null alg binds the key to no algorithm"
    );
    assert!(keys[0].verifies("ES256") && !keys[0].verifies("RS256"));
    for bad in [
        json!({}),
        json!({"keys": null}),
        json!({"keys": []}),
        json!([1]),
    ] {
        assert!(keys::read_set(&bad).is_err(), "{bad}");
    }
}
