//! The pages for people: what the mirror holds, how to use it, and whether
//! a configuration will install, rendered on the server from the same
//! mirror and site calls the protocol routes use, with templates that
//! escape every value ([`askama`]), assets embedded in the binary and no
//! script at all, so they work with JavaScript off and load nothing from
//! elsewhere. Every page's data is also served as JSON at the same path
//! below `/-/api/` ([`routes`]).
//!
//! By page: [`home`], [`search`], [`provider`], [`docs`] (a held
//! version's documentation), [`module`] (module READMEs and documentation
//! pages through [`markdown`], the one sanitiser), [`releases`], [`check`],
//! [`status`] (the operator's view); [`session`] signs people in when
//! access control is on and guards every form against cross-site
//! requests; [`answer`] sets the headers every page carries.

use std::sync::Arc;

use crate::auth::Auth;
use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::site::watch::Watch;

mod accept;
mod advisory;
pub mod answer;
mod assets;
mod bom;
pub mod check;
pub mod decide;
pub mod doc_changes;
pub mod doc_links;
pub mod docs;
pub mod form;
pub mod home;
mod layout;
pub mod markdown;
pub mod module;
pub mod provider;
mod recipes;
pub mod registry_docs;
pub mod releases;
pub mod routes;
pub mod search;
pub mod session;
pub mod signin_oidc;
pub mod status;

pub use answer::PageAnswer;
use layout::Layout;
use routes::{Page, PageRoute};

/// What the pages read: the mirror, the access control, the watch.
#[derive(Clone, Copy)]
pub struct Site<'a> {
    /// The mirror.
    pub mirror: &'a Arc<Mirror>,
    /// The tokens, and the key sessions are signed with.
    pub auth: &'a Auth,
    /// The watch, when `[watch]` lists anything.
    pub watch: Option<&'a Watch>,
}

/// A request for a page, as the HTTP layer read it.
#[derive(Debug)]
pub struct PageRequest<'a> {
    /// The page.
    pub route: &'a PageRoute,
    /// The path as asked (still percent-encoded).
    pub path: &'a str,
    /// Whether it was a `POST` (a form); else `GET` or `HEAD`.
    pub post: bool,
    /// The query string.
    pub query: Option<&'a str>,
    /// The `Cookie` headers: one, or over HTTP/2 one per cookie.
    pub cookies: &'a [&'a str],
    /// The `Authorization` header.
    pub authorization: Option<&'a str>,
    /// The `Content-Type` header of a form.
    pub content_type: Option<&'a str>,
    /// The `Origin` header of a form.
    pub origin: Option<&'a str>,
    /// The body of a form (empty otherwise).
    pub body: bytes::Bytes,
    /// The scheme clients reach the mirror by.
    pub scheme: &'a str,
    /// The authority clients reach the mirror by (`host[:port]`).
    pub authority: &'a str,
    /// The client's address: the peer's, or what a trusted proxy
    /// forwarded.
    pub client: &'a str,
}

impl PageRequest<'_> {
    /// A query parameter's value.
    pub fn param(&self, name: &str) -> Option<String> {
        url::form_urlencoded::parse(self.query.unwrap_or("").as_bytes())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.into_owned())
    }

    /// The base URL clients reach the mirror by, with a trailing slash.
    pub fn base_url(&self) -> String {
        format!("{}://{}/", self.scheme, self.authority)
    }
}

/// Answers a page. Errors become the error page (or a JSON error below
/// `/-/api/`), with the status the error names.
pub async fn serve(site: Site<'_>, req: &PageRequest<'_>) -> PageAnswer {
    if let Page::Asset(name) = &req.route.page {
        return assets::asset(name);
    }
    let visitor = session::Visitor::of(site, req).await;
    let layout = Layout::new(site, req, visitor.seen());
    let answer = match page(site, req, &visitor, &layout).await {
        Ok(answer) => answer,
        Err(e) if req.route.json => PageAnswer::json_error(&e),
        Err(e) => answer::error_page(&layout, &e),
    };
    visitor.finish(answer)
}

/// The page's answer; its errors are made pages by [`serve`].
async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    visitor: &session::Visitor,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let form = if req.post {
        let form = form::Form::read(req).await?;
        visitor.check_form(req, &form)?;
        Some(form)
    } else {
        None
    };
    match &req.route.page {
        Page::SignIn => return session::sign_in(site, req, form.as_ref(), layout),
        Page::SignInWith(issuer) => return signin_oidc::start(site, req, issuer).await,
        Page::SignInCallback => return signin_oidc::finish(site, req, layout).await,
        Page::SignOut if form.is_some() => return Ok(session::sign_out(req)),
        Page::SignOut => return Err(RequestError::MethodNotAllowed),
        Page::Home => return home::page(site, req, layout),
        _ => {}
    }
    // Everything else shows what the mirror holds: behind a sign-in when
    // access control is on.
    if !visitor.may_read() {
        return visitor.sign_in_first(req);
    }
    match &req.route.page {
        Page::Status if !visitor.may(crate::config::Grant::Admin) => {
            Err(RequestError::NotPermitted(
                "the status page is the operator's view: it needs the admin grant".into(),
            ))
        }
        Page::Status => status::page(site, req, layout),
        Page::Decide(decided, version) => {
            decide::page(
                site,
                req,
                form.as_ref(),
                layout,
                visitor,
                (decided, version),
            )
            .await
        }
        Page::Search => Ok(search::page(site, req, layout).await),
        Page::Provider(provider) => provider::page(site, req, layout, provider).await,
        Page::Docs(provider, version) => docs::index(site, req, layout, (provider, version)).await,
        Page::DocPage(provider, version, kind, name) => {
            docs::page(site, req, layout, (provider, version), (*kind, name)).await
        }
        Page::DocChanges(provider, version) => {
            doc_changes::list(site, req, layout, (provider, version)).await
        }
        Page::DocPageChanges(provider, version, kind, name) => {
            doc_changes::page(site, req, layout, (provider, version), (*kind, name)).await
        }
        Page::Bom(key) => bom::page(site, key).await,
        Page::ReleaseBom(file) => Ok(PageAnswer::json(&site.mirror.release_bom(file).await?)),
        Page::Advisory(id) => advisory::page(site, req, layout, id).await,
        Page::Module(module) => module::page(site, req, layout, module),
        Page::ModuleVersion(module, version) => {
            module::version_page(site, req, layout, module, version).await
        }
        Page::Releases => Ok(releases::page(site, req, layout).await),
        Page::RegistryDocs(asked) => registry_docs::answer(site, asked).await,
        Page::Check => check::page(site, req, form.as_ref(), layout).await,
        Page::Home
        | Page::SignIn
        | Page::SignOut
        | Page::SignInWith(_)
        | Page::SignInCallback
        | Page::Asset(_) => {
            unreachable!("answered above")
        }
    }
}
