//! The pages' paths, parsed into typed pages. Pages live below `/-/`,
//! where no registry hostname can be (`-` is not one), and the home page
//! at `/`; each page's data is also served as JSON below `/-/api/`, at the
//! same path. Every address segment goes through its validated type.

use percent_encoding::percent_decode_str;

use crate::address::{
    AdvisoryId, ArchiveKey, ArtifactName, DocName, Hostname, Module, ModuleName, ModuleNamespace,
    ModuleSystem, Namespace, Platform, Product, Provider, ProviderType, ReleaseFile, Version,
};
use crate::docs::DocKind;
use crate::error::RequestError;

mod registry;
use registry::registry_doc;
pub use registry::{registry_docs_root, RegistryDoc};

/// A page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Page {
    /// `/`: what the mirror holds, how to use it, a search box.
    Home,
    /// `/-/status`: the operator's view.
    Status,
    /// `/-/search?q=`: providers, modules and CLI releases by address.
    Search,
    /// `/-/providers/:hostname/:namespace/:type`: a provider's versions.
    Provider(Provider),
    /// `/-/providers/:hostname/:namespace/:type/:version/docs`: a held
    /// version's documentation: where it came from, and its pages by kind.
    Docs(Provider, Version),
    /// `/-/providers/:hostname/:namespace/:type/:version/docs/:kind/:name`:
    /// one page of it.
    DocPage(Provider, Version, DocKind, DocName),
    /// `/-/providers/:hostname/:namespace/:type/:version/docs/changes?from=`:
    /// the pages added, removed and changed since another held version.
    DocChanges(Provider, Version),
    /// `/-/providers/:hostname/:namespace/:type/:version/docs/changes/:kind/:name?from=`:
    /// one page's lines changed since another held version.
    DocPageChanges(Provider, Version, DocKind, DocName),
    /// `/-/modules/:hostname/:namespace/:name/:system`: a module's
    /// versions.
    Module(Module),
    /// `/-/modules/:hostname/:namespace/:name/:system/:version`: one
    /// version of a module: its README, inputs, outputs and what it needs.
    ModuleVersion(Module, Version),
    /// `/-/releases`: the CLI releases held.
    Releases,
    /// `/-/check`: whether a lock file or a configuration will install.
    Check,
    /// `/-/signin`: a token entered once for a session.
    SignIn,
    /// `/-/signout`: the session ended.
    SignOut,
    /// `/-/signin/with/:issuer`: a sign-in through an OpenID Connect
    /// issuer begun (the browser sent to it).
    SignInWith(String),
    /// `/-/signin/callback`: where the issuer sends the browser back.
    SignInCallback,
    /// `/-/decide/providers/:hostname/:namespace/:type/:version` and
    /// `/-/decide/modules/:hostname/:namespace/:name/:system/:version`: a
    /// version approved or denied by a person with `approve`.
    Decide(Decided, Version),
    /// `/-/api/providers/:hostname/:namespace/:type/:version/:os_arch/cyclonedx.json`:
    /// a held package's bill of materials (JSON only).
    Bom(ArchiveKey),
    /// `/-/api/releases/:product/:version/:file/cyclonedx.json`: a held
    /// CLI release zip's bill of materials (JSON only).
    ReleaseBom(ReleaseFile),
    /// `/-/advisories/:id`: one advisory of the imported database.
    Advisory(AdvisoryId),
    /// `/-/assets/:name`: the pages' style sheet.
    Asset(&'static str),
    /// `/-/registry-docs/:hostname/providers/…`: the documentation kept
    /// of a host's providers, in the OpenTofu Registry's static shape
    /// (always JSON or Markdown).
    RegistryDocs(RegistryDoc),
}

/// What a decision is about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decided {
    /// A provider.
    Provider(Provider),
    /// A module.
    Module(Module),
}

/// A page and whether its data is asked for as JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRoute {
    /// The page.
    pub page: Page,
    /// Asked below `/-/api/`: the page's data as JSON.
    pub json: bool,
}

impl PageRoute {
    /// Whether `POST` asks something of this page (a form sends it).
    pub fn takes_posts(&self) -> bool {
        matches!(
            self.page,
            Page::Check | Page::SignIn | Page::SignOut | Page::Decide(..)
        )
    }
}

/// Whether a raw path is a page's: `/` or below `/-/`.
pub fn is_page(raw_path: &str) -> bool {
    raw_path == "/" || raw_path == "/-" || raw_path.starts_with("/-/")
}

/// The page of a raw (still percent-encoded) path [`is_page`] accepted.
pub fn parse(raw_path: &str) -> Result<PageRoute, RequestError> {
    let below = raw_path.strip_prefix("/-").unwrap_or("");
    let (json, rest) = match below.strip_prefix("/api") {
        Some(rest) if rest.is_empty() || rest.starts_with('/') => (true, rest),
        _ => (false, below),
    };
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_decode_str(s)
                .decode_utf8()
                .map(std::borrow::Cow::into_owned)
                .map_err(|_| RequestError::InvalidRequest("a path segment is not UTF-8".into()))
        })
        .collect::<Result<_, _>>()?;
    let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
    let page = match segments.as_slice() {
        [] => Page::Home,
        ["status"] => Page::Status,
        ["search"] => Page::Search,
        ["releases"] => Page::Releases,
        ["check"] => Page::Check,
        ["signin"] if !json => Page::SignIn,
        ["signout"] if !json => Page::SignOut,
        ["signin", "with", issuer] if !json => Page::SignInWith((*issuer).to_owned()),
        ["signin", "callback"] if !json => Page::SignInCallback,
        ["decide", "providers", host, namespace, kind, version] => Page::Decide(
            Decided::Provider(Provider {
                hostname: Hostname::parse(host)?,
                namespace: Namespace::parse(namespace)?,
                kind: ProviderType::parse(kind)?,
            }),
            Version::parse(version)?,
        ),
        ["decide", "modules", host, namespace, name, system, version] => Page::Decide(
            Decided::Module(Module {
                hostname: Hostname::parse(host)?,
                namespace: ModuleNamespace::parse(namespace)?,
                name: ModuleName::parse(name)?,
                system: ModuleSystem::parse(system)?,
            }),
            Version::parse(version)?,
        ),
        ["assets", "style.css"] if !json => Page::Asset("style.css"),
        ["advisories", id] => Page::Advisory(AdvisoryId::parse(id)?),
        ["providers", host, namespace, kind] => Page::Provider(provider_of(host, namespace, kind)?),
        ["providers", host, namespace, kind, version, platform, "cyclonedx.json"] if json => {
            Page::Bom(ArchiveKey {
                provider: provider_of(host, namespace, kind)?,
                version: Version::parse(version)?,
                platform: Platform::parse(platform)?,
            })
        }
        ["providers", host, namespace, kind, version, "docs"] => Page::Docs(
            provider_of(host, namespace, kind)?,
            Version::parse(version)?,
        ),
        ["providers", host, namespace, kind, version, "docs", "changes"] => Page::DocChanges(
            provider_of(host, namespace, kind)?,
            Version::parse(version)?,
        ),
        ["providers", host, namespace, kind, version, "docs", doc_kind, name] => Page::DocPage(
            provider_of(host, namespace, kind)?,
            Version::parse(version)?,
            doc_kind_of(doc_kind)?,
            DocName::parse(name)?,
        ),
        ["providers", host, namespace, kind, version, "docs", "changes", doc_kind, name] => {
            Page::DocPageChanges(
                provider_of(host, namespace, kind)?,
                Version::parse(version)?,
                doc_kind_of(doc_kind)?,
                DocName::parse(name)?,
            )
        }
        ["releases", product, version, file, "cyclonedx.json"] if json => {
            Page::ReleaseBom(ReleaseFile {
                product: product.parse::<Product>()?,
                version: Version::parse(version)?,
                name: ArtifactName::parse(file)?,
            })
        }
        ["modules", host, namespace, name, system, rest @ ..] if rest.len() <= 1 => {
            let module = Module {
                hostname: Hostname::parse(host)?,
                namespace: ModuleNamespace::parse(namespace)?,
                name: ModuleName::parse(name)?,
                system: ModuleSystem::parse(system)?,
            };
            match rest {
                [version] => Page::ModuleVersion(module, Version::parse(version)?),
                _ => Page::Module(module),
            }
        }
        ["registry-docs", host, "providers", namespace, kind, rest @ ..] => {
            let provider = provider_of(host, namespace, kind)?;
            Page::RegistryDocs(registry_doc(provider, rest)?)
        }
        _ => {
            return Err(RequestError::NoSuchPage(
                "no such page: the pages are /, /-/search, /-/providers/…, /-/modules/…, /-/releases, /-/check and /-/status".into(),
            ))
        }
    };
    // The documentation files are data, never a page: errors are JSON.
    let json = json || matches!(page, Page::RegistryDocs(_));
    Ok(PageRoute { page, json })
}

/// A provider address from its three path segments.
fn provider_of(host: &str, namespace: &str, kind: &str) -> Result<Provider, RequestError> {
    Ok(Provider {
        hostname: Hostname::parse(host)?,
        namespace: Namespace::parse(namespace)?,
        kind: ProviderType::parse(kind)?,
    })
}

/// A documentation kind from its path segment.
fn doc_kind_of(segment: &str) -> Result<DocKind, RequestError> {
    DocKind::from_segment(segment).ok_or_else(|| {
        RequestError::InvalidRequest(format!(
            "no documentation kind {segment:?}: the kinds are {}",
            DocKind::ALL.map(DocKind::as_str).join(", ")
        ))
    })
}

/// The path of a provider's page.
pub fn provider_path(provider: &Provider) -> String {
    format!(
        "/-/providers/{}/{}/{}",
        provider.hostname, provider.namespace, provider.kind
    )
}

/// The path of a held version's documentation.
pub fn docs_path(provider: &Provider, version: &Version) -> String {
    format!("{}/{version}/docs", provider_path(provider))
}

/// The path of one page of a held version's documentation. (A name holds
/// no character a path needs escaped but the space: [`DocName`].)
pub fn doc_page_path(
    provider: &Provider,
    version: &Version,
    kind: DocKind,
    name: &DocName,
) -> String {
    format!(
        "{}/{}/{}",
        docs_path(provider, version),
        kind.as_str(),
        name.as_str().replace(' ', "%20")
    )
}

/// The path of what changed in `version`'s documentation since `from`
/// (the next older held version where none is named).
pub fn doc_changes_path(provider: &Provider, version: &Version, from: Option<&Version>) -> String {
    let path = format!("{}/changes", docs_path(provider, version));
    with_from(path, from)
}

/// The path of what changed in one page of `version`'s documentation
/// since `from`, as [`doc_changes_path`].
pub fn doc_page_changes_path(
    provider: &Provider,
    version: &Version,
    (kind, name): (DocKind, &DocName),
    from: Option<&Version>,
) -> String {
    let path = format!(
        "{}/changes/{}/{}",
        docs_path(provider, version),
        kind.as_str(),
        name.as_str().replace(' ', "%20")
    );
    with_from(path, from)
}

/// `path` with the version it compares with, where one is named.
fn with_from(path: String, from: Option<&Version>) -> String {
    match from {
        Some(from) => {
            let from: String =
                url::form_urlencoded::byte_serialize(from.to_string().as_bytes()).collect();
            format!("{path}?from={from}")
        }
        None => path,
    }
}

/// The path of an advisory's page.
/// (IDs hold no character a path needs escaped: [`AdvisoryId`].)
pub fn advisory_path(id: &str) -> String {
    format!("/-/advisories/{id}")
}

/// The path of a held package's bill of materials.
pub fn bom_path(key: &ArchiveKey) -> String {
    format!(
        "/-/api/providers/{}/{}/{}/{}/{}/cyclonedx.json",
        key.provider.hostname, key.provider.namespace, key.provider.kind, key.version, key.platform
    )
}

/// The path of a held release zip's bill of materials.
pub fn release_bom_path(file: &ReleaseFile) -> String {
    format!(
        "/-/api/releases/{}/{}/{}/cyclonedx.json",
        file.product, file.version, file.name
    )
}

/// The path of the page deciding on `version` of `decided`.
pub fn decide_path(decided: &Decided, version: &Version) -> String {
    match decided {
        Decided::Provider(p) => format!(
            "/-/decide/providers/{}/{}/{}/{version}",
            p.hostname, p.namespace, p.kind
        ),
        Decided::Module(m) => format!(
            "/-/decide/modules/{}/{}/{}/{}/{version}",
            m.hostname, m.namespace, m.name, m.system
        ),
    }
}

/// The path of a module's page, or of one of its versions'.
pub fn module_path(module: &Module, version: Option<&Version>) -> String {
    let base = format!(
        "/-/modules/{}/{}/{}/{}",
        module.hostname, module.namespace, module.name, module.system
    );
    match version {
        Some(v) => format!("{base}/{v}"),
        None => base,
    }
}

#[cfg(test)]
mod tests;
