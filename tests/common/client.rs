//! A small HTTPS client that trusts one authority, and raw TLS
//! connections for tests of the wire.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper_util::rt::TokioExecutor;

use super::{tls_client_config, wait_until, RunningMirror};

/// A minimal HTTPS client that trusts one authority.
pub struct Client {
    inner: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        http_body_util::Full<Bytes>,
    >,
}

/// A whole answer.
pub struct Answer {
    pub status: StatusCode,
    pub headers: http::HeaderMap,
    pub body: Bytes,
}

impl Answer {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// A page's HTML with the characters its templates escape in text
    /// (`&`, `<`, `>`, `"`, `'`) read back, to compare with what a person
    /// reads.
    pub fn page_text(&self) -> String {
        String::from_utf8(self.body.to_vec())
            .expect("a page is UTF-8")
            .replace("&#34;", "\"")
            .replace("&quot;", "\"")
            .replace("&#39;", "'")
            .replace("&lt;", "<")
            .replace("&gt;", ">")
            .replace("&amp;", "&")
    }

    pub fn error_text(&self) -> String {
        self.json()["errors"].to_string()
    }
}

impl Client {
    /// Waits (up to 30 s) for a daemon to have written `ca_file`, then trusts it.
    pub async fn trusting_when_ready(ca_file: &Path) -> Client {
        wait_until(
            "the daemon to write its CA",
            Duration::from_secs(30),
            || std::fs::metadata(ca_file).is_ok_and(|m| m.len() > 0),
        )
        .await;
        Client::trusting(ca_file)
    }

    pub fn trusting(ca_file: &Path) -> Client {
        let tls = tls_client_config(ca_file);
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_only()
            .enable_http1()
            .enable_http2()
            .build();
        Client {
            inner: hyper_util::client::legacy::Client::builder(TokioExecutor::new()).build(https),
        }
    }

    /// A client for plain `http://` URLs too (a local Prometheus), trusting
    /// `ca_file` for `https://` ones.
    pub fn allowing_http(ca_file: &Path) -> Client {
        let tls = tls_client_config(ca_file);
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_tls_config(tls)
            .https_or_http()
            .enable_http1()
            .build();
        Client {
            inner: hyper_util::client::legacy::Client::builder(TokioExecutor::new())
                .build(connector),
        }
    }

    pub async fn request(&self, method: http::Method, url: &str) -> Answer {
        self.request_with(method, url, None).await
    }

    /// A request with an `Authorization` header when `authorization` is given.
    pub async fn request_with(
        &self,
        method: http::Method,
        url: &str,
        authorization: Option<&str>,
    ) -> Answer {
        let auth = authorization.map(|a| ("authorization", a));
        self.request_headers(method, url, auth.as_slice()).await
    }

    /// A request with these headers.
    pub async fn request_headers(
        &self,
        method: http::Method,
        url: &str,
        headers: &[(&str, &str)],
    ) -> Answer {
        let mut req = Request::builder().method(method).uri(url);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req.body(http_body_util::Full::default()).unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(60), self.inner.request(req))
            .await
            .expect("mirror answered in time")
            .expect("request went through");
        let (parts, body) = resp.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    /// Sends a GET and returns as soon as the headers are in, leaving the
    /// body unread.
    pub async fn start_get(&self, url: &str) -> Response<hyper::body::Incoming> {
        let req = Request::get(url)
            .body(http_body_util::Full::default())
            .unwrap();
        self.inner.request(req).await.unwrap()
    }

    /// A GET with one extra header.
    pub async fn get_with_header(&self, url: &str, name: &str, value: &str) -> Answer {
        let req = Request::get(url)
            .header(name, value)
            .body(http_body_util::Full::default())
            .unwrap();
        let resp = self.inner.request(req).await.expect("request went through");
        let (parts, body) = resp.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }

    /// A GET that may fail (the mirror may be killed under it).
    pub async fn try_get(&self, url: &str) -> Option<Answer> {
        let req = Request::get(url)
            .body(http_body_util::Full::default())
            .unwrap();
        let resp = self.inner.request(req).await.ok()?;
        let (parts, body) = resp.into_parts();
        Some(Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.ok()?.to_bytes(),
        })
    }

    pub async fn get(&self, url: &str) -> Answer {
        self.request(http::Method::GET, url).await
    }

    /// A POST of `body` with these headers.
    pub async fn post(&self, url: &str, headers: &[(&str, &str)], body: Vec<u8>) -> Answer {
        let mut req = Request::post(url);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        let req = req
            .body(http_body_util::Full::new(Bytes::from(body)))
            .unwrap();
        let resp = tokio::time::timeout(Duration::from_secs(60), self.inner.request(req))
            .await
            .expect("mirror answered in time")
            .expect("request went through");
        let (parts, body) = resp.into_parts();
        Answer {
            status: parts.status,
            headers: parts.headers,
            body: body.collect().await.unwrap().to_bytes(),
        }
    }
}

/// A raw HTTP/1.1-over-TLS connection to a running mirror.
pub async fn raw_tls(m: &RunningMirror) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
    let mut config = tls_client_config(&m.ca_file);
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(m.addr).await.unwrap();
    tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect("localhost".try_into().unwrap(), tcp)
        .await
        .unwrap()
}

/// `reference` resolved against `base`, as Terraform and OpenTofu resolve
/// the links of the answers they read.
pub fn resolve(base: &str, reference: &str) -> String {
    url::Url::parse(base)
        .unwrap()
        .join(reference)
        .unwrap()
        .to_string()
}
