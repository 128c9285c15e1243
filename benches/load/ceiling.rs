//! The load benchmark's ceiling: the smallest server on tfmirror's own
//! stack (hyper 1 with hyper-util's auto builder, tokio, rustls with the
//! *ring* provider, the same TLS settings and ALPN as tfmirror, HTTP/2
//! streams run by tfmirror's executor) answering
//! the same JSON documents from memory, with nothing else: no routing
//! beyond a map lookup, no cache, no metrics, no log line. What it reaches
//! is what the stack can do on this machine; tfmirror's figures are read
//! against it in BENCHMARKS.md.
//!
//! Usage: `bench-ceiling PORT CERT_PEM KEY_PEM STATIC_DIR`
//! (serves every `.json` file below `STATIC_DIR` at its path; prints
//! `ready` once listening).

use std::collections::HashMap;
use std::convert::Infallible;
use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use http::{header, Response, StatusCode};
use http_body_util::Full;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use rustls_pki_types::pem::PemObject;
use tfmirror::http::streams::Streams;

fn documents(root: &Path, dir: &Path, out: &mut HashMap<String, Bytes>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            documents(root, &path, out);
        } else if path.extension().is_some_and(|e| e == "json") {
            let key = format!("/{}", path.strip_prefix(root).unwrap().display());
            out.insert(key, Bytes::from(std::fs::read(&path).unwrap()));
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let [_, port, cert, key, root] = &args[..] else {
        panic!("usage: bench-ceiling PORT CERT_PEM KEY_PEM STATIC_DIR");
    };
    let mut docs = HashMap::new();
    documents(Path::new(root), Path::new(root), &mut docs);
    let docs = Arc::new(docs);
    let certs = rustls_pki_types::CertificateDer::pem_file_iter(cert)
        .unwrap()
        .collect::<Result<Vec<_>, _>>()
        .unwrap();
    let key = rustls_pki_types::PrivateKeyDer::from_pem_file(key).unwrap();
    let mut tls = rustls::ServerConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(certs, key)
    .unwrap();
    tls.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
    // The same runtime as tfmirror's: multi-threaded, one worker per core.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", port.parse::<u16>().unwrap()))
            .await
            .unwrap();
        println!("ready");
        // HTTP/2 streams run as tfmirror runs them (`tfmirror::http::streams`).
        let builder = Arc::new(auto::Builder::new(Streams));
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                continue;
            };
            let _ = stream.set_nodelay(true);
            let (acceptor, docs, builder) = (acceptor.clone(), docs.clone(), builder.clone());
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(stream).await else {
                    return;
                };
                let svc = service_fn(move |req: http::Request<hyper::body::Incoming>| {
                    let found = docs.get(req.uri().path()).cloned();
                    async move {
                        let resp = match found {
                            Some(body) => Response::builder()
                                .header(header::CONTENT_TYPE, "application/json")
                                .body(Full::new(body)),
                            None => Response::builder()
                                .status(StatusCode::NOT_FOUND)
                                .body(Full::new(Bytes::new())),
                        };
                        Ok::<_, Infallible>(resp.unwrap())
                    }
                });
                let _ = builder.serve_connection(TokioIo::new(tls), svc).await;
            });
        }
    });
}
