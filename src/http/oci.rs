//! OpenTofu's `oci_mirror` paths and `oci://` module sources: the read
//! side of the OCI Distribution API under `/v2/`, with one repository per
//! provider, `/v2/<hostname>/<namespace>/<type>` (a `repository_template`
//! of `"mirror.example/${hostname}/${namespace}/${type}"`), and one per
//! registry module, `/v2/<hostname>/<namespace>/<name>/<system>`: `GET /v2/`,
//! `tags/list`, manifests by tag or digest and blobs by digest, `GET` and
//! `HEAD`. Errors carry the OCI error body (`{"errors":[{"code",
//! "message"}]}`); an unknown repository is `404 NAME_UNKNOWN`, which
//! sends OpenTofu on to its next installation method.

use std::sync::Arc;

use http::{header, HeaderValue, Response, StatusCode};

use super::audit::Served;
use super::body::Body;
use super::respond::with_type;
use crate::address::oci::{Digest, OciRepo, Reference};
use crate::address::{
    ArchiveKey, Hostname, Module, ModuleName, ModuleNamespace, ModuleSystem, Namespace, Provider,
    ProviderType,
};
use crate::error::RequestError;
use crate::mirror::oci::{OciBlob, OciManifest, EMPTY_CONFIG};
use crate::mirror::Mirror;

/// What an OCI path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OciRoute {
    /// `/v2/`: the API's root, answered 200.
    Base,
    /// `/v2/<repo>/tags/list`: the versions as tags.
    Tags(OciRepo),
    /// `/v2/<repo>/manifests/<reference>`.
    Manifest(OciRepo, Reference),
    /// `/v2/<repo>/blobs/<digest>`.
    Blob(OciRepo, Digest),
}

/// Whether a path is on the OCI API.
pub fn is_oci_path(path: &str) -> bool {
    path == "/v2" || path.starts_with("/v2/")
}

/// The repository named by the segments before the route's own.
fn repo(names: &[&str]) -> Result<OciRepo, RequestError> {
    match names {
        [host, namespace, kind] => Ok(OciRepo::Provider(Provider {
            hostname: Hostname::parse(host)?,
            namespace: Namespace::parse(namespace)?,
            kind: ProviderType::parse(kind)?,
        })),
        [host, namespace, name, system] => Ok(OciRepo::Module(Module {
            hostname: Hostname::parse(host)?,
            namespace: ModuleNamespace::parse(namespace)?,
            name: ModuleName::parse(name)?,
            system: ModuleSystem::parse(system)?,
        })),
        _ => Err(RequestError::NotAtOrigin(
            "no such repository: this mirror serves providers at /v2/<hostname>/<namespace>/<type> and modules at /v2/<hostname>/<namespace>/<name>/<system>".into(),
        )),
    }
}

/// Parses a path below `/v2/`, its segments already decoded.
pub fn route(segments: &[&str]) -> Result<OciRoute, RequestError> {
    match segments {
        [] => Ok(OciRoute::Base),
        [names @ .., "tags", "list"] => Ok(OciRoute::Tags(repo(names)?)),
        [names @ .., "manifests", reference] => Ok(OciRoute::Manifest(
            repo(names)?,
            Reference::parse(reference)?,
        )),
        [names @ .., "blobs", digest] => Ok(OciRoute::Blob(repo(names)?, Digest::parse(digest)?)),
        names => Err(repo(names).err().unwrap_or_else(|| {
            RequestError::NotAtOrigin("no such OCI path: tags/list, manifests or blobs".into())
        })),
    }
}

/// The answer to a route other than an archive blob (which the caller
/// serves as it serves any archive).
pub async fn respond(
    mirror: &std::sync::Arc<Mirror>,
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
        OciRoute::Tags(repo) => {
            let tags = match repo {
                OciRepo::Provider(provider) => mirror.oci_tags(provider).await?,
                OciRepo::Module(module) => mirror.oci_module_tags(module).await?,
            };
            Ok(tags_page(repo, &tags, query))
        }
        OciRoute::Manifest(..) | OciRoute::Blob(..) => Err(RequestError::Internal(
            "an OCI manifest or blob reached the plain responder".into(),
        )),
    }
}

/// A blob, found.
pub enum Blob {
    /// A provider's archive, which the caller serves as any archive.
    Archive(ArchiveKey),
    /// An answer ready to send, and what it serves for the audit trail.
    Ready(Option<Served>, Response<Body>),
}

/// Finds the blob a digest names in a repository.
pub async fn blob(
    mirror: &Arc<Mirror>,
    repo: &OciRepo,
    digest: &Digest,
) -> Result<Blob, RequestError> {
    if *digest == Digest::of(EMPTY_CONFIG) {
        return Ok(Blob::Ready(None, empty_config_response()));
    }
    match repo {
        OciRepo::Provider(provider) => match mirror.oci_blob(provider, digest).await? {
            OciBlob::EmptyConfig => Ok(Blob::Ready(None, empty_config_response())),
            OciBlob::Archive(key) => Ok(Blob::Archive(key)),
        },
        OciRepo::Module(module) => {
            let reference = Reference::Digest(digest.clone());
            let (version, artifact) = mirror.oci_module_find(module, &reference).await?;
            if artifact.layer != *digest {
                return Err(RequestError::NotHeld(format!(
                    "{digest} is a manifest of module {module}, not a blob"
                )));
            }
            let mut resp = with_type(StatusCode::OK, artifact.zip.to_vec(), "archive/zip");
            with_digest(&mut resp, digest);
            Ok(Blob::Ready(
                Some(Served::Package(module.clone(), version)),
                resp,
            ))
        }
    }
}

/// A module version's manifest, by tag or by its own digest.
pub async fn module_manifest(
    mirror: &Arc<Mirror>,
    module: &Module,
    reference: &Reference,
) -> Result<Response<Body>, RequestError> {
    let (_, artifact) = mirror.oci_module_find(module, reference).await?;
    match reference {
        Reference::Digest(digest) if *digest != artifact.manifest.digest => {
            Err(RequestError::NotHeld(format!(
                "{digest} is a blob of module {module}, not a manifest"
            )))
        }
        _ => Ok(manifest_response(&artifact.manifest)),
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
fn tags_page(repo: &OciRepo, tags: &[String], query: Option<&str>) -> Response<Body> {
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
    let name = repo.to_string();
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
