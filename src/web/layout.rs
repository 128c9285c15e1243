//! What every page's frame shows: the navigation, the search box, whether
//! someone is signed in (and the form to sign out), and where the page's
//! data is as JSON.

use super::{PageRequest, Site};
use crate::config::Grant;

/// The frame of a page.
#[derive(Debug, Clone)]
pub struct Layout {
    /// This build's version.
    pub version: &'static str,
    /// Whether access control is on (sign-in and sign-out are offered).
    pub auth_on: bool,
    /// Whether the visitor may see what the mirror holds.
    pub signed_in: bool,
    /// Whether the visitor signed in through a session (and may sign out).
    pub session: bool,
    /// Who is signed in, as the frame names them (an issuer's subject).
    pub name: Option<String>,
    /// What the visitor may do, when they are named.
    pub grant: Option<Grant>,
    /// The token forms send back.
    pub csrf: String,
    /// What the search box holds.
    pub query: String,
    /// Where this page's data is as JSON (none for forms without data).
    pub json_url: Option<String>,
    /// The page's path and query, to come back to after signing in.
    pub here: String,
}

/// Who looks at a page, as its frame shows it.
#[derive(Debug, Clone)]
pub struct Seen<'v> {
    /// Whether the visitor may see what the mirror holds.
    pub signed_in: bool,
    /// Whether through a session (which can be ended).
    pub session: bool,
    /// Who they are, when named.
    pub name: Option<String>,
    /// What they may do, when they are named.
    pub grant: Option<Grant>,
    /// The token the page's forms send back.
    pub csrf: &'v str,
}

impl Layout {
    /// The frame for `req`, seen as `seen` says.
    pub fn new(site: Site<'_>, req: &PageRequest<'_>, seen: Seen<'_>) -> Layout {
        let (path, query) = here(req);
        let json_url = match &req.route.page {
            super::Page::SignIn | super::Page::SignOut | super::Page::Asset(_) => None,
            _ => Some(match path.strip_prefix("/-") {
                Some(rest) => format!("/-/api{rest}{query}"),
                None => format!("/-/api/{query}"),
            }),
        };
        Layout {
            version: env!("CARGO_PKG_VERSION"),
            auth_on: site.auth.enabled(),
            signed_in: seen.signed_in,
            session: seen.session,
            name: seen.name,
            grant: seen.grant,
            csrf: seen.csrf.to_owned(),
            query: req.param("q").unwrap_or_default(),
            json_url,
            here: format!("{path}{query}"),
        }
    }
}

impl Layout {
    /// Whether the visitor may approve and deny versions.
    pub fn may_approve(&self) -> bool {
        self.grant.is_some_and(|g| g >= Grant::Approve)
    }
}

/// The page's path and query (`?…`, or empty), as asked.
pub fn here(req: &PageRequest<'_>) -> (String, String) {
    let path = match &req.route.page {
        super::Page::Home => "/".to_owned(),
        _ => req.path.to_owned(),
    };
    let query = req.query.map(|q| format!("?{q}")).unwrap_or_default();
    (path, query)
}
