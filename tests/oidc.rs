//! Identities from a real OpenID provider (npm's oidc-provider, on
//! loopback with TLS): CI jobs' tokens open the mirror when the issuer's
//! rules admit them, every misuse of a token is refused with a 401 whose
//! reason is counted and logged but never answered, a key rotation at the
//! issuer is taken up while the mirror runs, and the audit trail names
//! who was served.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::oidc::{Provider, AUDIENCE};
use common::*;
use http::StatusCode;
use serde_json::{json, Value};
use tfmirror::config::{Config, Grant, OidcIssuerConfig, OidcRuleConfig};

/// The issuer's entry: acme's main branch may read; `alice`'s group may
/// approve.
pub fn issuer_config(issuer: &str) -> OidcIssuerConfig {
    let rule = |claims: &[(&str, &str)], grant| OidcRuleConfig {
        claims: claims
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
        grant,
    };
    OidcIssuerConfig {
        name: "ci".into(),
        issuer: issuer.parse().unwrap(),
        audience: AUDIENCE.into(),
        algorithms: vec!["ES256".into(), "RS256".into()],
        max_lifetime: Duration::from_secs(3600),
        clock_skew: Duration::from_secs(60),
        keys_file: None,
        keys_max_age: Duration::from_secs(3600),
        // Every unknown key ID may fetch the keys again: the rotation
        // below comes seconds after the first fetch.
        keys_refetch_interval: Duration::ZERO,
        client_id: Some("tfmirror".into()),
        client_secret_file: None,
        scopes: vec!["profile".into(), "email".into()],
        rules: vec![
            rule(
                &[("repository_owner", "acme"), ("ref", "refs/heads/main")],
                Grant::Read,
            ),
            rule(&[("groups", "platform-approvers")], Grant::Approve),
            rule(&[("groups", "dev")], Grant::Read),
        ],
    }
}

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

fn part(token: &str, n: usize) -> Value {
    let text = token.split('.').nth(n).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .unwrap(),
    )
    .unwrap()
}

/// How many tokens the mirror's metrics count for `outcome`: under the
/// issuer `ci`, or `unknown` for a token that names no configured issuer.
async fn counted(c: &Client, m: &RunningMirror, outcome: &str) -> u64 {
    let text = c.get(&m.url("/metrics")).await.page_text();
    ["ci", "unknown"]
        .iter()
        .map(|issuer| {
            let prefix = format!(
                "tfmirror_oidc_signins_total{{issuer=\"{issuer}\",outcome=\"{outcome}\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .map_or(0, |n| n.trim().parse::<u64>().unwrap())
        })
        .sum()
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_from_a_real_provider_open_the_mirror_and_every_misuse_is_refused() {
    let (setup, origin, signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let mut provider =
        Provider::start(&setup.ca, "https://127.0.0.1/-/signin/callback", "k1").await;
    let issuer = provider.issuer.clone();
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.auth.oidc = vec![issuer_config(&issuer)];
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let index = m.url("/registry.origin.test/acme/widget/index.json");
    let get = |token: String| {
        let index = index.clone();
        async move {
            c.get_with_header(&index, "authorization", &format!("Bearer {token}"))
                .await
        }
    };

    // A job of acme's main branch gets in.
    let good = provider.ci_token("acme-infra-main", AUDIENCE).await;
    let answer = get(good.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    assert_eq!(counted(c, m, "accepted").await, 1);
    // Remembered: the next requests verify nothing again.
    for _ in 0..3 {
        assert_eq!(get(good.clone()).await.status, StatusCode::OK);
    }
    assert_eq!(counted(c, m, "accepted").await, 1);
    // Without a token, nothing.
    assert_eq!(c.get(&index).await.status, StatusCode::UNAUTHORIZED);

    // Every misuse, each refused for its own reason.
    let header = part(&good, 0);
    let claims = part(&good, 1);
    let signature = good.split('.').nth(2).unwrap().to_owned();
    let jwks = provider.jwks().await;
    let public_ec = jwks["keys"]
        .as_array()
        .unwrap()
        .iter()
        .find(|k| k["kty"] == "EC")
        .unwrap()
        .clone();
    let with_header = |h: Value| format!("{}.{}.{signature}", b64(&h), b64(&claims));
    let mut cases: Vec<(&str, String)> = vec![
        ("no_rule", provider.ci_token("other-owner", AUDIENCE).await),
        (
            "audience",
            provider
                .ci_token("acme-infra-main", "https://other-mirror.tfmirror.test")
                .await,
        ),
        (
            "algorithm",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none", "kid": header["kid"]})),
                b64(&claims)
            ) + "x",
        ),
        (
            "header_key",
            with_header(
                json!({"alg": "ES256", "kid": header["kid"], "jku": format!("{issuer}/jwks")}),
            ),
        ),
        (
            "header_key",
            with_header(
                json!({"alg": "ES256", "kid": header["kid"], "x5u": "https://127.0.0.1:1/cert.pem"}),
            ),
        ),
        (
            "header_key",
            with_header(json!({"alg": "ES256", "kid": header["kid"], "jwk": public_ec})),
        ),
        ("oversized", "e".repeat(9000)),
        ("malformed", "not-a-token".into()),
        ("malformed", format!("{}.{}", b64(&header), b64(&claims))),
    ];
    // HS256 keyed with the issuer's own public key.
    for secret in [
        public_ec.to_string(),
        public_ec["x"].as_str().unwrap().to_owned(),
    ] {
        let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::HS256);
        h.kid = header["kid"].as_str().map(str::to_owned);
        let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes());
        cases.push((
            "algorithm",
            jsonwebtoken::encode(&h, &claims, &key).unwrap(),
        ));
    }
    // The payload changed under the issuer's signature.
    let mut forged = claims.clone();
    forged["sub"] = json!("someone-else");
    cases.push((
        "signature",
        format!("{}.{}.{signature}", b64(&header), b64(&forged)),
    ));
    // Another issuer claimed.
    let mut elsewhere = claims.clone();
    elsewhere["iss"] = json!("https://token.actions.githubusercontent.com");
    cases.push((
        "issuer",
        format!("{}.{}.{signature}", b64(&header), b64(&elsewhere)),
    ));
    // A key ID the issuer never published, even after fetching its keys again.
    let stranger = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let mut h = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::ES256);
    h.kid = Some("k9-ec".into());
    let key = jsonwebtoken::EncodingKey::from_ec_der(&stranger.serialize_der());
    cases.push((
        "unknown_key",
        jsonwebtoken::encode(&h, &claims, &key).unwrap(),
    ));

    for (reason, token) in &cases {
        let before = counted(c, m, reason).await;
        let answer = get(token.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{reason}: {}",
            answer.error_text()
        );
        // The reason is counted (and logged), never told.
        assert_eq!(
            answer.json()["errors"][0],
            "the token is not valid for this mirror",
            "{reason}"
        );
        assert_eq!(
            counted(c, m, reason).await,
            before + 1,
            "{reason} was not counted"
        );
    }

    // The issuer rotates its keys: the mirror fetches them again when a
    // token names the new key, and the new token gets in.
    provider.rotate("k2").await;
    let rotated = provider.ci_token("acme-infra-main", AUDIENCE).await;
    assert_eq!(part(&rotated, 0)["kid"], "k2-ec");
    let answer = get(rotated.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    assert_eq!(counted(c, m, "accepted").await, 2);
    // The retired key's token, remembered, holds until it expires.
    assert_eq!(get(good).await.status, StatusCode::OK);

    // Past its expiry (300 s) and the skew allowance (60 s), by the
    // mirror's clock, the token that got in is refused.
    m.clock.advance(Duration::from_secs(300 + 60 + 5));
    assert_eq!(get(rotated).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(counted(c, m, "expired").await, 1);
}
