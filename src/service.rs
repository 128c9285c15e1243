//! One HTTP request in, one answer out: method check, routing, the mirror
//! call, rendering, and the single place where errors become answers.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full, StreamBody};
use tokio_util::io::ReaderStream;

use crate::error::RequestError;
use crate::mirror::Mirror;
use crate::protocol::{IndexDocument, VersionDocument};
use crate::routes::{self, Route};

/// The body type of every answer.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// Chunk size for streaming archives from disk.
const FILE_CHUNK: usize = 256 * 1024;

/// Answers one request. Never fails: errors become JSON error answers.
pub async fn handle<B>(mirror: Arc<Mirror>, req: Request<B>) -> Result<Response<Body>, Infallible> {
    let started = std::time::Instant::now();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let head = method == Method::HEAD;
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let response = match answer(&mirror, &method, &path, host.as_deref()).await {
        Ok(resp) => resp,
        Err(e) => {
            let status = e.status();
            if status.is_server_error() {
                tracing::warn!(%method, %path, status = status.as_u16(), error = %e, "request failed");
            }
            json_response(status, &e.body())
        }
    };
    tracing::info!(
        %method,
        %path,
        status = response.status().as_u16(),
        ms = started.elapsed().as_millis() as u64,
        "request"
    );
    Ok(if head { strip_body(response) } else { response })
}

async fn answer(
    mirror: &Arc<Mirror>,
    method: &Method,
    path: &str,
    host: Option<&str>,
) -> Result<Response<Body>, RequestError> {
    if method != Method::GET && method != Method::HEAD {
        return Err(RequestError::MethodNotAllowed);
    }
    match routes::parse(path)? {
        Route::Home => Ok(home(mirror, host)),
        Route::Index(provider) => {
            let record = mirror.index(&provider).await?;
            Ok(json_response(
                StatusCode::OK,
                &IndexDocument::from_record(&record),
            ))
        }
        Route::Version(provider, version) => {
            let record = mirror.version(&provider, &version).await?;
            let h1 = mirror.cached_h1(&record).await;
            Ok(json_response(
                StatusCode::OK,
                &VersionDocument::from_record(&record, &h1),
            ))
        }
        Route::Archive(provider, version, platform) => {
            let archive = mirror.archive(&provider, &version, &platform).await?;
            let file = tokio::fs::File::open(&archive.path)
                .await
                .map_err(|e| RequestError::disk("opening a cached archive", &e))?;
            let stream = ReaderStream::with_capacity(file, FILE_CHUNK);
            let body = StreamBody::new(futures_util::StreamExt::map(stream, |chunk| {
                chunk.map(hyper::body::Frame::data)
            }));
            let mut resp = Response::new(BodyExt::boxed(body));
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/zip"),
            );
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(archive.size));
            Ok(resp)
        }
    }
}

/// A JSON answer with the right content type.
fn json_response<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let bytes = serde_json::to_vec(value).expect("documents always serialize");
    let len = bytes.len();
    let mut resp = Response::new(full(bytes));
    resp.headers_mut()
        .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    *resp.status_mut() = status;
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// The page at the base URL, which Terraform never fetches: what this
/// server is and how to use it.
fn home(mirror: &Mirror, host: Option<&str>) -> Response<Body> {
    let cfg = mirror.config();
    let scheme = if cfg.server.tls { "https" } else { "http" };
    let listen = cfg.server.listen.to_string();
    // The name the client used is the one that works for it; a Host header
    // with odd characters is not echoed.
    let authority = host
        .filter(|h| {
            h.len() < 300
                && h.bytes()
                    .all(|b| b.is_ascii_graphic() && b != b'"' && b != b'<')
        })
        .unwrap_or(&listen);
    let text = format!(
        "tfmirror {version}: a caching provider network mirror for Terraform and OpenTofu.\n\
         Every package it serves was checked against its origin registry's signed SHA256SUMS.\n\n\
         Use it from the CLI configuration (~/.terraformrc or terraform.rc):\n\n\
         provider_installation {{\n  network_mirror {{\n    url = \"{scheme}://{authority}/\"\n  }}\n}}\n",
        version = env!("CARGO_PKG_VERSION"),
    );
    let mut resp = Response::new(full(text.into_bytes()));
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    resp
}

fn full(bytes: Vec<u8>) -> Body {
    Full::new(Bytes::from(bytes))
        .map_err(|never| match never {})
        .boxed()
}

/// Keeps status and headers (Content-Length included) and drops the body.
fn strip_body(resp: Response<Body>) -> Response<Body> {
    let (parts, _) = resp.into_parts();
    Response::from_parts(parts, Empty::new().map_err(|never| match never {}).boxed())
}
