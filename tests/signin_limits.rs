//! Where a client could make the mirror work for it at an issuer: sign-ins
//! begun or brought back in a loop from one address are refused with
//! `429`; an unreachable issuer is asked at most once per
//! `keys_refetch_interval`, however many sign-ins begin; the code is
//! traded, and UserInfo asked, only where the request forgery guard lets
//! the mirror go. And a
//! person's decision from the pages is taken only with the form's token,
//! from the mirror's own origin, by someone with `approve`.

mod common;

use std::time::Duration;

use common::browser::Elsewhere;
use common::fake_issuer::FakeIssuer;
use common::signin_world::{self, cookie_pair, World};
use http::StatusCode;
use tfmirror::config::Config;

/// A mirror of `acme/widget` 1.0.0 and 2.0.0, the latter denied by its
/// policy, with the issuer `sso`.
async fn world(configure: impl FnOnce(&mut Config, &FakeIssuer)) -> World {
    let w = signin_world::world(|config, fake| {
        config.policy = toml::from_str(
            "[[rule]]\nsource = \"registry.origin.test/acme/widget\"\nversions = \"= 2.0.0\"\naction = \"deny\"\nreason = \"under review\"\n",
        )
        .unwrap();
        configure(config, fake);
    })
    .await;
    let sc = &w.sc;
    (sc.origin).publish(
        "acme",
        "widget",
        "2.0.0",
        &["linux_amd64"],
        &sc.signer,
        &[&sc.signer],
    );
    w
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sign_ins_from_one_address_are_limited_per_minute() {
    let w = world(|config, _| config.auth.signins_per_minute = 3).await;
    let start = "/-/signin/with/sso";
    for n in 0..3 {
        assert_eq!(
            w.get(start, None).await.status,
            StatusCode::SEE_OTHER,
            "start {n}"
        );
    }
    let limited = w.get(start, None).await;
    assert_eq!(
        limited.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        limited.page_text()
    );
    assert!(limited
        .page_text()
        .contains("too many sign-ins from this address"));
    assert_eq!(w.counted("sso", "rate_limited").await, 1);
    // Callbacks have their own limit, counted under `unknown` without a
    // sign-in cookie to name the issuer.
    for _ in 0..3 {
        assert_eq!(
            w.get("/-/signin/callback?state=x", None).await.status,
            StatusCode::UNAUTHORIZED
        );
    }
    let limited = w.get("/-/signin/callback?state=x", None).await;
    assert_eq!(limited.status, StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(w.counted("unknown", "rate_limited").await, 1);
    assert_eq!(w.counted("unknown", "no_signin").await, 3);
    // A minute on, by the mirror's clock, the address may again.
    w.sc.mirror.clock.advance(Duration::from_secs(60));
    assert_eq!(w.get(start, None).await.status, StatusCode::SEE_OTHER);
    assert_eq!(w.counted("sso", "rate_limited").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_issuer_is_asked_once_per_interval_however_many_sign_ins_begin() {
    let w = world(|_, fake| fake.behave(|b| b.discovery_status = Some(500))).await;
    let discovery = "/.well-known/openid-configuration";
    let start = "/-/signin/with/sso";
    let first = w.get(start, None).await;
    assert_eq!(
        first.status,
        StatusCode::BAD_GATEWAY,
        "{}",
        first.page_text()
    );
    assert_eq!(w.fake.requests(discovery), 1);
    for _ in 0..5 {
        assert_eq!(w.get(start, None).await.status, StatusCode::BAD_GATEWAY);
    }
    assert_eq!(
        w.fake.requests(discovery),
        1,
        "the issuer was asked again within the interval"
    );
    let fetches = |outcome: &str| {
        format!("tfmirror_oidc_key_fetches_total{{issuer=\"sso\",outcome=\"{outcome}\"}}")
    };
    assert_eq!(w.metric(&fetches("failed")).await, 1);
    assert_eq!(w.metric(&fetches("backed_off")).await, 5);
    assert_eq!(w.counted("sso", "issuer_unreachable").await, 6);
    // The issuer is back; once the interval has passed, it is asked again.
    w.fake.behave(|b| b.discovery_status = None);
    w.sc.mirror.clock.advance(Duration::from_secs(59));
    assert_eq!(w.get(start, None).await.status, StatusCode::BAD_GATEWAY);
    assert_eq!(w.fake.requests(discovery), 1);
    w.sc.mirror.clock.advance(Duration::from_secs(1));
    assert_eq!(w.get(start, None).await.status, StatusCode::SEE_OTHER);
    assert_eq!(w.fake.requests(discovery), 2);
    assert_eq!(w.metric(&fetches("fetched")).await, 1);
}

/// A world whose request forgery guard exempts only the issuer's own
/// host, with `endpoint` (given the address nothing may be asked at) set
/// on the fake issuer; a sign-in through it, refused, and what it counted
/// under `outcome`.
async fn refused_at_a_private_endpoint(
    endpoint: fn(&mut common::fake_issuer::Behaviour, String),
    path: &str,
    outcome: &str,
) -> (World, Elsewhere) {
    let elsewhere = Elsewhere::start().await;
    let at = format!("https://{}{path}", elsewhere.addr);
    let w = world(|config, fake| {
        config.upstream.allow_private_addresses = false;
        let host = fake.issuer.trim_start_matches("https://");
        config.upstream.hosts.insert(
            host.parse().unwrap(),
            tfmirror::config::HostConfig::default(),
        );
        fake.behave(|b| endpoint(b, at));
    })
    .await;
    let start = w.get("/-/signin/with/sso", None).await;
    assert_eq!(start.status, StatusCode::SEE_OTHER, "{}", start.page_text());
    let cookie = cookie_pair(&start, "tfmirror_signin").unwrap();
    let back = w
        .at_issuer
        .get(start.headers["location"].to_str().unwrap())
        .await;
    let answer = w
        .get(back.headers["location"].to_str().unwrap(), Some(&cookie))
        .await;
    assert_eq!(
        answer.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        answer.page_text()
    );
    assert_eq!(w.counted("sso", outcome).await, 1);
    (w, elsewhere)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_code_is_traded_only_where_the_request_forgery_guard_allows() {
    // The issuer's own host is configured, so exempt; the token endpoint
    // its discovery document names is a private address that is not.
    let (_w, elsewhere) = refused_at_a_private_endpoint(
        |b, at| b.token_endpoint = Some(at),
        "/token",
        "code_exchange",
    )
    .await;
    assert_eq!(
        elsewhere.connections(),
        0,
        "the mirror connected to the token endpoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_is_asked_only_where_the_request_forgery_guard_allows() {
    // The code is traded at the issuer's own token endpoint; the ID token
    // lacks the groups the rules read, so UserInfo is asked, at a private
    // address the discovery document names.
    let (w, elsewhere) = refused_at_a_private_endpoint(
        |b, at| b.userinfo_endpoint = Some(at),
        "/userinfo",
        "userinfo_unavailable",
    )
    .await;
    assert_eq!(w.counted("sso", "code_exchange").await, 0);
    assert_eq!(
        elsewhere.connections(),
        0,
        "the mirror connected to the UserInfo endpoint"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_decision_is_taken_only_with_the_form_token_from_this_origin_by_an_approver() {
    let w = world(|_, _| {}).await;
    let m = &w.sc.mirror;
    let page = "/-/decide/providers/registry.origin.test/acme/widget/2.0.0";
    let alice = w.session("alice", &["platform-approvers"]).await;
    let bob = w.session("bob", &["dev"]).await;

    // The page sets its form token and carries it in the form.
    let shown = w.get(page, Some(&alice)).await;
    assert_eq!(shown.status, StatusCode::OK, "{}", shown.page_text());
    let form_cookie = cookie_pair(&shown, "tfmirror_form").unwrap();
    let html = String::from_utf8_lossy(&shown.body).into_owned();
    let csrf = html
        .split("name=\"csrf\" value=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .to_owned();
    let own = m.url("/").trim_end_matches('/').to_owned();
    let post = |cookies: String, origin: Option<String>, body: String| {
        let url = m.url(page);
        let client = &w.sc.client;
        async move {
            let mut headers = vec![
                ("cookie", cookies.as_str()),
                ("content-type", "application/x-www-form-urlencoded"),
            ];
            if let Some(origin) = &origin {
                headers.push(("origin", origin.as_str()));
            }
            client.post(&url, &headers, body.into_bytes()).await
        }
    };
    let decided = || async { m.mirror.store().read_decisions().await.unwrap() };
    let form = |csrf: &str| format!("csrf={csrf}&decision=approve&reason=reviewed");

    let cases = [
        (
            "no form token",
            format!("{alice}; {form_cookie}"),
            Some(own.clone()),
            "decision=approve&reason=reviewed".to_owned(),
            "out of date",
        ),
        (
            "another form token",
            format!("{alice}; {form_cookie}"),
            Some(own.clone()),
            form("00112233445566778899aabbccddeeff"),
            "out of date",
        ),
        (
            "another origin",
            format!("{alice}; {form_cookie}"),
            Some("https://evil.example".into()),
            form(&csrf),
            "another site",
        ),
        (
            "read only",
            format!("{bob}; {form_cookie}"),
            Some(own.clone()),
            form(&csrf),
            "approve grant",
        ),
    ];
    for (what, cookies, origin, body, said) in cases {
        let answer = post(cookies, origin, body).await;
        assert_eq!(
            answer.status,
            StatusCode::FORBIDDEN,
            "{what}: {}",
            answer.page_text()
        );
        assert!(
            answer.page_text().contains(said),
            "{what}: {}",
            answer.page_text()
        );
        assert!(decided().await.is_none(), "{what}: a decision was kept");
    }
    // Bob cannot even see the form.
    assert_eq!(w.get(page, Some(&bob)).await.status, StatusCode::FORBIDDEN);
    // Alice, from the page, with its token: taken.
    let answer = post(format!("{alice}; {form_cookie}"), Some(own), form(&csrf)).await;
    assert_eq!(
        answer.status,
        StatusCode::SEE_OTHER,
        "{}",
        answer.page_text()
    );
    let kept = decided().await.unwrap();
    let decision = kept
        .get(
            "registry.origin.test/acme/widget",
            &tfmirror::address::Version::parse("2.0.0").unwrap(),
        )
        .unwrap();
    assert!(
        decision.approved && decision.by.starts_with("person sso alice"),
        "{decision:?}"
    );
}
