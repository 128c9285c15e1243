//! How answers are built: JSON with its content type and length, the
//! facade's uncacheable JSON, rendered documents with their entity tags
//! (and 304 when the client holds them), plain text, and HEAD's answer
//! without a body. The dispatcher and the status page both use these.

use http::{header, HeaderValue, Response, StatusCode};

use super::body::{self, Body};
use crate::protocol::Rendered;

/// A facade answer: JSON that no one may cache without asking again.
pub(super) fn registry_json(bytes: Vec<u8>) -> Response<Body> {
    let mut resp = with_type(StatusCode::OK, bytes, "application/json");
    resp.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A rendered document, or 304 when the client holds it already. Clients
/// must revalidate (`no-cache`): the version list and the hashes change.
pub(super) fn rendered_response(doc: Rendered, if_none_match: Option<&str>) -> Response<Body> {
    let matches = if_none_match.is_some_and(|tags| {
        tags.split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| doc.etag == t || t == "*")
    });
    let mut resp = if matches {
        let mut r = Response::new(body::empty());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = Response::new(body::full(doc.bytes));
        r.headers_mut().insert(header::CONTENT_LENGTH, doc.length);
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    let h = resp.headers_mut();
    h.insert(header::ETAG, doc.etag);
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A JSON answer with the right content type.
pub(super) fn json_response<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let bytes = serde_json::to_vec(value).expect("documents always serialize");
    with_type(status, bytes, "application/json")
}

pub(super) fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    with_type(
        status,
        text.as_bytes().to_vec(),
        "text/plain; charset=utf-8",
    )
}

/// An answer with a body, its length and its content type.
pub(super) fn with_type(
    status: StatusCode,
    bytes: Vec<u8>,
    content_type: &'static str,
) -> Response<Body> {
    let len = bytes.len();
    let mut resp = Response::new(body::full(bytes));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Keeps status and headers (Content-Length included) and drops the body.
pub(super) fn strip_body(resp: Response<Body>) -> Response<Body> {
    let (parts, _) = resp.into_parts();
    Response::from_parts(parts, body::empty())
}
