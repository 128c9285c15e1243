//! The write side of the OCI Distribution API, as `push-oci` uses it:
//! whether a manifest or blob is there (`HEAD`), blob uploads (`POST` then
//! one `PUT` with the whole blob, streamed), manifests put by digest or
//! tag. Authentication follows the registry's challenge: `Basic` with the
//! credential, or `Bearer` with a token from the named service for
//! `repository:<repo>:pull,push` (asked with the credential, or
//! anonymously), kept per repository. `Authorization` is never sent to
//! another host a redirect leads to.

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{bail, Context};
use reqwest::header::{HeaderMap, ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode};
use url::Url;

use super::auth::Credential;
use crate::address::oci::Digest;
use crate::mirror::oci::{INDEX_TYPE, MANIFEST_TYPE};

/// A site's OCI registry, over HTTPS.
#[derive(Clone)]
pub struct Registry {
    http: reqwest::Client,
    base: Url,
    credential: Credential,
    /// The `Authorization` value that worked, per repository.
    granted: Arc<Mutex<HashMap<String, String>>>,
}

/// A request, built afresh for each attempt.
type Build<'a> = &'a (dyn Fn(reqwest::RequestBuilder) -> reqwest::RequestBuilder + Sync);

impl Registry {
    /// A client for the registry at `host[:port]`, trusting the built-in
    /// and system roots and those of `ca_file`.
    pub fn new(
        host: &str,
        credential: Credential,
        ca_file: Option<&Path>,
    ) -> anyhow::Result<Registry> {
        let tls = crate::upstream::client::tls_config(ca_file, "the registry's ca_file")?;
        let http = reqwest::Client::builder()
            .tls_backend_preconfigured(tls)
            .user_agent(concat!("tfmirror/", env!("CARGO_PKG_VERSION")))
            .build()
            .context("building the registry client")?;
        let base = Url::parse(&format!("https://{host}/"))
            .with_context(|| format!("{host} is not a registry host[:port]"))?;
        Ok(Registry {
            http,
            base,
            credential,
            granted: Arc::default(),
        })
    }

    /// The `Authorization` value that worked for `repo`, if any.
    fn granted(&self, repo: &str) -> Option<String> {
        self.granted
            .lock()
            .expect("granted lock")
            .get(repo)
            .cloned()
    }

    /// The registry's `host[:port]`.
    pub fn host(&self) -> &str {
        &self.base[url::Position::BeforeHost..url::Position::AfterPort]
    }

    fn url(&self, path: &str) -> Url {
        self.base.join(path).expect("registry paths join")
    }

    /// Sends a request for `repo`, answering the registry's challenge
    /// once when it asks for credentials.
    async fn send(
        &self,
        repo: &str,
        method: Method,
        url: Url,
        build: Build<'_>,
    ) -> anyhow::Result<reqwest::Response> {
        let granted = self.granted(repo);
        let first = self
            .attempt(&method, &url, granted.as_deref(), build)
            .await?;
        if first.status() != StatusCode::UNAUTHORIZED {
            return Ok(first);
        }
        let challenge = first
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let header = self.answer(repo, &challenge).await?;
        let second = self.attempt(&method, &url, Some(&header), build).await?;
        if second.status() == StatusCode::UNAUTHORIZED || second.status() == StatusCode::FORBIDDEN {
            bail!(
                "{} {url}: {} with the credentials given ({:?})",
                method,
                second.status(),
                self.credential
            );
        }
        self.granted
            .lock()
            .expect("granted lock")
            .insert(repo.to_owned(), header);
        Ok(second)
    }

    async fn attempt(
        &self,
        method: &Method,
        url: &Url,
        authorization: Option<&str>,
        build: Build<'_>,
    ) -> anyhow::Result<reqwest::Response> {
        let mut request = build(self.http.request(method.clone(), url.clone()));
        if let Some(value) = authorization {
            request = request.header(AUTHORIZATION, value);
        }
        request
            .send()
            .await
            .with_context(|| format!("{method} {url}"))
    }

    /// The `Authorization` value that answers a challenge.
    async fn answer(&self, repo: &str, challenge: &str) -> anyhow::Result<String> {
        let (scheme, params) = parse_challenge(challenge);
        if scheme.eq_ignore_ascii_case("basic") {
            return self.credential.basic_header().with_context(|| {
                format!("the registry asks for a username and password (Basic) for {repo}; give them in an auth file or as username and token")
            });
        }
        if !scheme.eq_ignore_ascii_case("bearer") {
            bail!("the registry asks for authentication tfmirror does not speak: {challenge:?}");
        }
        if let Credential::Bearer(token) = &self.credential {
            return Ok(format!("Bearer {token}"));
        }
        let realm = params
            .get("realm")
            .with_context(|| format!("a Bearer challenge without a realm: {challenge:?}"))?;
        let mut url = Url::parse(realm).with_context(|| format!("the token realm {realm:?}"))?;
        if url.scheme() != "https" {
            bail!("the token realm {realm} is not https");
        }
        {
            let mut query = url.query_pairs_mut();
            if let Some(service) = params.get("service") {
                query.append_pair("service", service);
            }
            query.append_pair("scope", &format!("repository:{repo}:pull,push"));
        }
        let mut request = self.http.get(url.clone());
        if let Some(basic) = self.credential.basic_header() {
            request = request.header(AUTHORIZATION, basic);
        }
        let answer = request.send().await.with_context(|| format!("GET {url}"))?;
        if !answer.status().is_success() {
            bail!("the token service {url} answered {}", answer.status());
        }
        let body: serde_json::Value = answer.json().await.context("the token service's answer")?;
        let token = body["token"]
            .as_str()
            .or_else(|| body["access_token"].as_str())
            .context("the token service's answer holds no token")?;
        Ok(format!("Bearer {token}"))
    }

    /// The digest of the manifest `reference` names in `repo`, if any.
    pub async fn manifest_digest(
        &self,
        repo: &str,
        reference: &str,
    ) -> anyhow::Result<Option<Digest>> {
        let url = self.url(&format!("v2/{repo}/manifests/{reference}"));
        let accept = format!("{INDEX_TYPE}, {MANIFEST_TYPE}");
        let build = |r: reqwest::RequestBuilder| r.header(ACCEPT, accept.as_str());
        let head = self.send(repo, Method::HEAD, url.clone(), &build).await?;
        match head.status() {
            StatusCode::NOT_FOUND => return Ok(None),
            s if !s.is_success() => bail!("HEAD {url}: {s}"),
            _ => {}
        }
        if let Some(d) = digest_header(head.headers()) {
            return Ok(Some(d));
        }
        // Some registries leave the digest out of HEAD answers.
        let get = self.send(repo, Method::GET, url.clone(), &build).await?;
        let bytes = get.error_for_status()?.bytes().await?;
        Ok(Some(Digest::of(&bytes)))
    }

    /// Whether `repo` holds the blob `digest`.
    pub async fn has_blob(&self, repo: &str, digest: &Digest) -> anyhow::Result<bool> {
        let url = self.url(&format!("v2/{repo}/blobs/{digest}"));
        let head = self.send(repo, Method::HEAD, url.clone(), &|r| r).await?;
        match head.status() {
            StatusCode::NOT_FOUND => Ok(false),
            s if s.is_success() => Ok(true),
            s => bail!("HEAD {url}: {s}"),
        }
    }

    /// Uploads a blob of `size` bytes to `repo`; the registry checks its
    /// digest.
    pub async fn upload_blob(
        &self,
        repo: &str,
        digest: &Digest,
        size: u64,
        body: reqwest::Body,
    ) -> anyhow::Result<()> {
        let start = self.url(&format!("v2/{repo}/blobs/uploads/"));
        let begun = self
            .send(repo, Method::POST, start.clone(), &|r| {
                r.header(CONTENT_LENGTH, "0")
            })
            .await?;
        if begun.status() != StatusCode::ACCEPTED {
            bail!("POST {start}: {} (an upload was not begun)", begun.status());
        }
        let location = begun
            .headers()
            .get(LOCATION)
            .and_then(|v| v.to_str().ok())
            .with_context(|| format!("POST {start}: no Location for the upload"))?;
        let mut url = start.join(location).context("the upload's Location")?;
        url.query_pairs_mut().append_pair("digest", digest.as_str());
        let mut request = self
            .http
            .put(url.clone())
            .header(CONTENT_TYPE, "application/octet-stream")
            .header(CONTENT_LENGTH, size)
            .body(body);
        let granted = self.granted(repo);
        if let Some(value) = granted {
            request = request.header(AUTHORIZATION, value);
        }
        let put = request.send().await.with_context(|| format!("PUT {url}"))?;
        created(put, &url).await
    }

    /// Puts a manifest into `repo` under `reference` (a tag or its digest).
    pub async fn put_manifest(
        &self,
        repo: &str,
        reference: &str,
        media_type: &str,
        bytes: &[u8],
    ) -> anyhow::Result<()> {
        let url = self.url(&format!("v2/{repo}/manifests/{reference}"));
        let body = bytes.to_vec();
        let build =
            |r: reqwest::RequestBuilder| r.header(CONTENT_TYPE, media_type).body(body.clone());
        let put = self.send(repo, Method::PUT, url.clone(), &build).await?;
        created(put, &url).await
    }
}

/// Whether a `PUT` to `url` was answered `201 Created`; else the status
/// and the registry's own words.
async fn created(put: reqwest::Response, url: &Url) -> anyhow::Result<()> {
    if put.status() == StatusCode::CREATED {
        return Ok(());
    }
    let status = put.status();
    let text = put.text().await.unwrap_or_default();
    bail!("PUT {url}: {status} {}", text.trim())
}

fn digest_header(headers: &HeaderMap) -> Option<Digest> {
    headers
        .get("docker-content-digest")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| Digest::parse(v).ok())
}

/// A `WWW-Authenticate` challenge's scheme and parameters.
fn parse_challenge(challenge: &str) -> (String, HashMap<String, String>) {
    let (scheme, rest) = challenge
        .trim()
        .split_once(' ')
        .unwrap_or((challenge.trim(), ""));
    let mut params = HashMap::new();
    let mut rest = rest.trim();
    while let Some((key, after)) = rest.split_once('=') {
        let key = key
            .trim()
            .trim_start_matches(',')
            .trim()
            .to_ascii_lowercase();
        let (value, next) = if let Some(quoted) = after.strip_prefix('"') {
            let end = quoted.find('"').unwrap_or(quoted.len());
            (&quoted[..end], quoted.get(end + 1..).unwrap_or(""))
        } else {
            after.split_once(',').unwrap_or((after, ""))
        };
        params.insert(key, value.to_owned());
        rest = next.trim_start_matches(',').trim();
    }
    (scheme.to_owned(), params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_are_read_with_quoted_and_bare_values() {
        let (scheme, params) = parse_challenge(
            r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a/b:pull,push""#,
        );
        assert_eq!(scheme, "Bearer");
        assert_eq!(params["realm"], "https://auth.example/token");
        assert_eq!(params["service"], "registry.example");
        assert_eq!(params["scope"], "repository:a/b:pull,push");
        let (scheme, params) = parse_challenge("Basic realm=Registry");
        assert_eq!(scheme, "Basic");
        assert_eq!(params["realm"], "Registry");
    }
}
