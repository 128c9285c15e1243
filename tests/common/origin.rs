//! An in-process origin registry over real TLS, standing in for the
//! internet, with faults that can be switched on per path.

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpListener;
use tokio::task::JoinSet;

use super::{
    build_archive, gnupg_fixture, h1_fixture, sha256_hex, sums_document, vars, Lists, NoLists,
    Shape, Signer, TestCa, Vars,
};

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

struct OriginState {
    /// The registry whose answers' shape this origin copies.
    shape: Shape,
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
    /// The `packages` entries (in shapes that send the field) report these
    /// hashes instead of the archive's, by platform and scheme (`zh:`,
    /// `h1:`).
    misreported: HashMap<(String, String), String>,
    /// Serve discovery through a redirect.
    redirect_discovery: bool,
    /// Misbehaviours, by request path.
    faults: HashMap<String, Fault>,
    /// Modules: (namespace, name, system) → version → download answer.
    modules: HashMap<(String, String, String), BTreeMap<String, ModuleAnswer>>,
    /// Where the bare git repositories served under `/git/` are.
    git_root: Option<std::path::PathBuf>,
    /// Files whose answers wait until the test lets them go.
    held: HashMap<String, tokio::sync::watch::Receiver<bool>>,
    /// How many requests each throttled path has refused so far.
    throttled: HashMap<String, usize>,
    /// The HTTP versions of the requests answered, in order.
    versions_seen: Vec<http::Version>,
    /// The shape's file that answers provider download requests.
    download_answer: String,
    /// Answers served as they are, by exact path (a registry's
    /// documentation, say): content type and body.
    pages: HashMap<String, (&'static str, Vec<u8>)>,
}

impl Default for OriginState {
    fn default() -> Self {
        OriginState {
            shape: Shape::load("terraform-registry"),
            providers: HashMap::new(),
            files: HashMap::new(),
            hits: HashMap::new(),
            archive_delay: Duration::ZERO,
            authorization: HashMap::new(),
            file_delays: HashMap::new(),
            fail_with: None,
            omit_platforms: false,
            misreported: HashMap::new(),
            redirect_discovery: false,
            faults: HashMap::new(),
            modules: HashMap::new(),
            git_root: None,
            throttled: HashMap::new(),
            versions_seen: Vec::new(),
            held: HashMap::new(),
            download_answer: "provider-download.json".into(),
            pages: HashMap::new(),
        }
    }
}

/// How the fake module registry answers a download request.
#[derive(Clone, Debug)]
pub enum ModuleAnswer {
    /// In the origin's shape (`module-download.http`), with this location.
    Shaped(String),
    /// 204 with the location in `X-Terraform-Get` (Terraform's registry).
    Header(String),
    /// 200 with `{"location": …}` (as OpenTofu documents it).
    Json(String),
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
    /// Redirect with this status to the same answer under `/moved/`, by a
    /// relative `Location` (`true`) or an absolute one.
    Redirect(StatusCode, bool),
    /// Send the body gzip-compressed, with `Content-Encoding: gzip`, as a
    /// CDN may whether or not it was asked to.
    Gzip,
    /// Send the body in chunks with no `Content-Length`.
    Chunked,
    /// Answer the first `count` requests with `status` and this
    /// `Retry-After` (none when `None`), then as usual.
    Throttle {
        status: StatusCode,
        retry_after: Option<&'static str>,
        count: usize,
    },
    /// Wait this long before sending the answer's headers.
    SlowStart(Duration),
    /// Answer 200 with an HTML error page, as a captive portal or a
    /// misconfigured proxy does.
    HtmlPage,
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
        Self::start_speaking(ca, addr, false).await
    }

    /// Starts an origin that speaks HTTP/2 only: it offers no other
    /// protocol in the TLS handshake and refuses HTTP/1.1 requests.
    pub async fn start_http2_only(ca: &TestCa) -> FakeOrigin {
        Self::start_speaking(ca, "127.0.0.1:0".parse().unwrap(), true).await
    }

    async fn start_speaking(ca: &TestCa, addr: SocketAddr, http2_only: bool) -> FakeOrigin {
        let listener = TcpListener::bind(addr).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let state = Arc::new(Mutex::new(OriginState::default()));
        let tasks = Arc::new(Mutex::new(JoinSet::new()));
        let requests = Arc::new(AtomicUsize::new(0));
        let mut tls = (*ca.server_config()).clone();
        if http2_only {
            tls.alpn_protocols = vec![b"h2".to_vec()];
        }
        let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(tls));
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
                        let mut builder =
                            hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                        if http2_only {
                            builder = builder.http2_only();
                        }
                        let _ = builder.serve_connection(TokioIo::new(tls), svc).await;
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

    /// The base URL of this origin's module registry API.
    pub fn modules_url(&self) -> String {
        format!("https://127.0.0.1:{}/v1/modules/", self.addr.port())
    }

    /// The HTTPS URL of a bare repository `<name>.git` served from the
    /// directory given to [`FakeOrigin::serve_git`].
    pub fn git_url(&self, name: &str) -> String {
        format!("https://localhost:{}/git/{name}.git", self.addr.port())
    }

    /// The URL of a file published with [`FakeOrigin::replace_file`].
    pub fn file_url(&self, name: &str) -> String {
        format!("https://localhost:{}/files/{name}", self.addr.port())
    }

    /// Serves the bare repositories in `root` under `/git/` with
    /// `git http-backend` (git's smart HTTP protocol).
    pub fn serve_git(&self, root: &std::path::Path) {
        self.state.lock().unwrap().git_root = Some(root.to_path_buf());
    }

    /// Publishes a module version whose download answer is `answer`.
    pub fn publish_module(
        &self,
        namespace: &str,
        name: &str,
        system: &str,
        version: &str,
        answer: ModuleAnswer,
    ) {
        self.state
            .lock()
            .unwrap()
            .modules
            .entry((namespace.into(), name.into(), system.into()))
            .or_default()
            .insert(version.into(), answer);
    }

    /// Publishes a module version whose source is the repository `repo`
    /// served under `/git/` at `reference`, answered in the origin's shape.
    pub fn publish_git_module(&self, name: &str, version: &str, repo: &str, reference: &str) {
        let location = format!("git::{}?ref={reference}", self.git_url(repo));
        self.publish_module("acme", name, "aws", version, ModuleAnswer::Shaped(location));
    }

    /// Publishes a module version whose source is the archive `tar_gz`,
    /// served as `/files/<namespace>-<name>-<system>-<version>.tar.gz`
    /// (where shapes with a location of their own find it) and answered in
    /// the origin's shape with that file's URL.
    pub fn publish_archive_module(
        &self,
        (namespace, name, system): (&str, &str, &str),
        version: &str,
        tar_gz: Vec<u8>,
    ) {
        let file = format!("{namespace}-{name}-{system}-{version}.tar.gz");
        self.replace_file(&file, tar_gz);
        let location = self.file_url(&file);
        self.publish_module(
            namespace,
            name,
            system,
            version,
            ModuleAnswer::Shaped(location),
        );
    }

    /// Answers in the shape of the registry `name` of
    /// `tests/fixtures/registries/`.
    pub fn use_shape(&self, name: &str) {
        self.state.lock().unwrap().shape = Shape::load(name);
    }

    /// Answers provider download requests with another file of the shape
    /// (`provider-download-keyless-null.json`, …).
    pub fn use_download_answer(&self, file: &str) {
        file.clone_into(&mut self.state.lock().unwrap().download_answer);
    }

    /// Stops answering: the listener closes and open connections are cut.
    pub fn stop(&self) {
        self.accept.abort();
        self.tasks.lock().unwrap().abort_all();
    }

    /// Holds back every answer for one file until the returned sender is
    /// sent `true` (or dropped): a test orders what happens while a
    /// download is under way with it.
    pub fn hold_file(&self, name: &str) -> tokio::sync::watch::Sender<bool> {
        let (tx, rx) = tokio::sync::watch::channel(false);
        self.state.lock().unwrap().held.insert(name.to_string(), rx);
        tx
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

    /// In shapes with a `packages` field, report `hash` (`zh:…` or
    /// `h1:…`) as the archive of `platform`'s hash of that scheme (the
    /// signed SHA256SUMS and the archive stay as they are).
    pub fn misreport_package(&self, platform: &str, hash: &str) {
        let scheme = hash[..3].to_owned();
        self.state
            .lock()
            .unwrap()
            .misreported
            .insert((platform.into(), scheme), hash.into());
    }

    /// In shapes with a `packages` field, report `size` as the archive of
    /// `platform`'s `package_size`.
    pub fn misreport_size(&self, platform: &str, size: u64) {
        self.state
            .lock()
            .unwrap()
            .misreported
            .insert((platform.into(), "size".into()), size.to_string());
    }

    pub fn redirect_discovery(&self) {
        self.state.lock().unwrap().redirect_discovery = true;
    }

    /// Makes one path misbehave (or behave again, with `None`).
    pub fn set_fault(&self, path: &str, fault: Option<Fault>) {
        let mut st = self.state.lock().unwrap();
        st.throttled.remove(path);
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

    /// The HTTP versions of the requests answered so far.
    pub fn versions_seen(&self) -> Vec<http::Version> {
        self.state.lock().unwrap().versions_seen.clone()
    }

    /// Every path asked for so far, with how many requests each received.
    pub fn all_hits(&self) -> BTreeMap<String, usize> {
        self.state
            .lock()
            .unwrap()
            .hits
            .iter()
            .map(|(p, n)| (p.clone(), *n))
            .collect()
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

    /// Publishes two versions that must never verify, for `signer`'s
    /// namespace `acme`: `gadget` `gadget_version`, properly signed but whose
    /// `linux_amd64` archive changes after publication, and `widget` 1.0.0,
    /// signed by `stranger` while the registry lists only `signer`.
    pub fn publish_unverifiable(&self, signer: &Signer, stranger: &Signer, gadget_version: &str) {
        self.publish(
            "acme",
            "gadget",
            gadget_version,
            &["linux_amd64"],
            signer,
            &[signer],
        );
        self.replace_file(
            &format!("terraform-provider-gadget_{gadget_version}_linux_amd64.zip"),
            build_archive("gadget", gadget_version, "tampered"),
        );
        self.publish(
            "acme",
            "widget",
            "1.0.0",
            &["linux_amd64"],
            stranger,
            &[signer],
        );
    }

    /// Replaces what the download URL of a file serves.
    /// Serves `body` at exactly `path` (percent-encoded as the request
    /// sends it), with `content_type`.
    pub fn serve_page(&self, path: &str, content_type: &'static str, body: Vec<u8>) {
        self.state
            .lock()
            .unwrap()
            .pages
            .insert(path.to_string(), (content_type, body));
    }

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

type OriginBody = http_body_util::combinators::BoxBody<Bytes, std::io::Error>;

/// A streamed body of the given pieces, each sent after its delay (the
/// slowness is the fault a test puts the mirror through, not a way to
/// order events); `then_fail` ends it with an error (breaking the
/// connection), `then_hang` never ends it.
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
    port: u16,
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
        Fault::Redirect(status, relative) => {
            let to = if relative {
                // Relative to the path asked: `moved/<last segment>` below
                // the same directory would do, but `..` is the harder case.
                let depth = path.matches('/').count() - 1;
                format!("{}moved{path}", "../".repeat(depth))
            } else {
                format!("https://localhost:{port}/moved{path}")
            };
            let mut r = reply(status, "text/plain", Vec::new());
            r.headers_mut()
                .insert(http::header::LOCATION, to.parse().unwrap());
            return Ok(r);
        }
        Fault::Gzip => {
            use std::io::Write;
            let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            gz.write_all(&bytes).unwrap();
            let packed = gz.finish().unwrap();
            parts.headers.insert(
                http::header::CONTENT_ENCODING,
                "gzip".parse().unwrap(),
            );
            parts.headers.insert(
                http::header::CONTENT_LENGTH,
                packed.len().to_string().parse().unwrap(),
            );
            pieces(vec![(Duration::ZERO, Bytes::from(packed))], false, false)
        }
        Fault::Chunked => {
            let step = bytes.len().div_ceil(7).max(1);
            let parts: Vec<(Duration, Bytes)> = (0..bytes.len())
                .step_by(step)
                .map(|at| (Duration::ZERO, bytes.slice(at..(at + step).min(bytes.len()))))
                .collect();
            pieces(parts, false, false)
        }
        Fault::HtmlPage => {
            return Ok(reply(
                StatusCode::OK,
                "text/html; charset=utf-8",
                b"<!DOCTYPE html>\n<html><head><title>Service Unavailable</title></head><body>Please try again later.</body></html>".to_vec(),
            ))
        }
        // Handled before the answer is made (`origin_answer`).
        Fault::Throttle { .. } | Fault::SlowStart(_) => pieces(vec![(Duration::ZERO, bytes)], false, false),
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
    let asked = req.uri().path().to_string();
    state.lock().unwrap().versions_seen.push(req.version());
    let fault = state.lock().unwrap().faults.get(&asked).cloned();
    // Where a redirect fault sent the client: the same answer, no fault.
    let path = asked.strip_prefix("/moved").unwrap_or(&asked).to_string();
    match &fault {
        Some(Fault::Throttle {
            status,
            retry_after,
            count,
        }) => {
            let mut st = state.lock().unwrap();
            let refused = st.throttled.entry(asked.clone()).or_default();
            if *refused < *count {
                *refused += 1;
                *st.hits.entry(asked.clone()).or_default() += 1;
                let mut r = reply(
                    *status,
                    "application/json",
                    b"{\"errors\":[\"slow down\"]}".to_vec(),
                );
                if let Some(after) = retry_after {
                    r.headers_mut()
                        .insert(http::header::RETRY_AFTER, after.parse().unwrap());
                }
                return Ok(r);
            }
        }
        // The slowness is the fault a test puts the mirror through, not a
        // way to order events.
        Some(Fault::SlowStart(wait)) => tokio::time::sleep(*wait).await,
        _ => {}
    }
    let git_root = state.lock().unwrap().git_root.clone();
    let answer = match (path.strip_prefix("/git/"), git_root) {
        (Some(_), Some(root)) if fault.is_none() => {
            let authorization = req
                .headers()
                .get(http::header::AUTHORIZATION)
                .map(|v| v.to_str().unwrap_or("(not text)").to_string());
            {
                let mut st = state.lock().unwrap();
                *st.hits.entry(path.clone()).or_default() += 1;
                st.authorization
                    .entry(path.clone())
                    .or_default()
                    .push(authorization);
            }
            return Ok(git_backend(&root, req).await);
        }
        _ => origin_route(state, addr, req, &path, &asked).await,
    };
    match fault {
        Some(f) if asked == path => misbehave(f, &path, addr.port(), answer).await,
        _ => Ok(answer),
    }
}

/// The answer to `path`, which the client asked for as `asked` (they
/// differ below `/moved/`); hits and credentials are counted by `asked`.
async fn origin_route(
    state: Arc<Mutex<OriginState>>,
    addr: SocketAddr,
    req: Request<hyper::body::Incoming>,
    path: &str,
    asked: &str,
) -> Response<OriginBody> {
    let path = path.to_string();
    let authorization = req
        .headers()
        .get(http::header::AUTHORIZATION)
        .map(|v| v.to_str().unwrap_or("(not text)").to_string());
    let (fail, delay, omit_platforms, redirect_discovery, shape) = {
        let mut st = state.lock().unwrap();
        *st.hits.entry(asked.to_owned()).or_default() += 1;
        st.authorization
            .entry(asked.to_owned())
            .or_default()
            .push(authorization);
        (
            st.fail_with,
            st.archive_delay,
            st.omit_platforms,
            st.redirect_discovery,
            st.shape.clone(),
        )
    };
    if let Some(status) = fail {
        return reply(status, "application/json", b"{}".to_vec());
    }
    let page = state.lock().unwrap().pages.get(&path).cloned();
    if let Some((content_type, body)) = page {
        return reply(StatusCode::OK, content_type, body);
    }
    let origin = format!("https://localhost:{}", addr.port());
    // The API prefixes of the registries the shapes copy all lead to the
    // same registry.
    let api = [
        ("/api/registry/v1/", "/v1/"),
        ("/artifactory/api/terraform/v1/", "/v1/"),
        ("/api/v4/packages/terraform/modules/v1/", "/v1/modules/"),
    ]
    .iter()
    .find_map(|(prefix, to)| path.strip_prefix(prefix).map(|rest| format!("{to}{rest}")))
    .unwrap_or_else(|| path.clone());
    let segs: Vec<&str> = api.trim_start_matches('/').split('/').collect();
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
    let redirect = |status: StatusCode, to: String| {
        let mut r = reply(status, "text/plain", Vec::new());
        r.headers_mut()
            .insert(http::header::LOCATION, to.parse().unwrap());
        r
    };
    match segs.as_slice() {
        [".well-known", "terraform.json"] if redirect_discovery => redirect(
            StatusCode::MOVED_PERMANENTLY,
            "/registry/discovery.json".into(),
        ),
        // A relative URL, resolved against the redirected document: /v1/providers/.
        ["registry", "discovery.json"] => json(
            serde_json::json!({"providers.v1": "../v1/providers/", "modules.v1": "../v1/modules/"}),
        ),
        [".well-known", "terraform.json"] => {
            json(shape.json("discovery.json", &Vars::new(), &NoLists))
        }
        ["v1", "modules", ns, name, system, "versions"] => {
            let st = state.lock().unwrap();
            match st
                .modules
                .get(&(ns.to_string(), name.to_string(), system.to_string()))
            {
                None => not_found(),
                Some(versions) => {
                    let bound = vars([
                        ("origin", origin.clone()),
                        ("namespace", ns.to_string()),
                        ("name", name.to_string()),
                        ("system", system.to_string()),
                    ]);
                    let lists = ModuleLists(versions.keys().cloned().collect());
                    json(shape.json("module-versions.json", &bound, &lists))
                }
            }
        }
        ["v1", "modules", ns, name, system, version, "download"] => {
            let st = state.lock().unwrap();
            let found = st
                .modules
                .get(&(ns.to_string(), name.to_string(), system.to_string()))
                .and_then(|vs| vs.get(*version))
                .cloned();
            match found {
                None => not_found(),
                Some(ModuleAnswer::Header(location)) => {
                    let mut r = reply(StatusCode::NO_CONTENT, "text/plain", Vec::new());
                    r.headers_mut()
                        .insert("x-terraform-get", location.parse().unwrap());
                    r
                }
                Some(ModuleAnswer::Json(location)) => {
                    json(serde_json::json!({ "location": location }))
                }
                Some(ModuleAnswer::Shaped(location)) => {
                    let bound = vars([
                        ("origin", origin.clone()),
                        ("namespace", ns.to_string()),
                        ("name", name.to_string()),
                        ("system", system.to_string()),
                        ("version", version.to_string()),
                        ("location", location),
                    ]);
                    let (status, headers, body) = shape.http("module-download.http", &bound);
                    let mut r = reply(
                        StatusCode::from_u16(status).unwrap(),
                        "text/plain",
                        body.into_bytes(),
                    );
                    for (name, value) in headers {
                        r.headers_mut().insert(
                            http::header::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                            value.parse().unwrap(),
                        );
                    }
                    r
                }
            }
        }
        // GitLab's package file, named by the module's version.
        ["v1", "modules", ns, name, system, version, "file"] => redirect(
            StatusCode::FOUND,
            format!("/files/{ns}-{name}-{system}-{version}.tar.gz"),
        ),
        ["v1", "providers", ns, kind, "versions"] => {
            let st = state.lock().unwrap();
            match st.providers.get(&(ns.to_string(), kind.to_string())) {
                None => not_found(),
                Some(versions) => {
                    let bound = vars([
                        ("origin", origin.clone()),
                        ("namespace", ns.to_string()),
                        ("type", kind.to_string()),
                    ]);
                    let lists = ProviderLists {
                        versions,
                        keys: &[],
                        misreported: &st.misreported,
                    };
                    let mut doc = shape.json("provider-versions.json", &bound, &lists);
                    if omit_platforms {
                        for entry in doc["versions"].as_array_mut().unwrap() {
                            entry.as_object_mut().unwrap().remove("platforms");
                        }
                    }
                    json(doc)
                }
            }
        }
        ["v1", "providers", ns, kind, version, "download", os, arch] => {
            let st = state.lock().unwrap();
            let found = st
                .providers
                .get(&(ns.to_string(), kind.to_string()))
                .and_then(|vs| vs.get(*version).map(|ov| (vs, ov)))
                .and_then(|(vs, ov)| {
                    ov.packages
                        .get(&format!("{os}_{arch}"))
                        .map(|p| (vs, ov, p))
                });
            match found {
                None => not_found(),
                Some((versions, ov, pkg)) => {
                    let bound = vars([
                        ("origin", origin.clone()),
                        ("namespace", ns.to_string()),
                        ("type", kind.to_string()),
                        ("version", version.to_string()),
                        ("os", os.to_string()),
                        ("arch", arch.to_string()),
                        ("filename", pkg.filename.clone()),
                        ("shasum", pkg.shasum.clone()),
                    ]);
                    let lists = ProviderLists {
                        versions,
                        keys: &ov.listed_keys,
                        misreported: &st.misreported,
                    };
                    json(shape.json(&st.download_answer, &bound, &lists))
                }
            }
        }
        ["dl", name] => redirect(StatusCode::FOUND, format!("/files/{name}")),
        // A release asset, redirected to the download host as GitHub does.
        ["gh", _owner, _repo, "releases", "download", _tag, name] => redirect(
            StatusCode::FOUND,
            format!("{origin}/files/{name}?response-content-disposition=attachment"),
        ),
        ["files", name] => {
            let (bytes, delay, held) = {
                let st = state.lock().unwrap();
                let delay = st.file_delays.get(*name).copied().unwrap_or(delay);
                (
                    st.files.get(*name).cloned(),
                    delay,
                    st.held.get(*name).cloned(),
                )
            };
            if let Some(mut held) = held {
                // Until the test lets go (or drops the sender).
                let _ = held.wait_for(|go| *go).await;
            }
            match bytes {
                None => not_found(),
                Some(b) => {
                    if name.ends_with(".zip") && !delay.is_zero() {
                        // A slow download host, as a test asked for.
                        tokio::time::sleep(delay).await;
                    }
                    reply(StatusCode::OK, "application/octet-stream", b)
                }
            }
        }
        _ => not_found(),
    }
}

/// A module's versions, for `module-versions.json`.
struct ModuleLists(Vec<String>);

impl Lists for ModuleLists {
    fn list(&self, trigger: &str, _: &Vars) -> Option<Vec<Vars>> {
        (trigger == "version").then(|| {
            self.0
                .iter()
                .map(|v| vars([("version", v.clone())]))
                .collect()
        })
    }
}

/// A provider's versions, the platforms of each, and the listed keys.
struct ProviderLists<'a> {
    versions: &'a BTreeMap<String, OriginVersion>,
    keys: &'a [(String, String)],
    /// Hashes a `packages` entry reports instead of the archive's.
    misreported: &'a HashMap<(String, String), String>,
}

impl Lists for ProviderLists<'_> {
    fn list(&self, trigger: &str, bound: &Vars) -> Option<Vec<Vars>> {
        match trigger {
            "version" => Some(
                self.versions
                    .keys()
                    .map(|v| vars([("version", v.clone())]))
                    .collect(),
            ),
            "os" | "platform" => {
                let version = bound.get("version")?.as_str()?;
                let ov = self.versions.get(version)?;
                Some(
                    ov.packages
                        .iter()
                        .map(|(platform, pkg)| {
                            let (os, arch) = platform.split_once('_').unwrap();
                            let reported = |scheme: &str, actual: String| {
                                self.misreported
                                    .get(&(platform.clone(), scheme.to_owned()))
                                    .cloned()
                                    .unwrap_or(actual)
                            };
                            let zh = reported("zh:", format!("zh:{}", pkg.shasum));
                            // What the served bytes hash to (a registry
                            // computes it from the archive it publishes).
                            let h1 = reported(
                                "h1:",
                                tfmirror::verify::h1_of_zip(std::io::Cursor::new(&pkg.served))
                                    .unwrap_or_else(|_| "h1:not-a-zip-archive".into()),
                            );
                            let mut v = vars([
                                ("os", os.to_owned()),
                                ("arch", arch.to_owned()),
                                ("platform", platform.clone()),
                                ("zh", zh),
                                ("h1", h1),
                            ]);
                            let size = reported("size", pkg.served.len().to_string());
                            v.insert("package_size".into(), size.parse::<u64>().unwrap().into());
                            v
                        })
                        .collect(),
                )
            }
            "ascii_armor" => Some(
                self.keys
                    .iter()
                    .map(|(id, armor)| {
                        vars([("key_id", id.clone()), ("ascii_armor", armor.clone())])
                    })
                    .collect(),
            ),
            _ => None,
        }
    }
}

/// Answers a request below `/git/` with `git http-backend`, as a CGI
/// script behind a web server.
async fn git_backend(
    root: &std::path::Path,
    req: Request<hyper::body::Incoming>,
) -> Response<OriginBody> {
    use tokio::io::AsyncWriteExt;
    let header = |name: &str| {
        req.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned()
    };
    let (content_type, protocol, encoding) = (
        header("content-type"),
        header("git-protocol"),
        header("content-encoding"),
    );
    let method = req.method().to_string();
    let path_info = req.uri().path().trim_start_matches("/git").to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let body = req.into_body().collect().await.unwrap().to_bytes();
    let mut child = tokio::process::Command::new(super::git_http_backend())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_PROJECT_ROOT", root)
        .env("GIT_HTTP_EXPORT_ALL", "1")
        .env("REQUEST_METHOD", method)
        .env("PATH_INFO", path_info)
        .env("QUERY_STRING", query)
        .env("CONTENT_TYPE", content_type)
        .env("CONTENT_LENGTH", body.len().to_string())
        .env("HTTP_GIT_PROTOCOL", protocol)
        .env("HTTP_CONTENT_ENCODING", encoding)
        .env("REMOTE_ADDR", "127.0.0.1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("git http-backend runs");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&body).await.unwrap();
    drop(stdin);
    let out = child.wait_with_output().await.unwrap();
    let split = out
        .stdout
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4))
        .or_else(|| {
            out.stdout
                .windows(2)
                .position(|w| w == b"\n\n")
                .map(|i| (i, 2))
        });
    let Some((at, gap)) = split else {
        return reply(StatusCode::BAD_GATEWAY, "text/plain", out.stdout);
    };
    let head = String::from_utf8_lossy(&out.stdout[..at]).into_owned();
    let mut r = reply(
        StatusCode::OK,
        "application/octet-stream",
        out.stdout[at + gap..].to_vec(),
    );
    for line in head.lines() {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("status") {
            let code = value.split_whitespace().next().unwrap_or("500");
            *r.status_mut() = StatusCode::from_u16(code.parse().unwrap_or(500)).unwrap();
        } else if let (Ok(n), Ok(v)) = (
            http::header::HeaderName::from_bytes(name.trim().as_bytes()),
            http::HeaderValue::from_str(value),
        ) {
            r.headers_mut().insert(n, v);
        }
    }
    r
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

/// Publishes the fixture widget 1.1.0 archive (`linux_amd64`) under
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
        vec![(String::new(), key)],
    );
}
