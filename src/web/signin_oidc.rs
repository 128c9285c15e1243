//! People signing in through the site's OpenID Connect provider: an
//! issuer of `[[auth.oidc]]` with a `client_id`. The authorization code
//! flow with PKCE (`S256`), a `state` checked on return and a `nonce`
//! checked in the ID token, which is verified as every token is
//! ([`crate::auth::oidc`]) and mapped by the issuer's rules.
//!
//! `/-/signin/with/:issuer` keeps the flow's secrets in a signed,
//! short-lived cookie (`tfmirror_signin`, `SameSite=Lax` so that the
//! issuer's redirect back brings it) and sends the browser to the issuer;
//! `/-/signin/callback` checks the state, trades the code for tokens at the
//! issuer's token endpoint, and opens the session. The session cookie is
//! `SameSite=Strict`, which a browser does not send on the redirect chain
//! that began at the issuer: the callback answers with a page that moves
//! on to where the person was going, from this mirror's own origin.

use std::time::Duration;

use askama::Template;
use base64::Engine as _;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use url::Url;

use super::layout::Layout;
use super::session::{cookie, person_cookie, random_hex, safe_next};
use super::{PageAnswer, PageRequest, Site};
use crate::auth::oidc::{Issuer, Purpose};
use crate::error::RequestError;

/// The cookie that carries a sign-in's secrets.
const SIGNIN: &str = "tfmirror_signin";

/// How long a sign-in may take at the issuer.
const SIGNIN_LIFETIME: u64 = 600;

/// What a sign-in keeps between leaving and coming back.
#[derive(Serialize, Deserialize)]
struct Pending {
    /// The issuer's name.
    i: String,
    /// `state`.
    s: String,
    /// `nonce`.
    n: String,
    /// The PKCE code verifier.
    v: String,
    /// Where to go once signed in.
    next: String,
}

/// The page that ends a sign-in.
#[derive(Template)]
#[template(path = "signed_in.html")]
struct SignedIn<'a> {
    layout: &'a Layout,
    name: String,
    next: String,
}

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

/// The issuer called `name` that people sign in with.
fn issuer<'s>(site: Site<'s>, name: &str) -> Result<(usize, &'s Issuer), RequestError> {
    site.auth
        .oidc()
        .issuers()
        .iter()
        .enumerate()
        .find(|(_, i)| i.config.name == name && i.config.client_id.is_some())
        .ok_or_else(|| {
            RequestError::NoSuchPage(format!("no issuer called {name:?} signs people in here"))
        })
}

/// Where the issuer sends the browser back.
fn callback(req: &PageRequest<'_>) -> String {
    format!("{}-/signin/callback", req.base_url())
}

/// The cookie attributes of the sign-in cookie.
fn signin_attributes(req: &PageRequest<'_>) -> &'static str {
    if req.scheme == "https" {
        "Path=/-/signin; HttpOnly; Secure; SameSite=Lax"
    } else {
        "Path=/-/signin; HttpOnly; SameSite=Lax"
    }
}

/// `/-/signin/with/:issuer`: the browser sent to the issuer.
pub async fn start(
    site: Site<'_>,
    req: &PageRequest<'_>,
    name: &str,
) -> Result<PageAnswer, RequestError> {
    let (_, issuer) = issuer(site, name)?;
    let endpoints = issuer.keys.endpoints().await.map_err(|e| {
        tracing::warn!(issuer = %name, error = %format!("{e:#}"), "cannot begin a sign-in: the issuer's discovery document could not be read");
        RequestError::UpstreamUnreachable(format!("the issuer {name} cannot be reached; try again later"))
    })?;
    let Some(mut to) = endpoints.authorization else {
        return Err(RequestError::UpstreamInvalid(format!(
            "the issuer {name} names no authorization endpoint"
        )));
    };
    let pending = Pending {
        i: name.to_owned(),
        s: random_hex(16),
        n: random_hex(16),
        v: b64(random_hex(32).as_bytes()),
        next: safe_next(req.param("next")),
    };
    let challenge = b64(&crate::verify::Sha256::digest(pending.v.as_bytes()));
    let mut scopes = vec!["openid".to_owned()];
    scopes.extend(
        issuer
            .config
            .scopes
            .iter()
            .filter(|s| *s != "openid")
            .cloned(),
    );
    to.query_pairs_mut()
        .append_pair("response_type", "code")
        .append_pair(
            "client_id",
            issuer.config.client_id.as_deref().unwrap_or_default(),
        )
        .append_pair("redirect_uri", &callback(req))
        .append_pair("scope", &scopes.join(" "))
        .append_pair("state", &pending.s)
        .append_pair("nonce", &pending.n)
        .append_pair("code_challenge", &challenge)
        .append_pair("code_challenge_method", "S256");
    let expires = site.auth.now_secs() + SIGNIN_LIFETIME;
    let body = b64(&serde_json::to_vec(&pending).expect("a sign-in serialises"));
    let signature = site
        .auth
        .sign_text(format!("signin\n{expires}\n{body}").as_bytes());
    let mut answer = PageAnswer::see_other(to.to_string());
    answer.cookies.push(format!(
        "{SIGNIN}=v1.{expires}.{body}.{signature}; Max-Age={SIGNIN_LIFETIME}; {}",
        signin_attributes(req)
    ));
    Ok(answer)
}

/// The sign-in this browser began, if its cookie holds.
fn pending(site: Site<'_>, req: &PageRequest<'_>) -> Option<Pending> {
    let value = cookie(req.cookies, SIGNIN)?;
    let parts: Vec<&str> = value.split('.').collect();
    let ["v1", expires, body, signature] = parts.as_slice() else {
        return None;
    };
    let expires: u64 = expires.parse().ok()?;
    if expires <= site.auth.now_secs()
        || !site
            .auth
            .signs_text(format!("signin\n{expires}\n{body}").as_bytes(), signature)
    {
        return None;
    }
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(body)
        .ok()?;
    serde_json::from_slice(&json).ok()
}

/// A sign-in that did not work: named in the log, told plainly.
fn failed(why: &str, detail: &str) -> RequestError {
    tracing::info!(reason = why, detail, "a sign-in through an issuer failed");
    RequestError::Unauthenticated(format!("the sign-in did not work ({why}): sign in again"))
}

/// `/-/signin/callback`: the code traded for an ID token, the session
/// opened.
pub async fn finish(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let Some(pending) = pending(site, req) else {
        return Err(failed(
            "no sign-in under way in this browser, or it took too long",
            "",
        ));
    };
    let state = req.param("state").unwrap_or_default();
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        state.as_bytes(),
        pending.s.as_bytes(),
    )) {
        return Err(failed("state", "the state sent back is not this browser's"));
    }
    if let Some(error) = req.param("error") {
        return Err(failed("refused at the issuer", &error));
    }
    let code = req.param("code").unwrap_or_default();
    let (index, issuer) = issuer(site, &pending.i)?;
    let id_token = trade(site, req, issuer, &code, &pending.v)
        .await
        .map_err(|e| failed("token", &format!("{e:#}")))?;
    let identity = (site.auth.oidc())
        .check(&id_token, Purpose::SignIn(index, &pending.n))
        .await
        .map_err(|()| failed("the ID token was refused or no rule admits you", ""))?;
    let Some(session) = person_cookie(site, req, &identity) else {
        return Err(failed("no identity", ""));
    };
    let who = identity
        .who
        .as_ref()
        .map(|w| w.subject.clone())
        .unwrap_or_default();
    let page = SignedIn {
        layout,
        name: who,
        next: pending.next,
    };
    let mut answer = PageAnswer::html(StatusCode::OK, &page);
    answer.cookies.push(session);
    answer
        .cookies
        .push(format!("{SIGNIN}=; Max-Age=0; {}", signin_attributes(req)));
    Ok(answer)
}

/// Trades `code` for the ID token at the issuer's token endpoint.
async fn trade(
    site: Site<'_>,
    req: &PageRequest<'_>,
    issuer: &Issuer,
    code: &str,
    verifier: &str,
) -> anyhow::Result<String> {
    let endpoints = issuer.keys.endpoints().await?;
    let to: Url = endpoints
        .token
        .ok_or_else(|| anyhow::anyhow!("the issuer names no token endpoint"))?;
    let client_id = issuer.config.client_id.clone().unwrap_or_default();
    let form = url::form_urlencoded::Serializer::new(String::new())
        .append_pair("grant_type", "authorization_code")
        .append_pair("code", code)
        .append_pair("redirect_uri", &callback(req))
        .append_pair("code_verifier", verifier)
        .append_pair("client_id", &client_id)
        .finish();
    let upstream = &site.mirror.config().upstream;
    let tls = crate::upstream::client::tls_config(upstream.ca_file.as_deref(), "upstream.ca_file")?;
    let http = reqwest::Client::builder()
        .use_preconfigured_tls(tls)
        .timeout(upstream.request_timeout.min(Duration::from_secs(30)))
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let mut post = http
        .post(to.clone())
        .header("content-type", "application/x-www-form-urlencoded")
        .header("accept", "application/json")
        .body(form);
    if let Some(path) = &issuer.config.client_secret_file {
        let secret = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading client_secret_file {}: {e}", path.display()))?;
        post = post.basic_auth(&client_id, Some(secret.trim()));
    }
    let answer = post.send().await?;
    let status = answer.status();
    let body = answer.bytes().await?;
    if !status.is_success() {
        anyhow::bail!(
            "{to} answered {status}: {}",
            String::from_utf8_lossy(&body[..body.len().min(300)])
        );
    }
    let doc: serde_json::Value = serde_json::from_slice(&body)?;
    doc.get("id_token")
        .and_then(serde_json::Value::as_str)
        .map(str::to_owned)
        .ok_or_else(|| anyhow::anyhow!("{to}: the answer carries no id_token"))
}
