//! A tfmirror running in this process (the same `Daemon` that
//! `tfmirror serve` runs), the test's directories and configuration, and
//! the usual scenes.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use tokio::net::TcpListener;

use super::{build_big_archive, sums_document, Client, FakeOrigin, Signer, TestCa};
use tfmirror::clock::ManualClock;
use tfmirror::config::{Config, HostConfig};
use tfmirror::daemon::{Daemon, Signal};
use tfmirror::http::App;
use tfmirror::mirror::Mirror;

/// A tfmirror running in this process, with its own cache and data dirs,
/// started the way `tfmirror serve` starts it (`tfmirror::daemon`).
pub struct RunningMirror {
    pub addr: SocketAddr,
    pub app: Arc<App>,
    pub mirror: Arc<Mirror>,
    /// The authority clients must trust (the mirror's generated one);
    /// empty when `server.tls` is off.
    pub ca_file: PathBuf,
    /// `https`, or `http` when `server.tls` is off.
    scheme: &'static str,
    /// The clock by which version lists and archive links expire: it moves
    /// only when a test moves it.
    pub clock: Arc<ManualClock>,
    signals: tokio::sync::mpsc::Sender<Signal>,
    task: Option<tokio::task::JoinHandle<()>>,
}

impl RunningMirror {
    pub async fn start(config: Config) -> RunningMirror {
        let m = Self::start_unbuilt(config).await;
        // A start without a snapshot walks the cache while it serves; the
        // tests read an index that knows the whole cache.
        tokio::time::timeout(Duration::from_secs(30), m.mirror.index_built())
            .await
            .expect("the archive index was not built from the cache within 30 s");
        m
    }

    /// Like `start`, returning as soon as the daemon serves, while it may
    /// still be walking its cache.
    pub async fn start_unbuilt(config: Config) -> RunningMirror {
        let listener = TcpListener::bind(config.server.listen).await.unwrap();
        let clock = ManualClock::new();
        let daemon = Daemon::with_clock(config, listener, clock.clone())
            .await
            .unwrap();
        let addr = daemon.local_addr().unwrap();
        let app = daemon.app().clone();
        let scheme = if daemon.tls().is_some() {
            "https"
        } else {
            "http"
        };
        let ca_file = daemon
            .tls()
            .and_then(|t| t.generated.clone())
            .map(|g| g.ca_cert)
            .unwrap_or_default();
        let (signals, rx) = tokio::sync::mpsc::channel(4);
        let task = tokio::spawn(async move {
            daemon.run(rx, || {}, || {}).await.unwrap();
        });
        RunningMirror {
            addr,
            mirror: app.mirror.clone(),
            app,
            ca_file,
            scheme,
            clock,
            signals,
            task: Some(task),
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}://127.0.0.1:{}{}", self.scheme, self.addr.port(), path)
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

impl Setup {
    /// Like [`Setup::config`] for `host`, which also maps `host`'s module
    /// registry to the origin's, with modules fetched by the tests' git.
    pub fn module_config(&self, origin: &FakeOrigin, host: &str) -> Config {
        let mut config = self.config(origin, &[], &[host]);
        config
            .upstream
            .hosts
            .get_mut(&host.parse().unwrap())
            .unwrap()
            .services
            .insert("modules.v1".into(), origin.modules_url().parse().unwrap());
        config.modules.git = super::git_program();
        config
    }
}

/// The keyless pin a cache holds for `registry.opentofu.org/acme/widget`
/// `version`, as JSON.
pub fn widget_pin(cache_dir: &Path, version: &str) -> serde_json::Value {
    let path = cache_dir.join(format!(
        "pins/registry.opentofu.org/acme/widget/{version}.json"
    ));
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
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

/// Copies every file below `from` to the same place below `to`, leaving
/// out those whose relative path starts with one of `skip`.
pub fn copy_tree(from: &Path, to: &Path, skip: &[&str]) {
    for rel in files_below(from) {
        if skip.iter().any(|s| rel.starts_with(s)) {
            continue;
        }
        let dest = to.join(&rel);
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(from.join(&rel), &dest).unwrap();
    }
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
        Scene::on(setup, origin, signer, archives, configure).await
    }

    /// A scene on an origin the test started and published to itself.
    pub async fn on(
        setup: Setup,
        origin: FakeOrigin,
        signer: Signer,
        archives: BTreeMap<String, Vec<u8>>,
        configure: impl FnOnce(&mut Config),
    ) -> Scene {
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

/// Publishes `acme/<kind>` versions whose `linux_amd64` archives each hold
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

/// A free port on loopback (free when asked; tests bind it soon after).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Runs `tfmirror sync` for one provider named on the command line
/// (`[host/]namespace/type[@constraints]`, for `linux_amd64`) in this
/// process, beside whatever else uses the cache; its summary.
pub async fn sync_one(config: &Config, provider: &str) -> tfmirror::site::fill::Summary {
    let (config, provider) = (config.clone(), provider.to_owned());
    tokio::task::spawn_blocking(move || {
        let platforms = [tfmirror::address::Platform::parse("linux_amd64").unwrap()];
        let selection = tfmirror::site::selection::Selection {
            providers: vec![
                tfmirror::site::selection::from_argument(&provider, &platforms).unwrap(),
            ],
            ..Default::default()
        };
        tfmirror::commands::sync::run(
            config,
            &selection,
            1,
            tfmirror::site::fill::Freshness::Cached,
        )
    })
    .await
    .unwrap()
    .unwrap()
}
