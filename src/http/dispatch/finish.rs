//! The last of every request, in one place: an error made an answer (and
//! logged), the served artifact put on the audit trail, the request
//! counted and logged, its ID returned, and HEAD's body dropped.

use std::time::Instant;

use http::{header, HeaderValue, Method, Response, StatusCode};

use super::Asked;
use crate::error::RequestError;
use crate::http::audit::{self, Served};
use crate::http::body::Body;
use crate::http::respond::{json_response, set_in_place, strip_body, X_REQUEST_ID};
use crate::http::{oci, App};
use crate::log_context::{self, RequestId};
use crate::metrics::Endpoint;
use crate::verify::Verification;

/// `response` to `asked` (asked at `started`, under `id`, answered by
/// `endpoint`) as it goes out. `served`: the artifact it serves, with how
/// its version was verified, for the audit trail.
pub(super) fn finish(
    app: &App,
    asked: &Asked<'_>,
    (started, id): (Instant, RequestId),
    endpoint: Endpoint,
    mut response: Response<Body>,
    served: Option<(Served, Option<Verification>)>,
) -> Response<Body> {
    if let Some((served, verification)) = served {
        let bytes = response
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
            .or_else(|| http_body::Body::size_hint(response.body()).exact());
        audit::record(&served, asked.client, asked.who(), bytes, verification);
    }
    let took = started.elapsed();
    let status = response.status().as_u16();
    app.mirror.metrics().request(endpoint, status, took);
    log_context::AccessLine {
        client: asked.client,
        method: asked.method.as_str(),
        path: asked.path,
        status,
        ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
    }
    .log();
    set_in_place(response.headers_mut(), &X_REQUEST_ID, id.header_value());
    if asked.method == Method::HEAD {
        strip_body(response)
    } else {
        response
    }
}

/// The answer for an error, logged here and nowhere else (within the
/// request's span, so with its ID); on the OCI paths, in the OCI shape.
pub(super) fn error_response(e: &RequestError, path: &str) -> Response<Body> {
    let status = e.status();
    match e {
        RequestError::VerificationFailed(_)
        | RequestError::DiskUnavailable(_)
        | RequestError::PinMismatch(_)
        | RequestError::Internal(_) => {
            tracing::error!(status = status.as_u16(), error = %e, "request failed");
        }
        _ if status.is_server_error() => {
            tracing::warn!(status = status.as_u16(), error = %e, "request failed");
        }
        _ => {}
    }
    if oci::is_oci_path(path) {
        return oci::error_response(e, path);
    }
    let mut resp = json_response(status, &e.body());
    if status == StatusCode::UNAUTHORIZED {
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"tfmirror\""),
        );
    }
    resp
}
