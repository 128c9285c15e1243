use std::path::Path;
use std::time::Duration;

use super::*;
use crate::address::{ArchiveKey, Platform, Provider, Version};

fn key() -> ArchiveKey {
    let provider = Provider {
        hostname: "r.example".parse().unwrap(),
        namespace: "ns".parse().unwrap(),
        kind: "t".parse().unwrap(),
    };
    ArchiveKey::new(
        &provider,
        &Version::parse("1.0.0").unwrap(),
        &Platform::parse("linux_amd64").unwrap(),
    )
}

fn auth(dir: &Path, tokens: &[&str], lifetime: Duration) -> Auth {
    auth_on(dir, tokens, lifetime, crate::clock::system())
}

fn auth_on(dir: &Path, tokens: &[&str], lifetime: Duration, clock: SharedClock) -> Auth {
    let cfg = AuthConfig {
        tokens: tokens
            .iter()
            .map(std::string::ToString::to_string)
            .collect(),
        url_lifetime: lifetime,
        ..AuthConfig::default()
    };
    Auth::new(&cfg, dir, clock, None, None).unwrap()
}

#[tokio::test]
async fn release_paths_take_a_token_as_a_basic_password() {
    let dir = tempfile::tempdir().unwrap();
    let a = auth(dir.path(), &["s3cret"], Duration::from_secs(60));
    assert!(a
        .identify_token_or_basic(Some("Bearer s3cret"))
        .await
        .is_ok());
    // "ci:s3cret" and ":s3cret" in base64.
    assert!(a
        .identify_token_or_basic(Some("Basic Y2k6czNjcmV0"))
        .await
        .is_ok());
    assert!(a
        .identify_token_or_basic(Some("Basic OnMzY3JldA=="))
        .await
        .is_ok());
    for bad in [
        None,
        Some("Basic czNjcmV0"),
        Some("Basic Y2k6bm9wZQ=="),
        Some("Basic !!"),
    ] {
        let e = a.identify_token_or_basic(bad).await.unwrap_err();
        assert_eq!(e.status(), http::StatusCode::UNAUTHORIZED, "{bad:?}");
    }
    let open = auth(dir.path(), &[], Duration::from_secs(60));
    assert!(open.identify_token_or_basic(None).await.is_ok());
}

#[tokio::test]
async fn bearer_tokens_are_checked_and_named_by_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let a = auth(dir.path(), &["s3cret", "other"], Duration::from_secs(60));
    let id = a.identify(Some("Bearer s3cret")).await.unwrap();
    let who = id.who.unwrap();
    assert_eq!(
        (who.kind, who.subject.as_str()),
        (WhoKind::Token, fingerprint("s3cret").as_str())
    );
    assert_eq!(who.subject.len(), "sha256:".len() + 12);
    assert!(!who.subject.contains("s3cret"));
    assert_eq!(
        id.grant,
        Grant::Admin,
        "the operator's own tokens, by default"
    );
    assert!(a.identify(Some("bearer other")).await.is_ok());
    for bad in [
        None,
        Some("Bearer"),
        Some("Bearer nope"),
        Some("Basic s3cret"),
        Some("s3cret"),
    ] {
        let e = a.identify(bad).await.unwrap_err();
        assert_eq!(e.status(), http::StatusCode::UNAUTHORIZED, "{bad:?}");
    }
    let open = auth(dir.path(), &[], Duration::from_secs(60));
    assert!(!open.enabled());
    assert_eq!(open.identify(None).await.unwrap(), Identity::anyone());
}

#[test]
fn archive_links_are_signed_expire_and_carry_who_asked() {
    let dir = tempfile::tempdir().unwrap();
    let a = auth(dir.path(), &["t"], Duration::from_secs(60));
    let q = a.sign_archive(&key(), None);
    assert_eq!(a.check_archive(&key(), Some(&q)).unwrap(), None);
    let mut other = key();
    other.platform = Platform::parse("darwin_arm64").unwrap();
    assert!(
        a.check_archive(&other, Some(&q)).is_err(),
        "bound to the archive"
    );
    let tampered = q.replace("expires=", "expires=9");
    assert!(a.check_archive(&key(), Some(&tampered)).is_err());
    assert!(a.check_archive(&key(), None).is_err());
    // Who asked rides along, under the signature.
    let who = Who {
        kind: WhoKind::Oidc,
        issuer: "github".into(),
        subject: "repo:acme/app:ref:refs/heads/main".into(),
        claims: std::collections::BTreeMap::new(),
    };
    let name = a.link_name(Some(&who));
    let named = a.sign_archive(&key(), name.as_deref());
    assert_eq!(
        a.check_archive(&key(), Some(&named)).unwrap(),
        Some(who.clone())
    );
    let mut someone_else = who.clone();
    someone_else.subject = "repo:evil/app".into();
    let swapped = named.replace(&who.encode(), &someone_else.encode());
    assert!(
        a.check_archive(&key(), Some(&swapped)).is_err(),
        "who is signed"
    );
    let dropped = named.replace(&format!("by={}&", who.encode()), "");
    assert!(
        a.check_archive(&key(), Some(&dropped)).is_err(),
        "who cannot be dropped"
    );
    // A configured token's link is signed as earlier releases signed it.
    let token = Who {
        kind: WhoKind::Token,
        issuer: String::new(),
        subject: fingerprint("t"),
        claims: std::collections::BTreeMap::new(),
    };
    assert_eq!(a.link_name(Some(&token)), None);
    let plain = a.sign_archive(&key(), a.link_name(Some(&token)).as_deref());
    assert!(!plain.contains("by="), "{plain}");
    assert_eq!(a.check_archive(&key(), Some(&plain)).unwrap(), None);
    // The key is kept: a second instance accepts the first's links.
    let b = auth(dir.path(), &["t"], Duration::from_secs(60));
    assert!(b.check_archive(&key(), Some(&q)).is_ok());
    // A link is good for its lifetime after its signing window (a
    // second, for a minute's lifetime), and refused after that.
    let clock = crate::clock::ManualClock::new();
    let timed = auth_on(dir.path(), &["t"], Duration::from_secs(60), clock.clone());
    let q = timed.sign_archive(&key(), None);
    clock.advance(Duration::from_secs(60));
    assert!(timed.check_archive(&key(), Some(&q)).is_ok());
    clock.advance(Duration::from_secs(2));
    let e = timed.check_archive(&key(), Some(&q)).unwrap_err();
    assert!(e.to_string().contains("expired"), "{e}");
    assert_eq!(e.status(), http::StatusCode::FORBIDDEN);
}

/// The `expires` of a signed query.
fn expiry(query: &str) -> u64 {
    url::form_urlencoded::parse(query.as_bytes())
        .find(|(k, _)| k == "expires")
        .and_then(|(_, v)| v.parse().ok())
        .expect("a signed query names its expiry")
}

#[test]
fn links_of_one_window_are_the_same_and_live_their_lifetime_at_least() {
    use crate::clock::Clock as _;
    let dir = tempfile::tempdir().unwrap();
    let clock = crate::clock::ManualClock::new();
    let hour = Duration::from_secs(3600);
    let a = auth_on(dir.path(), &["t"], hour, clock.clone());
    assert_eq!(a.link_window_length(), Duration::from_secs(60));
    let start = clock.unix_secs();
    // To the window's start, whatever second the clock started at.
    clock.advance(Duration::from_secs(60 - start % 60));
    let first = a.sign_archive(&key(), Some("by"));
    let window = a.link_window();
    for _ in 0..59 {
        let now = clock.unix_secs();
        let q = a.sign_archive(&key(), Some("by"));
        assert_eq!(q, first, "one link per window");
        let left = expiry(&q) - now;
        assert!((3600..=3660).contains(&left), "{left} s left at {now}");
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(a.link_window(), window);
    clock.advance(Duration::from_secs(1));
    assert_eq!(a.link_window(), window + 1);
    let next = a.sign_archive(&key(), Some("by"));
    assert_ne!(next, first, "a new window signs anew");
    assert_eq!(expiry(&next) - clock.unix_secs(), 3660);
    // Short lifetimes get short windows, and never less than a second.
    let short = auth_on(dir.path(), &["t"], Duration::from_secs(1), clock.clone());
    assert_eq!(short.link_window_length(), Duration::from_secs(1));
    let day = auth_on(dir.path(), &["t"], Duration::from_secs(86_400), clock);
    assert_eq!(day.link_window_length(), Duration::from_secs(60));
}

#[test]
fn a_kept_answer_is_its_callers_alone_and_memory_stays_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let a = auth(dir.path(), &["t"], Duration::from_secs(3600));
    let who = |subject: &str, repository: &str| Who {
        kind: WhoKind::Oidc,
        issuer: "ci".into(),
        subject: subject.into(),
        claims: std::collections::BTreeMap::from([("repository".into(), repository.into())]),
    };
    let plain = bytes::Bytes::from_static(b"{}");
    let answer = |who: &Who| {
        let made = std::cell::Cell::new(false);
        let got = a
            .signed_answer(Some(who), "/p", &plain, |by| {
                made.set(true);
                Ok::<_, ()>(crate::protocol::Rendered::new_json(
                    by.unwrap_or_default().as_bytes().to_vec(),
                ))
            })
            .unwrap();
        (String::from_utf8(got.bytes.to_vec()).unwrap(), made.get())
    };
    // One subject under two sets of claims is two callers: each link
    // names every claim the rule read.
    let (first, made) = answer(&who("job", "acme/app"));
    assert!(made);
    assert_eq!(answer(&who("job", "acme/app")), (first.clone(), false));
    let (other, made) = answer(&who("job", "acme/other"));
    assert!(made, "another caller's answer was handed out");
    assert_ne!(other, first);
    assert_eq!(
        Who::decode(&other).unwrap().claims["repository"],
        "acme/other"
    );
    // A changed unsigned answer is answered anew.
    let changed = bytes::Bytes::from_static(b"{ }");
    let mut made = false;
    a.signed_answer(Some(&who("job", "acme/app")), "/p", &changed, |_| {
        made = true;
        Ok::<_, ()>(crate::protocol::Rendered::new_json(b"{}".to_vec()))
    })
    .unwrap();
    assert!(made);
    // Thousands of CI identities with large answers stay within the bound.
    let big = vec![b'x'; 4096];
    for n in 0..20_000 {
        let who = who(&format!("job-{n}"), "acme/app");
        a.signed_answer(Some(&who), "/p", &plain, |_| {
            Ok::<_, ()>(crate::protocol::Rendered::new_json(big.clone()))
        })
        .unwrap();
    }
    let kept = a.kept_answers();
    let (count, bytes) = (kept.len(), kept.weighted_bytes());
    assert!(count > 1000, "{count} answers kept");
    // Counted here, not by the cache's own weights.
    let held = count * big.len() as u64;
    assert!(
        held <= answers::KEPT_ANSWERS_BYTES,
        "{count} answers of 4 KiB kept"
    );
    assert!(bytes <= answers::KEPT_ANSWERS_BYTES, "{bytes} bytes kept");
}
