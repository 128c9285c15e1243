//! Test support: a fake origin registry served over real TLS with a
//! certificate authority made at test time, OpenPGP keys and signatures made
//! at test time, provider archives built at test time, a running tfmirror,
//! and a small HTTPS client.
#![allow(dead_code)]

pub mod daemon;

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use pgp::composed::{DetachedSignature, KeyType, SecretKeyParamsBuilder, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::Password;
use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};
use sha2::{Digest, Sha256};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use tfmirror::config::{Config, HostConfig};
use tfmirror::daemon::{Daemon, Signal};
use tfmirror::http::App;
use tfmirror::mirror::Mirror;

/// A certificate authority made for one test, and a server certificate for
/// `localhost` and `127.0.0.1` issued by it.
pub struct TestCa {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let leaf = CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        TestCa {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        use rustls_pki_types::pem::PemObject;
        let certs = rustls_pki_types::CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).unwrap();
        let mut cfg = rustls::ServerConfig::builder_with_provider(
            rustls::crypto::ring::default_provider().into(),
        )
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(cfg)
    }
}

/// An OpenPGP signing key made at test time.
pub struct Signer {
    key: SignedSecretKey,
}

impl Signer {
    /// An Ed25519 key (quick to make).
    pub fn new(name: &str) -> Signer {
        Self::of_type(name, KeyType::Ed25519Legacy)
    }

    /// An RSA 2048 key, which Terraform v1.0.3 itself can check signatures
    /// of (its OpenPGP library predates EdDSA keys).
    pub fn rsa(name: &str) -> Signer {
        Self::of_type(name, KeyType::Rsa(2048))
    }

    fn of_type(name: &str, key_type: KeyType) -> Signer {
        let params = SecretKeyParamsBuilder::default()
            .key_type(key_type)
            .can_certify(true)
            .can_sign(true)
            .primary_user_id(format!("{name} <{name}@origin.test>"))
            .build()
            .unwrap();
        let key = params.generate(rand::thread_rng()).unwrap();
        Signer { key }
    }

    pub fn public_armored(&self) -> String {
        self.key
            .to_public_key()
            .to_armored_string(Default::default())
            .unwrap()
    }

    pub fn key_id(&self) -> String {
        use pgp::types::KeyDetails;
        tfmirror::verify::hex(self.key.primary_key.legacy_key_id().as_ref()).to_uppercase()
    }

    fn signature(&self, data: &[u8]) -> DetachedSignature {
        DetachedSignature::sign_binary_data(
            rand::thread_rng(),
            &self.key.primary_key,
            &Password::empty(),
            HashAlgorithm::Sha256,
            data,
        )
        .unwrap()
    }

    pub fn sign_binary(&self, data: &[u8]) -> Vec<u8> {
        use pgp::ser::Serialize;
        self.signature(data).to_bytes().unwrap()
    }

    pub fn sign_armored(&self, data: &[u8]) -> Vec<u8> {
        self.signature(data)
            .to_armored_bytes(Default::default())
            .unwrap()
    }
}

/// Builds a small provider zip archive whose content depends on `seed`.
pub fn build_archive(kind: &str, version: &str, seed: &str) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default();
        w.start_file(format!("terraform-provider-{kind}_v{version}"), opts)
            .unwrap();
        writeln!(
            w,
            "#!/bin/sh\necho provider {kind} {version} built for {seed}"
        )
        .unwrap();
        w.start_file("LICENSE", opts).unwrap();
        w.write_all(b"MPL-2.0\n").unwrap();
        w.finish().unwrap();
    }
    out.into_inner()
}

/// Builds a provider zip archive holding `size` bytes of incompressible data.
pub fn build_big_archive(kind: &str, version: &str, size: usize) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored)
            .large_file(size > u32::MAX as usize / 2);
        w.start_file(format!("terraform-provider-{kind}_v{version}"), opts)
            .unwrap();
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15 ^ size as u64;
        let mut chunk = Vec::with_capacity(64 * 1024);
        let mut left = size;
        while left > 0 {
            chunk.clear();
            while chunk.len() < 64 * 1024 && chunk.len() < left {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                chunk.extend_from_slice(&x.to_le_bytes());
            }
            chunk.truncate(left.min(chunk.len()));
            w.write_all(&chunk).unwrap();
            left -= chunk.len();
        }
        w.finish().unwrap();
    }
    out.into_inner()
}

/// Hex SHA-256.
pub fn sha256_hex(data: &[u8]) -> String {
    tfmirror::verify::hex(&Sha256::digest(data))
}

/// One package the fake origin offers.
#[derive(Clone)]
pub struct Package {
    pub filename: String,
    /// What the download URL serves.
    pub served: Vec<u8>,
    /// What the registry's `shasum` says.
    pub shasum: String,
}

/// One provider version the fake origin offers.
#[derive(Clone)]
pub struct OriginVersion {
    pub packages: BTreeMap<String, Package>,
    pub sums: Vec<u8>,
    pub signature: Vec<u8>,
    pub listed_keys: Vec<(String, String)>,
}

#[derive(Default)]
struct OriginState {
    providers: HashMap<(String, String), BTreeMap<String, OriginVersion>>,
    files: HashMap<String, Vec<u8>>,
    hits: HashMap<String, usize>,
    /// Delay before archives are served, to widen race windows.
    archive_delay: Duration,
    /// The Authorization header of every request, by path.
    authorization: HashMap<String, Vec<Option<String>>>,
    /// Delays for single files, overriding `archive_delay`.
    file_delays: HashMap<String, Duration>,
    /// Answer every request with this status instead.
    fail_with: Option<StatusCode>,
    /// Leave `platforms` out of the versions list (it is optional).
    omit_platforms: bool,
    /// Serve discovery through a redirect.
    redirect_discovery: bool,
    /// Misbehaviours, by request path.
    faults: HashMap<String, Fault>,
}

/// A misbehaviour of one path of the fake origin.
#[derive(Clone, Debug)]
pub enum Fault {
    /// Answer with this status.
    Status(StatusCode),
    /// Answer 200 with this body instead.
    Body(Vec<u8>),
    /// Send the headers and half the body, then nothing more, ever.
    Hang,
    /// Send half the body (chunked), then break the connection.
    Truncate,
    /// Close the connection without answering.
    Reset,
    /// Announce a Content-Length larger than the body that follows.
    WrongLength,
    /// Send the body in ten pieces, this far apart.
    Trickle(Duration),
    /// Redirect to the same path, forever.
    RedirectLoop,
}

/// An in-process origin registry over HTTPS, standing in for the internet.
pub struct FakeOrigin {
    pub addr: SocketAddr,
    state: Arc<Mutex<OriginState>>,
    tasks: Arc<Mutex<JoinSet<()>>>,
    accept: tokio::task::JoinHandle<()>,
    pub requests: Arc<AtomicUsize>,
}

impl FakeOrigin {
    pub async fn start(ca: &TestCa) -> FakeOrigin {
        Self::start_on(ca, "127.0.0.1:0".parse().unwrap()).await
    }

    /// Starts on a given address (to come back on the same port).
    pub async fn start_on(ca: &TestCa, addr: SocketAddr) -> FakeOrigin {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(OriginState::default()));
        let tasks = Arc::new(Mutex::new(JoinSet::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let acceptor = tokio_rustls::TlsAcceptor::from(ca.server_config());
        let accept = {
            let (state, tasks, requests) = (state.clone(), tasks.clone(), requests.clone());
            tokio::spawn(async move {
                loop {
                    let Ok((stream, _)) = listener.accept().await else {
                        continue;
                    };
                    // As real servers do: small answers go out at once.
                    let _ = stream.set_nodelay(true);
                    let (state, requests, acceptor) =
                        (state.clone(), requests.clone(), acceptor.clone());
                    tasks.lock().unwrap().spawn(async move {
                        let Ok(tls) = acceptor.accept(stream).await else {
                            return;
                        };
                        let svc = service_fn(move |req| {
                            requests.fetch_add(1, Ordering::SeqCst);
                            origin_answer(state.clone(), addr, req)
                        });
                        let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                            .serve_connection(TokioIo::new(tls), svc)
                            .await;
                    });
                }
            })
        };
        FakeOrigin {
            addr,
            state,
            tasks,
            accept,
            requests,
        }
    }

    /// The hostname under which discovery reaches this origin.
    pub fn hostname(&self) -> String {
        format!("localhost:{}", self.addr.port())
    }

    /// The base URL of this origin's provider registry API.
    pub fn providers_url(&self) -> String {
        format!("https://127.0.0.1:{}/v1/providers/", self.addr.port())
    }

    /// Stops answering: the listener closes and open connections are cut.
    pub fn stop(&self) {
        self.accept.abort();
        self.tasks.lock().unwrap().abort_all();
    }

    /// Delays serving one file.
    pub fn set_file_delay(&self, name: &str, d: Duration) {
        self.state
            .lock()
            .unwrap()
            .file_delays
            .insert(name.to_string(), d);
    }

    pub fn set_archive_delay(&self, d: Duration) {
        self.state.lock().unwrap().archive_delay = d;
    }

    pub fn omit_platforms(&self) {
        self.state.lock().unwrap().omit_platforms = true;
    }

    pub fn redirect_discovery(&self) {
        self.state.lock().unwrap().redirect_discovery = true;
    }

    /// Makes one path misbehave (or behave again, with `None`).
    pub fn set_fault(&self, path: &str, fault: Option<Fault>) {
        let mut st = self.state.lock().unwrap();
        match fault {
            Some(f) => st.faults.insert(path.to_string(), f),
            None => st.faults.remove(path),
        };
    }

    pub fn fail_with(&self, status: Option<StatusCode>) {
        self.state.lock().unwrap().fail_with = status;
    }

    /// The Authorization headers a path received, in order.
    pub fn authorization(&self, path: &str) -> Vec<Option<String>> {
        self.state
            .lock()
            .unwrap()
            .authorization
            .get(path)
            .cloned()
            .unwrap_or_default()
    }

    /// How many requests a path received.
    pub fn hits(&self, path: &str) -> usize {
        *self.state.lock().unwrap().hits.get(path).unwrap_or(&0)
    }

    /// Adds a version whose packages are built at test time and whose
    /// SHA256SUMS is signed by `signer`; the registry lists `listed` keys.
    pub fn publish(
        &self,
        namespace: &str,
        kind: &str,
        version: &str,
        platforms: &[&str],
        signer: &Signer,
        listed: &[&Signer],
    ) -> BTreeMap<String, Vec<u8>> {
        let mut archives = BTreeMap::new();
        for p in platforms {
            archives.insert(p.to_string(), build_archive(kind, version, p));
        }
        let sums = sums_document(kind, version, &archives);
        let sig = signer.sign_binary(&sums);
        let keys = listed
            .iter()
            .map(|s| (s.key_id(), s.public_armored()))
            .collect();
        self.publish_raw(namespace, kind, version, &archives, sums, sig, keys);
        archives
    }

    /// Adds a version from given parts.
    #[allow(clippy::too_many_arguments)]
    pub fn publish_raw(
        &self,
        namespace: &str,
        kind: &str,
        version: &str,
        archives: &BTreeMap<String, Vec<u8>>,
        sums: Vec<u8>,
        signature: Vec<u8>,
        listed_keys: Vec<(String, String)>,
    ) {
        let mut packages = BTreeMap::new();
        for (platform, bytes) in archives {
            let filename = format!("terraform-provider-{kind}_{version}_{platform}.zip");
            packages.insert(
                platform.clone(),
                Package {
                    filename: filename.clone(),
                    served: bytes.clone(),
                    shasum: sha256_hex(bytes),
                },
            );
        }
        let mut st = self.state.lock().unwrap();
        for pkg in packages.values() {
            st.files.insert(pkg.filename.clone(), pkg.served.clone());
        }
        st.files.insert(
            format!("terraform-provider-{kind}_{version}_SHA256SUMS"),
            sums.clone(),
        );
        st.files.insert(
            format!("terraform-provider-{kind}_{version}_SHA256SUMS.sig"),
            signature.clone(),
        );
        st.providers
            .entry((namespace.to_string(), kind.to_string()))
            .or_default()
            .insert(
                version.to_string(),
                OriginVersion {
                    packages,
                    sums,
                    signature,
                    listed_keys,
                },
            );
    }

    /// Replaces what the download URL of a file serves.
    pub fn replace_file(&self, filename: &str, bytes: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .files
            .insert(filename.to_string(), bytes);
    }
}

impl Drop for FakeOrigin {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A SHA256SUMS document for archives.
pub fn sums_document(kind: &str, version: &str, archives: &BTreeMap<String, Vec<u8>>) -> Vec<u8> {
    archives
        .iter()
        .map(|(p, bytes)| {
            format!(
                "{}  terraform-provider-{kind}_{version}_{p}.zip\n",
                sha256_hex(bytes)
            )
        })
        .collect::<String>()
        .into_bytes()
}

type OriginBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// A streamed body of the given pieces; `then_fail` ends it with an error
/// (breaking the connection), `then_hang` never ends it.
fn pieces(parts: Vec<(Duration, Bytes)>, then_fail: bool, then_hang: bool) -> OriginBody {
    use futures_util::StreamExt;
    let frames = futures_util::stream::iter(parts).then(|(delay, bytes)| async move {
        tokio::time::sleep(delay).await;
        Ok::<_, std::io::Error>(hyper::body::Frame::data(bytes))
    });
    let end = futures_util::stream::iter(
        then_fail.then(|| Err(std::io::Error::other("connection broken on purpose"))),
    );
    let stream = frames.chain(end);
    if then_hang {
        BodyExt::boxed(http_body_util::StreamBody::new(
            stream.chain(futures_util::stream::pending()),
        ))
    } else {
        BodyExt::boxed(http_body_util::StreamBody::new(stream))
    }
}

/// Applies a fault to an answer.
async fn misbehave(
    fault: Fault,
    path: &str,
    answer: Response<OriginBody>,
) -> Result<Response<OriginBody>, std::io::Error> {
    let (mut parts, body) = answer.into_parts();
    let bytes = body.collect().await?.to_bytes();
    let half = bytes.slice(..bytes.len() / 2);
    parts.headers.remove(http::header::CONTENT_LENGTH);
    let body = match fault {
        Fault::Status(status) => return Ok(reply(status, "application/json", b"{}".to_vec())),
        Fault::Body(b) => return Ok(reply(StatusCode::OK, "application/octet-stream", b)),
        Fault::Reset => return Err(std::io::Error::other("reset on purpose")),
        Fault::RedirectLoop => {
            let mut r = reply(StatusCode::FOUND, "text/plain", Vec::new());
            r.headers_mut()
                .insert(http::header::LOCATION, path.parse().unwrap());
            return Ok(r);
        }
        Fault::Hang => pieces(vec![(Duration::ZERO, half)], false, true),
        Fault::Truncate => pieces(vec![(Duration::ZERO, half)], true, false),
        Fault::WrongLength => {
            parts.headers.insert(
                http::header::CONTENT_LENGTH,
                (bytes.len() + 1000).to_string().parse().unwrap(),
            );
            pieces(vec![(Duration::ZERO, bytes)], false, false)
        }
        Fault::Trickle(gap) => {
            // Slow, but announced and whole.
            parts.headers.insert(
                http::header::CONTENT_LENGTH,
                bytes.len().to_string().parse().unwrap(),
            );
            let step = bytes.len().div_ceil(10).max(1);
            let parts: Vec<(Duration, Bytes)> = (0..bytes.len())
                .step_by(step)
                .map(|at| (gap, bytes.slice(at..(at + step).min(bytes.len()))))
                .collect();
            pieces(parts, false, false)
        }
    };
    Ok(Response::from_parts(parts, body))
}

async fn origin_answer(
    state: Arc<Mutex<OriginState>>,
    addr: SocketAddr,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<OriginBody>, std::io::Error> {
    let path = req.uri().path().to_string();
    let fault = state.lock().unwrap().faults.get(&path).cloned();
    let answer = origin_route(state, addr, req, &path).await;
    match fault {
        Some(f) => misbehave(f, &path, answer).await,
        None => Ok(answer),
    }
}

async fn origin_route(
    state: Arc<Mutex<OriginState>>,
    addr: SocketAddr,
    req: Request<hyper::body::Incoming>,
    path: &str,
) -> Response<OriginBody> {
    let path = path.to_string();
    let authorization = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("(not text)").to_string());
    let (fail, delay, omit_platforms, redirect_discovery) = {
        let mut st = state.lock().unwrap();
        *st.hits.entry(path.clone()).or_default() += 1;
        st.authorization
            .entry(path.clone())
            .or_default()
            .push(authorization);
        (
            st.fail_with,
            st.archive_delay,
            st.omit_platforms,
            st.redirect_discovery,
        )
    };
    if let Some(status) = fail {
        return reply(status, "application/json", b"{}".to_vec());
    }
    let segs: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let json = |v: serde_json::Value| {
        reply(
            StatusCode::OK,
            "application/json",
            v.to_string().into_bytes(),
        )
    };
    let not_found = || {
        reply(
            StatusCode::NOT_FOUND,
            "application/json",
            b"{\"errors\":[\"not found\"]}".to_vec(),
        )
    };
    match segs.as_slice() {
        [".well-known", "terraform.json"] if redirect_discovery => {
            let mut r = reply(StatusCode::MOVED_PERMANENTLY, "text/plain", Vec::new());
            r.headers_mut().insert(
                http::header::LOCATION,
                "/registry/discovery.json".parse().unwrap(),
            );
            r
        }
        // A relative URL, resolved against the redirected document: /v1/providers/.
        ["registry", "discovery.json"] => {
            json(serde_json::json!({"providers.v1": "../v1/providers/"}))
        }
        [".well-known", "terraform.json"] => {
            json(serde_json::json!({"providers.v1": "/v1/providers/"}))
        }
        ["v1", "providers", ns, kind, "versions"] => {
            let st = state.lock().unwrap();
            match st.providers.get(&(ns.to_string(), kind.to_string())) {
                None => not_found(),
                Some(versions) => {
                    let list: Vec<serde_json::Value> = versions
                        .iter()
                        .map(|(v, ov)| {
                            if omit_platforms {
                                return serde_json::json!({"version": v});
                            }
                            let platforms: Vec<serde_json::Value> = ov
                                .packages
                                .keys()
                                .map(|p| {
                                    let (os, arch) = p.split_once('_').unwrap();
                                    serde_json::json!({"os": os, "arch": arch})
                                })
                                .collect();
                            serde_json::json!({"version": v, "protocols": ["5.0"], "platforms": platforms})
                        })
                        .collect();
                    json(serde_json::json!({ "versions": list }))
                }
            }
        }
        ["v1", "providers", ns, kind, version, "download", os, arch] => {
            let st = state.lock().unwrap();
            let found = st
                .providers
                .get(&(ns.to_string(), kind.to_string()))
                .and_then(|vs| vs.get(*version))
                .and_then(|ov| ov.packages.get(&format!("{os}_{arch}")).map(|p| (ov, p)));
            match found {
                None => not_found(),
                Some((ov, pkg)) => {
                    let keys: Vec<serde_json::Value> = ov
                        .listed_keys
                        .iter()
                        .map(|(id, armor)| serde_json::json!({"key_id": id, "ascii_armor": armor}))
                        .collect();
                    json(serde_json::json!({
                        "protocols": ["5.0"],
                        "os": os,
                        "arch": arch,
                        "filename": pkg.filename,
                        // An absolute URL that redirects, as release hosts often do.
                        "download_url": format!("https://localhost:{}/dl/{}", addr.port(), pkg.filename),
                        // Relative URLs, resolved against this document.
                        "shasums_url": format!("/files/terraform-provider-{kind}_{version}_SHA256SUMS"),
                        "shasums_signature_url": format!("../../../../../../../files/terraform-provider-{kind}_{version}_SHA256SUMS.sig"),
                        "shasum": pkg.shasum,
                        "signing_keys": {"gpg_public_keys": keys},
                    }))
                }
            }
        }
        ["dl", name] => {
            let mut r = reply(StatusCode::FOUND, "text/plain", Vec::new());
            r.headers_mut().insert(
                http::header::LOCATION,
                format!("/files/{name}").parse().unwrap(),
            );
            r
        }
        ["files", name] => {
            let (bytes, delay) = {
                let st = state.lock().unwrap();
                let delay = st.file_delays.get(*name).copied().unwrap_or(delay);
                (st.files.get(*name).cloned(), delay)
            };
            match bytes {
                None => not_found(),
                Some(b) => {
                    if name.ends_with(".zip") && !delay.is_zero() {
                        tokio::time::sleep(delay).await;
                    }
                    reply(StatusCode::OK, "application/octet-stream", b)
                }
            }
        }
        _ => not_found(),
    }
}

fn reply(status: StatusCode, content_type: &str, body: Vec<u8>) -> Response<OriginBody> {
    let mut r = Response::new(
        Full::new(Bytes::from(body))
            .map_err(|never| match never {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut()
        .insert(http::header::CONTENT_TYPE, content_type.parse().unwrap());
    r
}

/// A tfmirror running in this process, with its own cache and data dirs,
/// started the way `tfmirror serve` starts it (`tfmirror::daemon`).
pub struct RunningMirror {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    pub mirror: Arc<Mirror>,
    /// The authority clients must trust (the mirror's generated one).
    pub ca_file: PathBuf,
    signals: tokio::sync::mpsc::Sender<Signal>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningMirror {
    pub async fn start(config: Config) -> RunningMirror {
        let listener = TcpListener::bind(config.server.listen).await.unwrap();
        let daemon = Daemon::new(config, listener).await.unwrap();
        let addr = daemon.local_addr().unwrap();
        let app = daemon.app().clone();
        let ca_file = daemon
            .tls()
            .and_then(|t| t.generated.clone())
            .unwrap()
            .ca_cert;
        let (signals, rx) = tokio::sync::mpsc::channel(4);
        let task = tokio::spawn(async move {
            daemon.run(rx, || {}, || {}).await.unwrap();
        });
        RunningMirror {
            addr,
            mirror: app.mirror.clone(),
            app,
            ca_file,
            signals,
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("https://127.0.0.1:{}{}", self.addr.port(), path)
    }

    /// Tells the daemon to reload its certificate and token file.
    pub async fn reload(&self) {
        self.signals.send(Signal::Reload).await.unwrap();
    }

    /// Shuts the server down and waits until it has.
    pub async fn stop(mut self) {
        let _ = self.signals.send(Signal::Stop).await;
        self.task.take().unwrap().await.unwrap();
    }
}

/// A test's directories and the configuration pointing into them.
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub ca: TestCa,
}

impl Setup {
    pub fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let ca = TestCa::new();
        std::fs::write(dir.path().join("origin-ca.pem"), &ca.ca_pem).unwrap();
        Setup { dir, ca }
    }

    pub fn cache_dir(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// A configuration for a mirror on a free loopback port that trusts the
    /// fake origin's authority, allows `allowed` hostnames, and maps
    /// `mapped` hostnames to the origin's API without discovery.
    pub fn config(&self, origin: &FakeOrigin, allowed: &[&str], mapped: &[&str]) -> Config {
        let mut c = Config::default();
        c.server.listen = "127.0.0.1:0".parse().unwrap();
        c.server.data_dir = self.dir.path().join("data");
        c.cache.dir = self.cache_dir();
        c.upstream.ca_file = Some(self.dir.path().join("origin-ca.pem"));
        c.upstream.connect_timeout = Duration::from_secs(2);
        c.upstream.request_timeout = Duration::from_secs(10);
        c.upstream.allowed_hosts = allowed.iter().map(|h| h.parse().unwrap()).collect();
        // The fake origin lives on loopback, which the request forgery guard
        // refuses by default; tests of the guard turn this off again.
        c.upstream.allow_private_addresses = true;
        for h in mapped {
            let mut hc = HostConfig::default();
            hc.services.insert(
                "providers.v1".into(),
                origin.providers_url().parse().unwrap(),
            );
            c.upstream.hosts.insert(h.parse().unwrap(), hc);
        }
        c
    }
}

/// A minimal HTTPS client that trusts one authority.
pub struct Client {
    inner: hyper_util::client::legacy::Client<
        hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
        http_body_util::Empty<Bytes>,
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

    pub fn error_text(&self) -> String {
        self.json()["errors"].to_string()
    }
}

impl Client {
    /// Waits (up to 30 s) for a daemon to have written `ca_file`, then trusts it.
    pub async fn trusting_when_ready(ca_file: &Path) -> Client {
        for _ in 0..300 {
            if std::fs::metadata(ca_file).is_ok_and(|m| m.len() > 0) {
                return Client::trusting(ca_file);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("{} was never written", ca_file.display());
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
        let mut req = Request::builder().method(method).uri(url);
        if let Some(a) = authorization {
            req = req.header(http::header::AUTHORIZATION, a);
        }
        let req = req.body(http_body_util::Empty::new()).unwrap();
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
            .body(http_body_util::Empty::new())
            .unwrap();
        self.inner.request(req).await.unwrap()
    }

    /// A GET with one extra header.
    pub async fn get_with_header(&self, url: &str, name: &str, value: &str) -> Answer {
        let req = Request::get(url)
            .header(name, value)
            .body(http_body_util::Empty::new())
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
            .body(http_body_util::Empty::new())
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
}

/// Every file below `dir`, relative, sorted.
pub fn files_below(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p.strip_prefix(dir).unwrap().display().to_string());
            }
        }
    }
    out.sort();
    out
}

/// The usual test scene: a fake origin that publishes one signed provider
/// version under `acme/<kind>`, and a running mirror that maps
/// `registry.origin.test` to that origin.
pub struct Scene {
    pub setup: Setup,
    pub origin: FakeOrigin,
    pub signer: Signer,
    /// The published archives by platform.
    pub archives: BTreeMap<String, Vec<u8>>,
    pub mirror: RunningMirror,
    pub client: Client,
}

impl Scene {
    pub async fn start(kind: &str, version: &str, platforms: &[&str]) -> Scene {
        Self::start_with(kind, version, platforms, |_| {}).await
    }

    /// Like `start`, with a chance to change the mirror's configuration.
    pub async fn start_with(
        kind: &str,
        version: &str,
        platforms: &[&str],
        configure: impl FnOnce(&mut Config),
    ) -> Scene {
        let (setup, origin, signer, archives) = published(kind, version, platforms).await;
        let mut config = setup.config(&origin, &[], &["registry.origin.test"]);
        configure(&mut config);
        let mirror = RunningMirror::start(config).await;
        let client = Client::trusting(&mirror.ca_file);
        Scene {
            setup,
            origin,
            signer,
            archives,
            mirror,
            client,
        }
    }

    /// The mirror URL of a path under `registry.origin.test/acme/`.
    pub fn url(&self, below_acme: &str) -> String {
        self.mirror
            .url(&format!("/registry.origin.test/acme/{below_acme}"))
    }

    /// The mirror URL of an archive.
    pub fn archive_url(&self, kind: &str, version: &str, platform: &str) -> String {
        self.url(&format!(
            "{kind}/terraform-provider-{kind}_{version}_{platform}.zip"
        ))
    }
}

/// A test directory and a fake origin that publishes one version of
/// `acme/<kind>` signed by the returned signer, with no mirror yet.
pub async fn published(
    kind: &str,
    version: &str,
    platforms: &[&str],
) -> (Setup, FakeOrigin, Signer, BTreeMap<String, Vec<u8>>) {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", kind, version, platforms, &signer, &[&signer]);
    (setup, origin, signer, archives)
}

/// Publishes `acme/<kind>` versions whose linux_amd64 archives each hold
/// `size` bytes of incompressible data; returns the archives by version.
pub fn publish_big(
    origin: &FakeOrigin,
    signer: &Signer,
    kind: &str,
    versions: &[&str],
    size: usize,
) -> BTreeMap<String, Vec<u8>> {
    let keys = vec![(signer.key_id(), signer.public_armored())];
    let mut published = BTreeMap::new();
    for v in versions {
        let archives: BTreeMap<String, Vec<u8>> =
            [("linux_amd64".to_string(), build_big_archive(kind, v, size))].into();
        let sums = sums_document(kind, v, &archives);
        let sig = signer.sign_binary(&sums);
        origin.publish_raw("acme", kind, v, &archives, sums, sig, keys.clone());
        published.insert(v.to_string(), archives["linux_amd64"].clone());
    }
    published
}

/// A file of `tests/fixtures/h1`: an archive and the hashes a real
/// Terraform CLI recorded for it.
pub fn h1_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/h1")
            .join(name),
    )
    .expect("tests/fixtures/h1 is part of the repository")
}

/// A file of `tests/fixtures/gnupg`.
pub fn gnupg_fixture(name: &str) -> Vec<u8> {
    std::fs::read(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/gnupg")
            .join(name),
    )
    .unwrap()
}

/// Publishes the fixture widget 1.1.0 archive (linux_amd64) under
/// `<namespace>/widget`, with a SHA256SUMS signature GnuPG made
/// (`signature`) and the registry listing the GnuPG key in `key`.
pub fn publish_gnupg_widget(origin: &FakeOrigin, namespace: &str, key: &str, signature: &str) {
    let archives = [(
        "linux_amd64".to_string(),
        h1_fixture("terraform-provider-widget_1.1.0_linux_amd64.zip"),
    )]
    .into();
    let key = String::from_utf8(gnupg_fixture(key)).unwrap();
    origin.publish_raw(
        namespace,
        "widget",
        "1.1.0",
        &archives,
        gnupg_fixture("SHA256SUMS"),
        gnupg_fixture(signature),
        vec![("".into(), key)],
    );
}

/// A TLS client configuration that trusts one authority.
pub fn tls_client_config(ca_file: &Path) -> rustls::ClientConfig {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(ca_file).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(rustls::crypto::ring::default_provider().into())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
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
