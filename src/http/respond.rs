//! How answers are built: JSON with its content type and length, the
//! facade's uncacheable JSON, rendered documents with their entity tags
//! (and 304 when the client holds them), plain text, and HEAD's answer
//! without a body. The dispatcher and the status page both use these.

use http::{header, HeaderMap, HeaderValue, Response, StatusCode, Version};

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
pub(super) fn rendered_response(
    doc: Rendered,
    if_none_match: Option<&str>,
    version: Version,
) -> Response<Body> {
    let matches = if_none_match.is_some_and(|tags| {
        tags.split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| doc.etag == t || t == "*")
    });
    let mut resp = if matches {
        let mut r = answer(body::empty(), version);
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let mut r = answer(body::full(doc.bytes), version);
        if version >= Version::HTTP_2 {
            // Made once with the document; hyper would make a value for
            // each answer. (Over HTTP/1 it writes the length itself.)
            r.headers_mut().insert(header::CONTENT_LENGTH, doc.length);
        }
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

/// An answer with a body and its content type. (hyper sends the length
/// of a body held whole as `Content-Length`, over either protocol; see
/// [`strip_body`] for HEAD.)
pub(super) fn with_type(
    status: StatusCode,
    bytes: Vec<u8>,
    content_type: &'static str,
) -> Response<Body> {
    let mut resp = Response::new(body::full(bytes));
    *resp.status_mut() = status;
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Headers an HTTP/2 answer has room for without growing its map. It gets
/// five here and from the dispatcher (`Content-Length`, `Content-Type`,
/// `ETag`, `Cache-Control`, `X-Request-Id`), then hyper adds `Date` and
/// looks up `Content-Length` through the map's entry API, which makes room
/// for one more before it looks: at the default size (six) a grow for
/// every answer (a new table, every header hashed again and moved). HTTP/1
/// answers keep the default size: hyper writes their `Date` and
/// `Content-Length` on the wire, and the smaller map is one allocation
/// half the size.
const HTTP2_ANSWER_HEADERS: usize = 8;

/// A 200 answer with `body`, with room for its headers over `version`.
fn answer(body: Body, version: Version) -> Response<Body> {
    let mut resp = Response::new(body);
    if version >= Version::HTTP_2 {
        *resp.headers_mut() = HeaderMap::with_capacity(HTTP2_ANSWER_HEADERS);
    }
    resp
}

/// Keeps status and headers and drops the body: HEAD's answer. The
/// length of a body held whole, which hyper would have sent from the body,
/// is set as `Content-Length` first (a streamed body's answer has it
/// already).
pub(super) fn strip_body(resp: Response<Body>) -> Response<Body> {
    let (mut parts, body) = resp.into_parts();
    if let Some(length) = http_body::Body::size_hint(&body).exact() {
        parts
            .headers
            .entry(header::CONTENT_LENGTH)
            .or_insert_with(|| HeaderValue::from(length));
    }
    Response::from_parts(parts, body::empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_have_room_for_every_header_they_get() {
        let doc = Rendered::new(&serde_json::json!({"versions": {}}));
        let etag = doc.etag.to_str().unwrap().to_owned();
        for version in [Version::HTTP_11, Version::HTTP_2] {
            for mut resp in [
                rendered_response(doc.clone(), None, version),
                rendered_response(doc.clone(), Some(&etag), version),
            ] {
                let h = resp.headers_mut();
                let room = h.capacity();
                // What the dispatcher adds, and then hyper over HTTP/2.
                h.insert("x-request-id", HeaderValue::from_static("0123456789abcdef"));
                if version == Version::HTTP_2 {
                    h.entry(header::DATE)
                        .or_insert(HeaderValue::from_static("Thu, 26 Nov 2026 15:03:58 GMT"));
                    h.entry(header::CONTENT_LENGTH)
                        .or_insert(HeaderValue::from_static("0"));
                }
                assert_eq!(h.capacity(), room, "{version:?}: the map grew: {h:?}");
            }
        }
        // HTTP/1 answers keep the smaller default.
        let h1 = rendered_response(doc.clone(), None, Version::HTTP_11);
        let h2 = rendered_response(doc, None, Version::HTTP_2);
        assert!(h1.headers().capacity() < h2.headers().capacity());
    }
}
