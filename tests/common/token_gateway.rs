//! A registry with a token service in front, as Harbor, GHCR and Docker
//! Hub answer: every request without the gateway's bearer token gets
//! `401` with `WWW-Authenticate: Bearer realm="…/token",service=…,scope=…`;
//! the token service hands out a token for Basic credentials only, and
//! only for a `repository:…:pull,push` scope; requests with the token are
//! forwarded to the real registry behind (Debian's `docker-registry`)
//! with its Basic credentials, and the upload locations it answers are
//! rewritten to the gateway.

use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};

use super::oci::DockerRegistry;
use super::TestCa;

const TOKEN: &str = "gateway-token-0123456789";

/// The gateway: its `host:port`, and how many tokens it gave out.
pub struct TokenGateway {
    pub host: String,
    pub tokens: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenGateway {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct Behind {
    me: String,
    registry: String,
    basic: String,
    http: reqwest::Client,
    tokens: Arc<AtomicUsize>,
}

impl TokenGateway {
    pub async fn start(ca: &TestCa, registry: &DockerRegistry) -> TokenGateway {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let tls = super::tls_client_config(&registry.ca_file());
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let tokens = Arc::new(AtomicUsize::new(0));
        let behind = Arc::new(Behind {
            me: host.clone(),
            registry: registry.host.clone(),
            basic: DockerRegistry::basic(),
            http,
            tokens: tokens.clone(),
        });
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let task = tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let (acceptor, behind) = (acceptor.clone(), behind.clone());
                tokio::spawn(async move {
                    let Ok(tls) = acceptor.accept(stream).await else {
                        return;
                    };
                    let svc = service_fn(move |req| {
                        let behind = behind.clone();
                        async move { Ok::<_, Infallible>(behind.answer(req).await) }
                    });
                    let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(tls), svc)
                        .await;
                });
            }
        });
        TokenGateway { host, tokens, task }
    }
}

impl Behind {
    async fn answer(&self, req: Request<hyper::body::Incoming>) -> Response<Full<Bytes>> {
        let auth = req
            .headers()
            .get(http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let path = req.uri().path().to_owned();
        if path == "/token" {
            let query = req.uri().query().unwrap_or("").to_owned();
            let scoped = query.contains("scope=repository%3A") && query.contains("pull%2Cpush");
            if auth != self.basic || !scoped || !query.contains("service=gateway") {
                return reply(StatusCode::UNAUTHORIZED, "{\"errors\":[]}");
            }
            self.tokens.fetch_add(1, Ordering::SeqCst);
            // Docker Hub's shape: both names, with a lifetime and a time.
            return reply(
                StatusCode::OK,
                &format!("{{\"token\":\"{TOKEN}\",\"access_token\":\"{TOKEN}\",\"expires_in\":300,\"issued_at\":\"2026-11-25T00:00:00Z\"}}"),
            );
        }
        if auth != format!("Bearer {TOKEN}") {
            let mut resp = reply(
                StatusCode::UNAUTHORIZED,
                "{\"errors\":[{\"code\":\"UNAUTHORIZED\"}]}",
            );
            let challenge = format!(
                "Bearer realm=\"https://{}/token\",service=\"gateway\",scope=\"repository:x:pull\"",
                self.me
            );
            resp.headers_mut()
                .insert(http::header::WWW_AUTHENTICATE, challenge.parse().unwrap());
            return resp;
        }
        let (parts, body) = req.into_parts();
        let body = body.collect().await.unwrap().to_bytes();
        let target = format!(
            "https://{}{}",
            self.registry,
            parts.uri.path_and_query().map_or("/", |p| p.as_str())
        );
        let mut forward = self.http.request(parts.method, target).body(body);
        for (name, value) in &parts.headers {
            if name != http::header::AUTHORIZATION && name != http::header::HOST {
                forward = forward.header(name, value);
            }
        }
        let answer = forward
            .header("authorization", &self.basic)
            .send()
            .await
            .unwrap();
        let mut resp = Response::builder().status(answer.status());
        for (name, value) in answer.headers() {
            let value = value
                .to_str()
                .unwrap_or("")
                .replace(&self.registry, &self.me);
            resp = resp.header(name, value);
        }
        resp.body(Full::new(answer.bytes().await.unwrap())).unwrap()
    }
}

fn reply(status: StatusCode, body: &str) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_owned())))
        .unwrap()
}
