//! The HTTPS client tfmirror uses towards origin registries and download
//! hosts: rustls with the system's roots, the built-in Mozilla roots and any
//! extra roots from `upstream.ca_file`; redirects followed (at most five);
//! metadata bodies read with a size cap; archive bodies handed back as a
//! stream. Connections go through the request forgery guard
//! ([`super::guard`]), and the number of requests in flight is bounded in
//! all and per host.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use http::{header, Request, StatusCode};
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use tokio::sync::Semaphore;
use url::Url;

pub use super::error::UpstreamError;
use super::guard::{refusal_in, GuardedConnector};
use super::limits::Limits;
pub use super::limits::{Fetched, Slots};
use super::wire;

use crate::config::UpstreamConfig;
use crate::metrics::{Metrics, UpstreamOutcome};

/// How many redirects a request may follow.
const MAX_REDIRECTS: usize = 5;
/// How many times a request answered `429` or `503` is sent again.
const MAX_RETRIES: usize = 2;
/// The longest `Retry-After` waited for; an origin that asks for longer is
/// taken to be down (and the cached copy served) instead.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(10);
/// The wait before sending again when a `429` or `503` names none.
const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(1);
/// The largest metadata (JSON, SHA256SUMS, signature) body accepted.
pub const MAX_METADATA_BYTES: usize = 8 * 1024 * 1024;

/// The shared upstream HTTPS client.
#[derive(Clone)]
pub struct Client {
    inner: HyperClient<HttpsConnector<GuardedConnector>, Empty<Bytes>>,
    /// A client for requests with a body (an OpenID provider's token
    /// endpoint): its own pool, on the same connector, so the same guard.
    pub(super) posts: HyperClient<HttpsConnector<GuardedConnector>, Full<Bytes>>,
    pub(super) limits: Arc<Limits>,
    pub(super) request_timeout: Duration,
    pub(super) metrics: Arc<Metrics>,
    /// `host:port` authorities that may be reached over plain http.
    plain_http: Arc<Vec<String>>,
}

impl Client {
    /// Builds the client from the `[upstream]` settings.
    pub fn new(config: &UpstreamConfig, metrics: Arc<Metrics>) -> anyhow::Result<Client> {
        let tls = tls_config(config.ca_file.as_deref(), "upstream.ca_file")
            .context("configuring upstream TLS")?;
        let http = GuardedConnector::new(config);
        let https = HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .enable_http2()
            .wrap_connector(http);
        let inner = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(https.clone());
        let posts = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(60))
            .build(https);
        let plain_http = config
            .hosts
            .iter()
            .filter(|(_, hc)| hc.insecure_http)
            .flat_map(|(host, hc)| {
                // The registry host itself, and the hosts its configured
                // service URLs name.
                let mut names = vec![authority_of_host(host.as_str())];
                names.extend(hc.services.values().filter_map(authority));
                names
            })
            .collect();
        Ok(Client {
            inner,
            posts,
            limits: Arc::new(Limits {
                total: Arc::new(Semaphore::new(config.max_fetches)),
                total_max: config.max_fetches,
                per_host: Mutex::default(),
                per_host_max: config.max_fetches_per_host,
            }),
            request_timeout: config.request_timeout,
            metrics,
            plain_http: Arc::new(plain_http),
        })
    }

    /// Whether `url`'s host may be reached over plain http (its registry
    /// entry sets `insecure_http`).
    pub fn allows_plain_http(&self, url: &Url) -> bool {
        authority(url).is_some_and(|a| self.plain_http.contains(&a))
    }

    /// The configured request timeout.
    pub fn request_timeout(&self) -> Duration {
        self.request_timeout
    }

    /// Sends a GET, following redirects, and returns the final response
    /// (status 200, or 204 with no body) and the URL that produced it. Any other final status is
    /// an error. The timeout covers the wait for the response headers.
    /// `bearer` is sent as `Authorization: Bearer` to `url`'s host only: a
    /// redirect to another host goes without it. The response body holds
    /// the request's slots under `upstream.max_fetches` and
    /// `upstream.max_fetches_per_host` until it is dropped.
    ///
    /// An answer `429 Too Many Requests` or `503 Service Unavailable` is
    /// asked again, at most `MAX_RETRIES` (2) times, after its `Retry-After`
    /// (seconds or a date; one second when it names none), unless that is
    /// longer than `MAX_RETRY_WAIT` (10 s) or would take the waits past half the
    /// request timeout; the last answer is then the error (an outage, so
    /// cached content is served in its place).
    pub async fn get(
        &self,
        url: &Url,
        bearer: Option<&str>,
    ) -> Result<(http::Response<Fetched>, Url), UpstreamError> {
        self.fetch(url, bearer, false).await
    }

    /// [`Client::get`]; `metadata` asks for a gzip-compressed answer, which
    /// [`Client::get_small`] decompresses (archives are fetched as they are).
    async fn fetch(
        &self,
        url: &Url,
        bearer: Option<&str>,
        metadata: bool,
    ) -> Result<(http::Response<Fetched>, Url), UpstreamError> {
        let mut current = url.clone();
        let total = self.limits.acquire_total(url, self.request_timeout).await?;
        let began = Instant::now();
        let mut retries = 0;
        let mut hops = 0;
        while hops <= MAX_REDIRECTS {
            let allowed = match current.scheme() {
                "https" => true,
                "http" => self.allows_plain_http(&current),
                _ => false,
            };
            if !allowed {
                return Err(UpstreamError::invalid(
                    &current,
                    "only https URLs are fetched (plain http only for hosts whose upstream.hosts entry sets insecure_http = true)",
                ));
            }
            let mut req = Request::get(current.as_str()).header(
                header::USER_AGENT,
                concat!("tfmirror/", env!("CARGO_PKG_VERSION")),
            );
            if metadata {
                req = req.header(header::ACCEPT_ENCODING, "gzip");
            }
            if let Some(token) = bearer {
                if same_origin(&current, url) {
                    req = req.header(header::AUTHORIZATION, format!("Bearer {token}"));
                }
            }
            let req = req
                .body(Empty::new())
                .map_err(|e| UpstreamError::invalid(&current, e))?;
            let host = current.host_str().unwrap_or("").to_owned();
            let per_host = self
                .limits
                .acquire_host(&current, &host, self.request_timeout)
                .await?;
            let started = Instant::now();
            let sent = tokio::time::timeout(self.request_timeout, self.inner.request(req)).await;
            let outcome = match &sent {
                Err(_) => UpstreamOutcome::Timeout,
                Ok(Err(_)) => UpstreamOutcome::Unreachable,
                Ok(Ok(r)) if r.status().is_success() || r.status().is_redirection() => {
                    UpstreamOutcome::Ok
                }
                Ok(Ok(r)) if r.status() == StatusCode::NOT_FOUND => UpstreamOutcome::NotFound,
                Ok(Ok(_)) => UpstreamOutcome::Error,
            };
            self.metrics.upstream(&host, outcome, started.elapsed());
            let resp = sent
                .map_err(|_| UpstreamError::Timeout {
                    url: current.to_string(),
                    secs: self.request_timeout.as_secs(),
                })?
                .map_err(|e| not_answered(&current, &e))?;
            let status = resp.status();
            if status == StatusCode::TOO_MANY_REQUESTS || status == StatusCode::SERVICE_UNAVAILABLE
            {
                let wait = retry_after(resp.headers());
                // Waiting may take at most half the request timeout in all,
                // so that the answer after it still fits in the timeout.
                let fits = began.elapsed() + wait <= self.request_timeout / 2;
                if retries < MAX_RETRIES && wait <= MAX_RETRY_WAIT && fits {
                    retries += 1;
                    tracing::info!(url = %current, %status, wait_ms = wait.as_millis(), "origin asked to try again later; waiting");
                    drop((resp, per_host));
                    // The wait the origin asked for (bounded above): a
                    // fixed wait is its request, not a guess at a state.
                    tokio::time::sleep(wait).await;
                    continue;
                }
            }
            if status.is_redirection() && status != StatusCode::NOT_MODIFIED {
                hops += 1;
                let location = resp
                    .headers()
                    .get(header::LOCATION)
                    .and_then(|v| v.to_str().ok())
                    .ok_or_else(|| UpstreamError::invalid(&current, "redirect without Location"))?;
                current = current
                    .join(location)
                    .map_err(|e| UpstreamError::invalid(&current, format!("bad redirect: {e}")))?;
                continue;
            }
            return match status {
                // 204: a module registry's download answer without a body.
                StatusCode::OK | StatusCode::NO_CONTENT => Ok((
                    resp.map(|body| Fetched {
                        body,
                        _slots: (total, per_host),
                    }),
                    current,
                )),
                StatusCode::NOT_FOUND => Err(UpstreamError::NotFound {
                    url: current.to_string(),
                }),
                status => Err(UpstreamError::Status {
                    url: current.to_string(),
                    status,
                }),
            };
        }
        Err(UpstreamError::invalid(
            url,
            format!("more than {MAX_REDIRECTS} redirects"),
        ))
    }

    /// Takes a slot under `upstream.max_fetches` and
    /// `upstream.max_fetches_per_host` for a fetch of `url` made outside
    /// this client (git); held until the returned value is dropped.
    pub async fn slots(&self, url: &Url) -> Result<Slots, UpstreamError> {
        let total = self.limits.acquire_total(url, self.request_timeout).await?;
        let host = url.host_str().unwrap_or("").to_owned();
        let per_host = self
            .limits
            .acquire_host(url, &host, self.request_timeout)
            .await?;
        Ok(Slots {
            _held: (total, per_host),
        })
    }

    /// GETs a small document whole (at most [`MAX_METADATA_BYTES`]), within
    /// the request timeout. Returns the bytes and the final URL.
    pub async fn get_bytes(
        &self,
        url: &Url,
        bearer: Option<&str>,
    ) -> Result<(Bytes, Url), UpstreamError> {
        self.get_small(url, bearer)
            .await
            .map(|(_, body, final_url)| (body, final_url))
    }

    /// Like [`Client::get_bytes`], with the answer's headers. A body sent
    /// with `Content-Encoding: gzip` is handed back decompressed (within
    /// the same size cap), as the clients' HTTP library does.
    pub async fn get_small(
        &self,
        url: &Url,
        bearer: Option<&str>,
    ) -> Result<(http::HeaderMap, Bytes, Url), UpstreamError> {
        let fetch = async {
            let (resp, final_url) = self.fetch(url, bearer, true).await?;
            let (mut parts, body) = resp.into_parts();
            let body = Limited::new(body, MAX_METADATA_BYTES)
                .collect()
                .await
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        UpstreamError::invalid(
                            &final_url,
                            format!("body larger than {MAX_METADATA_BYTES} bytes"),
                        )
                    } else {
                        UpstreamError::Unreachable {
                            url: final_url.to_string(),
                            reason: format!("reading the body failed: {}", error_chain(&*e)),
                        }
                    }
                })?
                .to_bytes();
            let gzipped = parts
                .headers
                .get(header::CONTENT_ENCODING)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.trim().eq_ignore_ascii_case("gzip"));
            let body = if gzipped {
                parts.headers.remove(header::CONTENT_ENCODING);
                gunzip(&body).map_err(|reason| UpstreamError::invalid(&final_url, reason))?
            } else {
                body
            };
            Ok((parts.headers, body, final_url))
        };
        tokio::time::timeout(self.request_timeout, fetch)
            .await
            .map_err(|_| UpstreamError::Timeout {
                url: url.to_string(),
                secs: self.request_timeout.as_secs(),
            })?
    }

    /// GETs a JSON document and returns its first value as the clients
    /// read it ([`wire::first_value`]), with the answer's headers and the
    /// URL that produced it. An answer that is not JSON (an HTML error page
    /// sent with status 200, say) is refused with its content type and its
    /// first bytes.
    pub async fn get_document(
        &self,
        url: &Url,
        bearer: Option<&str>,
    ) -> Result<(serde_json::Value, http::HeaderMap, Url), UpstreamError> {
        let (headers, body, final_url) = self.get_small(url, bearer).await?;
        let value = wire::first_value(&body)
            .map_err(|e| UpstreamError::invalid(&final_url, not_json(&headers, &body, &e)))?;
        Ok((value, headers, final_url))
    }
}

/// Why a request got no answer: the request forgery guard refused its
/// connection, or the connection failed.
pub(super) fn not_answered(url: &Url, e: &hyper_util::client::legacy::Error) -> UpstreamError {
    match refusal_in(e) {
        Some(refused) => UpstreamError::Refused {
            url: url.to_string(),
            reason: refused.to_string(),
        },
        None => UpstreamError::Unreachable {
            url: url.to_string(),
            reason: error_chain(e),
        },
    }
}

/// Why a body that should be JSON is unusable: the parser's message, the
/// content type and the body's beginning.
pub(crate) fn not_json(headers: &http::HeaderMap, body: &[u8], parser: &str) -> String {
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("none");
    let start: String = String::from_utf8_lossy(&body[..body.len().min(60)])
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    format!("not JSON ({parser}; Content-Type {content_type}; the body begins {start:?})")
}

/// Decompresses a gzip body, at most [`MAX_METADATA_BYTES`] of it.
fn gunzip(body: &[u8]) -> Result<Bytes, String> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::MultiGzDecoder::new(body)
        .take(MAX_METADATA_BYTES as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| format!("the gzip-compressed body could not be read: {e}"))?;
    if out.len() > MAX_METADATA_BYTES {
        return Err(format!(
            "body larger than {MAX_METADATA_BYTES} bytes once decompressed"
        ));
    }
    Ok(out.into())
}

/// How long an answer's `Retry-After` asks to wait: seconds, or an HTTP
/// date; [`DEFAULT_RETRY_WAIT`] when it has none or it cannot be read.
fn retry_after(headers: &http::HeaderMap) -> Duration {
    let Some(value) = headers
        .get(header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
    else {
        return DEFAULT_RETRY_WAIT;
    };
    if let Ok(secs) = value.parse::<u64>() {
        return Duration::from_secs(secs);
    }
    match httpdate::parse_http_date(value) {
        Ok(at) => at
            .duration_since(std::time::SystemTime::now())
            .unwrap_or(Duration::ZERO),
        Err(_) => DEFAULT_RETRY_WAIT,
    }
}

/// A URL's `host:port`, with the scheme's default port filled in.
fn authority(url: &Url) -> Option<String> {
    Some(format!(
        "{}:{}",
        url.host_str()?,
        url.port_or_known_default()?
    ))
}

/// A registry hostname's `host:port` for plain http (port 80 by default).
fn authority_of_host(host: &str) -> String {
    if host
        .rsplit_once(':')
        .is_some_and(|(_, p)| p.bytes().all(|b| b.is_ascii_digit()))
    {
        host.to_owned()
    } else {
        format!("{host}:80")
    }
}

/// Whether two URLs have the same scheme, host and port.
fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str() == b.host_str()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// A TLS client configuration trusting the built-in and system roots
/// and those of `ca_file` (named `what` in errors), with the safe
/// protocol versions.
pub fn tls_config(ca_file: Option<&Path>, what: &str) -> anyhow::Result<rustls::ClientConfig> {
    let roots = root_store(ca_file, what)?;
    Ok(
        rustls::ClientConfig::builder_with_provider(
            rustls::crypto::ring::default_provider().into(),
        )
        .with_safe_default_protocol_versions()
        .context("TLS versions")?
        .with_root_certificates(roots)
        .with_no_client_auth(),
    )
}

/// The roots trusted for outgoing TLS: the built-in Mozilla roots, the
/// system's, and those of `ca_file` (the setting named `setting`).
pub fn root_store(ca_file: Option<&Path>, setting: &str) -> anyhow::Result<rustls::RootCertStore> {
    let mut roots = rustls::RootCertStore::empty();
    roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
    let native = rustls_native_certs::load_native_certs();
    for cert in native.certs {
        // A system store can hold certificates rustls cannot use; skip them.
        let _ = roots.add(cert);
    }
    if let Some(path) = ca_file {
        use rustls_pki_types::pem::PemObject;
        let mut added = 0;
        for cert in rustls_pki_types::CertificateDer::pem_file_iter(path)
            .with_context(|| format!("reading {setting} {}", path.display()))?
        {
            let cert = cert.with_context(|| format!("parsing {setting} {}", path.display()))?;
            roots
                .add(cert)
                .with_context(|| format!("using a certificate of {setting} {}", path.display()))?;
            added += 1;
        }
        if added == 0 {
            anyhow::bail!("{setting} {} holds no certificate", path.display());
        }
    }
    Ok(roots)
}

/// An error and its sources on one line.
pub fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(inner) = source {
        let text = inner.to_string();
        if !s.contains(&text) {
            s.push_str(": ");
            s.push_str(&text);
        }
        source = inner.source();
    }
    s
}
