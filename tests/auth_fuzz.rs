//! Fuzzing of what a caller presents, sent through the whole HTTP stack to
//! a mirror with a configured token and an OpenID Connect issuer:
//! - noise (JWT-shaped tokens with any header and times, Basic
//!   credentials, session cookies shaped like the mirror's own): none may
//!   be let in, and none may make the mirror fail (a protected route
//!   answers 4xx, a page sends the browser to sign in, never 2xx or 5xx);
//! - tokens in and around the issuer's time window, signed by its key,
//!   another key or none, under every header an attacker might try: each
//!   is let in exactly when the rules, written out in the test on their
//!   own, say it must be.
//!
//! And an identity the mirror did let in is shown as text, whatever it
//! holds.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use base64::Engine as _;
use common::*;
use proptest::prelude::*;
use serde_json::json;
use tfmirror::config::{Grant, OidcIssuerConfig, OidcRuleConfig};

const TOKEN: &str = "fuzz-known-token-8c1f";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The issuer entry's audience, and how far its clock may be off.
const AUDIENCE: &str = "https://mirror.fuzz.test";
const ISSUER: &str = "https://ci.fuzz.test";
const SKEW: i64 = 60;
const MAX_LIFETIME: i64 = 3600;

/// How a generated token is signed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Signing {
    /// By the issuer's key (ES256).
    Issuer,
    /// By another key, ES256.
    Stranger,
    /// HS256, keyed with the issuer's public `x` coordinate.
    Symmetric,
    /// A signature of noise.
    Noise,
    /// No signature at all.
    Empty,
}

/// A generated token's parts, before it is written.
#[derive(Debug, Clone)]
struct Jwt {
    alg: &'static str,
    extra: serde_json::Value,
    signing: Signing,
    iss: &'static str,
    aud: serde_json::Value,
    sub: String,
    /// Seconds from the mirror's time: `iat`, `exp` after `iat`, `nbf`.
    iat: i64,
    lifetime: i64,
    nbf: Option<i64>,
}

impl Jwt {
    /// Whether the mirror must let this token in: the rules as
    /// `docs/identities.md` states them, written out here on their own.
    fn admissible(&self) -> bool {
        let header_ok = self
            .extra
            .as_object()
            .unwrap()
            .iter()
            .all(|(k, v)| k == "kid" && (v.is_null() || v == "k1"));
        let aud_ok = self.aud == json!(AUDIENCE)
            || self
                .aud
                .as_array()
                .is_some_and(|a| a.contains(&json!(AUDIENCE)));
        let exp = self.iat + self.lifetime;
        self.alg == "ES256"
            && self.signing == Signing::Issuer
            && header_ok
            && self.iss == ISSUER
            && aud_ok
            && !self.sub.is_empty()
            && exp + SKEW >= 0
            && self.iat <= SKEW
            && self.nbf.is_none_or(|nbf| nbf <= SKEW)
            && self.lifetime <= MAX_LIFETIME
    }

    /// The token, at the mirror's time `now`, signed as it says with
    /// `key` the issuer's.
    fn write(
        &self,
        now: i64,
        key: &jsonwebtoken::EncodingKey,
        stranger: &jsonwebtoken::EncodingKey,
        x: &str,
    ) -> String {
        let mut header = self.extra.clone();
        header["alg"] = json!(self.alg);
        let mut payload = json!({
            "iss": self.iss, "aud": self.aud, "sub": self.sub,
            "iat": now + self.iat, "exp": now + self.iat + self.lifetime,
            "repository_owner": "acme",
        });
        if let Some(nbf) = self.nbf {
            payload["nbf"] = json!(now + nbf);
        }
        let message = format!(
            "{}.{}",
            b64(header.to_string().as_bytes()),
            b64(payload.to_string().as_bytes())
        );
        let sign = |key: &jsonwebtoken::EncodingKey, alg| {
            jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).unwrap()
        };
        let signature = match self.signing {
            Signing::Issuer => sign(key, jsonwebtoken::Algorithm::ES256),
            Signing::Stranger => sign(stranger, jsonwebtoken::Algorithm::ES256),
            Signing::Symmetric => sign(
                &jsonwebtoken::EncodingKey::from_secret(x.as_bytes()),
                jsonwebtoken::Algorithm::HS256,
            ),
            Signing::Noise => b64(b"not a signature"),
            Signing::Empty => String::new(),
        };
        format!("{message}.{signature}")
    }
}

/// Tokens inside and around the issuer's time window, signed by its key or
/// not, with every header an attacker might try.
fn jwt() -> impl Strategy<Value = Jwt> {
    let alg = prop_oneof![
        12 => Just("ES256"),
        1 => Just("none"),
        1 => Just("None"),
        1 => Just("HS256"),
        1 => Just("RS256"),
        1 => Just("PS512"),
        1 => Just("EdDSA"),
        1 => Just(""),
    ];
    let extra = prop_oneof![
        8 => Just(json!({})),
        8 => Just(json!({"kid": "k1"})),
        1 => Just(json!({"kid": null})),
        1 => Just(json!({"kid": 7})),
        1 => Just(json!({"kid": "k2"})),
        1 => Just(json!({"kid": "k1", "jku": "https://127.0.0.1:1/jwks"})),
        1 => Just(json!({"kid": "k1", "x5u": "https://127.0.0.1:1/x"})),
        1 => Just(json!({"kid": "k1", "jwk": {"kty": "oct", "k": "c2VjcmV0"}})),
        1 => Just(json!({"kid": "k1", "x5c": ["MIIB"]})),
        1 => Just(json!({"kid": "k1", "crit": ["exp"]})),
    ];
    let signing = prop_oneof![
        12 => Just(Signing::Issuer),
        1 => Just(Signing::Stranger),
        1 => Just(Signing::Symmetric),
        1 => Just(Signing::Noise),
        1 => Just(Signing::Empty),
    ];
    let iss = prop_oneof![10 => Just(ISSUER), 1 => Just("https://elsewhere.test"), 1 => Just("")];
    let aud = prop_oneof![
        8 => Just(json!(AUDIENCE)),
        2 => Just(json!(["other", AUDIENCE])),
        1 => Just(json!("https://other.test")),
        1 => Just(json!(null)),
    ];
    // Mostly inside the window, with its edges (the skew allowance, the
    // longest lifetime) on both sides, and now and then far outside.
    let iat = prop_oneof![
        8 => -600i64..=SKEW,
        1 => Just(SKEW),
        1 => Just(SKEW + 1),
        1 => -100_000i64..-600,
        1 => SKEW + 1..100_000,
    ];
    let lifetime = prop_oneof![
        8 => 1i64..=MAX_LIFETIME,
        1 => Just(MAX_LIFETIME),
        1 => Just(MAX_LIFETIME + 1),
        1 => -1000i64..1,
        1 => MAX_LIFETIME + 1..100_000,
    ];
    let nbf = proptest::option::of(prop_oneof![
        4 => -600i64..=SKEW,
        1 => Just(SKEW),
        1 => Just(SKEW + 1),
        1 => SKEW + 1..10_000,
    ]);
    (
        alg,
        extra,
        signing,
        iss,
        aud,
        "[a-z]{0,8}",
        (iat, lifetime, nbf),
    )
        .prop_map(
            |(alg, extra, signing, iss, aud, sub, (iat, lifetime, nbf))| Jwt {
                alg,
                extra,
                signing,
                iss,
                aud,
                sub,
                iat,
                lifetime,
                nbf,
            },
        )
}

/// JWT-shaped noise: headers and payloads of any shape, a signature of
/// noise.
fn jwtish() -> impl Strategy<Value = String> {
    let times = (
        any::<i64>(),
        any::<i64>(),
        proptest::option::of(any::<u32>()),
    );
    let noise = proptest::collection::vec(any::<u8>(), 0..80);
    ("[ -~]{0,12}", times, noise, "[a-z]{0,8}").prop_map(|(alg, (exp, iat, nbf), sig, sub)| {
        let payload = json!({
            "iss": ISSUER, "aud": AUDIENCE, "sub": sub,
            "exp": exp, "iat": iat, "nbf": nbf, "repository_owner": "acme",
        });
        format!(
            "{}.{}.{}",
            b64(json!({"alg": alg}).to_string().as_bytes()),
            b64(payload.to_string().as_bytes()),
            b64(&sig)
        )
    })
}

fn authorization() -> impl Strategy<Value = String> {
    prop_oneof![
        jwtish().prop_map(|t| format!("Bearer {t}")),
        "[ -~]{0,200}".prop_map(|t| format!("Bearer {t}")),
        "[ -~]{0,120}".prop_map(|t| format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(t)
        )),
        "[ -~]{0,300}",
        Just(format!("Bearer {TOKEN}x")),
        Just(format!("Bearer  {}", &TOKEN[1..])),
    ]
}

fn cookie() -> impl Strategy<Value = String> {
    let hex = "[0-9a-f]{0,70}";
    prop_oneof![
        (any::<u64>(), hex, hex).prop_map(|(e, n, s)| format!("tfmirror_session=v1.{e}.{n}.{s}")),
        (
            any::<u64>(),
            "[A-Za-z0-9_-]{0,120}",
            prop_oneof![Just("read"), Just("approve"), Just("admin"), Just("root")],
            hex
        )
            .prop_map(|(e, w, g, s)| format!("tfmirror_session=v2.{e}.{w}.{g}.{s}")),
        "[ -:<-~]{0,200}".prop_map(|v| format!("tfmirror_session={v}")),
        "[ -~]{0,200}",
    ]
}

/// The issuer's signing key, the `x` of its public key, and its keys
/// file's directory.
struct IssuerKey {
    key: jsonwebtoken::EncodingKey,
    x: String,
    _dir: tempfile::TempDir,
}

/// A mirror with a configured token and an issuer (`ci`, its key in a
/// file), serving `acme/widget` 1.0.0.
async fn scene() -> (Scene, IssuerKey) {
    let keys = tempfile::tempdir().unwrap();
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    let x = b64(&raw[1..33]);
    let set = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}]});
    std::fs::write(keys.path().join("jwks.json"), set.to_string()).unwrap();
    let file = keys.path().join("jwks.json");
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], move |config| {
        config.auth.tokens = vec![TOKEN.into()];
        config.auth.oidc = vec![OidcIssuerConfig {
            name: "ci".into(),
            issuer: ISSUER.parse().unwrap(),
            audience: AUDIENCE.into(),
            algorithms: vec![
                "ES256".into(),
                "RS256".into(),
                "EdDSA".into(),
                "PS512".into(),
            ],
            max_lifetime: Duration::from_secs(3600),
            clock_skew: Duration::from_secs(60),
            keys_file: Some(file),
            keys_max_age: Duration::from_secs(3600),
            keys_refetch_interval: Duration::from_secs(60),
            client_id: None,
            client_secret_file: None,
            scopes: vec![],
            userinfo_signed_response_alg: None,
            claims_parameter: tfmirror::config::ClaimsParameter::Auto,
            rules: vec![OidcRuleConfig {
                claims: BTreeMap::from([("sub".to_owned(), "*".to_owned())]),
                grant: Grant::Admin,
            }],
        }];
    })
    .await;
    let key = IssuerKey {
        key: jsonwebtoken::EncodingKey::from_ec_der(&pair.serialize_der()),
        x,
        _dir: keys,
    };
    (sc, key)
}

/// What the fuzzing asks for: three routes a token opens (the network
/// mirror, the pages' JSON, the facade), and the status page.
fn guarded(sc: &Scene) -> ([String; 3], String) {
    let protected = [
        sc.mirror
            .url("/registry.origin.test/acme/widget/index.json"),
        sc.mirror.url("/-/api/status"),
        sc.mirror
            .url("/v1/providers/registry.origin.test/acme/widget/versions"),
    ];
    (protected, sc.mirror.url("/-/status"))
}

#[test]
fn generated_credentials_never_open_the_mirror_nor_break_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (sc, keys) = rt.block_on(scene());
    let (protected, page) = guarded(&sc);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1000));
    runner
        .run(
            &(authorization(), proptest::option::of(cookie()), 0..3usize),
            |(auth, cookie, which)| {
                let (status, page_status) = rt.block_on(async {
                    let mut headers = vec![("authorization", auth.as_str())];
                    if let Some(c) = &cookie {
                        headers.push(("cookie", c.as_str()));
                    }
                    let a = sc
                        .client
                        .request_headers(http::Method::GET, &protected[which], &headers)
                        .await;
                    let p = sc
                        .client
                        .request_headers(http::Method::GET, &page, &headers)
                        .await;
                    (a.status, p.status)
                });
                prop_assert!(status.is_client_error(), "{auth:?} {cookie:?}: {status}");
                prop_assert!(
                    page_status == http::StatusCode::SEE_OTHER || page_status.is_client_error(),
                    "{auth:?} {cookie:?}: the status page answered {page_status}"
                );
                Ok(())
            },
        )
        .unwrap();
    // The known token still opens it: the fuzzing did not shut it.
    let answer = rt.block_on(
        sc.client.get_with_header(
            &sc.mirror
                .url("/registry.origin.test/acme/widget/index.json"),
            "authorization",
            &format!("Bearer {TOKEN}"),
        ),
    );
    assert_eq!(answer.status, http::StatusCode::OK);
    drop(keys);
}

/// Tokens in and around the issuer's time window, signed by its key or
/// another or none, under every header: each opens the mirror exactly when
/// [`Jwt::admissible`] (the rules, written out on their own) says it must.
#[test]
fn generated_tokens_open_the_mirror_exactly_when_the_rules_say() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (sc, keys) = rt.block_on(scene());
    let stranger = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let stranger = jsonwebtoken::EncodingKey::from_ec_der(&stranger.serialize_der());
    let now = i64::try_from(tfmirror::clock::Clock::unix_secs(&*sc.mirror.clock)).unwrap();
    let (protected, page) = guarded(&sc);
    let (admitted, refused) = (std::cell::Cell::new(0), std::cell::Cell::new(0));
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig::with_cases(1000));
    runner
        .run(&(jwt(), 0..3usize), |(jwt, which)| {
            let token = jwt.write(now, &keys.key, &stranger, &keys.x);
            let bearer = format!("Bearer {token}");
            let headers = [("authorization", bearer.as_str())];
            let (status, page_status) = rt.block_on(async {
                let a = (sc.client)
                    .request_headers(http::Method::GET, &protected[which], &headers)
                    .await;
                let p = (sc.client)
                    .request_headers(http::Method::GET, &page, &headers)
                    .await;
                (a.status, p.status)
            });
            if jwt.admissible() {
                admitted.set(admitted.get() + 1);
                prop_assert_eq!(status, http::StatusCode::OK, "{:?}", jwt);
                prop_assert_eq!(page_status, http::StatusCode::OK, "{:?}", jwt);
            } else {
                refused.set(refused.get() + 1);
                prop_assert_eq!(status, http::StatusCode::UNAUTHORIZED, "{:?}", jwt);
                prop_assert!(
                    page_status == http::StatusCode::SEE_OTHER || page_status.is_client_error(),
                    "{:?}: the status page answered {}",
                    jwt,
                    page_status
                );
            }
            Ok(())
        })
        .unwrap();
    // Both kinds were tried, in earnest numbers.
    let (admitted, refused) = (admitted.get(), refused.get());
    eprintln!("{admitted} tokens admitted, {refused} refused");
    assert!(
        admitted >= 50 && refused >= 300,
        "{admitted} admitted, {refused} refused"
    );
}

/// An identity is shown on the pages as text, whatever its subject and
/// claims hold, and so is a decision's maker and reason: a session cookie
/// the mirror signed for a hostile identity (as a sign-in through a
/// hostile issuer would make) renders nothing of it as markup.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_identity_and_decision_are_shown_as_text() {
    let (sc, _keys) = scene().await;
    let (m, c) = (&sc.mirror, &sc.client);
    let token = format!("Bearer {TOKEN}");
    let index = m.url("/registry.origin.test/acme/widget/index.json");
    assert_eq!(
        c.get_with_header(&index, "authorization", &token)
            .await
            .status,
        http::StatusCode::OK
    );
    let who = json!({
        "kind": "person", "issuer": "ci",
        "subject": "<script>alert(1)</script>\"'>",
        "claims": {"groups": "<img src=x onerror=alert(2)>"},
    });
    let who = b64(who.to_string().as_bytes());
    let expires = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 3600;
    let signature = m
        .app
        .auth
        .sign_text(format!("person\n{expires}\n{who}\napprove").as_bytes());
    let cookie = format!("tfmirror_session=v2.{expires}.{who}.approve.{signature}");
    m.mirror
        .record_decision(tfmirror::store::PolicyDecision {
            subject: "registry.origin.test/acme/widget".into(),
            version: tfmirror::address::Version::parse("1.0.0").unwrap(),
            approved: false,
            reason: "<b onmouseover=alert(3)>why</b>".into(),
            at_ms: 1,
            repin: false,
            by: "person ci <script>alert(4)</script>".into(),
        })
        .await
        .unwrap();
    for page in [
        "/-/providers/registry.origin.test/acme/widget",
        "/-/decide/providers/registry.origin.test/acme/widget/1.0.0",
    ] {
        let answer = c
            .request_headers(http::Method::GET, &m.url(page), &[("cookie", &cookie)])
            .await;
        assert_eq!(
            answer.status,
            http::StatusCode::OK,
            "{page}: {}",
            answer.page_text()
        );
        let html = answer.page_text();
        assert!(
            html.contains("&#60;script&#62;alert(1)&#60;/script&#62;"),
            "{page}: the subject is not shown:\n{html}"
        );
        for raw in ["<script>", "<img", "<b ", "alert(2)>", "'>"] {
            assert!(
                !html.contains(raw),
                "{page} carries {raw:?} as markup:\n{html}"
            );
        }
        if page.starts_with("/-/decide") {
            assert!(html.contains("&#60;script&#62;alert(4)"), "{html}");
            assert!(html.contains("&#60;b onmouseover"), "{html}");
        }
    }
}
