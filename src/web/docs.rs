//! A held provider version's documentation, as the mirror keeps it
//! ([`crate::store::docs`]): `/-/providers/…/VERSION/docs` lists its pages
//! by kind, with where and when they were fetched and under which
//! licences; `/-/providers/…/VERSION/docs/KIND/NAME` shows one page, its
//! Markdown made safe by the one sanitiser ([`super::markdown`]). Read
//! from the store alone: a page asks no registry anything. Documentation
//! is informational, not verified like an archive, and the pages say so.

use std::collections::BTreeMap;
use std::sync::Arc;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::doc_links::{DocLinks, HeldVersions};
use super::layout::Layout;
use super::provider::{policy_of, rfc3339};
use super::routes::{
    doc_changes_path, doc_page_changes_path, doc_page_path, docs_path, provider_path,
};
use super::{PageAnswer, PageRequest, Site};
use crate::address::{DocName, Provider, Version};
use crate::docs::wire::License;
use crate::docs::DocKind;
use crate::error::RequestError;
use crate::store::docs::{PageEntry, VersionDocs};

/// A held version's documentation page.
#[derive(Debug, Serialize)]
pub struct DocsPage {
    /// The provider's address.
    pub provider: String,
    /// The version.
    pub version: String,
    /// The provider's page.
    pub provider_page: String,
    /// Whether the policy lets clients install the version.
    pub allowed: bool,
    /// What the policy says of it, for people.
    pub policy: String,
    /// The documentation kept; none where the mirror keeps none.
    pub kept: Option<KeptDocs>,
    /// Why none is kept, where none is.
    pub none_kept: Option<String>,
    /// What changed since another held version: its page, without the
    /// version compared with.
    pub changes_page: String,
    /// The other versions held, newest first, to compare with.
    pub compare_with: Vec<String>,
    /// The next older version held: the one compared with by default.
    pub older: Option<String>,
}

/// What the mirror keeps of a version's documentation.
#[derive(Debug, Serialize)]
pub struct KeptDocs {
    /// Where it was fetched from: the URL its list was read at.
    pub source: String,
    /// When (RFC 3339).
    pub fetched_at: String,
    /// The licences the source names for it.
    pub licenses: Vec<License>,
    /// The documents the source listed that were not kept, each reason
    /// with how many.
    pub passed_over: BTreeMap<String, usize>,
    /// How many pages the source cut short.
    pub truncated: usize,
    /// The pages, by kind in [`DocKind::ALL`]'s order; kinds with none
    /// left out.
    pub sections: Vec<Section>,
}

/// The pages of one kind.
#[derive(Debug, Serialize)]
pub struct Section {
    /// The kind (`resource`, `data-source`, …).
    pub kind: DocKind,
    /// Its heading.
    pub heading: &'static str,
    /// Its pages, in the source's order.
    pub pages: Vec<PageLink>,
}

/// One page, as the list shows it.
#[derive(Debug, Serialize)]
pub struct PageLink {
    /// Its name.
    pub name: DocName,
    /// Its title.
    pub title: String,
    /// The source's grouping of it.
    pub subcategory: String,
    /// Its one-line description, where the source gives one.
    pub description: String,
    /// Its path on this mirror.
    pub path: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the source cut it short.
    pub truncated: bool,
}

impl PageLink {
    /// `page`, linked to `path`.
    pub fn of(page: &PageEntry, path: String) -> PageLink {
        PageLink {
            path,
            name: page.name.clone(),
            title: page.title.clone(),
            subcategory: page.subcategory.clone(),
            description: page.description.clone(),
            size: page.size,
            truncated: page.truncated,
        }
    }
}

/// One page of a version's documentation.
#[derive(Debug, Serialize)]
pub struct DocView {
    /// The provider's address.
    pub provider: String,
    /// The version.
    pub version: String,
    /// The version's documentation page.
    pub docs_page: String,
    /// The page, as the version's list names it.
    pub page: PageEntry,
    /// Where the version's documentation was fetched from.
    pub source: String,
    /// When (RFC 3339).
    pub fetched_at: String,
    /// The page's Markdown, as the source gave it.
    pub markdown: String,
    /// What changed in the page since the next older held version, where
    /// one is held.
    pub changes: Option<String>,
    /// The page as HTML, made safe (not in the JSON: `markdown` is).
    #[serde(skip)]
    pub html: String,
}

#[derive(Template)]
#[template(path = "docs.html")]
struct DocsHtml<'a> {
    layout: &'a Layout,
    page: &'a DocsPage,
}

#[derive(Template)]
#[template(path = "doc_page.html")]
struct DocHtml<'a> {
    layout: &'a Layout,
    page: &'a DocView,
}

/// Why the mirror keeps no documentation of `provider`'s versions, or
/// none yet.
pub(super) fn why_none(site: Site<'_>, provider: &Provider) -> String {
    site.mirror.why_no_docs(provider, site.mirror.offline())
}

/// `/-/providers/…/VERSION/docs`.
pub async fn index(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    (provider, version): (&Provider, &Version),
) -> Result<PageAnswer, RequestError> {
    let docs = site.mirror.held_docs(provider, version).await?;
    let first_seen = (site.mirror.stored_index(provider).await)
        .and_then(|l| l.first_seen_ms.get(version).copied());
    let record = site.mirror.stored_record(provider, version).await;
    let (allowed, policy) =
        policy_of(site, (provider, version), first_seen, record.as_deref()).await;
    let none_kept = docs.is_none().then(|| why_none(site, provider));
    let (compare_with, older) = others(site, provider, version);
    let data = DocsPage {
        provider: provider.to_string(),
        version: version.to_string(),
        provider_page: provider_path(provider),
        allowed,
        policy,
        kept: docs.map(|d| kept_docs(provider, &d)),
        none_kept,
        changes_page: doc_changes_path(provider, version, None),
        older: older.as_ref().map(Version::to_string),
        compare_with: compare_with.iter().map(Version::to_string).collect(),
    };
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &DocsHtml {
            layout,
            page: &data,
        },
    ))
}

/// The versions of `provider` held other than `version`, newest first,
/// and the newest of them older than it.
pub(super) fn others(
    site: Site<'_>,
    provider: &Provider,
    version: &Version,
) -> (Vec<Version>, Option<Version>) {
    let held: Vec<Version> = (site.mirror.held_versions(provider).into_iter())
        .map(|(v, _)| v)
        .filter(|v| v != version)
        .collect();
    let older = held.iter().find(|v| *v < version).cloned();
    (held, older)
}

/// What the list shows of a version's documentation kept.
fn kept_docs(provider: &Provider, docs: &VersionDocs) -> KeptDocs {
    let mut sections: Vec<Section> = Vec::new();
    for kind in DocKind::ALL {
        let pages: Vec<PageLink> = (docs.pages.iter())
            .filter(|p| p.kind == kind)
            .map(|p| PageLink::of(p, doc_page_path(provider, &docs.version, kind, &p.name)))
            .collect();
        if !pages.is_empty() {
            sections.push(Section {
                kind,
                heading: kind.heading(),
                pages,
            });
        }
    }
    KeptDocs {
        truncated: docs.pages.iter().filter(|p| p.truncated).count(),
        source: docs.source.clone(),
        fetched_at: rfc3339(docs.fetched_at_ms),
        licenses: docs.licenses.clone(),
        passed_over: docs.passed_over.clone(),
        sections,
    }
}

/// Where the links of a page of `docs` lead ([`DocLinks`]). A path from
/// the root leads to the registry the documentation came from where it
/// came in registry.terraform.io's shape, whose pages and answers share a
/// host (`/v1/providers/…`); the OpenTofu Registry's files are on an API
/// host no page is on, so such links are dropped there.
fn links_of(site: Site<'_>, docs: &VersionDocs, kind: DocKind) -> DocLinks {
    let pages = (docs.pages.iter())
        .map(|p| (p.kind, p.name.clone()))
        .collect();
    let source = url::Url::parse(&docs.source).ok();
    let site_root = source
        .filter(|u| u.path().contains("/v1/providers/"))
        .and_then(|u| u.join("/").ok());
    let mirror = site.mirror.clone();
    let held: HeldVersions = Arc::new(move |provider: &Provider| {
        (mirror.held_versions(provider).into_iter())
            .map(|(v, _)| v)
            .collect()
    });
    DocLinks::new(
        (docs.provider.clone(), docs.version.clone(), kind),
        pages,
        site_root,
        held,
    )
}

/// `/-/providers/…/VERSION/docs/KIND/NAME`.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    (provider, version): (&Provider, &Version),
    (kind, name): (DocKind, &DocName),
) -> Result<PageAnswer, RequestError> {
    let no_page = || {
        RequestError::NoSuchPage(format!(
            "the documentation of {provider} {version} kept here has no {} page {name}",
            kind.as_str()
        ))
    };
    let docs = (site.mirror.held_docs(provider, version).await?).ok_or_else(no_page)?;
    let entry = (docs.pages.iter())
        .find(|p| p.kind == kind && &p.name == name)
        .ok_or_else(no_page)?;
    let markdown = site.mirror.doc_content(entry).await?;
    let data = DocView {
        provider: provider.to_string(),
        version: version.to_string(),
        docs_page: docs_path(provider, version),
        page: entry.clone(),
        changes: (others(site, provider, version).1)
            .map(|older| doc_page_changes_path(provider, version, (kind, name), Some(&older))),
        source: docs.source.clone(),
        fetched_at: rfc3339(docs.fetched_at_ms),
        html: if req.route.json {
            String::new()
        } else {
            let links = links_of(site, &docs, kind);
            super::markdown::render_doc(super::markdown::without_front_matter(&markdown), links)
        },
        markdown,
    };
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &DocHtml {
            layout,
            page: &data,
        },
    ))
}
