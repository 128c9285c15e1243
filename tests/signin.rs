//! People signing in to the pages through an OpenID provider, against an
//! issuer that misbehaves on request (`common::fake_issuer`): claims that
//! only UserInfo holds are merged and matched, UserInfo is held to the ID
//! token's subject and, where registered, to a signature; and every way a
//! sign-in can be refused is refused, each counted under its own outcome
//! (the conforming provider's part is in `tests/oidc.rs`).

mod common;

use std::time::Duration;

use common::fake_issuer::UserInfo;
use common::signin_world::*;
use common::*;
use http::StatusCode;
use serde_json::{json, Map, Value};
use tfmirror::clock::Clock;

/// The grant a session cookie names (`v2.<expires>.<who>.<grant>.<sig>`).
fn grant_of(session: &str) -> String {
    session.split('.').nth(3).unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn claims_only_userinfo_holds_are_asked_for_merged_and_matched() {
    let w = world(|_, _| {}).await;
    // Conforming: the ID token names the person, UserInfo their groups.
    w.fake.behave(|b| {
        b.userinfo = UserInfo::Json(claims(
            json!({"groups": ["platform-approvers"], "name": "Alice"}),
        ));
    });
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    let session = cookie_pair(&answer, "tfmirror_session").expect("a session");
    assert_eq!(grant_of(&session), "approve");
    assert_eq!(w.fake.requests("/userinfo"), 1);
    assert_eq!(w.counted("sso", "accepted").await, 1);
    // The authorization request: code with PKCE (S256), state and nonce,
    // the scopes configured; no `claims` parameter for an issuer that
    // does not say it takes one.
    let asked = w.fake.last_authorization();
    assert_eq!(asked["response_type"], "code");
    assert_eq!(asked["code_challenge_method"], "S256");
    assert_eq!(asked["code_challenge"].len(), 43, "{asked:?}");
    assert_eq!(asked["scope"], "openid groups");
    assert!(asked["state"].len() >= 32 && asked["nonce"].len() >= 32);
    assert!(!asked.contains_key("claims"), "{asked:?}");

    // Claims in the ID token (Keycloak, Dex): UserInfo is not asked.
    w.fake.behave(|b| {
        b.id_token_claims = claims(json!({"groups": ["dev"], "email": "alice@example.test"}));
    });
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    assert_eq!(
        grant_of(&cookie_pair(&answer, "tfmirror_session").unwrap()),
        "read"
    );
    assert_eq!(
        w.fake.requests("/userinfo"),
        1,
        "UserInfo was asked for claims the ID token held"
    );

    // An issuer that says it takes the `claims` parameter is asked for the
    // rules' claims by name, in the ID token and from UserInfo.
    let w = world(|_, fake| fake.behave(|b| b.claims_parameter_supported = true)).await;
    w.fake
        .behave(|b| b.id_token_claims = claims(json!({"groups": ["dev"]})));
    assert_eq!(w.sign_in().await.status, StatusCode::OK);
    let asked: Value = serde_json::from_str(&w.fake.last_authorization()["claims"]).unwrap();
    let wanted = json!({"email": null, "groups": null});
    assert_eq!(asked, json!({"id_token": wanted, "userinfo": wanted}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_id_token_wins_where_it_and_userinfo_disagree_and_distributed_claims_are_not_followed()
{
    let w = world(|_, _| {}).await;
    // The ID token says dev and lacks email (a rule reads it), so UserInfo
    // is asked; it claims platform-approvers. The ID token's groups stay.
    w.fake.behave(|b| {
        b.id_token_claims = claims(json!({"groups": ["dev"]}));
        b.userinfo = UserInfo::Json(claims(
            json!({"groups": ["platform-approvers"], "email": "a@example.test"}),
        ));
    });
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    assert_eq!(
        grant_of(&cookie_pair(&answer, "tfmirror_session").unwrap()),
        "read"
    );
    assert_eq!(w.fake.requests("/userinfo"), 1);

    // Groups only as distributed claims: not followed, so missing.
    let source = format!("{}/claims", w.fake.issuer);
    w.fake.behave(|b| {
        b.id_token_claims = Map::new();
        b.userinfo = UserInfo::Json(claims(json!({
            "_claim_names": {"groups": "src1", "email": "src1"},
            "_claim_sources": {"src1": {"endpoint": source, "access_token": "x"}},
        })));
    });
    let before = w.outcomes().await;
    let answer = w.sign_in().await;
    w.refused(&answer, &before, "missing_claim", "no email, groups claim")
        .await;
    assert_eq!(w.fake.requests("/claims"), 0, "a claim source was followed");

    // Groups that no rule admits: the person is told what the rules read.
    w.fake.behave(|b| {
        b.userinfo = UserInfo::Json(claims(
            json!({"groups": ["sales"], "email": "a@example.test"}),
        ));
    });
    let before = w.outcomes().await;
    let answer = w.sign_in().await;
    w.refused(&answer, &before, "no_rule", "its rules read email, groups")
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn userinfo_is_held_to_the_subject_and_to_a_registered_signature() {
    let w = world(|config, _| {
        config.auth.oidc[0].userinfo_signed_response_alg = Some("ES256".into());
    })
    .await;
    let groups = claims(json!({"groups": ["platform-approvers"]}));
    let signed = |extra: Value, by_stranger: bool, unsigned: bool| {
        let mut all = groups.clone();
        all.extend(claims(extra));
        UserInfo::Signed {
            claims: all,
            by_stranger,
            unsigned,
        }
    };
    // Signed as registered: in.
    w.fake
        .behave(|b| b.userinfo = signed(json!({}), false, false));
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    assert_eq!(
        grant_of(&cookie_pair(&answer, "tfmirror_session").unwrap()),
        "approve"
    );
    // A person in many groups: a signed answer of some 50 KiB is read
    // whole; one past 64 KiB (below) is not read at all.
    let many = |n: usize| -> Vec<String> {
        let mut teams: Vec<String> = (0..n).map(|i| format!("team-{i:04}-{:x<60}", "")).collect();
        teams.push("platform-approvers".into());
        teams
    };
    w.fake
        .behave(|b| b.userinfo = signed(json!({"groups": many(500)}), false, false));
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    // Expired by as much as the issuer's clock_skew (60 s) allows, by the
    // mirror's clock: in. A second more is refused (below).
    let now = w.sc.mirror.clock.unix_secs();
    w.fake
        .behave(|b| b.userinfo = signed(json!({"exp": now - 60}), false, false));
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());

    let cases: Vec<(&str, UserInfo)> = vec![
        ("userinfo_unsigned", UserInfo::Json(groups.clone())),
        (
            "userinfo_subject",
            signed(json!({"sub": "mallory"}), false, false),
        ),
        ("userinfo_invalid", signed(json!({}), true, false)),
        ("userinfo_invalid", signed(json!({}), false, true)),
        (
            "userinfo_invalid",
            signed(json!({"iss": "https://elsewhere.test"}), false, false),
        ),
        (
            "userinfo_invalid",
            signed(json!({"aud": "another-client"}), false, false),
        ),
        (
            "userinfo_invalid",
            signed(json!({"exp": now - 61}), false, false),
        ),
        ("userinfo_unavailable", UserInfo::Status(500)),
        (
            "userinfo_invalid",
            signed(json!({"groups": many(1000)}), false, false),
        ),
    ];
    for (outcome, userinfo) in cases {
        w.fake.behave(|b| b.userinfo = userinfo.clone());
        let before = w.outcomes().await;
        let answer = w.sign_in().await;
        w.refused(
            &answer,
            &before,
            outcome,
            "UserInfo answer could not be used",
        )
        .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_userinfo_about_someone_else_is_refused() {
    let w = world(|_, _| {}).await;
    w.fake.behave(|b| {
        b.userinfo = UserInfo::Json(claims(
            json!({"sub": "mallory", "groups": ["platform-approvers"]}),
        ));
    });
    let before = w.outcomes().await;
    let answer = w.sign_in().await;
    w.refused(
        &answer,
        &before,
        "userinfo_subject",
        "UserInfo answer could not be used",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_token_for_another_client_nonce_or_issuer_is_refused() {
    let w = world(|_, _| {}).await;
    let groups = claims(json!({"groups": ["dev"]}));
    let cases = [
        ("audience", json!({"aud": "another-client"})),
        (
            "nonce",
            json!({"nonce": "0123456789abcdef0123456789abcdef"}),
        ),
        // Signed by the issuer's own key, and naming another issuer: the
        // issuer is checked after the signature holds.
        ("issuer", json!({"iss": "https://elsewhere.test"})),
        ("expired", json!({"iat": 1_000_000, "exp": 1_000_300})),
    ];
    for (outcome, overrides) in cases {
        w.fake.behave(|b| {
            b.id_token_claims = groups.clone();
            b.id_token_overrides = claims(overrides.clone());
        });
        let before = w.outcomes().await;
        let answer = w.sign_in().await;
        w.refused(&answer, &before, outcome, "ID token was refused")
            .await;
    }
    // As the issuer sends it, the same ID token opens a session.
    w.fake.behave(|b| b.id_token_overrides = Map::new());
    assert_eq!(w.sign_in().await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_misuse_of_the_callback_is_refused() {
    let w = world(|_, _| {}).await;
    w.fake
        .behave(|b| b.id_token_claims = claims(json!({"groups": ["dev"]})));
    let m = &w.sc.mirror;

    // The callback called directly, with no sign-in under way.
    let before = w.outcomes().await;
    let unknown_before = w.counted("unknown", "no_signin").await;
    let direct = m.url("/-/signin/callback?code=x&state=y");
    let answer = w.callback(&direct, None).await;
    assert_eq!(answer.status, StatusCode::UNAUTHORIZED);
    assert!(answer.page_text().contains("no sign-in is under way"));
    assert_eq!(w.outcomes().await, before, "counted under the issuer");
    assert_eq!(w.counted("unknown", "no_signin").await, unknown_before + 1);

    // Another sign-in's state.
    let (cookie, authorize) = w.begin().await;
    let back = w.at_issuer(&authorize).await;
    let mut url = url::Url::parse(&back).unwrap();
    let code = query_param(&back, "code");
    url.query_pairs_mut()
        .clear()
        .append_pair("code", &code)
        .append_pair("state", "0123456789abcdef0123456789abcdef");
    let before = w.outcomes().await;
    let answer = w.callback(url.as_str(), Some(&cookie)).await;
    w.refused(&answer, &before, "state", "another sign-in's state")
        .await;
    // The real state still works: a wrong one does not use it up.
    let answer = w.callback(&back, Some(&cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());

    // The same callback again: replayed, and the issuer is not asked.
    let tokens_before = w.fake.requests("/token");
    let before = w.outcomes().await;
    let answer = w.callback(&back, Some(&cookie)).await;
    w.refused(&answer, &before, "replayed", "already used")
        .await;
    assert_eq!(w.fake.requests("/token"), tokens_before);

    // The issuer refused (the person said no).
    let (cookie, authorize) = w.begin().await;
    let state = query_param(&authorize, "state");
    let refused_url = m.url(&format!(
        "/-/signin/callback?error=access_denied&state={state}"
    ));
    let before = w.outcomes().await;
    let answer = w.callback(&refused_url, Some(&cookie)).await;
    w.refused(
        &answer,
        &before,
        "refused_at_issuer",
        "the issuer refused it",
    )
    .await;

    // A code issued to another sign-in (an attacker's), brought back with
    // this browser's state: the PKCE verifier does not fit its challenge.
    let (victim, victim_authorize) = w.begin().await;
    let (_, attacker_authorize) = w.begin().await;
    let attacker_back = w.at_issuer(&attacker_authorize).await;
    let attacker_code = query_param(&attacker_back, "code");
    let victim_state = query_param(&victim_authorize, "state");
    let injected = m.url(&format!(
        "/-/signin/callback?code={attacker_code}&state={victim_state}"
    ));
    let before = w.outcomes().await;
    let answer = w.callback(&injected, Some(&victim)).await;
    w.refused(
        &answer,
        &before,
        "code_exchange",
        "did not take the sign-in's code",
    )
    .await;
    assert_eq!(w.fake.token_refusals(), ["code_verifier does not match"]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_issuer_whose_keys_come_from_a_file_signs_people_in_on_those_keys() {
    let w = world(|config, fake| {
        let file = config.server.data_dir.with_file_name("issuer-jwks.json");
        std::fs::write(&file, fake.jwks.to_string()).unwrap();
        config.auth.oidc[0].keys_file = Some(file);
    })
    .await;
    w.fake
        .behave(|b| b.id_token_claims = claims(json!({"groups": ["dev"]})));
    let answer = w.sign_in().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    assert_eq!(
        grant_of(&cookie_pair(&answer, "tfmirror_session").unwrap()),
        "read"
    );
    // The discovery document gave the sign-in's endpoints; the keys stayed
    // the file's.
    assert_eq!(w.fake.requests("/.well-known/openid-configuration"), 1);
    assert_eq!(
        w.fake.requests("/jwks"),
        0,
        "the issuer's keys were fetched"
    );
}

/// The `Set-Cookie` header setting `name`, whole.
fn set_cookie(answer: &Answer, name: &str) -> String {
    (answer.headers.get_all("set-cookie").iter())
        .filter_map(|v| v.to_str().ok())
        .find(|v| v.starts_with(&format!("{name}=")))
        .unwrap_or_else(|| panic!("no {name} cookie"))
        .to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_cookie_stays_on_its_path_and_only_issuers_with_a_client_sign_people_in() {
    let w = world(|config, fake| {
        // A second issuer, for CI jobs only: no client ID.
        let mut ci = issuer_config(&fake.issuer);
        ci.name = "ci".into();
        ci.client_id = None;
        config.auth.oidc.push(ci);
    })
    .await;
    w.fake
        .behave(|b| b.id_token_claims = claims(json!({"groups": ["dev"]})));
    let m = &w.sc.mirror;
    for name in ["ci", "nobody"] {
        let answer =
            w.sc.client
                .get(&m.url(&format!("/-/signin/with/{name}")))
                .await;
        assert_eq!(answer.status, StatusCode::NOT_FOUND, "{name}");
    }
    assert_eq!(w.fake.requests("/.well-known/openid-configuration"), 0);
    // The sign-in's secrets: a cookie for /-/signin alone, out of scripts'
    // reach, over HTTPS only, sent on the issuer's redirect back.
    let start = w.sc.client.get(&m.url("/-/signin/with/sso")).await;
    let set = set_cookie(&start, "tfmirror_signin");
    assert!(
        set.ends_with("; Max-Age=600; Path=/-/signin; HttpOnly; Secure; SameSite=Lax"),
        "{set}"
    );
    // The callback clears it, on the same path.
    let cookie = cookie_pair(&start, "tfmirror_signin").unwrap();
    let back = w
        .at_issuer(start.headers["location"].to_str().unwrap())
        .await;
    let answer = w.callback(&back, Some(&cookie)).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.page_text());
    assert_eq!(
        set_cookie(&answer, "tfmirror_signin"),
        "tfmirror_signin=; Max-Age=0; Path=/-/signin; HttpOnly; Secure; SameSite=Lax"
    );
    let session = set_cookie(&answer, "tfmirror_session");
    assert!(
        session.ends_with("; Path=/; HttpOnly; Secure; SameSite=Strict"),
        "{session}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sign_in_cookie_forged_or_outlived_is_no_sign_in_under_way() {
    let w = world(|_, _| {}).await;
    w.fake
        .behave(|b| b.id_token_claims = claims(json!({"groups": ["dev"]})));
    let (cookie, authorize) = w.begin().await;
    let back = w.at_issuer(&authorize).await;
    let (head, signature) = cookie.rsplit_once('.').unwrap();
    // Another signature (its first hex digit changed), and another time
    // limit under the same signature.
    let flipped = if signature.starts_with('0') { '1' } else { '0' };
    let forged_signature = format!("{head}.{flipped}{}", &signature[1..]);
    let parts: Vec<&str> = head.split('.').collect();
    let later: u64 = parts[1].parse::<u64>().unwrap() + 3600;
    let forged_expiry = format!("{}.{later}.{}.{signature}", parts[0], parts[2]);
    let tokens_before = w.fake.requests("/token");
    for forged in [forged_signature, forged_expiry] {
        let before = w.outcomes().await;
        let unknown_before = w.counted("unknown", "no_signin").await;
        let answer = w.callback(&back, Some(&forged)).await;
        assert_eq!(answer.status, StatusCode::UNAUTHORIZED, "{forged}");
        assert!(
            answer.page_text().contains("no sign-in is under way"),
            "{forged}"
        );
        assert_eq!(w.outcomes().await, before, "{forged}");
        assert_eq!(w.counted("unknown", "no_signin").await, unknown_before + 1);
    }
    // Ten minutes on, by the mirror's clock, the real cookie has lapsed.
    w.sc.mirror.clock.advance(Duration::from_secs(600));
    let answer = w.callback(&back, Some(&cookie)).await;
    assert_eq!(
        answer.status,
        StatusCode::UNAUTHORIZED,
        "{}",
        answer.page_text()
    );
    assert!(answer.page_text().contains("no sign-in is under way"));
    assert_eq!(
        w.fake.requests("/token"),
        tokens_before,
        "the issuer was asked"
    );
}
