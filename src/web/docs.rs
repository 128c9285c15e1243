//! A held provider version's documentation, as the mirror keeps it
//! ([`crate::store::docs`]): `/-/providers/…/VERSION/docs` lists its pages
//! by kind, with where and when they were fetched and under which
//! licences; `/-/providers/…/VERSION/docs/KIND/NAME` shows one page, its
//! Markdown made safe by the one sanitiser ([`super::markdown`]). Read
//! from the store alone: a page asks no registry anything. Documentation
//! is informational, not verified like an archive, and the pages say so.

use std::collections::BTreeMap;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::provider::{policy_of, rfc3339};
use super::routes::{doc_page_path, docs_path, provider_path};
use super::{PageAnswer, PageRequest, Site};
use crate::address::{DocName, Provider, Version};
use crate::docs::wire::License;
use crate::docs::DocKind;
use crate::error::RequestError;
use crate::store::docs::{self as kept, PageEntry, VersionDocs};
use crate::store::StoreError;

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

/// A store that failed to read the documentation kept.
fn unreadable(e: &StoreError) -> RequestError {
    RequestError::DiskUnavailable(format!("the documentation kept cannot be read: {e}"))
}

/// The version's documentation list, for a version the mirror holds.
async fn held_docs(
    site: Site<'_>,
    provider: &Provider,
    version: &Version,
) -> Result<Option<VersionDocs>, RequestError> {
    if !site
        .mirror
        .held_versions(provider)
        .iter()
        .any(|(v, _)| v == version)
    {
        return Err(RequestError::NoSuchPage(format!(
            "this mirror holds no archive of {provider} {version}: its documentation is kept with the version"
        )));
    }
    kept::version(site.mirror.store(), provider, version)
        .await
        .map_err(|e| unreadable(&e))
}

/// Why the mirror keeps no documentation of `provider`'s versions, or
/// none yet.
fn why_none(site: Site<'_>, provider: &Provider) -> String {
    if site.mirror.docs_source(provider).is_none() {
        format!(
            "this mirror fetches no documentation from {}: [docs] names no source for it",
            provider.hostname
        )
    } else if site.mirror.offline() {
        "none is kept, and this mirror is offline: it fetches none".into()
    } else {
        "none is kept yet: it is fetched in the background when an archive of the version is kept, and a failure (in the log) is tried again when one is next kept".into()
    }
}

/// `/-/providers/…/VERSION/docs`.
pub async fn index(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    (provider, version): (&Provider, &Version),
) -> Result<PageAnswer, RequestError> {
    let docs = held_docs(site, provider, version).await?;
    let first_seen = (site.mirror.stored_index(provider).await)
        .and_then(|l| l.first_seen_ms.get(version).copied());
    let record = site.mirror.stored_record(provider, version).await;
    let (allowed, policy) =
        policy_of(site, (provider, version), first_seen, record.as_deref()).await;
    let none_kept = docs.is_none().then(|| why_none(site, provider));
    let data = DocsPage {
        provider: provider.to_string(),
        version: version.to_string(),
        provider_page: provider_path(provider),
        allowed,
        policy,
        kept: docs.map(|d| kept_docs(provider, d)),
        none_kept,
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

/// What the list shows of a version's documentation kept.
fn kept_docs(provider: &Provider, docs: VersionDocs) -> KeptDocs {
    let mut sections: Vec<Section> = Vec::new();
    for kind in DocKind::ALL {
        let pages: Vec<PageLink> = (docs.pages.iter())
            .filter(|p| p.kind == kind)
            .map(|p| PageLink {
                path: doc_page_path(provider, &docs.version, kind, &p.name),
                name: p.name.clone(),
                title: p.title.clone(),
                subcategory: p.subcategory.clone(),
                description: p.description.clone(),
                size: p.size,
                truncated: p.truncated,
            })
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
        source: docs.source,
        fetched_at: rfc3339(docs.fetched_at_ms),
        licenses: docs.licenses,
        passed_over: docs.passed_over,
        sections,
    }
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
    let docs = held_docs(site, provider, version)
        .await?
        .ok_or_else(no_page)?;
    let entry = (docs.pages.iter())
        .find(|p| p.kind == kind && &p.name == name)
        .ok_or_else(no_page)?;
    let content = kept::page(site.mirror.store(), &entry.sha256)
        .await
        .map_err(|e| unreadable(&e))?
        .ok_or_else(|| {
            RequestError::DiskUnavailable(format!(
                "the content of {} page {name} is no longer in the store",
                kind.as_str()
            ))
        })?;
    let markdown = String::from_utf8_lossy(&content).into_owned();
    let data = DocView {
        provider: provider.to_string(),
        version: version.to_string(),
        docs_page: docs_path(provider, version),
        page: entry.clone(),
        source: docs.source.clone(),
        fetched_at: rfc3339(docs.fetched_at_ms),
        html: if req.route.json {
            String::new()
        } else {
            super::markdown::render(super::markdown::without_front_matter(&markdown))
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
