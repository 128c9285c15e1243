//! People signing in through the site's OpenID Connect provider: an
//! issuer of `[[auth.oidc]]` with a `client_id`. The authorization code
//! flow with PKCE (`S256`), a `state` checked on return and a `nonce`
//! checked in the ID token; what the issuer hands back is checked, and the
//! person's identity made, by [`crate::auth::oidc::person`].
//!
//! `/-/signin/with/:issuer` keeps the flow's secrets in a signed,
//! short-lived cookie (`tfmirror_signin`, `SameSite=Lax` so that the
//! issuer's redirect back brings it) and sends the browser to the issuer;
//! `/-/signin/callback` checks the state (each sign-in comes back once),
//! has the code traded and the tokens checked, and opens the session. The
//! session cookie is `SameSite=Strict`, which a browser does not send on
//! the redirect chain that began at the issuer: the callback answers with
//! a page that moves on to where the person was going, from this mirror's
//! own origin. Both steps are limited per client address
//! (`auth.signins_per_minute`), and every sign-in, refused or not, is
//! counted by its outcome.

use askama::Template;
use base64::Engine as _;
use http::StatusCode;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::layout::Layout;
use super::session::{cookie, person_cookie, random_hex, safe_next};
use super::{PageAnswer, PageRequest, Site};
use crate::auth::oidc::exchange::Code;
use crate::auth::oidc::limiter::Step;
use crate::auth::oidc::person::{told, SIGNIN_LIFETIME};
use crate::auth::oidc::{rules, Issuer};
use crate::config::ClaimsParameter;
use crate::error::RequestError;

/// The cookie that carries a sign-in's secrets.
const SIGNIN: &str = "tfmirror_signin";

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

/// Refuses a sign-in step from a client address that took it too often,
/// counted under `issuer`.
fn limit(
    site: Site<'_>,
    req: &PageRequest<'_>,
    step: Step,
    issuer: &str,
) -> Result<(), RequestError> {
    let oidc = site.auth.oidc();
    oidc.limiter().check(step, req.client).map_err(|wait| {
        oidc.count_signin(issuer, "rate_limited");
        tracing::info!(
            issuer,
            client = req.client,
            ?step,
            "refused a sign-in: too many from this address"
        );
        RequestError::TooOften(format!(
            "too many sign-ins from this address: try again in {wait} s"
        ))
    })
}

/// The claims the issuer is asked for with the `claims` request parameter:
/// every claim the rules read, in the ID token and from UserInfo alike.
fn claims_request(issuer: &Issuer) -> String {
    let wanted: Map<String, Value> = rules::named(&issuer.config.rules)
        .into_iter()
        .map(|name| (name, Value::Null))
        .collect();
    serde_json::json!({"id_token": wanted, "userinfo": wanted}).to_string()
}

/// `/-/signin/with/:issuer`: the browser sent to the issuer.
pub async fn start(
    site: Site<'_>,
    req: &PageRequest<'_>,
    name: &str,
) -> Result<PageAnswer, RequestError> {
    let (_, issuer) = issuer(site, name)?;
    limit(site, req, Step::Start, name)?;
    let endpoints = issuer.keys.endpoints().await.map_err(|e| {
        site.auth.oidc().count_signin(name, "issuer_unreachable");
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
    let ask_claims = match issuer.config.claims_parameter {
        ClaimsParameter::Always => true,
        ClaimsParameter::Auto => endpoints.claims_parameter,
        ClaimsParameter::Never => false,
    };
    if ask_claims {
        to.query_pairs_mut()
            .append_pair("claims", &claims_request(issuer));
    }
    let lifetime = SIGNIN_LIFETIME.as_secs();
    let expires = site.auth.now_secs() + lifetime;
    let body = b64(&serde_json::to_vec(&pending).expect("a sign-in serialises"));
    let signature = site
        .auth
        .sign_text(format!("signin\n{expires}\n{body}").as_bytes());
    let mut answer = PageAnswer::see_other(to.to_string());
    answer.cookies.push(format!(
        "{SIGNIN}=v1.{expires}.{body}.{signature}; Max-Age={lifetime}; {}",
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

/// A sign-in that did not work: told plainly; the log and the count are
/// the caller's.
fn failed(why: &str) -> RequestError {
    RequestError::Unauthenticated(format!("the sign-in did not work: {why}; sign in again"))
}

/// A step around the issuer refused: counted under `issuer`, logged.
fn refused(site: Site<'_>, issuer: &str, outcome: &'static str, detail: &str) {
    site.auth.oidc().count_signin(issuer, outcome);
    tracing::info!(issuer, reason = outcome, detail, "refused a sign-in");
}

/// `/-/signin/callback`: the code traded for an ID token, the session
/// opened.
pub async fn finish(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let pending = pending(site, req);
    let counted_as = pending.as_ref().map_or("unknown", |p| p.i.as_str());
    limit(site, req, Step::Callback, counted_as)?;
    let Some(pending) = pending else {
        refused(
            site,
            "unknown",
            "no_signin",
            "no sign-in cookie, or an expired one",
        );
        return Err(failed(
            "no sign-in is under way in this browser, or it took too long",
        ));
    };
    let issuer_name = pending.i.as_str();
    let state = req.param("state").unwrap_or_default();
    if !bool::from(subtle::ConstantTimeEq::ct_eq(
        state.as_bytes(),
        pending.s.as_bytes(),
    )) {
        refused(
            site,
            issuer_name,
            "state",
            "the state sent back is not this browser's",
        );
        return Err(failed("the issuer sent back another sign-in's state"));
    }
    if !site.auth.oidc().first_return(&pending.s) {
        refused(
            site,
            issuer_name,
            "replayed",
            "this sign-in came back before",
        );
        return Err(failed("this sign-in was already used"));
    }
    if let Some(error) = req.param("error") {
        refused(site, issuer_name, "refused_at_issuer", &error);
        return Err(failed("the issuer refused it"));
    }
    let (index, _) = issuer(site, issuer_name)?;
    let callback = callback(req);
    let code = Code {
        code: &req.param("code").unwrap_or_default(),
        verifier: &pending.v,
        redirect_uri: &callback,
    };
    let identity = (site.auth.oidc().sign_in(index, &code, &pending.n).await)
        .map_err(|refusal| failed(&told(&refusal)))?;
    let Some(session) = person_cookie(site, req, &identity) else {
        return Err(failed("the issuer named no one"));
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
