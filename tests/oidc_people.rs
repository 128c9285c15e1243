//! People sign in through a real OpenID provider (npm's oidc-provider)
//! however it hands out their claims: conforming, as the library does by
//! default (the claims a scope asks for only from UserInfo, plain or
//! signed), with the `claims` request parameter (asked for by name, in the
//! ID token), or with the claims in the ID token (as Keycloak and Dex
//! do). In each case the rules see the person's groups. Driven through the
//! provider's login and consent pages over HTTP, as a browser would be;
//! `tests/oidc.rs` does the same in Chromium.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::oidc::{Claims, Provider};
use common::signin_world::cookie_pair;
use common::*;
use http::StatusCode;
use tfmirror::config::{ClaimsParameter, Config, Grant, OidcIssuerConfig, OidcRuleConfig};

/// The issuer's entry for people signing in through `client_id`.
fn issuer_config(issuer: &str, client_id: &str) -> OidcIssuerConfig {
    let rule = |group: &str, grant| OidcRuleConfig {
        claims: BTreeMap::from([("groups".to_owned(), group.to_owned())]),
        grant,
    };
    OidcIssuerConfig {
        name: "sso".into(),
        issuer: issuer.parse().unwrap(),
        audience: common::oidc::AUDIENCE.into(),
        algorithms: vec!["ES256".into(), "RS256".into()],
        max_lifetime: Duration::from_secs(3600),
        clock_skew: Duration::from_secs(60),
        keys_file: None,
        keys_max_age: Duration::from_secs(3600),
        keys_refetch_interval: Duration::from_secs(60),
        client_id: Some(client_id.into()),
        client_secret_file: None,
        scopes: vec!["profile".into(), "groups".into()],
        userinfo_signed_response_alg: None,
        claims_parameter: ClaimsParameter::Auto,
        rules: vec![
            rule("platform-approvers", Grant::Approve),
            rule("dev", Grant::Read),
        ],
    }
}

/// A mirror on a port of its own whose people sign in through a provider
/// handing out claims as `claims` says, registered as `client_id`.
async fn scene(
    claims: Claims,
    client_id: &str,
    configure: impl FnOnce(&mut OidcIssuerConfig),
) -> (Scene, Provider) {
    let (setup, origin, signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let port = free_port();
    let redirect = format!("https://127.0.0.1:{port}/-/signin/callback");
    let provider = Provider::start_with(&setup.ca, &redirect, "k1", claims).await;
    let issuer = provider.issuer.clone();
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.server.listen = format!("127.0.0.1:{port}").parse().unwrap();
        let mut entry = issuer_config(&issuer, client_id);
        configure(&mut entry);
        config.auth.oidc = vec![entry];
    })
    .await;
    (sc, provider)
}

/// Signs `person` in: the callback's answer.
async fn sign_in(sc: &Scene, provider: &Provider, person: &str) -> Answer {
    let start = sc.client.get(&sc.mirror.url("/-/signin/with/sso")).await;
    assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.page_text());
    let cookie = cookie_pair(&start, "tfmirror_signin").unwrap();
    let back = provider
        .authorize(start.headers["location"].to_str().unwrap(), person)
        .await;
    sc.client
        .request_headers(
            http::Method::GET,
            back.as_str(),
            &[("cookie", cookie.as_str())],
        )
        .await
}

/// The grant of the session a sign-in opened.
fn grant(answer: &Answer) -> String {
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    let session = cookie_pair(answer, "tfmirror_session").expect("a session");
    session.split('.').nth(3).unwrap().to_owned()
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conforming_provider_signs_people_in_with_their_groups_from_userinfo() {
    let (sc, provider) = scene(Claims::Conforming, "tfmirror", |_| {}).await;
    assert_eq!(grant(&sign_in(&sc, &provider, "alice").await), "approve");
    assert_eq!(
        provider.userinfo_requests(),
        1,
        "the groups came from UserInfo"
    );
    assert_eq!(grant(&sign_in(&sc, &provider, "bob").await), "read");
    assert_eq!(provider.userinfo_requests(), 2);
    // carol is in no group: told which claims the rules read.
    let refused = sign_in(&sc, &provider, "carol").await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    let text = refused.page_text();
    assert!(
        text.contains("no rule of this mirror admits the identity (its rules read groups)"),
        "{text}"
    );
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_provider_registered_for_signed_userinfo_signs_people_in() {
    let (sc, provider) = scene(Claims::Conforming, "tfmirror-signed", |entry| {
        entry.userinfo_signed_response_alg = Some("ES256".into());
    })
    .await;
    assert_eq!(grant(&sign_in(&sc, &provider, "alice").await), "approve");
    assert_eq!(provider.userinfo_requests(), 1);
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_claims_parameter_or_a_lenient_provider_puts_the_groups_in_the_id_token() {
    // The provider says it takes the `claims` parameter; the mirror asks
    // for the groups by name, and gets them in the ID token.
    let (sc, provider) = scene(Claims::ConformingWithClaimsParameter, "tfmirror", |_| {}).await;
    assert_eq!(grant(&sign_in(&sc, &provider, "alice").await), "approve");
    assert_eq!(provider.userinfo_requests(), 0, "UserInfo was asked");
    drop((sc, provider));
    // Keycloak's and Dex's way: the claims in the ID token anyway.
    let (sc, provider) = scene(Claims::InTheIdToken, "tfmirror", |_| {}).await;
    assert_eq!(grant(&sign_in(&sc, &provider, "alice").await), "approve");
    assert_eq!(grant(&sign_in(&sc, &provider, "bob").await), "read");
    assert_eq!(provider.userinfo_requests(), 0, "UserInfo was asked");
}
