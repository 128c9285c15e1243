//! One HTTP request in, one answer out: method check, routing, the mirror
//! call, rendering, and the single place where errors become answers. Each
//! request gets an ID (returned as `X-Request-Id`), a tracing span with its
//! method, path, status, duration and cache outcome, and metrics.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::{combinators::BoxBody, BodyExt, Empty, Full, StreamBody};
use tokio_util::io::ReaderStream;
use tracing::Instrument;

use crate::error::RequestError;
use crate::metrics::Endpoint;
use crate::mirror::{Arriving, Following, Mirror, Progress};
use crate::protocol::{Rendered, VersionDocument};
use crate::routes::{self, Route};

/// The body type of every answer.
pub type Body = BoxBody<Bytes, std::io::Error>;

/// Chunk size for streaming archives from disk.
const FILE_CHUNK: usize = 128 * 1024;

/// Answers one request. Never fails: errors become JSON error answers.
pub async fn handle<B>(mirror: Arc<Mirror>, req: Request<B>) -> Result<Response<Body>, Infallible> {
    let started = Instant::now();
    let id = next_request_id();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let span = tracing::info_span!(
        "request",
        id = %id,
        method = %method,
        path = %path,
        status = tracing::field::Empty,
        ms = tracing::field::Empty,
        cache = tracing::field::Empty,
    );
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.to_string()));
    let query = req.uri().query().map(str::to_owned);
    let authorization = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    let if_none_match = req
        .headers()
        .get(header::IF_NONE_MATCH)
        .and_then(|h| h.to_str().ok())
        .map(str::to_owned);
    async move {
        let asked = Asked {
            method: &method,
            path: &path,
            query: query.as_deref(),
            host: host.as_deref(),
            authorization: authorization.as_deref(),
            if_none_match: if_none_match.as_deref(),
        };
        let (endpoint, result) = answer(&mirror, &asked).await;
        let mut response = match result {
            Ok(resp) => resp,
            Err(e) => {
                let status = e.status();
                if status.is_server_error() {
                    tracing::warn!(status = status.as_u16(), error = %e, "request failed");
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
        };
        let took = started.elapsed();
        let status = response.status().as_u16();
        mirror.metrics().request(endpoint, status, took);
        let span = tracing::Span::current();
        span.record("status", status);
        span.record("ms", took.as_millis() as u64);
        tracing::info!("answered");
        if let Ok(v) = HeaderValue::from_str(&id) {
            response.headers_mut().insert("x-request-id", v);
        }
        Ok(if method == Method::HEAD {
            strip_body(response)
        } else {
            response
        })
    }
    .instrument(span)
    .await
}

/// A request ID: unique within this process, and unlikely to repeat across
/// restarts because the counter starts from the clock.
fn next_request_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    format!(
        "{:016x}",
        start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
    )
}

/// The parts of a request that decide its answer.
struct Asked<'a> {
    method: &'a Method,
    path: &'a str,
    query: Option<&'a str>,
    host: Option<&'a str>,
    authorization: Option<&'a str>,
    if_none_match: Option<&'a str>,
}

async fn answer(
    mirror: &Arc<Mirror>,
    asked: &Asked<'_>,
) -> (Endpoint, Result<Response<Body>, RequestError>) {
    if asked.method != Method::GET && asked.method != Method::HEAD {
        return (Endpoint::Invalid, Err(RequestError::MethodNotAllowed));
    }
    let route = match routes::parse(asked.path) {
        Ok(r) => r,
        Err(e) => return (Endpoint::Invalid, Err(e)),
    };
    match route {
        Route::Home => (
            Endpoint::Home,
            Ok(crate::status::page(
                mirror,
                asked.host,
                mirror.auth().check(asked.authorization).is_ok(),
            )
            .await),
        ),
        Route::Health => (
            Endpoint::Operations,
            Ok(text_response(StatusCode::OK, "ok\n")),
        ),
        Route::Ready => (
            Endpoint::Operations,
            match mirror.ready() {
                Ok(()) => Ok(text_response(StatusCode::OK, "ready\n")),
                Err(reason) => Err(RequestError::Unavailable(reason)),
            },
        ),
        Route::Metrics => {
            let mut resp = text_response(StatusCode::OK, &mirror.metrics().render());
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            (Endpoint::Operations, Ok(resp))
        }
        Route::Index(provider) => (
            Endpoint::Index,
            async {
                mirror.auth().check(asked.authorization)?;
                let doc = mirror.index_document(&provider).await?;
                Ok(rendered_response(doc, asked.if_none_match))
            }
            .await,
        ),
        Route::Version(provider, version) => (
            Endpoint::Version,
            async {
                mirror.auth().check(asked.authorization)?;
                let auth = mirror.auth();
                let doc = if auth.enabled() {
                    // Archive links carry signatures made for this answer.
                    let record = mirror.version(&provider, &version).await?;
                    let h1 = mirror.cached_h1(&record).await;
                    let sign = |platform: &crate::address::Platform| {
                        Some(auth.sign_archive(&(
                            provider.clone(),
                            version.clone(),
                            platform.clone(),
                        )))
                    };
                    Rendered::new(&VersionDocument::from_record(&record, &h1, sign))
                } else {
                    mirror.version_document(&provider, &version).await?
                };
                Ok(rendered_response(doc, asked.if_none_match))
            }
            .await,
        ),
        Route::Lock(provider, version) => (
            Endpoint::Lock,
            async {
                mirror.auth().check(asked.authorization)?;
                let platforms = lock_platforms(asked.query)?;
                let entry =
                    crate::lockfile::entry(mirror, &provider, &version, None, &platforms).await?;
                Ok(with_type(
                    StatusCode::OK,
                    crate::lockfile::render(&[entry]).into_bytes(),
                    "text/plain; charset=utf-8",
                ))
            }
            .await,
        ),
        Route::Archive(provider, version, platform) => (
            Endpoint::Archive,
            async {
                let key = (provider, version, platform);
                mirror.auth().check_archive(&key, asked.query)?;
                serve_archive(mirror, &key.0, &key.1, &key.2).await
            }
            .await,
        ),
    }
}

/// The `platform` parameters of a lock request: at least one.
fn lock_platforms(query: Option<&str>) -> Result<Vec<crate::address::Platform>, RequestError> {
    let mut platforms = Vec::new();
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key == "platform" {
            let platform = crate::address::Platform::parse(&value)?;
            if !platforms.contains(&platform) {
                platforms.push(platform);
            }
        }
    }
    if platforms.is_empty() {
        return Err(RequestError::BadRequest(
            "name the platforms to lock with ?platform=linux_amd64&platform=…".into(),
        ));
    }
    Ok(platforms)
}

async fn serve_archive(
    mirror: &Arc<Mirror>,
    provider: &crate::address::Provider,
    version: &crate::address::Version,
    platform: &crate::address::Platform,
) -> Result<Response<Body>, RequestError> {
    let (body, size) = match mirror.follow_archive(provider, version, platform).await? {
        Following::Cached(archive, reading) => {
            let file = tokio::fs::File::open(&archive.path)
                .await
                .map_err(|e| RequestError::disk("opening a cached archive", &e))?;
            let stream = ReaderStream::with_capacity(file, FILE_CHUNK);
            let metrics = mirror.clone();
            let body = StreamBody::new(futures_util::StreamExt::map(stream, move |chunk| {
                // The guard lives as long as the body: the archive is being read.
                let _ = &reading;
                chunk.map(|data| {
                    metrics.metrics().served(data.len() as u64);
                    hyper::body::Frame::data(data)
                })
            }));
            (BodyExt::boxed(body), archive.size)
        }
        Following::Arriving(arriving) => {
            let size = arriving.size;
            (arriving_body(mirror.clone(), arriving), size)
        }
    };
    let mut resp = Response::new(body);
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    Ok(resp)
}

/// Streams a download as it arrives, holding back its last byte until the
/// whole archive has verified; when it fails, the body ends in an error, so
/// the connection is cut before the client has the whole file.
fn arriving_body(mirror: Arc<Mirror>, arriving: Arriving) -> Body {
    let Arriving {
        file,
        size,
        progress,
    } = arriving;
    let state = Follow {
        file: Some(file),
        sent: 0,
        size,
        progress,
        mirror,
    };
    let stream = futures_util::stream::unfold(state, |mut st| async move {
        let chunk = st.next_chunk().await?;
        if chunk.is_err() {
            // Nothing follows an error.
            st.file = None;
        }
        Some((chunk.map(hyper::body::Frame::data), st))
    });
    BodyExt::boxed(StreamBody::new(stream))
}

/// The reading side of an arriving download.
struct Follow {
    /// `None` once the body has failed.
    file: Option<std::fs::File>,
    sent: u64,
    size: u64,
    progress: tokio::sync::watch::Receiver<Progress>,
    mirror: Arc<Mirror>,
}

impl Follow {
    /// The next piece of the body, an error, or `None` at its end.
    async fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        use std::io::Read;
        loop {
            let mut file = self.file.take()?;
            if self.sent == self.size {
                return None;
            }
            let now = *self.progress.borrow_and_update();
            let limit = match now {
                Progress::Running(written) => written.min(self.size - 1),
                Progress::Verified => self.size,
                Progress::Failed => {
                    return Some(Err(std::io::Error::other(
                        "the download failed; see the mirror's log",
                    )))
                }
            };
            if self.sent < limit {
                let want = (limit - self.sent).min(FILE_CHUNK as u64) as usize;
                let read = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0u8; want];
                    let n = file.read(&mut buf)?;
                    buf.truncate(n);
                    Ok::<_, std::io::Error>((file, buf))
                })
                .await
                .map_err(std::io::Error::other)
                .and_then(|r| r);
                return match read {
                    Ok((_, buf)) if buf.is_empty() => Some(Err(std::io::Error::other(
                        "the download's file ended early",
                    ))),
                    Ok((file, buf)) => {
                        self.file = Some(file);
                        self.sent += buf.len() as u64;
                        self.mirror.metrics().served(buf.len() as u64);
                        Some(Ok(Bytes::from(buf)))
                    }
                    Err(e) => Some(Err(e)),
                };
            }
            self.file = Some(file);
            if self.progress.changed().await.is_err()
                && *self.progress.borrow() != Progress::Verified
            {
                self.file = None;
                return Some(Err(std::io::Error::other(
                    "the download ended without verifying",
                )));
            }
        }
    }
}

/// A rendered document, or 304 when the client holds it already. Clients
/// must revalidate (`no-cache`): the version list and the hashes change.
fn rendered_response(doc: Rendered, if_none_match: Option<&str>) -> Response<Body> {
    let matches = if_none_match.is_some_and(|tags| {
        tags.split(',')
            .map(|t| t.trim().trim_start_matches("W/"))
            .any(|t| t == doc.etag || t == "*")
    });
    let mut resp = if matches {
        let mut r = Response::new(Empty::new().map_err(|never| match never {}).boxed());
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        r
    } else {
        let len = doc.bytes.len();
        let mut r = Response::new(Full::new(doc.bytes).map_err(|never| match never {}).boxed());
        r.headers_mut()
            .insert(header::CONTENT_LENGTH, HeaderValue::from(len));
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        r
    };
    let h = resp.headers_mut();
    if let Ok(tag) = HeaderValue::from_str(&doc.etag) {
        h.insert(header::ETAG, tag);
    }
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    resp
}

/// A JSON answer with the right content type.
pub(crate) fn json_response<T: serde::Serialize>(status: StatusCode, value: &T) -> Response<Body> {
    let bytes = serde_json::to_vec(value).expect("documents always serialize");
    with_type(status, bytes, "application/json")
}

fn text_response(status: StatusCode, text: &str) -> Response<Body> {
    with_type(
        status,
        text.as_bytes().to_vec(),
        "text/plain; charset=utf-8",
    )
}

/// An answer with a body, its length and its content type.
pub(crate) fn with_type(
    status: StatusCode,
    bytes: Vec<u8>,
    content_type: &'static str,
) -> Response<Body> {
    let len = bytes.len();
    let mut resp = Response::new(
        Full::new(Bytes::from(bytes))
            .map_err(|never| match never {})
            .boxed(),
    );
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(len));
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    resp
}

/// Keeps status and headers (Content-Length included) and drops the body.
fn strip_body(resp: Response<Body>) -> Response<Body> {
    let (parts, _) = resp.into_parts();
    Response::from_parts(parts, Empty::new().map_err(|never| match never {}).boxed())
}
