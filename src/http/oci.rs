//! OpenTofu's `oci_mirror` paths: the read side of the OCI Distribution
//! API under `/v2/`, with one repository per provider,
//! `/v2/<hostname>/<namespace>/<type>` (a `repository_template` of
//! `"mirror.example/${hostname}/${namespace}/${type}"`): `GET /v2/`,
//! `tags/list`, manifests by tag or digest and blobs by digest, `GET` and
//! `HEAD`. Errors carry the OCI error body (`{"errors":[{"code",
//! "message"}]}`); an unknown repository is `404 NAME_UNKNOWN`, which
//! sends OpenTofu on to its next installation method.

use http::{header, HeaderValue, Response, StatusCode};

use super::body::Body;
use super::respond::with_type;
use crate::address::oci::{Digest, Reference};
use crate::address::{Hostname, Namespace, Provider, ProviderType};
use crate::error::RequestError;
use crate::mirror::oci::{OciManifest, EMPTY_CONFIG};
use crate::mirror::Mirror;

/// What an OCI path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciRoute {
    /// `/v2/`: the API's root, answered 200.
    Base,
    /// `/v2/<repo>/tags/list`: a provider's versions as tags.
    Tags(Provider),
    /// `/v2/<repo>/manifests/<reference>`.
    Manifest(Provider, Reference),
    /// `/v2/<repo>/blobs/<digest>`.
    Blob(Provider, Digest),
}

/// Whether a path is on the OCI API.
pub fn is_oci_path(path: &str) -> bool {
    path == "/v2" || path.starts_with("/v2/")
}

/// Parses a path below `/v2/`, its segments already decoded.
pub fn route(segments: &[&str]) -> Result<OciRoute, RequestError> {
    let provider = |host: &str, namespace: &str, kind: &str| {
        Ok::<_, RequestError>(Provider {
            hostname: Hostname::parse(host)?,
            namespace: Namespace::parse(namespace)?,
            kind: ProviderType::parse(kind)?,
        })
    };
    match segments {
        [] => Ok(OciRoute::Base),
        [host, ns, kind, "tags", "list"] => Ok(OciRoute::Tags(provider(host, ns, kind)?)),
        [host, ns, kind, "manifests", reference] => Ok(OciRoute::Manifest(
            provider(host, ns, kind)?,
            Reference::parse(reference)?,
        )),
        [host, ns, kind, "blobs", digest] => Ok(OciRoute::Blob(
            provider(host, ns, kind)?,
            Digest::parse(digest)?,
        )),
        _ => Err(RequestError::NotAtOrigin(
            "no such repository: this mirror serves /v2/<hostname>/<namespace>/<type>".into(),
        )),
    }
}

/// The answer to a route other than an archive blob (which the caller
/// serves as it serves any archive).
pub async fn respond(
    mirror: &Mirror,
    route: &OciRoute,
    query: Option<&str>,
) -> Result<Response<Body>, RequestError> {
    match route {
        OciRoute::Base => {
            let mut resp = with_type(StatusCode::OK, b"{}".to_vec(), "application/json");
            resp.headers_mut().insert(
                "docker-distribution-api-version",
                HeaderValue::from_static("registry/2.0"),
            );
            Ok(resp)
        }
        OciRoute::Tags(provider) => {
            let tags = mirror.oci_tags(provider).await?;
            Ok(tags_page(provider, &tags, query))
        }
        OciRoute::Manifest(..) | OciRoute::Blob(..) => Err(RequestError::Internal(
            "an OCI manifest or blob reached the plain responder".into(),
        )),
    }
}

/// A manifest's answer, with the headers ORAS requires.
pub fn manifest_response(manifest: &OciManifest) -> Response<Body> {
    let mut resp = with_type(StatusCode::OK, manifest.bytes.to_vec(), manifest.media_type);
    with_digest(&mut resp, &manifest.digest);
    resp
}

/// The two-byte empty config blob.
pub fn empty_config_response() -> Response<Body> {
    let mut resp = with_type(
        StatusCode::OK,
        EMPTY_CONFIG.to_vec(),
        "application/vnd.oci.empty.v1+json",
    );
    with_digest(&mut resp, &Digest::of(EMPTY_CONFIG));
    resp
}

/// Adds `Docker-Content-Digest`.
pub fn with_digest(resp: &mut Response<Body>, digest: &Digest) {
    if let Ok(v) = HeaderValue::from_str(digest.as_str()) {
        resp.headers_mut().insert("docker-content-digest", v);
    }
}

/// One page of tags: all of them, or `n` after `last` with a `Link` to
/// the next page.
fn tags_page(provider: &Provider, tags: &[String], query: Option<&str>) -> Response<Body> {
    let mut n = None;
    let mut last = None;
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        match &*key {
            "n" => n = value.parse::<usize>().ok(),
            "last" => last = Some(value.into_owned()),
            _ => {}
        }
    }
    let start = last
        .as_deref()
        .and_then(|l| tags.iter().position(|t| t == l).map(|i| i + 1))
        .unwrap_or(0);
    let remaining = &tags[start.min(tags.len())..];
    let (page, more) = match n {
        Some(n) if n < remaining.len() => (&remaining[..n], true),
        _ => (remaining, false),
    };
    let name = format!(
        "{}/{}/{}",
        provider.hostname, provider.namespace, provider.kind
    );
    let body = serde_json::json!({ "name": name, "tags": page });
    let mut resp = with_type(
        StatusCode::OK,
        serde_json::to_vec(&body).expect("documents always serialize"),
        "application/json",
    );
    if let (true, Some(n), Some(last)) = (more, n, page.last()) {
        let link = format!("</v2/{name}/tags/list?n={n}&last={last}>; rel=\"next\"");
        if let Ok(v) = HeaderValue::from_str(&link) {
            resp.headers_mut().insert(header::LINK, v);
        }
    }
    resp
}

/// The OCI error answer for `e` on `path`, with the status every route
/// uses for that cause.
pub fn error_response(e: &RequestError, path: &str) -> Response<Body> {
    let status = e.status();
    let code = match status {
        StatusCode::BAD_REQUEST => "NAME_INVALID",
        StatusCode::UNAUTHORIZED => "UNAUTHORIZED",
        StatusCode::FORBIDDEN => "DENIED",
        StatusCode::NOT_FOUND if path.contains("/manifests/") => "MANIFEST_UNKNOWN",
        StatusCode::NOT_FOUND if path.contains("/blobs/") => "BLOB_UNKNOWN",
        StatusCode::NOT_FOUND => "NAME_UNKNOWN",
        StatusCode::METHOD_NOT_ALLOWED => "UNSUPPORTED",
        StatusCode::TOO_MANY_REQUESTS => "TOOMANYREQUESTS",
        _ => "UNKNOWN",
    };
    let body = serde_json::json!({ "errors": [{ "code": code, "message": e.to_string() }] });
    let mut resp = with_type(
        status,
        serde_json::to_vec(&body).expect("documents always serialize"),
        "application/json",
    );
    if status == StatusCode::UNAUTHORIZED {
        // Basic: OCI clients then send the configured username and
        // password (the token) without looking for a token service.
        resp.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"tfmirror\""),
        );
    }
    resp
}
