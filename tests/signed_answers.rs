//! Answers made for their caller and kept for a signing window: with
//! access control on, a `:version.json` and a facade download answer
//! carry links signed for whoever asked, and the mirror keeps each
//! caller's answer for the window its links were signed in. What no kept
//! answer may do: reach another caller, outlive a change to what it
//! answers, or let in a caller access control now refuses. Two CI jobs'
//! tokens minted by a real OpenID provider (npm's oidc-provider) and two
//! configured tokens, on one mirror.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine as _;
use common::oidc::{issuer_config, Provider, AUDIENCE};
use common::*;
use http::StatusCode;
use serde_json::Value;
use tfmirror::config::Config;

const DOC: &str = "/registry.origin.test/acme/widget/1.0.0.json";
const FACADE: &str = "/v1/providers/registry.origin.test/acme/widget/1.0.0/download/linux/amd64";

/// Every link an answer hands out: a `:version.json`'s archive URLs, or a
/// facade answer's three URLs.
fn links(answer: &Value) -> Vec<String> {
    if let Some(archives) = answer.get("archives") {
        let archives = archives.as_object().unwrap();
        return archives
            .values()
            .map(|a| a["url"].as_str().unwrap().to_owned())
            .collect();
    }
    ["download_url", "shasums_url", "shasums_signature_url"]
        .iter()
        .map(|f| answer[f].as_str().unwrap().to_owned())
        .collect()
}

/// A link's query parameter `name`.
fn param(link: &str, name: &str) -> Option<String> {
    let query = link.split_once('?')?.1;
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

/// The subject a link names (`by=`), if any.
fn named(link: &str) -> Option<String> {
    let by = param(link, "by")?;
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(by)
        .unwrap();
    let who: Value = serde_json::from_slice(&json).unwrap();
    Some(who["subject"].as_str().unwrap().to_owned())
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kept_answers_never_cross_callers_and_follow_what_they_answer() {
    let (setup, origin, signer, archives) =
        published("widget", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;
    let provider = Provider::start(&setup.ca, "https://127.0.0.1/-/signin/callback", "k1").await;
    let issuer_url = provider.issuer.clone();
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, "first-token\nsecond-token\n").unwrap();
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.auth.oidc = vec![issuer_config(&issuer_url)];
        config.auth.token_file = Some(token_file.clone());
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    // Two jobs of acme's main branch: the same claims, two subjects.
    let alpha = provider.ci_token("acme-infra-main", AUDIENCE).await;
    let beta = provider.ci_token("acme-infra-rs256", AUDIENCE).await;
    let ask = |path: &'static str, token: String| async move {
        let a = c
            .get_with_header(&m.url(path), "authorization", &format!("Bearer {token}"))
            .await;
        assert_eq!(a.status, StatusCode::OK, "{path}: {}", a.error_text());
        a
    };

    for path in [DOC, FACADE] {
        // Asked twice in a window, a caller gets the same bytes: kept.
        let a1 = ask(path, alpha.clone()).await;
        let a2 = ask(path, alpha.clone()).await;
        assert_eq!(a1.body, a2.body, "{path}: one answer per window");
        let b = ask(path, beta.clone()).await;
        let a3 = ask(path, alpha.clone()).await;
        assert_eq!(
            a3.body, a1.body,
            "{path}: the other caller's answer is not taken"
        );
        // Each caller's links name that caller, and only that caller.
        let (a_links, b_links) = (links(&a1.json()), links(&b.json()));
        assert!(!a_links.is_empty());
        for link in &a_links {
            assert_eq!(named(link).as_deref(), Some("acme-infra-main"), "{link}");
            // No token rides in a link, and no host: the same bytes hold
            // whatever base URL the request came through.
            assert!(!link.contains(&alpha) && !link.contains("://"), "{link}");
        }
        for link in &b_links {
            assert_eq!(named(link).as_deref(), Some("acme-infra-rs256"), "{link}");
        }
        // The configured tokens' links name nobody: their answers are one.
        let t1 = ask(path, "first-token".into()).await;
        let t2 = ask(path, "second-token".into()).await;
        assert_eq!(t1.body, t2.body, "{path}");
        assert!(links(&t1.json()).iter().all(|l| named(l).is_none()));
        // Another caller's `by` in a caller's link breaks its signature.
        let a_link = &a_links[0];
        let b_by = param(&b_links[0], "by").unwrap();
        let a_by = param(a_link, "by").unwrap();
        let forged = a_link.replace(&a_by, &b_by);
        let base = if path == DOC {
            "/registry.origin.test/acme/widget/".to_owned()
        } else {
            String::new()
        };
        let refused = c.get(&m.url(&format!("{base}{forged}"))).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN, "{forged}");
    }

    // Following alpha's link stores the archive: the unsigned answer now
    // has its `h1:`, and every caller's kept answer follows it.
    let a_before = ask(DOC, alpha.clone()).await.json();
    let link = a_before["archives"]["linux_amd64"]["url"].as_str().unwrap();
    let got = c
        .get(&m.url(&format!("/registry.origin.test/acme/widget/{link}")))
        .await;
    assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
    let hashes = |doc: &Value| doc["archives"]["linux_amd64"]["hashes"].to_string();
    assert!(!hashes(&a_before).contains("h1:"), "{a_before}");
    wait_until_answered(
        "the answers take the archive's h1:",
        Duration::from_secs(10),
        || async {
            let a = ask(DOC, alpha.clone()).await.json();
            let b = ask(DOC, beta.clone()).await.json();
            hashes(&a).contains("h1:") && hashes(&b).contains("h1:")
        },
    )
    .await;

    // A new window signs anew; every link handed out then has at least
    // the whole lifetime (an hour) to live.
    let before = ask(DOC, alpha.clone()).await.body;
    m.clock.advance(Duration::from_secs(61));
    let after = ask(DOC, alpha.clone()).await;
    assert_ne!(after.body, before, "a kept answer outlived its window");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 61;
    let expiries: BTreeSet<u64> = links(&after.json())
        .iter()
        .map(|l| param(l, "expires").unwrap().parse().unwrap())
        .collect();
    for expires in expiries {
        assert!(
            expires >= now + 3600,
            "{expires} is less than an hour after {now}"
        );
    }

    // A token taken out of the token file gets nothing, kept or not.
    std::fs::write(&token_file, "second-token\n").unwrap();
    m.app.auth.reload_if_changed();
    for path in [DOC, FACADE] {
        let refused = c
            .get_with_header(&m.url(path), "authorization", "Bearer first-token")
            .await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{path}");
        ask(path, "second-token".into()).await;
    }
    // Nor does a token past its expiry (two hours on, by the mirror's clock).
    ask(DOC, beta.clone()).await;
    m.clock.advance(Duration::from_secs(2 * 3600));
    for path in [DOC, FACADE] {
        let refused = c
            .get_with_header(&m.url(path), "authorization", &format!("Bearer {beta}"))
            .await;
        assert_eq!(refused.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    sc.mirror.stop().await;
}
