//! A real S3-compatible server for the bucket tests: SeaweedFS's `weed
//! server -s3` on loopback, from `WEED_BIN` (the README's test command
//! installs it), with one identity whose credentials the tests hand to
//! tfmirror. Buckets are created by the first write to them.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use tfmirror::config::{S3Config, StorageBackend};

pub const ACCESS_KEY: &str = "tfmirror-test";
pub const SECRET_KEY: &str = "tfmirror-test-secret";

/// The `weed` binary. Tests that call this are ignored where it is
/// missing, outside CI (see `build.rs`).
pub fn weed_program() -> PathBuf {
    match std::env::var_os("WEED_BIN") {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        other => panic!(
            "WEED_BIN must name SeaweedFS's weed binary (got {other:?}); run the README's test command"
        ),
    }
}

/// A running SeaweedFS with its S3 gateway.
pub struct Seaweed {
    child: Option<Child>,
    dir: tempfile::TempDir,
    /// master, volume, filer, s3: each also takes its port + 10000 (gRPC).
    ports: [u16; 4],
    log: PathBuf,
}

/// A port that is free, with its gRPC twin (port + 10000) free too.
fn free_port_pair(taken: &[u16]) -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if port > 55_000 || taken.contains(&port) || taken.contains(&(port + 10_000)) {
            continue;
        }
        if TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok() {
            return port;
        }
    }
}

impl Seaweed {
    /// Starts a server with its own data directory and waits until its S3
    /// gateway answers. Its ports are free when chosen, but another
    /// process (another test's server) may take one before it binds; the
    /// server then exits, and it is started again on other ports.
    pub async fn start() -> Seaweed {
        let dir = tempfile::tempdir().unwrap();
        let ports = [0u16; 4];
        let config = serde_json::json!({
            "identities": [{
                "name": "tfmirror",
                "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                "actions": ["Admin", "Read", "Write", "List", "Tagging"],
            }]
        });
        std::fs::write(dir.path().join("s3.json"), config.to_string()).unwrap();
        std::fs::create_dir_all(dir.path().join("data")).unwrap();
        let log = dir.path().join("weed.log");
        let mut s = Seaweed {
            child: None,
            dir,
            ports,
            log,
        };
        for attempt in 1..=3 {
            for i in 0..4 {
                s.ports[i] = free_port_pair(&s.ports[..i]);
            }
            s.spawn_process();
            if s.wait_ready().await {
                return s;
            }
            eprintln!("SeaweedFS exited at start (attempt {attempt}, a port taken meanwhile); again on other ports");
            s.stop();
        }
        panic!(
            "SeaweedFS exited at start three times; see {}",
            s.log.display()
        );
    }

    async fn spawn(&mut self) {
        self.spawn_process();
        assert!(self.wait_ready().await, "SeaweedFS exited at restart");
    }

    fn spawn_process(&mut self) {
        let [master, volume, filer, s3] = self.ports;
        let dir = self.dir.path();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .unwrap();
        let child = Command::new(weed_program())
            .arg("server")
            .arg(format!("-dir={}", dir.join("data").display()))
            .args(["-ip=127.0.0.1", "-ip.bind=127.0.0.1"])
            .arg(format!("-master.port={master}"))
            .arg(format!("-volume.port={volume}"))
            .arg(format!("-filer.port={filer}"))
            .arg("-s3")
            .arg(format!("-s3.port={s3}"))
            .args(["-s3.port.iceberg=0", "-s3.port.lance=0"])
            .arg(format!("-s3.config={}", dir.join("s3.json").display()))
            .args(["-volume.max=16", "-master.volumeSizeLimitMB=64"])
            // Volumes turn read-only below this much free disk (1% of the
            // disk by default, which a nearly full build machine is below);
            // the tests write a few tens of MiB.
            .arg("-volume.minFreeSpace=256MiB")
            .arg("-master.telemetry=false")
            // A restarted master elects itself within a second, not ten.
            .arg("-master.electionTimeout=1s")
            .stdout(Stdio::from(log.try_clone().unwrap()))
            .stderr(Stdio::from(log))
            .spawn()
            .unwrap();
        self.child = Some(child);
    }

    /// Waits until the S3 gateway answers HTTP and a bucket write succeeds
    /// (the volume servers have registered): `false` when the server
    /// exits first; panics with the end of the server's log when neither
    /// happens within a minute.
    async fn wait_ready(&mut self) -> bool {
        let addr = self.s3_addr();
        let store = self.object_store("readiness");
        let child = self.child.as_mut().expect("started");
        let exited = std::cell::Cell::new(false);
        let settled = super::answered_within(Duration::from_secs(60), || {
            exited.set(child.try_wait().ok().flatten().is_some());
            let (store, exited) = (&store, exited.get());
            async move {
                exited
                    || (TcpStream::connect(addr).is_ok()
                        && object_store::ObjectStoreExt::put(
                            store,
                            &object_store::path::Path::from("ready"),
                            object_store::PutPayload::from_static(b"ok"),
                        )
                        .await
                        .is_ok())
            }
        })
        .await;
        if exited.get() {
            return false;
        }
        if !settled {
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(40).collect();
            let tail: Vec<&str> = tail.into_iter().rev().collect();
            panic!(
                "SeaweedFS did not become ready within 60 s; the end of its log:\n{}",
                tail.join("\n")
            );
        }
        true
    }

    pub fn s3_addr(&self) -> SocketAddr {
        SocketAddr::from(([127, 0, 0, 1], self.ports[3]))
    }

    pub fn endpoint(&self) -> String {
        format!("http://{}", self.s3_addr())
    }

    /// Stops the server (SIGKILL) and waits for it to be gone.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the server again on the same data and ports.
    pub async fn restart(&mut self) {
        self.stop();
        self.spawn().await;
    }

    /// A client of `bucket`, for the tests' own look into it.
    pub fn object_store(&self, bucket: &str) -> object_store::aws::AmazonS3 {
        let _ = rustls::crypto::ring::default_provider().install_default();
        object_store::aws::AmazonS3Builder::new()
            .with_endpoint(self.endpoint())
            .with_bucket_name(bucket)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(SECRET_KEY)
            .with_allow_http(true)
            .with_virtual_hosted_style_request(false)
            // The tests wait for conditions themselves, with deadlines.
            .with_retry(object_store::RetryConfig {
                max_retries: 0,
                ..object_store::RetryConfig::default()
            })
            .build()
            .unwrap()
    }

    /// Every key in `bucket`, sorted.
    pub async fn keys(&self, bucket: &str) -> Vec<String> {
        use futures_util::TryStreamExt;
        let store = self.object_store(bucket);
        let mut keys: Vec<String> = object_store::ObjectStore::list(&store, None)
            .map_ok(|m| m.location.to_string())
            .try_collect()
            .await
            .unwrap();
        keys.sort();
        keys
    }

    /// Creates `bucket` (the server creates a bucket on its first write),
    /// leaving it empty.
    pub async fn create_bucket(&self, bucket: &str) {
        use object_store::ObjectStoreExt;
        let store = self.object_store(bucket);
        let marker = object_store::path::Path::from("created");
        store
            .put(&marker, object_store::PutPayload::from_static(b""))
            .await
            .unwrap();
        store.delete(&marker).await.unwrap();
    }

    /// `[storage.s3]` for tfmirror on `bucket` (which must exist), with the
    /// credentials in a file under `dir`.
    pub fn s3_config(&self, bucket: &str, dir: &Path) -> S3Config {
        let secret = dir.join("s3-secret");
        std::fs::write(&secret, SECRET_KEY).unwrap();
        S3Config {
            bucket: bucket.into(),
            prefix: "mirror".into(),
            endpoint: Some(self.endpoint().parse().unwrap()),
            region: "us-east-1".into(),
            allow_http: true,
            // Path-style, by default with an endpoint.
            path_style: None,
            access_key_id: Some(ACCESS_KEY.into()),
            secret_access_key_file: Some(secret),
            redirect: false,
            local_cache: None,
            lease_time: Duration::from_secs(3),
        }
    }

    /// The same as TOML, for a configuration file.
    pub fn storage_toml(&self, bucket: &str, dir: &Path) -> String {
        let s3 = self.s3_config(bucket, dir);
        format!(
            "[storage]\nbackend = \"s3\"\n[storage.s3]\nbucket = \"{bucket}\"\nprefix = \"{prefix}\"\nendpoint = \"{endpoint}\"\nallow_http = true\naccess_key_id = \"{id}\"\nsecret_access_key_file = \"{secret}\"\nlease_time = \"3s\"\n",
            prefix = s3.prefix,
            endpoint = self.endpoint(),
            id = ACCESS_KEY,
            secret = s3.secret_access_key_file.unwrap().display(),
        )
    }
}

/// Puts a configuration on `bucket`.
pub fn use_bucket(config: &mut tfmirror::config::Config, s3: S3Config) {
    config.storage.backend = StorageBackend::S3;
    config.storage.s3 = Some(s3);
}

impl Drop for Seaweed {
    fn drop(&mut self) {
        self.stop();
    }
}
