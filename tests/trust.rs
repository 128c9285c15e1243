//! Which signatures count: `[[trust]]` key pinning, and key and signature
//! lifetimes (GnuPG-made expired, revoked and expiring fixtures), through the
//! running mirror against the fake origin.

mod common;

use common::*;
use http::StatusCode;
use tfmirror::verify::TrustRule;

const HOST: &str = "registry.origin.test";

fn rule(namespace: &str, key_ids: &[String]) -> TrustRule {
    TrustRule {
        hostname: HOST.parse().unwrap(),
        namespace: namespace.into(),
        key_ids: key_ids.to_vec(),
        keys_file: None,
    }
}

#[tokio::test]
async fn pinned_namespaces_need_a_pinned_key_whatever_the_registry_lists() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let (release, intruder) = (Signer::new("release"), Signer::new("intruder"));
    // The registry lists, and vouches for, whatever key signed.
    origin.publish(
        "acme",
        "good",
        "1.0.0",
        &["linux_amd64"],
        &release,
        &[&release],
    );
    origin.publish(
        "acme",
        "bad",
        "1.0.0",
        &["linux_amd64"],
        &intruder,
        &[&intruder],
    );
    origin.publish(
        "other",
        "free",
        "1.0.0",
        &["linux_amd64"],
        &intruder,
        &[&intruder],
    );
    let mut config = setup.config(&origin, &[], &[HOST]);
    config.trust = vec![rule("ac?e*", &[release.key_id()])];
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let url = |p: &str| m.url(&format!("/{HOST}/{p}"));

    assert_eq!(
        c.get(&url("acme/good/1.0.0.json")).await.status,
        StatusCode::OK
    );
    let bad = c.get(&url("acme/bad/1.0.0.json")).await;
    assert_eq!(bad.status, StatusCode::BAD_GATEWAY);
    let text = bad.error_text();
    assert!(text.contains("none of the keys pinned"), "{text}");
    // No matching rule: the registry's listed key counts, as before.
    assert_eq!(
        c.get(&url("other/free/1.0.0.json")).await.status,
        StatusCode::OK
    );
    // Nothing about the refused version was kept.
    assert!(files_below(&setup.cache_dir())
        .iter()
        .all(|f| !f.contains("acme/bad") || f.ends_with("index.json")));
    m.stop().await;
}

#[tokio::test]
async fn a_keys_file_pins_keys_the_registry_does_not_list() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let (release, listed) = (Signer::new("release"), Signer::new("listed"));
    // Signed by the release key, but the registry lists another key only.
    origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &release,
        &[&listed],
    );
    let keys_file = setup.dir.path().join("release.asc");
    std::fs::write(&keys_file, release.public_armored()).unwrap();

    // Without a rule, the registry's listing decides: refused.
    let config = setup.config(&origin, &[], &[HOST]);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let url = m.url(&format!("/{HOST}/acme/widget/1.0.0.json"));
    assert_eq!(c.get(&url).await.status, StatusCode::BAD_GATEWAY);
    m.stop().await;

    let mut pinned = config;
    pinned.trust = vec![TrustRule {
        keys_file: Some(keys_file),
        ..rule("acme", &[])
    }];
    let m = RunningMirror::start(pinned).await;
    let c = Client::trusting(&m.ca_file);
    let url = m.url(&format!("/{HOST}/acme/widget/1.0.0.json"));
    assert_eq!(c.get(&url).await.status, StatusCode::OK);
    m.stop().await;
}

#[tokio::test]
async fn stored_versions_are_checked_again_under_new_rules() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let (release, other) = (Signer::new("release"), Signer::new("other"));
    origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &release,
        &[&release],
    );
    let config = setup.config(&origin, &[], &[HOST]);
    let m = RunningMirror::start(config.clone()).await;
    let c = Client::trusting(&m.ca_file);
    let url = m.url(&format!("/{HOST}/acme/widget/1.0.0.json"));
    assert_eq!(c.get(&url).await.status, StatusCode::OK);
    m.stop().await;

    // The operator now pins another key: the stored record no longer counts.
    let mut pinned = config;
    pinned.trust = vec![rule("*", &[other.key_id()])];
    let m = RunningMirror::start(pinned).await;
    let c = Client::trusting(&m.ca_file);
    let url = m.url(&format!("/{HOST}/acme/widget/1.0.0.json"));
    let answer = c.get(&url).await;
    assert_eq!(answer.status, StatusCode::BAD_GATEWAY);
    assert!(
        answer.error_text().contains("pinned"),
        "{}",
        answer.error_text()
    );
    m.stop().await;
}

#[tokio::test]
async fn rules_that_cannot_work_stop_the_start() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let mut config = setup.config(&origin, &[], &[HOST]);
    for (bad, expect) in [
        (rule("acme", &[]), "give key_ids, keys_file or both"),
        (rule("acme", &["1234".into()]), "not a 16-digit key ID"),
        (
            rule("[acme", &["34365D9472D7468F".into()]),
            "not a valid glob",
        ),
        (
            TrustRule {
                keys_file: Some(setup.dir.path().join("missing.asc")),
                ..rule("acme", &[])
            },
            "missing.asc",
        ),
    ] {
        config.trust = vec![bad];
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains(expect), "{err}");
    }
}

/// GnuPG fixtures: the same SHA256SUMS signed by a key that has expired, a
/// key that was revoked, and with a signature that has expired.
#[tokio::test]
async fn key_and_signature_lifetimes() {
    for (key, signature, strict, refusal) in [
        // An expired key is accepted (with a warning), as Terraform does...
        (
            "expired-signer.asc",
            "SHA256SUMS.expired-key.sig",
            false,
            None,
        ),
        // ...unless the operator asks otherwise.
        (
            "expired-signer.asc",
            "SHA256SUMS.expired-key.sig",
            true,
            Some("reject_expired_keys"),
        ),
        (
            "revoked-signer.asc",
            "SHA256SUMS.revoked-key.sig",
            false,
            Some("revoked"),
        ),
        (
            "sigexpiry-signer.asc",
            "SHA256SUMS.expired-sig.sig",
            false,
            Some("signature by key"),
        ),
    ] {
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        publish_gnupg_widget(&origin, "acme", key, signature);
        let mut config = setup.config(&origin, &[], &[HOST]);
        config.upstream.reject_expired_keys = strict;
        let m = RunningMirror::start(config).await;
        let c = Client::trusting(&m.ca_file);
        let answer = c
            .get(&m.url(&format!("/{HOST}/acme/widget/1.1.0.json")))
            .await;
        match refusal {
            None => assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text()),
            Some(reason) => {
                assert_eq!(answer.status, StatusCode::BAD_GATEWAY, "{key} {strict}");
                assert!(
                    answer.error_text().contains(reason),
                    "{}",
                    answer.error_text()
                );
            }
        }
        m.stop().await;
    }
}
