//! Request paths → typed requests.
//!
//! The mirror protocol's paths are `/:hostname/:namespace/:type/index.json`
//! and `/:hostname/:namespace/:type/:version.json`; tfmirror serves archives
//! beside them as `/:hostname/:namespace/:type/terraform-provider-<type>_<version>_<os>_<arch>.zip`,
//! the name `terraform providers mirror` gives them, and lock file blocks as
//! `/:hostname/:namespace/:type/:version.lock.hcl`. `/healthz`, `/readyz`
//! and `/metrics` are one-segment paths outside the protocol's
//! four-segment space; the pages are `/` and the paths below `/-/`, which
//! no hostname can begin (`crate::web::routes`).
//!
//! The provider registry facade lives under
//! `/v1/providers/:hostname/`, the base URL a `host` block names as the
//! origin's `providers.v1` service: `:namespace/:type/versions`,
//! `:namespace/:type/:version/download/:os/:arch`, and the origin's signed
//! checksums as `:namespace/:type/:version/sums/:n` with the signature at
//! `…/sums/:n.sig`. The module registry proxy lives under
//! `/v1/modules/:hostname/`, the base URL a `host` block names as the
//! origin's `modules.v1` service: `:namespace/:name/:system/versions`,
//! `:namespace/:name/:system/:version/download`, and the packaged source
//! tree at `:namespace/:name/:system/:version/package.tar.gz`. These have
//! six or more segments, so they never meet the mirror protocol's paths.
//!
//! CLI releases live where version managers look for them:
//! `/terraform/` (also without the slash), `/terraform/index.json`,
//! `/terraform/:version/index.json`, `/terraform/:version/` and
//! `/terraform/:version/:file` as releases.hashicorp.com lays them out;
//! `/tofu/` and `/tofu/api.json` with `/tofu/:version/:file` (TofuDL's
//! mirror layout); and `/opentofu/opentofu/releases/download/` with
//! `…/v:version/:file` (GitHub's release downloads). These are matched
//! before the mirror protocol's paths. Each segment is
//! percent-decoded and parsed into its validated type; anything else is a
//! bad request.

use std::borrow::Cow;

use percent_encoding::percent_decode_str;

pub use super::oci::OciRoute;
use crate::address::{
    ArchiveKey, ArtifactName, Hostname, Module, ModuleName, ModuleNamespace, ModuleSystem,
    Namespace, Platform, Product, Provider, ProviderType, ReleaseFile, Version,
};
use crate::error::RequestError;
use crate::metrics::Endpoint;
use crate::releases::layouts::ListingStyle;

mod kept;
pub use kept::parse_kept;

/// The longest request path accepted.
const MAX_PATH_LEN: usize = 1024;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// A page for people: `/`, or below `/-/` ([`crate::web::routes`]).
    Page(crate::web::routes::PageRoute),
    /// `/healthz`: the process is alive.
    Health,
    /// `/readyz`: the mirror can serve.
    Ready,
    /// `/metrics`: Prometheus metrics.
    Metrics,
    /// `index.json`: a provider's versions.
    Index(Provider),
    /// `:version.json`: a version's packages.
    Version(Provider, Version),
    /// An archive.
    Archive(ArchiveKey),
    /// `:version.lock.hcl`: a lock file block with the hashes of the
    /// platforms the query names (tfmirror's own, beside the protocol).
    Lock(Provider, Version),
    /// Registry facade: a provider's versions, protocols and platforms.
    RegistryVersions(Provider),
    /// Registry facade: one package's download metadata.
    RegistryPackage(ArchiveKey),
    /// Registry facade: a version's signed SHA256SUMS or its signature.
    RegistrySums(Provider, Version, SumsFile),
    /// Module registry: a module's versions.
    ModuleVersions(Module),
    /// Module registry: where a module version's package is.
    ModuleDownload(Module, Version),
    /// A module version's packaged source tree.
    ModulePackage(Module, Version),
    /// A CLI release document or file.
    Release(ReleaseRoute),
    /// OpenTofu's `oci_mirror` paths below `/v2/`.
    Oci(OciRoute),
}

/// What a CLI release path asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReleaseRoute {
    /// A product's HTML listing of versions.
    Listing(Product, ListingStyle),
    /// `/terraform/index.json`: every version.
    ProductIndex(Product),
    /// `/tofu/api.json`: TofuDL's list.
    Api(Product),
    /// `/terraform/:version/index.json`: a release's builds.
    VersionIndex(Product, Version),
    /// `/terraform/:version/`: the HTML listing of a release's files.
    VersionListing(Product, Version),
    /// A release file.
    File(ReleaseFile),
}

/// Who may use a route, when access control is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access<'a> {
    /// Anyone: the probes, the metrics, and the pages (which check who
    /// is asking themselves, and show more to a token holder).
    Open,
    /// Holders of a token.
    Token,
    /// A link the mirror signed for this archive (clients send no
    /// credentials with downloads).
    SignedArchive(&'a ArchiveKey),
    /// A link the mirror signed for this checksum document of a version.
    SignedSums(&'a Provider, &'a Version, usize),
    /// A link the mirror signed for this module package.
    SignedModule(&'a Module, &'a Version),
    /// Holders of a token, sent as a bearer token or as the password of
    /// HTTP Basic authentication (what version managers send).
    TokenOrBasic,
}

impl Route {
    /// Who may use this route.
    pub fn access(&self) -> Access<'_> {
        match self {
            Route::Page(_) | Route::Health | Route::Ready | Route::Metrics => Access::Open,
            Route::Index(_)
            | Route::Version(..)
            | Route::Lock(..)
            | Route::RegistryVersions(_)
            | Route::RegistryPackage(_)
            | Route::ModuleVersions(_)
            | Route::ModuleDownload(..) => Access::Token,
            Route::Archive(key) => Access::SignedArchive(key),
            Route::RegistrySums(provider, version, file) => {
                Access::SignedSums(provider, version, file.index)
            }
            Route::ModulePackage(module, version) => Access::SignedModule(module, version),
            Route::Release(_) | Route::Oci(_) => Access::TokenOrBasic,
        }
    }

    /// Whether the route answers `method`: every route `GET` and `HEAD`,
    /// and the pages that take forms `POST`.
    pub fn takes(&self, method: &http::Method) -> bool {
        *method == http::Method::GET
            || *method == http::Method::HEAD
            || (*method == http::Method::POST
                && matches!(self, Route::Page(page) if page.takes_posts()))
    }

    /// What the route counts as in the metrics.
    pub fn endpoint(&self) -> Endpoint {
        match self {
            Route::Page(_) => Endpoint::Home,
            Route::Health | Route::Ready | Route::Metrics => Endpoint::Operations,
            Route::Index(_) => Endpoint::Index,
            Route::Version(..) => Endpoint::Version,
            Route::Archive(_) => Endpoint::Archive,
            Route::Lock(..) => Endpoint::Lock,
            Route::RegistryVersions(_) | Route::RegistryPackage(_) | Route::RegistrySums(..) => {
                Endpoint::Registry
            }
            Route::ModuleVersions(_) | Route::ModuleDownload(..) | Route::ModulePackage(..) => {
                Endpoint::Module
            }
            Route::Release(_) => Endpoint::Release,
            Route::Oci(_) => Endpoint::Oci,
        }
    }
}

/// One of a version's signed checksum documents as the facade serves it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SumsFile {
    /// Which of the version's SHA256SUMS documents (most have one: 0).
    pub index: usize,
    /// The detached signature rather than the document.
    pub signature: bool,
}

/// A path's segments, held inline up to ten (more than any path tfmirror
/// answers has).
type Segments<T> = smallvec::SmallVec<[T; 10]>;

/// Parses a raw (still percent-encoded) request path.
pub fn parse(raw_path: &str) -> Result<Route, RequestError> {
    let bad = |m: &str| RequestError::InvalidRequest(m.to_owned());
    if raw_path.len() > MAX_PATH_LEN {
        return Err(bad("request path too long"));
    }
    if crate::web::routes::is_page(raw_path) {
        return crate::web::routes::parse(raw_path).map(Route::Page);
    }
    match raw_path {
        "/healthz" => return Ok(Route::Health),
        "/readyz" => return Ok(Route::Ready),
        "/metrics" => return Ok(Route::Metrics),
        _ => {}
    }
    if let Some(route) = release_route(raw_path)? {
        return Ok(Route::Release(route));
    }
    // A mirror protocol path of a provider host named `v2` stays one,
    // whether or not its leaf is percent-encoded.
    let mirror_leaf = || {
        raw_path.split('/').count() == 5
            && raw_path
                .rsplit('/')
                .next()
                .and_then(|leaf| decode_segment(leaf).ok())
                .is_some_and(|leaf| {
                    [".json", ".zip", ".lock.hcl"]
                        .iter()
                        .any(|end| leaf.ends_with(end))
                })
    };
    if super::oci::is_oci_path(raw_path) && !mirror_leaf() {
        let below = raw_path.trim_start_matches("/v2").trim_matches('/');
        let segments = below
            .split('/')
            .filter(|s| !s.is_empty())
            .map(decode_segment)
            .collect::<Result<Segments<Cow<str>>, RequestError>>()?;
        let segments: Segments<&str> = segments.iter().map(AsRef::as_ref).collect();
        return super::oci::route(&segments).map(Route::Oci);
    }
    let rest = raw_path
        .strip_prefix('/')
        .ok_or_else(|| bad("request path must start with /"))?;
    // Segments without escapes are borrowed from the path, not copied.
    let decoded = rest
        .split('/')
        .map(decode_segment)
        .collect::<Result<Segments<Cow<str>>, RequestError>>()?;
    let segments: Segments<&str> = decoded.iter().map(AsRef::as_ref).collect();
    if let ["v1", "providers", host, namespace, kind, rest @ ..] = segments.as_slice() {
        if !rest.is_empty() {
            return registry_route(host, namespace, kind, rest);
        }
    }
    if let ["v1", "modules", host, namespace, name, system, rest @ ..] = segments.as_slice() {
        if !rest.is_empty() {
            return module_route(host, namespace, name, system, rest);
        }
    }
    let [host, namespace, kind, leaf] = segments.as_slice() else {
        return Err(bad(
            "not a mirror path: expected /:hostname/:namespace/:type/index.json, /:hostname/:namespace/:type/:version.json or an archive beside them",
        ));
    };
    let provider = provider(host, namespace, kind)?;
    if *leaf == "index.json" {
        return Ok(Route::Index(provider));
    }
    if let Some((version, platform)) = provider.parse_archive_name(leaf) {
        return Ok(Route::Archive(ArchiveKey {
            provider,
            version,
            platform,
        }));
    }
    if let Some(version) = leaf.strip_suffix(".lock.hcl") {
        let version = Version::parse(version)?;
        return Ok(Route::Lock(provider, version));
    }
    if let Some(version) = leaf.strip_suffix(".json") {
        let version = Version::parse(version)?;
        return Ok(Route::Version(provider, version));
    }
    Err(bad(
        "not a mirror path: the last segment must be index.json, <version>.json or an archive of this provider",
    ))
}

/// The provider of a path's three address segments.
fn provider(host: &str, namespace: &str, kind: &str) -> Result<Provider, RequestError> {
    Ok(Provider {
        hostname: Hostname::parse(host)?,
        namespace: Namespace::parse(namespace)?,
        kind: ProviderType::parse(kind)?,
    })
}

/// A path below `/v1/providers/:hostname/:namespace/:type/`.
fn registry_route(
    host: &str,
    namespace: &str,
    kind: &str,
    rest: &[&str],
) -> Result<Route, RequestError> {
    let provider = provider(host, namespace, kind)?;
    match rest {
        ["versions"] => Ok(Route::RegistryVersions(provider)),
        [version, "download", os, arch] => Ok(Route::RegistryPackage(ArchiveKey {
            provider,
            version: Version::parse(version)?,
            platform: Platform::from_parts(os, arch)?,
        })),
        [version, "sums", leaf] => {
            let (number, signature) = match leaf.strip_suffix(".sig") {
                Some(n) => (n, true),
                None => (*leaf, false),
            };
            let index = number
                .parse::<usize>()
                .ok()
                .filter(|_| number.bytes().all(|b| b.is_ascii_digit()))
                .ok_or_else(|| {
                    RequestError::InvalidRequest(format!("{leaf:?} names no checksum document"))
                })?;
            Ok(Route::RegistrySums(
                provider,
                Version::parse(version)?,
                SumsFile { index, signature },
            ))
        }
        _ => Err(RequestError::InvalidRequest(
            "not a registry path: expected :namespace/:type/versions or :namespace/:type/:version/download/:os/:arch below /v1/providers/:hostname/".into(),
        )),
    }
}

/// A path below `/v1/modules/:hostname/:namespace/:name/:system/`.
fn module_route(
    host: &str,
    namespace: &str,
    name: &str,
    system: &str,
    rest: &[&str],
) -> Result<Route, RequestError> {
    let module = Module {
        hostname: Hostname::parse(host)?,
        namespace: ModuleNamespace::parse(namespace)?,
        name: ModuleName::parse(name)?,
        system: ModuleSystem::parse(system)?,
    };
    match rest {
        ["versions"] => Ok(Route::ModuleVersions(module)),
        [version, "download"] => Ok(Route::ModuleDownload(module, Version::parse(version)?)),
        [version, "package.tar.gz"] => Ok(Route::ModulePackage(module, Version::parse(version)?)),
        _ => Err(RequestError::InvalidRequest(
            "not a module registry path: expected :namespace/:name/:system/versions, :namespace/:name/:system/:version/download or …/:version/package.tar.gz below /v1/modules/:hostname/".into(),
        )),
    }
}

/// A CLI release path, or `None` when the path is not one.
fn release_route(raw_path: &str) -> Result<Option<ReleaseRoute>, RequestError> {
    const GITHUB: &str = "/opentofu/opentofu/releases/download";
    let (product, rest, style) = if let Some(rest) = raw_path.strip_prefix(GITHUB) {
        (Product::Tofu, rest, ListingStyle::GithubTags)
    } else if let Some(rest) = raw_path.strip_prefix("/terraform") {
        (Product::Terraform, rest, ListingStyle::Plain)
    } else if let Some(rest) = raw_path.strip_prefix("/tofu") {
        (Product::Tofu, rest, ListingStyle::Plain)
    } else {
        return Ok(None);
    };
    if rest.is_empty() || rest == "/" {
        return Ok(Some(ReleaseRoute::Listing(product, style)));
    }
    let Some(rest) = rest.strip_prefix('/') else {
        return Ok(None);
    };
    let segments = rest
        .split('/')
        .map(|s| {
            if s.is_empty() {
                Ok(Cow::Borrowed(""))
            } else {
                decode_segment(s)
            }
        })
        .collect::<Result<Segments<Cow<str>>, RequestError>>()?;
    let segments: Segments<&str> = segments.iter().map(AsRef::as_ref).collect();
    let version = |given: &str| {
        let given = match style {
            ListingStyle::GithubTags => given.strip_prefix('v').ok_or_else(|| {
                RequestError::InvalidRequest(format!("{given:?} is not a release tag (v<version>)"))
            })?,
            ListingStyle::Plain => given,
        };
        Ok::<_, RequestError>(Version::parse(given)?)
    };
    let route = match (style, product, segments.as_slice()) {
        (ListingStyle::Plain, Product::Terraform, ["index.json"]) => {
            ReleaseRoute::ProductIndex(product)
        }
        (ListingStyle::Plain, Product::Tofu, ["api.json"]) => ReleaseRoute::Api(product),
        (ListingStyle::Plain, Product::Terraform, [v, "index.json"]) => {
            ReleaseRoute::VersionIndex(product, version(v)?)
        }
        (_, _, [v] | [v, ""]) => ReleaseRoute::VersionListing(product, version(v)?),
        (_, _, [v, file]) => ReleaseRoute::File(ReleaseFile {
            product,
            version: version(v)?,
            name: ArtifactName::parse(file)?,
        }),
        _ => {
            return Err(RequestError::InvalidRequest(format!(
                "not a release path: expected /{product}/<version>/<file> or one of the listings"
            )))
        }
    };
    Ok(Some(route))
}

/// Percent-decodes one segment and refuses what no valid name contains:
/// separators (including encoded ones), dot segments, control characters.
fn decode_segment(raw: &str) -> Result<Cow<'_, str>, RequestError> {
    let bad = |m: &str| Err(RequestError::InvalidRequest(m.to_owned()));
    if raw.is_empty() {
        return bad("empty path segment");
    }
    // Nearly every segment: nothing to decode and nothing to refuse but a
    // dot segment.
    if raw != "."
        && raw != ".."
        && raw
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'+'))
    {
        return Ok(Cow::Borrowed(raw));
    }
    decode_any_segment(raw)
}

/// [`decode_segment`] for any non-empty segment, escapes and all.
fn decode_any_segment(raw: &str) -> Result<Cow<'_, str>, RequestError> {
    let bad = |m: &str| Err(RequestError::InvalidRequest(m.to_owned()));
    let Ok(decoded) = percent_decode_str(raw).decode_utf8() else {
        return bad("path segment is not UTF-8");
    };
    if decoded == "." || decoded == ".." {
        return bad("dot segments are not allowed");
    }
    if decoded
        .chars()
        .any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return bad("path segment holds a separator or control character");
    }
    Ok(decoded)
}

#[cfg(test)]
mod tests;
