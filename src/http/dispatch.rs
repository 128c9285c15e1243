//! One HTTP request in, one answer out: method check, routing, access
//! control, the mirror call, rendering, and the single place where errors
//! become answers and are logged. Each request gets an ID (returned as
//! `X-Request-Id`), a tracing span with that ID and its cache outcome, one
//! line logged as it is answered (client, method, path, status, duration),
//! and metrics.

use std::convert::Infallible;
use std::future::{ready, Future, Ready};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use futures_util::future::Either;
use http::{header, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use tracing::Instrument;

use super::audit::Served;
use super::body::{self, Body, RequestBody};
use super::oci;
use super::respond::{registry_json, rendered_response, text_response, with_type};
use super::routes::{self, OciRoute, Route};
use super::sendfile::SendQueue;
use super::App;
use crate::address::oci::OciRepo;
use crate::address::ArchiveKey;
use crate::auth::Who;
use crate::error::RequestError;
use crate::log_context::{self, next_request_id, RequestContext, RequestId, WithRequest};
use crate::metrics::Endpoint;
use crate::mirror::FileOrStream;

mod access;
mod finish;
mod ids;
mod links;
mod pages;
#[cfg(test)]
mod tests;
use access::{authorize, authorize_now};
use finish::{error_response, finish};
pub use ids::Peer;
use links::{lock_platforms, module_location, package_for_caller, version_for_caller};

/// The target of the line logged for every request
/// ([`log_context::ACCESS_TARGET`]).
pub const ACCESS_LOG: &str = log_context::ACCESS_TARGET;

/// The client a trusted proxy forwarded for.
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
/// The host a client asked a trusted proxy for.
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
/// The scheme a client used to reach a trusted proxy.
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");

/// An answer to a request: never an error (errors become JSON error
/// answers).
pub type Answer = Result<Response<Body>, Infallible>;

/// What [`handle`] gives for a request: its answer, made at once when it
/// is a document held in memory, or a future that makes it. The future is
/// boxed: hyper moves it whole (into the task of an HTTP/2 stream, and
/// within it), and a request's state is much larger than a pointer.
pub type Handled = Either<Ready<Answer>, Pin<Box<dyn Future<Output = Answer> + Send>>>;

/// Answers one request from `peer`. A document held in memory (nearly
/// every request) is answered before this returns, with no future made,
/// moved or polled for it; everything else, in the future returned.
pub fn handle<B: RequestBody>(app: Arc<App>, peer: Peer, req: Request<B>) -> Handled {
    let started = Instant::now();
    let id = next_request_id();
    // The request's parts are read where they are, not copied; its body
    // (none, for the methods answered) is never read.
    let (parts, body) = req.into_parts();
    let (span, mut context) = request_log(id);
    let now = {
        let asked = Asked::read(&app, &peer, &parts);
        span.in_scope(|| {
            log_context::within(&mut context, || {
                let (endpoint, response) = answer_now(&app, &asked)?;
                Some(finish(
                    &app,
                    &asked,
                    (started, id),
                    endpoint,
                    response,
                    None,
                ))
            })
        })
    };
    if let Some(response) = now {
        log_context::recycle(context);
        return Either::Left(ready(Ok(response)));
    }
    let later = answer_later(app, peer, parts, body, (started, id));
    Either::Right(Box::pin(WithRequest::new(context, later.instrument(span))))
}

/// The request's span and log context. The span carries what diagnostics
/// logged within the request need (its ID, and the cache outcome once the
/// mirror notes it); the rest goes on the request line alone, so it is
/// formatted once. When the log's lines show a request context instead
/// (see `log_context`), the request gets one where the filter enables its
/// span, and no span.
fn request_log(id: RequestId) -> (tracing::Span, Option<Arc<RequestContext>>) {
    if log_context::shown_in_lines() {
        (tracing::Span::none(), log_context::context_for(id))
    } else {
        let span = tracing::info_span!(
            target: log_context::REQUEST_TARGET,
            "request",
            id = %id,
            cache = tracing::field::Empty
        );
        (span, None)
    }
}

/// A request [`answer_now`] did not answer, answered by [`answer`]: its
/// parts read again (and a form's body, for a page that takes one), and
/// an archive's verification looked up for the audit trail.
async fn answer_later<B: RequestBody>(
    app: Arc<App>,
    peer: Peer,
    parts: http::request::Parts,
    body: B,
    asked_at: (Instant, RequestId),
) -> Answer {
    let mut asked = Asked::read(&app, &peer, &parts);
    if asked.method == Method::POST {
        if let Err(e) = pages::read_form(&mut asked, body).await {
            let response = error_response(&e, asked.path);
            return Ok(finish(
                &app,
                &asked,
                asked_at,
                Endpoint::Home,
                response,
                None,
            ));
        }
    }
    let (endpoint, served, result) = answer(&app, &asked).await;
    let response = result.unwrap_or_else(|e| error_response(&e, asked.path));
    // Served: answered with the bytes, or sent to the bucket for them.
    let status = response.status();
    let served = served.filter(|_| status.is_success() || status == StatusCode::TEMPORARY_REDIRECT);
    let verification = match &served {
        Some(Served::Archive(key)) => {
            Box::pin(app.mirror.held_verification(&key.provider, &key.version)).await
        }
        _ => None,
    };
    let served = served.map(|served| (served, verification));
    Ok(finish(&app, &asked, asked_at, endpoint, response, served))
}

/// The parts of a request that decide its answer.
struct Asked<'r> {
    /// Who asked: the peer, or the client a trusted proxy forwarded for.
    client: &'r str,
    method: Method,
    path: &'r str,
    query: Option<&'r str>,
    /// The request's parts, for what only some answers read
    /// ([`Asked::host`], [`Asked::scheme`]).
    parts: &'r http::request::Parts,
    /// Whether the request came from a trusted proxy, whose forwarded
    /// headers count.
    proxied: bool,
    authorization: Option<&'r str>,
    if_none_match: Option<&'r str>,
    /// The HTTP version the request came over.
    version: http::Version,
    /// Where an HTTP/1 request on a plain connection queues files to be
    /// sent as they are (`sendfile`).
    send_queue: Option<SendQueue>,
    /// The body of a form sent to a page (empty otherwise).
    form: bytes::Bytes,
    /// Who sent it, once access control has told: the caller of a token,
    /// or who asked for a signed link (for the audit trail and the links
    /// this answer hands out).
    who: std::sync::OnceLock<Arc<Who>>,
}

impl<'r> Asked<'r> {
    /// What `parts` asks, from `peer`.
    fn read(app: &App, peer: &'r Peer, parts: &'r http::request::Parts) -> Asked<'r> {
        // Names as constants: a name given as text is parsed at each lookup.
        let header = |name: &HeaderName| parts.headers.get(name).and_then(|h| h.to_str().ok());
        // Forwarded headers count only from a trusted proxy (and are looked
        // up only then).
        let proxied = app
            .mirror
            .config()
            .server
            .trusted_proxies
            .iter()
            .any(|net| net.contains(&peer.ip));
        let forwarded = |name: &HeaderName| if proxied { header(name) } else { None };
        let client = match forwarded(&X_FORWARDED_FOR).and_then(|v| v.split(',').next()) {
            Some(forwarded) => forwarded.trim(),
            None => peer.as_str(),
        };
        Asked {
            client,
            method: parts.method.clone(),
            path: parts.uri.path(),
            query: parts.uri.query(),
            parts,
            proxied,
            authorization: header(&header::AUTHORIZATION),
            if_none_match: header(&header::IF_NONE_MATCH),
            version: parts.version,
            send_queue: if parts.version <= http::Version::HTTP_11 {
                parts.extensions.get::<SendQueue>().cloned()
            } else {
                None
            },
            form: bytes::Bytes::new(),
            who: std::sync::OnceLock::new(),
        }
    }
}

impl<'r> Asked<'r> {
    /// A header's value, if it is text.
    fn header(&self, name: &HeaderName) -> Option<&'r str> {
        self.parts.headers.get(name).and_then(|h| h.to_str().ok())
    }

    /// A header a trusted proxy forwarded.
    fn forwarded(&self, name: &HeaderName) -> Option<&'r str> {
        self.proxied.then(|| self.header(name)).flatten()
    }

    /// The host the client asked for: `Host`, or `X-Forwarded-Host` from
    /// a trusted proxy.
    fn host(&self) -> Option<&'r str> {
        self.forwarded(&X_FORWARDED_HOST)
            .or_else(|| self.header(&header::HOST))
            .or_else(|| self.parts.uri.authority().map(http::uri::Authority::as_str))
    }

    /// The scheme the client used, as a trusted proxy forwarded it.
    fn scheme(&self) -> Option<&'r str> {
        self.forwarded(&X_FORWARDED_PROTO)
            .filter(|p| *p == "https" || *p == "http")
    }
}

/// A document held in memory, answered without waiting: `None` for any
/// other request, and for a document not held (or not to be answered:
/// [`answer`] then says why).
fn answer_now(app: &App, asked: &Asked<'_>) -> Option<(Endpoint, Response<Body>)> {
    if asked.method != Method::GET && asked.method != Method::HEAD {
        return None;
    }
    let route = routes::parse_kept(asked.path).ok()?;
    let doc = match &*route {
        // A refusal now is the answer (checked again, it would count twice).
        Route::Index(provider) => match authorize_now(app, route.access(), asked)? {
            Ok(()) => app.mirror.held_index_document(provider)?,
            Err(e) => return Some((route.endpoint(), error_response(&e, asked.path))),
        },
        // With access control on, archive links carry signatures made for
        // the caller: the held answer, signed for them once per window.
        Route::Version(provider, version) => {
            if app.auth.enabled() {
                if let Err(e) = authorize_now(app, route.access(), asked)? {
                    return Some((route.endpoint(), error_response(&e, asked.path)));
                }
            }
            let plain = app.mirror.held_version_document(provider, version)?;
            match version_for_caller(app, asked, provider, version, plain) {
                Ok(doc) => doc,
                Err(e) => return Some((route.endpoint(), error_response(&e, asked.path))),
            }
        }
        _ => return None,
    };
    let response = rendered_response(doc, asked.if_none_match, asked.version);
    Some((route.endpoint(), response))
}

async fn answer(
    app: &App,
    asked: &Asked<'_>,
) -> (
    Endpoint,
    Option<Served>,
    Result<Response<Body>, RequestError>,
) {
    let route = match routes::parse_kept(asked.path) {
        Ok(r) => r,
        Err(e) => return (Endpoint::Invalid, None, Err(e)),
    };
    let route = &*route;
    let endpoint = route.endpoint();
    if !route.takes(&asked.method) {
        return (endpoint, None, Err(RequestError::MethodNotAllowed));
    }
    // What goes on the audit trail when it is answered (not a HEAD).
    let served = match route {
        Route::Archive(key) if asked.method == Method::GET => Some(Served::Archive(key.clone())),
        Route::ModulePackage(m, v) if asked.method == Method::GET => {
            Some(Served::Package(m.clone(), v.clone()))
        }
        _ => None,
    };
    // Checked without waiting where it can be; an issuer's keys fetched
    // (rarely) in a box of its own, as every wait here is.
    let access = match authorize_now(app, route.access(), asked) {
        Some(done) => done,
        None => Box::pin(authorize(app, route.access(), asked)).await,
    };
    if let Err(e) = access {
        return (endpoint, served, Err(e));
    }
    if let Route::Oci(OciRoute::Blob(repo, digest)) = route {
        // Resolved first, so that the audit trail names what is served.
        let get = asked.method == Method::GET;
        return match Box::pin(oci::blob(&app.mirror, repo, digest)).await {
            Err(e) => (endpoint, None, Err(e)),
            Ok(oci::Blob::Ready(served, resp)) => (endpoint, served.filter(|_| get), Ok(resp)),
            Ok(oci::Blob::Archive(key)) => {
                let served = get.then(|| Served::Archive(key.clone()));
                let answer = Box::pin(archive_response(app, asked, &key))
                    .await
                    .map(|mut resp| {
                        oci::with_digest(&mut resp, digest);
                        resp
                    });
                (endpoint, served, answer)
            }
        };
    }
    (endpoint, served, respond(app, asked, route).await)
}

/// The answer to a route whose access was checked (documents held in
/// memory, nearly every request, are answered by [`answer_now`] before
/// this). Everything that waits is boxed, so that a request's future
/// stays small instead of carrying the state of the largest route.
async fn respond(
    app: &App,
    asked: &Asked<'_>,
    route: &Route,
) -> Result<Response<Body>, RequestError> {
    let mirror = &app.mirror;
    match route {
        Route::Page(page) => Ok(Box::pin(pages::answer(app, asked, page)).await),
        Route::Health => Ok(text_response(StatusCode::OK, "ok\n")),
        Route::Ready => Box::pin(mirror.ready())
            .await
            .map(|()| text_response(StatusCode::OK, "ready\n")),
        Route::Metrics => {
            let ready = Box::pin(mirror.ready()).await.is_ok();
            mirror
                .metrics()
                .set_readiness(ready, mirror.store_write_failing());
            mirror.metrics().set_space(
                mirror.free_space(),
                mirror.config().cache.min_free_space.as_u64(),
            );
            let mut resp = text_response(StatusCode::OK, &mirror.metrics().render());
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(
                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                ),
            );
            Ok(resp)
        }
        // Documents held in memory were answered already (`answer_now`).
        Route::Index(provider) => {
            let doc = Box::pin(mirror.index_document(provider)).await?;
            Ok(rendered_response(doc, asked.if_none_match, asked.version))
        }
        Route::Version(provider, version) => {
            let plain = Box::pin(mirror.version_document(provider, version)).await?;
            let doc = version_for_caller(app, asked, provider, version, plain)?;
            Ok(rendered_response(doc, asked.if_none_match, asked.version))
        }
        Route::Lock(provider, version) => {
            let platforms = lock_platforms(asked.query)?;
            let entry = Box::pin(crate::mirror::lockfile::entry(
                mirror, provider, version, None, &platforms,
            ))
            .await?;
            Ok(with_type(
                StatusCode::OK,
                crate::mirror::lockfile::render(&[entry]).into_bytes(),
                "text/plain; charset=utf-8",
            ))
        }
        Route::RegistryVersions(provider) => Ok(registry_json(
            Box::pin(mirror.registry_versions(provider)).await?,
        )),
        Route::RegistryPackage(key) => {
            let answer = Box::pin(mirror.registry_package(key)).await?;
            Ok(registry_json(package_for_caller(app, asked, key, &answer)))
        }
        Route::RegistrySums(provider, version, file) => {
            let bytes =
                Box::pin(mirror.registry_sums(provider, version, file.index, file.signature))
                    .await?;
            let kind = if file.signature {
                "application/octet-stream"
            } else {
                "text/plain; charset=utf-8"
            };
            Ok(with_type(StatusCode::OK, bytes, kind))
        }
        Route::ModuleVersions(module) => Ok(registry_json(
            Box::pin(mirror.module_versions(module)).await?,
        )),
        Route::ModuleDownload(module, version) => {
            let subdir = Box::pin(mirror.module_download(module, version)).await?;
            let query = if app.auth.enabled() {
                let by = app.auth.link_name(asked.who());
                app.auth.sign_module(module, version, by.as_deref())
            } else {
                String::new()
            };
            let location = module_location(subdir.as_deref(), &query);
            let mut resp = registry_json(
                serde_json::to_vec(&serde_json::json!({ "location": location }))
                    .expect("documents always serialize"),
            );
            let value = HeaderValue::from_str(&location).map_err(|_| {
                RequestError::Internal(format!("location {location:?} is not a header value"))
            })?;
            resp.headers_mut().insert("x-terraform-get", value);
            Ok(resp)
        }
        Route::ModulePackage(module, version) => {
            let package = Box::pin(mirror.module_package(module, version)).await?;
            let size = package.size;
            let mut resp = Response::new(body::stream(tokio_util::io::ReaderStream::new(
                package.into_reader(),
            )));
            let h = resp.headers_mut();
            h.insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/gzip"),
            );
            h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
            Ok(resp)
        }
        Route::Release(release) => {
            let (scheme, authority) = pages::public_address(app, asked);
            let base = format!("{scheme}://{authority}");
            Box::pin(super::releases::respond(mirror, &base, release.clone())).await
        }
        Route::Archive(key) => Box::pin(archive_response(app, asked, key)).await,
        Route::Oci(OciRoute::Manifest(OciRepo::Provider(provider), reference)) => Ok(
            oci::manifest_response(&Box::pin(mirror.oci_manifest(provider, reference)).await?),
        ),
        Route::Oci(OciRoute::Manifest(OciRepo::Module(module), reference)) => {
            Box::pin(oci::module_manifest(mirror, module, reference)).await
        }
        Route::Oci(other) => Box::pin(oci::respond(mirror, other, asked.query)).await,
    }
}

/// An archive: a redirect to the bucket, or its bytes.
async fn archive_response(
    app: &App,
    asked: &Asked<'_>,
    key: &ArchiveKey,
) -> Result<Response<Body>, RequestError> {
    let mirror = &app.mirror;
    if let Some(url) = mirror.archive_redirect(key).await? {
        let mut resp = Response::new(body::empty());
        *resp.status_mut() = StatusCode::TEMPORARY_REDIRECT;
        let location = HeaderValue::from_str(url.as_str())
            .map_err(|e| RequestError::Internal(format!("an unusable presigned URL: {e}")))?;
        resp.headers_mut().insert(header::LOCATION, location);
        return Ok(resp);
    }
    let archive = mirror.archive_body(key).await?;
    let size = archive.size;
    let stream = match &asked.send_queue {
        Some(queue) if asked.method == Method::GET => match archive.into_file_or_stream() {
            FileOrStream::File(stored) => queue.body(stored.file, size, stored.sent),
            FileOrStream::Stream(stream) => stream,
        },
        _ => archive.into_stream(),
    };
    let mut resp = Response::new(body::stream(stream));
    let h = resp.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/zip"),
    );
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(size));
    Ok(resp)
}
