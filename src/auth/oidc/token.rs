//! One token checked against one issuer: its shape and header before any
//! key is looked at, then its signature (with the maintained `jsonwebtoken`
//! crate, on a key the issuer published), then its issuer, audience and
//! times by the mirror's clock.

use std::str::FromStr;

use base64::Engine as _;
use jsonwebtoken::{Algorithm, Validation};
use serde_json::{Map, Value};

use super::keys::{same_issuer, Key};
use crate::config::OidcIssuerConfig;

/// The longest token read. Real CI and cluster tokens are 1–2 KB.
pub const MAX_TOKEN_BYTES: usize = 8 * 1024;

/// Why a token was refused: named in the log and in the metrics' outcome,
/// never in the answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The metrics' outcome label.
    pub reason: &'static str,
    /// What the log says.
    pub detail: String,
}

impl Refusal {
    /// A refusal for `reason`, told as `detail`.
    pub fn new(reason: &'static str, detail: impl Into<String>) -> Refusal {
        Refusal {
            reason,
            detail: detail.into(),
        }
    }
}

/// A token's parts as read before its signature is checked.
#[derive(Debug)]
pub struct Unverified {
    /// The header's `alg`.
    pub alg: String,
    /// The header's `kid`.
    pub kid: Option<String>,
    /// The payload's `iss` (only to pick the issuer to check with).
    pub iss: String,
}

fn part(text: &str, what: &str) -> Result<Map<String, Value>, Refusal> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text)
        .map_err(|_| Refusal::new("malformed", format!("the {what} is not base64url")))?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(Refusal::new(
            "malformed",
            format!("the {what} is not a JSON object"),
        )),
    }
}

/// The `iss` a token claims, read without checking anything, only to
/// pick the issuer that checks it (and names its refusal).
pub fn claimed_issuer(token: &str) -> Option<String> {
    if token.len() > MAX_TOKEN_BYTES {
        return None;
    }
    let payload = token.split('.').nth(1)?;
    let map = part(payload, "payload").ok()?;
    map.get("iss").and_then(Value::as_str).map(str::to_owned)
}

/// Reads a token's header and issuer, refusing what no key may be looked
/// up for: an oversized or malformed token, `alg: none` or an algorithm
/// `allowed` does not list, and a header naming where to find a key
/// (`jku`, `x5u`, an embedded `jwk` or `x5c`: never followed) or an
/// extension the mirror would have to understand (`crit`).
pub fn read(token: &str, allowed: &[String]) -> Result<Unverified, Refusal> {
    read_within(token, allowed, MAX_TOKEN_BYTES)
}

/// [`read`], for a token of at most `max` bytes.
pub fn read_within(token: &str, allowed: &[String], max: usize) -> Result<Unverified, Refusal> {
    if token.len() > max {
        return Err(Refusal::new("oversized", format!("{} bytes", token.len())));
    }
    let parts: Vec<&str> = token.split('.').collect();
    if parts.len() != 3 || parts[..2].iter().any(|p| p.is_empty()) {
        return Err(Refusal::new("malformed", "not three dot-separated parts"));
    }
    let header = part(parts[0], "header")?;
    let alg = header
        .get("alg")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if alg.is_empty() || alg.eq_ignore_ascii_case("none") || !allowed.iter().any(|a| a == alg) {
        return Err(Refusal::new(
            "algorithm",
            format!("alg {alg:?} is not allowed"),
        ));
    }
    if parts[2].is_empty() {
        return Err(Refusal::new("malformed", "no signature"));
    }
    for field in ["jku", "x5u", "jwk", "x5c"] {
        if header.contains_key(field) {
            return Err(Refusal::new(
                "header_key",
                format!("the header carries {field}"),
            ));
        }
    }
    if header.contains_key("crit") {
        return Err(Refusal::new("crit", "the header has crit extensions"));
    }
    let kid = match header.get("kid") {
        None | Some(Value::Null) => None,
        Some(Value::String(k)) => Some(k.clone()),
        Some(_) => return Err(Refusal::new("malformed", "kid is not a string")),
    };
    let payload = part(parts[1], "payload")?;
    let iss = payload
        .get("iss")
        .and_then(Value::as_str)
        .unwrap_or_default();
    Ok(Unverified {
        alg: alg.to_owned(),
        kid,
        iss: iss.to_owned(),
    })
}

/// Checks the signature with the first of `keys` that verifies it, then
/// the claims: the payload, once all holds. `audience` is what `aud` must
/// carry; `now` the mirror's time in seconds.
pub fn verify(
    token: &str,
    read: &Unverified,
    keys: &[&Key],
    config: &OidcIssuerConfig,
    audience: &str,
    now: u64,
) -> Result<Map<String, Value>, Refusal> {
    let claims = signed_payload(token, read, keys)?;
    check_claims(&claims, config, audience, now)?;
    Ok(claims)
}

/// The payload of `token` once one of `keys` verifies its signature (made
/// with `read.alg`); nothing in the payload is checked yet.
pub fn signed_payload(
    token: &str,
    read: &Unverified,
    keys: &[&Key],
) -> Result<Map<String, Value>, Refusal> {
    let alg = Algorithm::from_str(&read.alg)
        .map_err(|_| Refusal::new("algorithm", format!("alg {:?} is not known", read.alg)))?;
    let mut validation = Validation::new(alg);
    validation.validate_exp = false;
    validation.validate_nbf = false;
    validation.validate_aud = false;
    validation.required_spec_claims.clear();
    for key in keys {
        match jsonwebtoken::decode::<Map<String, Value>>(token, &key.key, &validation) {
            Ok(data) => return Ok(data.claims),
            Err(e) if matches!(e.kind(), jsonwebtoken::errors::ErrorKind::InvalidSignature) => {}
            Err(e) => return Err(Refusal::new("malformed", format!("{e}"))),
        }
    }
    Err(Refusal::new(
        "signature",
        "no key of the issuer verifies the signature",
    ))
}

/// Whether `aud` (a string, or a list of them) holds `audience`.
pub fn audience_holds(aud: Option<&Value>, audience: &str) -> bool {
    match aud {
        Some(Value::String(a)) => a == audience,
        Some(Value::Array(list)) => list.iter().any(|a| a.as_str() == Some(audience)),
        _ => false,
    }
}

/// A time claim (`exp`, `nbf`, `iat`) in whole seconds: `None` when
/// absent or null, refused when it is not a number of seconds.
pub fn time_claim(claims: &Map<String, Value>, name: &str) -> Result<Option<u64>, Refusal> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_u64()
            // Fractions of a second are allowed (RFC 7519's NumericDate).
            .or_else(|| n.as_f64().and_then(whole_seconds))
            .map(Some)
            .ok_or_else(|| Refusal::new("malformed", format!("{name} is not a time"))),
        Some(_) => Err(Refusal::new("malformed", format!("{name} is not a number"))),
    }
}

/// The registered claims, by the mirror's clock with the issuer's
/// allowance for skew.
fn check_claims(
    claims: &Map<String, Value>,
    config: &OidcIssuerConfig,
    audience: &str,
    now: u64,
) -> Result<(), Refusal> {
    let iss = claims
        .get("iss")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !same_issuer(iss, config.issuer.as_str()) {
        return Err(Refusal::new("issuer", format!("iss {iss:?}")));
    }
    if !audience_holds(claims.get("aud"), audience) {
        return Err(Refusal::new(
            "audience",
            format!("aud {:?} does not hold {audience:?}", claims.get("aud")),
        ));
    }
    let time = |name: &str| time_claim(claims, name);
    let skew = config.clock_skew.as_secs();
    let exp = time("exp")?.ok_or_else(|| Refusal::new("malformed", "no exp"))?;
    if now > exp.saturating_add(skew) {
        return Err(Refusal::new(
            "expired",
            format!("expired {} s ago", now - exp),
        ));
    }
    if let Some(nbf) = time("nbf")? {
        if nbf > now.saturating_add(skew) {
            return Err(Refusal::new(
                "not_yet_valid",
                format!("nbf is {} s ahead", nbf - now),
            ));
        }
    }
    let iat = time("iat")?;
    if let Some(iat) = iat {
        if iat > now.saturating_add(skew) {
            return Err(Refusal::new(
                "issued_in_future",
                format!("iat is {} s ahead", iat - now),
            ));
        }
    }
    let lifetime = exp.saturating_sub(iat.unwrap_or(now));
    if lifetime > config.max_lifetime.as_secs() {
        return Err(Refusal::new(
            "lifetime",
            format!(
                "lives {lifetime} s, more than max_lifetime ({} s)",
                config.max_lifetime.as_secs()
            ),
        ));
    }
    match claims.get("sub") {
        Some(Value::String(s)) if !s.is_empty() => Ok(()),
        _ => Err(Refusal::new("malformed", "no sub")),
    }
}

/// A `NumericDate` with a fraction (RFC 7519 allows one), as whole
/// seconds: `None` for a negative, infinite or absurdly far time.
pub fn whole_seconds(f: f64) -> Option<u64> {
    // 2^53: every whole number up to it is exact in an f64, so the
    // conversion below neither wraps nor loses the sign.
    const MAX_EXACT: f64 = 9_007_199_254_740_992.0;
    if !(0.0..MAX_EXACT).contains(&f) {
        return None;
    }
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Some(f.trunc() as u64)
}
