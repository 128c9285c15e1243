//! Who is looking at a page, and the forms' guard.
//!
//! With access control off, everyone sees everything and nobody signs in.
//! With it on, a request carrying a valid token (`Authorization: Bearer`)
//! sees what the mirror holds, and so does a browser that signed in: the
//! token entered once in the sign-in form becomes a session cookie
//! (`tfmirror_session`: `HttpOnly`, `SameSite=Strict`, with an expiry, and
//! `Secure` whenever the page was reached over HTTPS, as it is unless TLS
//! is off and no proxy in front says otherwise), signed with the key that signs archive links and naming the
//! token only by a keyed name, so that a token taken out of force ends its
//! sessions at once. Without either, the home page shows how to use the
//! mirror and how to sign in; every other page sends the browser to sign
//! in (its JSON answers 401).
//!
//! Every form carries a token the page set in a cookie of its own
//! (`tfmirror_form`, `SameSite=Strict`), and a form is taken only when
//! the two agree and, where the browser names one, the form came from
//! this mirror's own origin.

use http::StatusCode;

use std::sync::Arc;

use super::form::Form;
use super::layout::{Layout, Seen};
use super::{PageAnswer, PageRequest, Site};
use crate::auth::{Identity, Who};
use crate::config::Grant;
use crate::error::RequestError;

/// The session cookie's name.
const SESSION: &str = "tfmirror_session";

/// The form token cookie's name.
const FORM: &str = "tfmirror_form";

/// How a visitor may see what the mirror holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum By {
    /// Access control is off.
    Open,
    /// A token in the request.
    Token,
    /// A session cookie.
    Session,
    /// Not at all: not signed in.
    Nobody,
}

/// The visitor of a page.
#[derive(Debug)]
pub struct Visitor {
    by: By,
    /// Who they are and what they may do, unless nobody signed in.
    identity: Option<Identity>,
    /// The form token, from the visitor's cookie or new.
    form_token: String,
    /// Whether the form token is new (and its cookie is to be set).
    new_form_token: bool,
    /// The attributes every cookie set for this visitor carries.
    attributes: &'static str,
}

impl Visitor {
    /// Who sent `req`: a token (configured, or an issuer's), or a session
    /// a token or an issuer's sign-in opened.
    pub async fn of(site: Site<'_>, req: &PageRequest<'_>) -> Visitor {
        let (by, identity) = if !site.auth.enabled() {
            (By::Open, Some(Identity::anyone()))
        } else if let Ok(identity) = site.auth.identify(req.authorization).await {
            (By::Token, Some(identity))
        } else if let Some(identity) =
            cookie(req.cookies, SESSION).and_then(|s| session_holds(site, s))
        {
            (By::Session, Some(identity))
        } else {
            (By::Nobody, None)
        };
        let (form_token, new_form_token) = match cookie(req.cookies, FORM)
            .filter(|t| t.len() == 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        {
            Some(token) => (token.to_owned(), false),
            None => (random_hex(16), true),
        };
        Visitor {
            by,
            identity,
            form_token,
            new_form_token,
            attributes: attributes(req),
        }
    }

    /// Whether the visitor may do what `grant` allows.
    pub fn may(&self, grant: Grant) -> bool {
        self.identity.as_ref().is_some_and(|i| i.may(grant))
    }

    /// Who the visitor is, when they are named.
    pub fn who(&self) -> Option<&Who> {
        self.identity.as_ref()?.who.as_deref()
    }

    /// Whether the visitor may see what the mirror holds.
    pub fn may_read(&self) -> bool {
        self.may(Grant::Read)
    }

    /// The visitor as a page's frame shows them.
    pub fn seen(&self) -> Seen<'_> {
        Seen {
            signed_in: self.may_read(),
            session: self.by == By::Session,
            name: self.who().map(|w| w.subject.clone()),
            grant: (self.who().is_some())
                .then(|| self.identity.as_ref().map(|i| i.grant))
                .flatten(),
            csrf: &self.form_token,
        }
    }

    /// What a visitor who may not read gets: the JSON's 401, or the page
    /// sending the browser to sign in and back.
    pub fn sign_in_first(&self, req: &PageRequest<'_>) -> Result<PageAnswer, RequestError> {
        if req.route.json {
            return Err(RequestError::Unauthenticated(
                "this mirror requires a token: send it as Authorization: Bearer <token>".into(),
            ));
        }
        let (path, query) = super::layout::here(req);
        let next: String =
            url::form_urlencoded::byte_serialize(format!("{path}{query}").as_bytes()).collect();
        Ok(PageAnswer::see_other(format!("/-/signin?next={next}")))
    }

    /// Takes a form only from this mirror's own pages: the origin the
    /// browser names (if it names one) is the mirror's, and the form
    /// carries the token its page set. Scripts sending to `/-/api/` with a
    /// bearer token (or to an open mirror) carry no cookie a forged form
    /// could borrow, and need no token, unless they sign in or out.
    pub fn check_form(&self, req: &PageRequest<'_>, form: &Form) -> Result<(), RequestError> {
        let own = format!("{}://{}", req.scheme, req.authority);
        if req.origin.is_some_and(|o| o != own) {
            return Err(RequestError::FormRefused(
                "the form was sent from another site".into(),
            ));
        }
        let guarded = !req.route.json
            || self.by == By::Session
            || matches!(req.route.page, super::Page::SignIn | super::Page::SignOut);
        if !guarded {
            return Ok(());
        }
        let sent = form.text("csrf").unwrap_or_default();
        let matches = !self.new_form_token
            && bool::from(subtle::ConstantTimeEq::ct_eq(
                sent.as_bytes(),
                self.form_token.as_bytes(),
            ));
        if !matches {
            return Err(RequestError::FormRefused(
                "the form is out of date or was not sent from this mirror's page: load the page again and send it from there".into(),
            ));
        }
        Ok(())
    }

    /// The answer with the form token's cookie, when it is new.
    pub fn finish(&self, mut answer: PageAnswer) -> PageAnswer {
        if self.new_form_token && answer.content_type.starts_with("text/html") {
            answer
                .cookies
                .push(format!("{FORM}={}; {}", self.form_token, self.attributes));
        }
        answer
    }
}

/// The sign-in page.
#[derive(askama::Template)]
#[template(path = "signin.html")]
struct SignInPage<'a> {
    layout: &'a Layout,
    next: String,
    refused: Option<String>,
    /// The issuers people may sign in with.
    issuers: Vec<String>,
    /// `next`, encoded for a query.
    next_query: String,
}

impl<'a> SignInPage<'a> {
    /// The page, sending the browser back to `next`, saying why a token
    /// was `refused` when it was.
    fn new(site: Site<'_>, layout: &'a Layout, next: String, refused: Option<String>) -> Self {
        SignInPage {
            layout,
            issuers: offered(site),
            next_query: url::form_urlencoded::byte_serialize(next.as_bytes()).collect(),
            next,
            refused,
        }
    }
}

/// `/-/signin`: the form, or (sent) the session and the way back.
pub fn sign_in(
    site: Site<'_>,
    req: &PageRequest<'_>,
    form: Option<&Form>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let next = safe_next(
        form.and_then(|f| f.text("next"))
            .or_else(|| req.param("next")),
    );
    let Some(form) = form else {
        let page = SignInPage::new(site, layout, next, None);
        return Ok(PageAnswer::html(StatusCode::OK, &page));
    };
    if !site.auth.enabled() {
        return Ok(PageAnswer::see_other(next));
    }
    let token = form.text("token").unwrap_or_default();
    let authorization = format!("Bearer {}", token.trim());
    let Some(name) = site.auth.token_name(Some(&authorization)) else {
        let page = SignInPage::new(
            site,
            layout,
            next,
            Some("This token is not valid for this mirror.".into()),
        );
        return Ok(PageAnswer::html(StatusCode::UNAUTHORIZED, &page));
    };
    let lifetime = site.auth.session_lifetime().as_secs();
    let expires = site.auth.now_secs() + lifetime;
    let text = session_text(expires, &name);
    let value = format!(
        "v1.{expires}.{name}.{}",
        site.auth.sign_text(text.as_bytes())
    );
    let mut answer = PageAnswer::see_other(next);
    answer.cookies.push(format!(
        "{SESSION}={value}; Max-Age={lifetime}; {}",
        attributes(req)
    ));
    Ok(answer)
}

/// The issuers people may sign in with (those with a `client_id`), by
/// name, for the sign-in page.
fn offered(site: Site<'_>) -> Vec<String> {
    (site.auth.oidc().issuers().iter())
        .filter(|i| i.config.client_id.is_some())
        .map(|i| i.config.name.clone())
        .collect()
}

/// `/-/signout` (sent): the session cookie cleared, back home.
pub fn sign_out(req: &PageRequest<'_>) -> PageAnswer {
    let mut answer = PageAnswer::see_other("/".into());
    answer
        .cookies
        .push(format!("{SESSION}=; Max-Age=0; {}", attributes(req)));
    answer
}

/// The attributes of every cookie the pages set: the whole mirror's,
/// out of scripts' reach, never sent with another site's request, and
/// over HTTPS only when the page was reached by it (a browser keeps no
/// `Secure` cookie a plain-HTTP page sets, except on loopback).
pub(super) fn attributes(req: &PageRequest<'_>) -> &'static str {
    if req.scheme == "https" {
        "Path=/; HttpOnly; Secure; SameSite=Strict"
    } else {
        "Path=/; HttpOnly; SameSite=Strict"
    }
}

/// What a session cookie's signature covers.
fn session_text(expires: u64, name: &str) -> String {
    format!("session\n{expires}\n{name}")
}

/// The identity of a session cookie's value, if it is one this mirror
/// signed and has not expired: `v1` for a configured token still in force,
/// `v2` for a person an issuer signed in.
fn session_holds(site: Site<'_>, value: &str) -> Option<Identity> {
    let parts: Vec<&str> = value.split('.').collect();
    match parts.as_slice() {
        ["v1", expires, name, signature] => {
            let expires = live(site, expires)?;
            site.auth
                .signs_text(session_text(expires, name).as_bytes(), signature)
                .then(|| site.auth.session_of_token(name))?
        }
        ["v2", expires, who, grant, signature] => {
            let expires = live(site, expires)?;
            let text = person_text(expires, who, grant);
            if !site.auth.signs_text(text.as_bytes(), signature) {
                return None;
            }
            let who = Who::decode(who)?;
            // A person whose issuer was taken out of the configuration is
            // signed out.
            let known = site
                .auth
                .oidc()
                .issuers()
                .iter()
                .any(|i| i.config.name == who.issuer);
            let grant = Grant::from_name(grant)?;
            known.then(|| Identity {
                who: Some(Arc::new(who)),
                grant,
            })
        }
        _ => None,
    }
}

/// A session's expiry, while it is in the future.
fn live(site: Site<'_>, expires: &str) -> Option<u64> {
    let expires = expires.parse::<u64>().ok()?;
    (expires > site.auth.now_secs()).then_some(expires)
}

/// What a person's session cookie's signature covers.
fn person_text(expires: u64, who: &str, grant: &str) -> String {
    format!("person\n{expires}\n{who}\n{grant}")
}

/// The session cookie for a person `identity` names, signed in through an
/// issuer: its `Set-Cookie` value, for `req`'s scheme.
pub fn person_cookie(site: Site<'_>, req: &PageRequest<'_>, identity: &Identity) -> Option<String> {
    let who = identity.who.as_ref()?.encode();
    let grant = identity.grant.as_str();
    let lifetime = site.auth.session_lifetime().as_secs();
    let expires = site.auth.now_secs() + lifetime;
    let signature = site
        .auth
        .sign_text(person_text(expires, &who, grant).as_bytes());
    Some(format!(
        "{SESSION}=v2.{expires}.{who}.{grant}.{signature}; Max-Age={lifetime}; {}",
        attributes(req)
    ))
}

/// A cookie's value in the `Cookie` headers.
pub(super) fn cookie<'a>(headers: &[&'a str], name: &str) -> Option<&'a str> {
    (headers.iter())
        .flat_map(|header| header.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Where a form sends the browser back to: a path on this mirror only.
pub(super) fn safe_next(next: Option<String>) -> String {
    next.filter(|n| n.starts_with('/') && !n.starts_with("//") && !n.contains('\\'))
        .filter(|n| n.len() < 1024 && !n.bytes().any(|b| b.is_ascii_control()))
        .unwrap_or_else(|| "/".into())
}

/// `bytes` random bytes, in hex.
pub(super) fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut buf)
        .expect("the system's random source works");
    hex::encode(buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cookies_are_read_by_name_and_next_stays_on_this_mirror() {
        let header = ["a=1; tfmirror_session=v1.2.x.y;tfmirror_form=ab"];
        assert_eq!(cookie(&header, SESSION), Some("v1.2.x.y"));
        assert_eq!(cookie(&header, FORM), Some("ab"));
        assert_eq!(cookie(&header, "b"), None);
        assert_eq!(cookie(&[], SESSION), None);
        // HTTP/2 sends each cookie in a header of its own.
        let crumbs = ["a=1", "tfmirror_form=ab", "tfmirror_session=v1.2.x.y"];
        assert_eq!(cookie(&crumbs, SESSION), Some("v1.2.x.y"));
        assert_eq!(cookie(&crumbs, FORM), Some("ab"));
        for (given, kept) in [
            ("/-/providers/a/b/c", "/-/providers/a/b/c"),
            ("//evil.example/", "/"),
            ("https://evil.example/", "/"),
            ("/\\evil.example", "/"),
            ("/a\nSet-Cookie: x", "/"),
        ] {
            assert_eq!(safe_next(Some(given.into())), kept, "{given}");
        }
        assert_eq!(safe_next(None), "/");
    }

    #[test]
    fn cookies_are_secure_when_the_page_came_over_https() {
        let route = crate::web::routes::parse("/-/signout").unwrap();
        let request = |scheme| PageRequest {
            route: &route,
            path: "/-/signout",
            post: true,
            query: None,
            cookies: &[],
            authorization: None,
            content_type: None,
            origin: None,
            body: bytes::Bytes::new(),
            scheme,
            authority: "mirror.example",
            client: "192.0.2.1",
        };
        let set = |scheme| sign_out(&request(scheme)).cookies.join("\n");
        assert_eq!(
            set("https"),
            "tfmirror_session=; Max-Age=0; Path=/; HttpOnly; Secure; SameSite=Strict"
        );
        assert_eq!(
            set("http"),
            "tfmirror_session=; Max-Age=0; Path=/; HttpOnly; SameSite=Strict"
        );
    }
}
