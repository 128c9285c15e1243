//! A page's answer, and the headers every page carries: a content
//! security policy that lets a page load its own style sheet and nothing
//! else (no script, no frame, no form sent elsewhere), no content sniffing,
//! a referrer only within the mirror (`same-origin`: no address leaves it,
//! and the browser names the mirror as a form's origin, which the forms'
//! guard checks; under `no-referrer` it would name none), no framing,
//! nothing kept by shared caches.

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use crate::error::RequestError;

/// The content security policy of every page.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

/// The headers every page and its JSON carry, besides its type.
pub const HEADERS: [(&str, &str); 4] = [
    ("content-security-policy", CONTENT_SECURITY_POLICY),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "same-origin"),
    ("x-frame-options", "DENY"),
];

/// How long an answer may be kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// Not at all: pages say what the mirror holds now, and may be a
    /// signed-in person's.
    Never,
    /// A day: an asset embedded in this build.
    Asset,
}

/// A page's answer, for the HTTP layer to send as it is.
#[derive(Debug)]
pub struct PageAnswer {
    /// The status.
    pub status: StatusCode,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The body.
    pub body: Vec<u8>,
    /// `Set-Cookie` values.
    pub cookies: Vec<String>,
    /// Where a redirect sends the browser (`303 See Other`).
    pub location: Option<String>,
    /// How long it may be kept.
    pub keep: Keep,
}

impl PageAnswer {
    /// A rendered template.
    pub fn html(status: StatusCode, page: &impl Template) -> PageAnswer {
        match page.render() {
            Ok(text) => PageAnswer::new(status, "text/html; charset=utf-8", text.into_bytes()),
            Err(e) => PageAnswer::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain; charset=utf-8",
                format!("the page could not be made: {e}\n").into_bytes(),
            ),
        }
    }

    /// A page's data as JSON.
    pub fn json(data: &impl Serialize) -> PageAnswer {
        let body = serde_json::to_vec_pretty(data).expect("page data always serializes");
        PageAnswer::new(StatusCode::OK, "application/json", body)
    }

    /// An error as JSON: `{"errors": ["…"]}`, as the protocol routes say it.
    pub fn json_error(e: &RequestError) -> PageAnswer {
        let body = serde_json::to_vec(&e.body()).expect("errors always serialize");
        PageAnswer::new(e.status(), "application/json", body)
    }

    /// A redirect to `location` after a form (or to a sign-in).
    pub fn see_other(location: String) -> PageAnswer {
        let mut answer = PageAnswer::new(
            StatusCode::SEE_OTHER,
            "text/plain; charset=utf-8",
            Vec::new(),
        );
        answer.location = Some(location);
        answer
    }

    /// An answer with nothing else set.
    pub fn new(status: StatusCode, content_type: &'static str, body: Vec<u8>) -> PageAnswer {
        PageAnswer {
            status,
            content_type,
            body,
            cookies: Vec::new(),
            location: None,
            keep: Keep::Never,
        }
    }
}

/// The error page.
#[derive(Template)]
#[template(path = "error.html")]
struct ErrorPage<'a> {
    layout: &'a Layout,
    status: u16,
    title: &'a str,
    message: String,
}

/// An error as a page, with its status.
pub fn error_page(layout: &Layout, e: &RequestError) -> PageAnswer {
    let status = e.status();
    let page = ErrorPage {
        layout,
        status: status.as_u16(),
        title: status.canonical_reason().unwrap_or("Error"),
        message: e.to_string(),
    };
    PageAnswer::html(status, &page)
}
