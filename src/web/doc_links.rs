//! Where a link in a provider's documentation leads, on this mirror.
//!
//! Registries publish documentation whose links point at other pages of
//! the same provider (`../d/file.html`, `/docs/providers/aws/r/s3_bucket.html`)
//! or at a registry's own pages (`https://registry.terraform.io/providers/
//! hashicorp/aws/latest/docs/resources/s3_bucket`, `https://search.opentofu.org/
//! provider/hashicorp/aws/latest/docs/datasources/ami`). Shown on a mirror,
//! such links would lead nowhere or off the site: [`DocLinks::resolve`]
//! turns each into the mirror's own page where the mirror holds what it
//! names, sends a path from the root (`/docs/language/…`) to the registry
//! site the documentation was published on, keeps every other `http`,
//! `https` or `mailto` link as it is (the pages mark those as leaving the
//! site), and drops a link whose target the mirror cannot name (its text
//! stays). What the link names is read with the address types, so a path
//! built here holds only checked segments.

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use url::Url;

use super::routes::{doc_page_path, docs_path, provider_path};
use crate::address::{DocName, Hostname, Namespace, Provider, ProviderType, Version};
use crate::docs::DocKind;

/// The versions the mirror holds of a provider, newest first.
pub type HeldVersions = Arc<dyn Fn(&Provider) -> Vec<Version> + Send + Sync>;

/// The file endings documentation links carry, longest first.
const ENDINGS: [&str; 7] = [
    ".html.markdown",
    ".html.md",
    ".markdown.html",
    ".md.html",
    ".markdown",
    ".html",
    ".md",
];

/// The page a link is read on, and what the mirror holds.
pub struct DocLinks {
    /// The provider whose documentation is shown.
    provider: Provider,
    /// Its version.
    version: Version,
    /// The kind of the page shown: a link to a bare file name names a
    /// page of the same kind.
    kind: DocKind,
    /// The pages this version's documentation holds.
    pages: HashSet<(DocKind, DocName)>,
    /// Where a path from the root (`/docs/language/…`) leads.
    site: Option<Url>,
    /// What the mirror holds of any provider.
    held: HeldVersions,
    /// What it holds of this one, asked once.
    held_here: Vec<Version>,
}

/// What a link names: a provider's page, a version's documentation, or
/// one page of it.
struct Named {
    provider: Provider,
    /// The provider's own page rather than a version's documentation.
    whole: bool,
    version: Option<Version>,
    page: Option<(Option<DocKind>, String)>,
}

impl DocLinks {
    /// The links of the page of `kind` in `provider` `version`'s
    /// documentation, which holds `pages`. `site` is where a path from
    /// the root (`/docs/language/…`) leads: the registry site the
    /// documentation was published on, where its pages and its answers
    /// share a host; `None` drops such links.
    pub fn new(
        (provider, version, kind): (Provider, Version, DocKind),
        pages: HashSet<(DocKind, DocName)>,
        site: Option<Url>,
        held: HeldVersions,
    ) -> DocLinks {
        DocLinks {
            held_here: held(&provider),
            provider,
            version,
            kind,
            pages,
            site,
            held,
        }
    }

    /// The versions held of `provider`, newest first: this provider's as
    /// asked once, another's asked now.
    fn held_of(&self, provider: &Provider) -> Cow<'_, [Version]> {
        if *provider == self.provider {
            Cow::Borrowed(&self.held_here)
        } else {
            Cow::Owned((self.held)(provider))
        }
    }

    /// Where `href` leads on this mirror: one of its own paths, an outside
    /// address kept as it is, or `None` where it leads nowhere the mirror
    /// can name.
    pub fn resolve(&self, href: &str) -> Option<String> {
        let href = href.trim();
        if href.is_empty() || href.starts_with('#') {
            // The pages give their headings no anchors.
            return None;
        }
        if let Some(rest) = href.strip_prefix("//") {
            return self.absolute(&format!("https://{rest}"));
        }
        if Url::parse(href).is_ok() {
            return self.absolute(href);
        }
        let path = href.split(['#', '?']).next().unwrap_or_default();
        if path.contains('\\') {
            return None;
        }
        if let Some(rest) = path.strip_prefix("/docs/providers/") {
            return (self.legacy(rest).and_then(|n| self.path_of(n)))
                .or_else(|| self.on_site(href));
        }
        if path.starts_with('/') {
            return self.on_site(href);
        }
        self.relative(path)
    }

    /// An absolute address: a registry's page of a provider the mirror
    /// holds becomes the mirror's; any other `http`, `https` or `mailto`
    /// address is kept; any other scheme is dropped.
    fn absolute(&self, href: &str) -> Option<String> {
        let url = Url::parse(href).ok()?;
        match url.scheme() {
            "mailto" => return Some(url.to_string()),
            "http" | "https" => {}
            _ => return None,
        }
        (registry_page(&url).and_then(|n| self.path_of(n))).or_else(|| Some(url.to_string()))
    }

    /// A path from the root that names no provider page, on the site the
    /// documentation was published on.
    fn on_site(&self, href: &str) -> Option<String> {
        let joined = self.site.as_ref()?.join(href).ok()?;
        Some(joined.to_string())
    }

    /// `/docs/providers/TYPE[/KIND/NAME]`, the provider sites' old layout:
    /// this provider, or another of the same namespace (or `hashicorp`'s,
    /// where the old site kept them) that the mirror holds.
    fn legacy(&self, rest: &str) -> Option<Named> {
        let mut parts = rest.split('/').filter(|p| !p.is_empty());
        let kind = ProviderType::parse(parts.next()?).ok()?;
        let provider = if kind == self.provider.kind {
            self.provider.clone()
        } else {
            let hashicorp = Namespace::parse("hashicorp").ok()?;
            [self.provider.namespace.clone(), hashicorp]
                .into_iter()
                .map(|namespace| Provider {
                    hostname: self.provider.hostname.clone(),
                    namespace,
                    kind: kind.clone(),
                })
                .find(|p| !self.held_of(p).is_empty())?
        };
        let segments: Vec<&str> = parts.collect();
        let page = match segments.as_slice() {
            [] | ["index.html" | "index.html.markdown" | "index"] => None,
            [name] => Some((None, (*name).to_owned())),
            [.., folder, name] => Some((Some(kind_of_folder(folder)?), (*name).to_owned())),
        };
        Some(Named {
            whole: false,
            version: None,
            provider,
            page,
        })
    }

    /// A path relative to the page: `file.html`, `../d/file.html`,
    /// `../resources/thing.md`. Its last folder names the kind, where it
    /// names one; a bare name is of the page's own kind.
    fn relative(&self, path: &str) -> Option<String> {
        let segments: Vec<&str> = (path.split('/'))
            .filter(|s| !s.is_empty() && *s != "." && *s != "..")
            .collect();
        let (name, folders) = segments.split_last()?;
        let kind = match folders.last() {
            Some(folder) => kind_of_folder(folder)?,
            None => self.kind,
        };
        self.path_of(Named {
            provider: self.provider.clone(),
            whole: false,
            version: Some(self.version.clone()),
            page: Some((Some(kind), (*name).to_owned())),
        })
    }

    /// The mirror's path for what a link names, where it holds it: a page
    /// of the version shown where its list names it (none where it does
    /// not), another version's page or documentation where that version
    /// is held, else the provider's page.
    fn path_of(&self, named: Named) -> Option<String> {
        let here = named.provider == self.provider;
        let held = self.held_of(&named.provider);
        if held.is_empty() {
            return None;
        }
        if named.whole {
            return Some(provider_path(&named.provider));
        }
        let version = match named.version {
            Some(v) if held.contains(&v) => v,
            Some(_) => return Some(provider_path(&named.provider)),
            // "latest", or no version: the version shown, on its own
            // provider's pages; the newest held, on another's.
            None if here => self.version.clone(),
            None => held[0].clone(),
        };
        let Some((kind, name)) = named.page else {
            return Some(docs_path(&named.provider, &version));
        };
        let name = page_name(&name, &named.provider)?;
        if here && version == self.version {
            let kinds: Vec<DocKind> = match kind {
                Some(kind) => vec![kind],
                None => DocKind::ALL.to_vec(),
            };
            let found = (kinds.into_iter())
                .flat_map(|k| name.iter().map(move |n| (k, n.clone())))
                .find(|page| self.pages.contains(page));
            return found.map(|(kind, name)| doc_page_path(&named.provider, &version, kind, &name));
        }
        // Another version's list is not read here: its page answers 404,
        // naming the page, where that version lacks it.
        Some(match kind {
            Some(kind) => doc_page_path(&named.provider, &version, kind, &name[0]),
            None => docs_path(&named.provider, &version),
        })
    }
}

/// A registry's page of a provider: registry.terraform.io's
/// `/providers/NS/TYPE[/VERSION[/docs[/KIND/NAME]]]` on the provider's own
/// host, or the OpenTofu Registry's `/provider/NS/TYPE[/VERSION[/docs/KIND/NAME]]`
/// on search.opentofu.org, for registry.opentofu.org's providers.
fn registry_page(url: &Url) -> Option<Named> {
    let host = url.host_str()?;
    let segments: Vec<&str> = url.path_segments()?.filter(|s| !s.is_empty()).collect();
    let (hostname, rest) = match (host, segments.as_slice()) {
        ("search.opentofu.org", ["provider", rest @ ..]) => ("registry.opentofu.org", rest),
        (host, ["providers", rest @ ..]) => (host, rest),
        _ => return None,
    };
    let hostname = match url.port() {
        Some(port) => Hostname::parse(&format!("{hostname}:{port}")).ok()?,
        None => Hostname::parse(hostname).ok()?,
    };
    let [namespace, kind, rest @ ..] = rest else {
        return None;
    };
    let provider = Provider {
        hostname,
        namespace: Namespace::parse(namespace).ok()?,
        kind: ProviderType::parse(kind).ok()?,
    };
    let Some((version, rest)) = rest.split_first() else {
        return Some(Named {
            provider,
            whole: true,
            version: None,
            page: None,
        });
    };
    let version = match *version {
        "latest" => None,
        v => Some(Version::parse(v.strip_prefix('v').unwrap_or(v)).ok()?),
    };
    let page = match rest {
        [] | ["docs"] => None,
        ["docs", folder, name] => Some((Some(kind_of_folder(folder)?), (*name).to_owned())),
        _ => return None,
    };
    Some(Named {
        provider,
        whole: false,
        version,
        page,
    })
}

/// The kind a folder of documentation names, long or short:
/// registry.terraform.io's paths, the OpenTofu Registry's, and the
/// provider sites' `r`, `d` and `f`.
fn kind_of_folder(folder: &str) -> Option<DocKind> {
    Some(match folder {
        "r" | "resources" => DocKind::Resource,
        "d" | "data-sources" | "datasources" => DocKind::DataSource,
        "f" | "functions" => DocKind::Function,
        "guides" => DocKind::Guide,
        "ephemeral-resources" | "ephemeral" => DocKind::EphemeralResource,
        "actions" => DocKind::Action,
        "list-resources" | "listresources" => DocKind::ListResource,
        _ => return None,
    })
}

/// The names a page may go by in a link: its file name without the
/// ending, and that name without the provider's type and `_` before it
/// (`aws_s3_bucket.html` names `s3_bucket`); `None` where neither is a
/// name a page can have.
fn page_name(file: &str, provider: &Provider) -> Option<Vec<DocName>> {
    let mut stem = file;
    if let Some(ending) = ENDINGS.iter().find(|e| stem.ends_with(*e)) {
        stem = &stem[..stem.len() - ending.len()];
    }
    let stem = percent_encoding::percent_decode_str(stem)
        .decode_utf8()
        .ok()?;
    let mut names = vec![DocName::parse(&stem).ok()?];
    let prefix = format!("{}_", provider.kind);
    if let Some(short) = stem.strip_prefix(&prefix) {
        names.extend(DocName::parse(short).ok());
    }
    Some(names)
}

#[cfg(test)]
mod tests;
