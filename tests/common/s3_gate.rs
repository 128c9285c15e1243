//! A gate in front of SeaweedFS's S3 gateway: it passes every request on
//! unchanged (the `Host` header too, which the request's signature covers)
//! and refuses the first listings of the bucket's provider archives with
//! `403 AccessDenied`, as a bucket whose policy forbids listing answers.
//! Tests use it for a store that fails while the daemon runs.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;

/// The gate: where it listens, and what it saw.
pub struct S3Gate {
    addr: SocketAddr,
    listings: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

/// What the gate answers a listing it refuses.
const ACCESS_DENIED: &str = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>";

impl S3Gate {
    /// Starts the gate in front of the S3 gateway at `s3`, refusing the
    /// first `refused` listings below `prefix` (such as
    /// `mirror/providers`).
    pub async fn start(s3: SocketAddr, prefix: &str, refused: usize) -> S3Gate {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let listings = Arc::new(AtomicUsize::new(0));
        let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
        let wanted = format!("prefix={}", prefix.replace('/', "%2F"));
        let seen = listings.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    continue;
                };
                let (client, seen, wanted) = (client.clone(), seen.clone(), wanted.clone());
                tokio::spawn(async move {
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        let (client, seen, wanted) = (client.clone(), seen.clone(), wanted.clone());
                        async move {
                            let query = req.uri().query().unwrap_or("");
                            let listing = query.contains("list-type=2") && query.contains(&wanted);
                            if listing && seen.fetch_add(1, Ordering::SeqCst) < refused {
                                let refusal = hyper::Response::builder()
                                    .status(403)
                                    .header("content-type", "application/xml")
                                    .body(Full::new(Bytes::from_static(ACCESS_DENIED.as_bytes())))
                                    .unwrap();
                                return Ok::<_, Infallible>(refusal);
                            }
                            Ok(pass_on(&client, s3, req).await)
                        }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        S3Gate {
            addr,
            listings,
            task,
        }
    }

    /// The endpoint tfmirror is given instead of the gateway's.
    pub fn endpoint(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// How many listings of the prefix arrived, refused or passed on.
    pub fn listings(&self) -> usize {
        self.listings.load(Ordering::SeqCst)
    }
}

impl Drop for S3Gate {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Sends `req` to the gateway as it came, and its answer back.
async fn pass_on(
    client: &Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>>,
    s3: SocketAddr,
    req: hyper::Request<hyper::body::Incoming>,
) -> hyper::Response<Full<Bytes>> {
    let (mut parts, body) = req.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    // Sent whole, with its length.
    parts.headers.remove(http::header::TRANSFER_ENCODING);
    let path = parts.uri.path_and_query().map_or("/", |p| p.as_str());
    parts.uri = format!("http://{s3}{path}").parse().unwrap();
    let answer = client
        .request(hyper::Request::from_parts(parts, Full::new(body)))
        .await
        .unwrap();
    let (mut parts, body) = answer.into_parts();
    let body = body.collect().await.unwrap().to_bytes();
    parts.headers.remove(http::header::TRANSFER_ENCODING);
    hyper::Response::from_parts(parts, Full::new(body))
}
