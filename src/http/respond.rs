//! How answers are built: JSON with its content type and length, the
//! facade's uncacheable JSON, rendered documents with their entity tags
//! (and 304 when the client holds them), plain text, and HEAD's answer
//! without a body. The dispatcher and the status page both use these.

use http::{header, HeaderMap, HeaderValue, Response, StatusCode, Version};

use super::body::{self, Body};
use crate::protocol::Rendered;

/// The header that returns a request's ID (set by the dispatcher on every
/// answer).
pub(super) const X_REQUEST_ID: header::HeaderName = header::HeaderName::from_static("x-request-id");

/// A facade answer: JSON that no one may cache without asking again.
pub(super) fn registry_json(bytes: impl Into<bytes::Bytes>) -> Response<Body> {
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
    if !matches && version >= Version::HTTP_2 {
        // Copied whole, with `Date` set and room kept for `X-Request-Id`.
        let mut headers = doc
            .answer_headers
            .get_or_init(|| h2_document_headers(&doc))
            .clone();
        set_in_place(&mut headers, &header::DATE, super::date::now());
        let mut r = Response::new(body::full(doc.bytes));
        *r.headers_mut() = headers;
        return r;
    }
    let mut resp = if matches {
        let mut r = answer(body::empty(), version);
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        // (Over HTTP/1, hyper writes the length itself.)
        let mut r = answer(body::full(doc.bytes), version);
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

/// The headers of every HTTP/2 answer carrying `doc` whole: what
/// [`rendered_response`] sets over HTTP/1 and hyper's `Content-Length`,
/// then `Date` and `X-Request-Id` with values to be replaced, which keep
/// their places when the map is copied (a copy has room for nothing more).
/// hyper keeps a `Date` it finds.
fn h2_document_headers(doc: &Rendered) -> HeaderMap {
    let mut h = HeaderMap::with_capacity(HTTP2_ANSWER_HEADERS);
    h.insert(header::CONTENT_LENGTH, doc.length.clone());
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::ETAG, doc.etag.clone());
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::DATE, HeaderValue::from_static(""));
    h.insert(X_REQUEST_ID, HeaderValue::from_static(""));
    h
}

/// Sets `name` to `value` in `headers`: found by a walk over the few
/// headers an answer has, which compares names without hashing them, and
/// inserted only if it is not there.
pub(super) fn set_in_place(headers: &mut HeaderMap, name: &header::HeaderName, value: HeaderValue) {
    match headers.iter_mut().find(|(n, _)| *n == name) {
        Some((_, slot)) => *slot = value,
        None => {
            headers.insert(name, value);
        }
    }
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
    bytes: impl Into<bytes::Bytes>,
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

    #[test]
    fn http2_answers_copy_the_documents_headers_with_the_date_of_now() {
        let doc = Rendered::new(&serde_json::json!({"versions": {"1.0.0": {}}}));
        let copy = doc.clone();
        assert!(copy.answer_headers.get().is_none());
        let before = std::time::SystemTime::now() - std::time::Duration::from_secs(1);
        for (n, doc) in [doc, copy].into_iter().enumerate() {
            // Made with the first answer, for every copy of the document.
            assert_eq!(doc.answer_headers.get().is_some(), n == 1);
            let resp = rendered_response(doc.clone(), None, Version::HTTP_2);
            let h = resp.headers();
            assert_eq!(h["content-length"], doc.bytes.len().to_string().as_str());
            assert_eq!(h["content-type"], "application/json");
            assert_eq!(h["etag"], doc.etag);
            assert_eq!(h["cache-control"], "no-cache");
            let date = httpdate::parse_http_date(h["date"].to_str().unwrap()).unwrap();
            assert!(date >= before && date <= std::time::SystemTime::now());
            assert_eq!(
                http_body::Body::size_hint(resp.body()).exact(),
                Some(doc.bytes.len() as u64)
            );
        }
    }

    #[test]
    fn set_in_place_replaces_a_header_or_adds_it() {
        let mut h = HeaderMap::new();
        h.insert(header::ETAG, HeaderValue::from_static("\"a\""));
        h.insert("x-request-id", HeaderValue::from_static(""));
        let id = header::HeaderName::from_static("x-request-id");
        set_in_place(&mut h, &id, HeaderValue::from_static("0123456789abcdef"));
        assert_eq!(h.len(), 2);
        assert_eq!(h.get_all(&id).iter().count(), 1);
        assert_eq!(h[&id], "0123456789abcdef");
        set_in_place(&mut h, &header::DATE, HeaderValue::from_static("now"));
        assert_eq!(h.len(), 3);
        assert_eq!(h[header::DATE], "now");
        assert_eq!(h[header::ETAG], "\"a\"");
    }

    #[test]
    fn http1_answers_are_built_as_before() {
        let doc = Rendered::new(&serde_json::json!({"versions": {}}));
        let resp = rendered_response(doc.clone(), None, Version::HTTP_11);
        let h = resp.headers();
        assert_eq!(h["etag"], doc.etag);
        assert_eq!(h["cache-control"], "no-cache");
        // hyper writes these over HTTP/1.
        assert!(h.get("date").is_none() && h.get("content-length").is_none());
        assert!(
            doc.answer_headers.get().is_none(),
            "nothing made for HTTP/2"
        );
    }
}
