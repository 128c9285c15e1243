//! A token's shape and header: key locations, `crit`, its size, unsigned
//! and malformed tokens, each refused under its own reason before any
//! key is tried.

use serde_json::json;

use super::*;

#[test]
fn keys_named_in_the_header_are_never_followed_and_unknown_keys_refused() {
    let s = setup();
    let attacker = signer("evil");
    // Each token is signed by the issuer's own key and whole but for its
    // header: only the header check refuses it.
    for (field, value) in [
        ("jku", json!("https://attacker.example/keys")),
        ("x5u", json!("https://attacker.example/cert.pem")),
        ("jwk", attacker.jwk.clone()),
        ("x5c", json!(["MIIBszCCAVmgAwIBAgIU"])),
    ] {
        let header = json!({"alg": "ES256", "kid": "k1", field: value});
        let mut claims = s.claims();
        claims["sub"] = json!(format!("repo:acme/{field}"));
        s.refused(&s.raw(&header, &claims), "header_key");
    }
    let crit = json!({"alg": "ES256", "kid": "k1", "crit": ["exp"]});
    s.refused(&s.raw(&crit, &s.claims()), "crit");
    // The same, with a plain header: in.
    let plain = json!({"alg": "ES256", "kid": "k1"});
    assert!(s
        .oidc
        .check_now(&s.raw(&plain, &s.claims()))
        .unwrap()
        .is_ok());
    // No key ID: the issuer's keys that fit the algorithm are tried.
    let kidless = json!({"alg": "ES256"});
    let mut claims = s.claims();
    claims["sub"] = json!("repo:acme/kidless");
    assert!(s.oidc.check_now(&s.raw(&kidless, &claims)).unwrap().is_ok());
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some("evil".into());
    let token = jsonwebtoken::encode(&header, &s.claims(), &attacker.key).unwrap();
    s.refused(&token, "unknown_key");
}

#[test]
fn a_token_of_up_to_eight_kib_is_read_and_a_longer_one_never_is() {
    let s = setup();
    assert_eq!(token::MAX_TOKEN_BYTES, 8192);
    // Tokens of 6 KiB (a job with many claims) and of exactly the limit.
    for len in [6 * 1024, token::MAX_TOKEN_BYTES] {
        let token = s.sized(len);
        assert!(s.oidc.check_now(&token).unwrap().is_ok(), "{len} bytes");
    }
    // One byte over, signed by the issuer's key and claiming it: refused
    // before anything in it is read, so not even its issuer is taken.
    s.refused_unclaimed(&s.sized(token::MAX_TOKEN_BYTES + 1), "oversized");
}

#[test]
fn no_list_of_algorithms_lets_an_unsigned_token_in() {
    // Configuration never allows them, and reading a token refuses them
    // whatever list it is given.
    let s = setup();
    let claims = b64(&s.claims());
    for alg in ["none", "None", "NONE", ""] {
        let token = format!("{}.{claims}.c2ln", b64(&json!({"alg": alg})));
        let allowed = vec![alg.to_owned(), "ES256".to_owned()];
        let refused = token::read(&token, &allowed).unwrap_err();
        assert_eq!(refused.reason, "algorithm", "{alg:?}");
    }
    // A signature part that is not base64url: malformed, not a signature
    // some other key might make.
    let real = s.token(&s.claims());
    let (signed, _) = real.rsplit_once('.').unwrap();
    s.refused(&format!("{signed}.c2ln!!"), "malformed");
    // Two parts, a header and a payload that would pass: not a token.
    let two = format!("{}.{claims}", b64(&json!({"alg": "ES256", "kid": "k1"})));
    let refused = token::read(&two, &["ES256".to_owned()]).unwrap_err();
    assert_eq!(refused.reason, "malformed");
    s.refused(&two, "malformed");
}

#[test]
fn oversized_malformed_and_unmatched_tokens_are_refused() {
    let s = setup();
    s.refused_unclaimed(&"a".repeat(token::MAX_TOKEN_BYTES + 1), "oversized");
    for bad in ["", "a.b", "a.b.c.d", "..", "!!!.!!!.!!!", "WzFd.e30.c2ln"] {
        s.refused_unclaimed(bad, "malformed");
    }
    // No algorithm named: refused before anything else is looked at.
    s.refused(&format!("e30.{}.", b64(&s.claims())), "algorithm");
    s.refused(
        &s.with(|c| {
            c["ref"] = json!("refs/heads/dev");
        }),
        "no_rule",
    );
    s.refused(
        &s.with(|c| {
            c["repository_owner"] = json!("acme-evil");
        }),
        "no_rule",
    );
}
