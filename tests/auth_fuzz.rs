//! Fuzzing of what a caller presents: generated `Authorization` headers
//! (bearer tokens shaped like JWTs with every header an attacker might
//! try, Basic credentials, noise) and session cookies (shaped like the
//! mirror's own, and noise), sent through the whole HTTP stack to a mirror
//! with a configured token and an OpenID Connect issuer. None may be let
//! in, and none may make the mirror fail: a protected route answers 4xx,
//! a page sends the browser to sign in, never 2xx, never 5xx. And an
//! identity the mirror did let in is shown as text, whatever it holds.

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

/// JWT-shaped tokens: a header from the ones attackers try, a payload that
/// claims the configured issuer or not, and a signature of noise.
fn jwtish() -> impl Strategy<Value = String> {
    let alg = prop_oneof![
        Just("none"),
        Just("None"),
        Just("HS256"),
        Just("ES256"),
        Just("RS256"),
        Just("PS512"),
        Just("EdDSA"),
        Just(""),
    ];
    let extra = prop_oneof![
        Just(json!({})),
        Just(json!({"jku": "https://127.0.0.1:1/jwks"})),
        Just(json!({"x5u": "https://127.0.0.1:1/x"})),
        Just(json!({"jwk": {"kty": "oct", "k": "c2VjcmV0"}})),
        Just(json!({"crit": ["exp"]})),
        Just(json!({"kid": 7})),
        Just(json!({"kid": "k1"})),
        Just(json!({"kid": null})),
    ];
    let iss = prop_oneof![
        Just("https://ci.fuzz.test"),
        Just("https://elsewhere.test"),
        Just("")
    ];
    let times = (
        any::<i64>(),
        any::<i64>(),
        proptest::option::of(any::<u32>()),
    );
    let noise = proptest::collection::vec(any::<u8>(), 0..80);
    (alg, extra, iss, times, noise, "[a-z]{0,8}").prop_map(
        |(alg, mut header, iss, (exp, iat, nbf), sig, sub)| {
            header["alg"] = json!(alg);
            let payload = json!({
                "iss": iss, "aud": "https://mirror.fuzz.test", "sub": sub,
                "exp": exp, "iat": iat, "nbf": nbf, "repository_owner": "acme",
            });
            format!(
                "{}.{}.{}",
                b64(header.to_string().as_bytes()),
                b64(payload.to_string().as_bytes()),
                b64(&sig)
            )
        },
    )
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

/// A mirror with a configured token and an issuer (`ci`, its key in a
/// file in the directory handed back), serving `acme/widget` 1.0.0.
async fn scene() -> (Scene, tempfile::TempDir) {
    let keys = tempfile::tempdir().unwrap();
    let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let raw = pair.public_key_raw();
    let set = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": "k1", "x": b64(&raw[1..33]), "y": b64(&raw[33..65])}]});
    std::fs::write(keys.path().join("jwks.json"), set.to_string()).unwrap();
    let file = keys.path().join("jwks.json");
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], move |config| {
        config.auth.tokens = vec![TOKEN.into()];
        config.auth.oidc = vec![OidcIssuerConfig {
            name: "ci".into(),
            issuer: "https://ci.fuzz.test".parse().unwrap(),
            audience: "https://mirror.fuzz.test".into(),
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
            rules: vec![OidcRuleConfig {
                claims: BTreeMap::from([("sub".to_owned(), "*".to_owned())]),
                grant: Grant::Admin,
            }],
        }];
    })
    .await;
    (sc, keys)
}

#[test]
fn generated_credentials_never_open_the_mirror_nor_break_it() {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let (sc, keys) = rt.block_on(scene());
    let protected = [
        sc.mirror
            .url("/registry.origin.test/acme/widget/index.json"),
        sc.mirror.url("/-/api/status"),
        sc.mirror
            .url("/v1/providers/registry.origin.test/acme/widget/versions"),
    ];
    let page = sc.mirror.url("/-/status");
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
