//! OCI registries in the tests: Debian's `docker-registry` (the CNCF
//! distribution registry) run on loopback over TLS with Basic
//! authentication; OpenTofu's OCI client replayed from its code (the
//! requests it sends, with their `Accept` headers, and every check it
//! makes of the answers) for a provider and a module package; and `PyPI`'s
//! oras SDK pulling the same artifacts as an independent client.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use http::{Method, StatusCode};

use super::{sha256_hex, wait_until_answered, Answer, Client, TestCa};

pub const INDEX: &str = "application/vnd.oci.image.index.v1+json";
pub const MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
/// ORAS-Go's `Accept` for resolving a tag (`defaultManifestMediaTypes`).
const RESOLVE_ACCEPT: &str = "application/vnd.docker.distribution.manifest.v2+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.oci.image.index.v1+json, application/vnd.oci.artifact.manifest.v1+json";

pub fn digest_of(bytes: &[u8]) -> String {
    format!("sha256:{}", sha256_hex(bytes))
}

pub fn header(a: &Answer, name: &str) -> String {
    a.headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
        .to_owned()
}

/// OpenTofu's client: where it asks, and the `Authorization` it sends.
pub struct Tofu<'a> {
    pub client: &'a Client,
    /// `https://host:port`.
    pub base: String,
    pub authorization: Option<String>,
}

impl<'a> Tofu<'a> {
    /// OpenTofu without credentials, asking a running mirror.
    pub fn at_mirror(client: &'a Client, mirror: &super::RunningMirror) -> Tofu<'a> {
        Tofu {
            client,
            base: mirror.url("").trim_end_matches('/').to_owned(),
            authorization: None,
        }
    }

    async fn send(&self, method: Method, path: &str, accept: Option<&str>) -> Answer {
        let mut headers = Vec::new();
        if let Some(a) = &self.authorization {
            headers.push(("authorization", a.as_str()));
        }
        if let Some(a) = accept {
            headers.push(("accept", a));
        }
        self.client
            .request_headers(method, &format!("{}{path}", self.base), &headers)
            .await
    }

    /// What OpenTofu checks of a manifest fetched by digest: the exact
    /// media type, the length, the digest header, the body's own digest,
    /// and the body's `mediaType` and `artifactType`.
    async fn manifest(
        &self,
        repo: &str,
        digest: &str,
        media_type: &str,
        artifact: &str,
    ) -> serde_json::Value {
        let a = self
            .send(
                Method::GET,
                &format!("/v2/{repo}/manifests/{digest}"),
                Some(media_type),
            )
            .await;
        assert_eq!(a.status, StatusCode::OK, "{}", a.error_text());
        assert_eq!(header(&a, "content-type"), media_type);
        assert_eq!(header(&a, "content-length"), a.body.len().to_string());
        assert_eq!(header(&a, "docker-content-digest"), digest);
        assert_eq!(digest_of(&a.body), digest, "the body hashes to its digest");
        let doc: serde_json::Value = serde_json::from_slice(&a.body).unwrap();
        assert_eq!(doc["mediaType"], media_type);
        assert_eq!(doc["artifactType"], artifact);
        doc
    }

    /// `HEAD` of a tag: its digest, with the length checked against the
    /// manifest.
    async fn resolve(&self, repo: &str, tag: &str, media_type: &str) -> String {
        let head = self
            .send(
                Method::HEAD,
                &format!("/v2/{repo}/manifests/{tag}"),
                Some(RESOLVE_ACCEPT),
            )
            .await;
        assert_eq!(head.status, StatusCode::OK, "HEAD {repo}:{tag}");
        assert_eq!(header(&head, "content-type"), media_type);
        assert!(head.body.is_empty(), "HEAD has no body");
        assert!(header(&head, "content-length").parse::<u64>().unwrap() > 0);
        header(&head, "docker-content-digest")
    }

    /// The one `archive/zip` layer of a manifest, fetched and checked.
    async fn zip_layer(&self, repo: &str, manifest: &serde_json::Value) -> Vec<u8> {
        let zips: Vec<&serde_json::Value> = manifest["layers"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|l| l["mediaType"] == "archive/zip")
            .collect();
        assert_eq!(zips.len(), 1, "{manifest}");
        let layer = zips[0]["digest"].as_str().unwrap();
        assert!(layer.starts_with("sha256:"));
        let blob = self
            .send(Method::GET, &format!("/v2/{repo}/blobs/{layer}"), None)
            .await;
        assert_eq!(blob.status, StatusCode::OK, "{}", blob.error_text());
        assert_eq!(blob.body.len() as u64, zips[0]["size"].as_u64().unwrap());
        assert_eq!(
            digest_of(&blob.body),
            layer,
            "package does not match digest"
        );
        blob.body.to_vec()
    }

    /// OpenTofu 1.10–1.12 installing `version` of the provider in `repo`
    /// for `platform`: the archive and the tag's digest.
    pub async fn install(&self, repo: &str, version: &str, platform: &str) -> (Vec<u8>, String) {
        let ping = self.send(Method::GET, "/v2/", None).await;
        assert_eq!(ping.status, StatusCode::OK);
        let tags = self
            .send(Method::GET, &format!("/v2/{repo}/tags/list"), None)
            .await;
        assert_eq!(tags.status, StatusCode::OK, "{}", tags.error_text());
        let tag = version.replace('+', "_");
        let listed = tags.json()["tags"].clone();
        assert!(
            listed.as_array().unwrap().iter().any(|t| t == tag.as_str()),
            "{listed}"
        );
        let index_digest = self.resolve(repo, &tag, INDEX).await;
        let index = self
            .manifest(
                repo,
                &index_digest,
                INDEX,
                "application/vnd.opentofu.provider",
            )
            .await;
        let (os, arch) = platform.split_once('_').unwrap();
        let matching: Vec<&serde_json::Value> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|m| m["artifactType"] == "application/vnd.opentofu.provider-target")
            .filter(|m| {
                assert_eq!(m["mediaType"], MANIFEST);
                m["platform"]["os"] == os && m["platform"]["architecture"] == arch
            })
            .collect();
        assert_eq!(
            matching.len(),
            1,
            "exactly one manifest for {platform}: {index}"
        );
        let digest = matching[0]["digest"].as_str().unwrap();
        let manifest = self
            .manifest(
                repo,
                digest,
                MANIFEST,
                "application/vnd.opentofu.provider-target",
            )
            .await;
        (self.zip_layer(repo, &manifest).await, index_digest)
    }

    /// OpenTofu installing the module package `oci://<repo>?tag=<tag>`:
    /// the zip and the manifest's digest.
    pub async fn module(&self, repo: &str, tag: &str) -> (Vec<u8>, String) {
        let ping = self.send(Method::GET, "/v2/", None).await;
        assert_eq!(ping.status, StatusCode::OK);
        let digest = self.resolve(repo, tag, MANIFEST).await;
        let manifest = self
            .manifest(
                repo,
                &digest,
                MANIFEST,
                "application/vnd.opentofu.modulepkg",
            )
            .await;
        (self.zip_layer(repo, &manifest).await, digest)
    }
}

/// The files of a zip, by name.
pub fn zip_files(zip: &[u8]) -> std::collections::BTreeMap<String, String> {
    use std::io::Read;
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut files = std::collections::BTreeMap::new();
    for i in 0..archive.len() {
        let mut f = archive.by_index(i).unwrap();
        if f.is_file() {
            let mut text = String::new();
            f.read_to_string(&mut text).unwrap();
            files.insert(f.name().unwrap().to_string(), text);
        }
    }
    files
}

/// Debian's `docker-registry`, on loopback over TLS with the test CA's
/// certificate, with Basic authentication for one user.
pub struct DockerRegistry {
    child: Child,
    dir: tempfile::TempDir,
    /// `127.0.0.1:<port>`.
    pub host: String,
}

pub const REGISTRY_USER: &str = "pusher";
pub const REGISTRY_PASSWORD: &str = "push-secret-0123";

impl DockerRegistry {
    pub async fn start(ca: &TestCa) -> DockerRegistry {
        let program = Path::new("/usr/bin/docker-registry");
        assert!(
            program.is_file(),
            "Debian's docker-registry is not installed; run the README's test command"
        );
        let dir = tempfile::tempdir().unwrap();
        let p = |name: &str| dir.path().join(name);
        std::fs::write(p("cert.pem"), &ca.cert_pem).unwrap();
        std::fs::write(p("key.pem"), &ca.key_pem).unwrap();
        let hash = bcrypt::hash(REGISTRY_PASSWORD, 4).unwrap();
        std::fs::write(p("htpasswd"), format!("{REGISTRY_USER}:{hash}\n")).unwrap();
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let host = format!("127.0.0.1:{port}");
        let config = format!(
            "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: {root}\nhttp:\n  addr: {host}\n  tls:\n    certificate: {cert}\n    key: {key}\nauth:\n  htpasswd:\n    realm: test-registry\n    path: {htpasswd}\n",
            root = p("data").display(),
            cert = p("cert.pem").display(),
            key = p("key.pem").display(),
            htpasswd = p("htpasswd").display(),
        );
        std::fs::write(p("config.yml"), config).unwrap();
        let log = std::fs::File::create(p("registry.log")).unwrap();
        let child = Command::new(program)
            .arg("serve")
            .arg(p("config.yml"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        let registry = DockerRegistry { child, dir, host };
        std::fs::write(registry.ca_file(), &ca.ca_pem).unwrap();
        let client = Client::trusting(&registry.ca_file());
        let url = format!("https://{}/v2/", registry.host);
        wait_until_answered("docker-registry to answer", Duration::from_secs(30), || {
            let (client, url) = (&client, &url);
            async move {
                client
                    .try_get(url)
                    .await
                    .is_some_and(|a| a.status == StatusCode::UNAUTHORIZED)
            }
        })
        .await;
        registry
    }

    pub fn ca_file(&self) -> PathBuf {
        self.dir.path().join("ca.pem")
    }

    pub fn basic() -> String {
        use base64::Engine;
        let pair = format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}");
        format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair)
        )
    }

    /// A Docker auth file (`$HOME/.docker/config.json`) with this
    /// registry's credentials.
    pub fn write_docker_config(&self, home: &Path) {
        use base64::Engine;
        let pair = format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}");
        let auth = base64::engine::general_purpose::STANDARD.encode(pair);
        let doc =
            serde_json::json!({ "auths": { format!("https://{}", self.host): { "auth": auth } } });
        std::fs::create_dir_all(home.join(".docker")).unwrap();
        std::fs::write(home.join(".docker/config.json"), doc.to_string()).unwrap();
    }
}

impl Drop for DockerRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `PyPI`'s oras SDK pulling `repo:tag` (`kind` "provider" or "module")
/// from `host` and checking every digest; what it found.
pub fn oras_pull(
    host: &str,
    repo: &str,
    tag: &str,
    kind: &str,
    ca_file: &Path,
    basic: Option<(&str, &str)>,
) -> serde_json::Value {
    let oras = std::env::var_os("ORAS_PY")
        .expect("ORAS_PY names the oras SDK; run the README's test command");
    let out = tempfile::tempdir().unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/oci/oras_pull.py");
    let mut cmd = Command::new("python3");
    cmd.arg(script)
        .args([host, repo, tag])
        .arg(ca_file)
        .arg(out.path())
        .env("PYTHONPATH", oras)
        .env("ORAS_KIND", kind)
        .env("REQUESTS_CA_BUNDLE", ca_file)
        .env("HOME", out.path());
    if let Some((user, password)) = basic {
        cmd.env("ORAS_USER", user).env("ORAS_PASSWORD", password);
    }
    let ran = cmd.output().unwrap();
    assert!(
        ran.status.success(),
        "oras pull {host}/{repo}:{tag} failed:\n{}{}",
        String::from_utf8_lossy(&ran.stdout),
        String::from_utf8_lossy(&ran.stderr)
    );
    let mut found: serde_json::Value = serde_json::from_slice(&ran.stdout).unwrap();
    // The layers' bytes, read before the directory goes.
    for layer in found["layers"].as_object_mut().unwrap().values_mut() {
        let bytes = std::fs::read(layer["file"].as_str().unwrap()).unwrap();
        layer["sha256"] = digest_of(&bytes).into();
    }
    found
}
