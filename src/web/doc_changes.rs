//! What changed in a provider's documentation between two held versions:
//! `/-/providers/…/VERSION/docs/changes?from=OLDER` lists the pages
//! added, removed and changed; `…/docs/changes/KIND/NAME?from=OLDER`
//! shows one page's lines inserted and deleted. Without `from`, the
//! version is compared with the next older one held. The comparison is
//! the mirror's ([`crate::mirror::doc_changes`]); these pages only show
//! it.

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::docs::{others, why_none, PageLink};
use super::layout::Layout;
use super::routes::{doc_changes_path, doc_page_changes_path, doc_page_path, docs_path};
use super::{PageAnswer, PageRequest, Site};
use crate::address::{DocName, Provider, Version};
use crate::docs::DocKind;
use crate::error::RequestError;
use crate::mirror::doc_changes::{compare, PageChanges};
use crate::store::docs::VersionDocs;

/// Two versions compared, or why they could not be.
#[derive(Debug, Serialize)]
pub struct Compared<T> {
    /// Which versions, and why there is no comparison where there is
    /// none.
    #[serde(flatten)]
    pub versions: Versions,
    /// The comparison, where both versions' documentation is kept.
    pub changes: Option<T>,
}

/// The two versions compared.
#[derive(Debug, Serialize)]
pub struct Versions {
    /// The provider's address.
    pub provider: String,
    /// The version whose changes are shown.
    pub version: String,
    /// The version it is compared with; none where no other is held.
    pub from: Option<String>,
    /// The version's documentation page.
    pub docs_page: String,
    /// The path of this comparison, without its `from`.
    pub here: String,
    /// The other versions held, newest first, to compare with.
    pub choices: Vec<String>,
    /// Why there is no comparison, where there is none.
    pub none: Option<String>,
}

/// Which pages changed.
#[derive(Debug, Serialize)]
pub struct ListView {
    /// Pages only the version has.
    pub added: Vec<PageLink>,
    /// Pages only the version compared with has (linked there).
    pub removed: Vec<PageLink>,
    /// Pages whose content changed, linked to their changes.
    pub changed: Vec<PageLink>,
    /// Pages the same in both.
    pub unchanged: usize,
}

/// One page's changes.
#[derive(Debug, Serialize)]
pub struct PageView {
    /// The page's kind.
    pub kind: DocKind,
    /// Its name.
    pub name: DocName,
    /// Its title (the newer version's, where it has the page).
    pub title: String,
    /// The list of all pages changed between the two versions.
    pub all_changes: String,
    /// The page in the version compared with, where it has it.
    pub old_page: Option<String>,
    /// The page in the version, where it has it.
    pub new_page: Option<String>,
    /// How it differs.
    #[serde(flatten)]
    pub changes: PageChanges,
}

#[derive(Template)]
#[template(path = "doc_changes.html")]
struct ListHtml<'a> {
    layout: &'a Layout,
    page: &'a Compared<ListView>,
}

#[derive(Template)]
#[template(path = "doc_page_changes.html")]
struct PageHtml<'a> {
    layout: &'a Layout,
    page: &'a Compared<PageView>,
}

/// The versions `req` compares: `version` with `from`, else with the
/// next older held; and both lists, where both are kept.
async fn versions(
    site: Site<'_>,
    req: &PageRequest<'_>,
    (provider, version): (&Provider, &Version),
    here: String,
) -> Result<(Versions, Option<(VersionDocs, VersionDocs)>), RequestError> {
    let new = site.mirror.held_docs(provider, version).await?;
    let (held, older) = others(site, provider, version);
    let from = match req.param("from").filter(|f| !f.is_empty()) {
        Some(asked) => {
            let asked = Version::parse(&asked)
                .map_err(|e| RequestError::InvalidRequest(format!("from: {e}")))?;
            if &asked == version {
                return Err(RequestError::InvalidRequest(format!(
                    "from: {version} is the version compared; name another held version"
                )));
            }
            Some(asked)
        }
        None => older,
    };
    let mut out = Versions {
        provider: provider.to_string(),
        version: version.to_string(),
        from: from.as_ref().map(Version::to_string),
        docs_page: docs_path(provider, version),
        here,
        choices: held.iter().map(Version::to_string).collect(),
        none: None,
    };
    let Some(from) = from else {
        out.none = Some(format!(
            "no version of {provider} older than {version} is held: choose one to compare with"
        ));
        return Ok((out, None));
    };
    let old = site.mirror.held_docs(provider, &from).await?;
    match (old, new) {
        (Some(old), Some(new)) => Ok((
            out,
            Some((
                std::sync::Arc::unwrap_or_clone(old),
                std::sync::Arc::unwrap_or_clone(new),
            )),
        )),
        (old, _) => {
            let lacking = if old.is_none() { &from } else { version };
            out.none = Some(format!(
                "no documentation of {provider} {lacking} is kept: {}",
                why_none(site, provider)
            ));
            Ok((out, None))
        }
    }
}

/// `/-/providers/…/VERSION/docs/changes`.
pub async fn list(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    (provider, version): (&Provider, &Version),
) -> Result<PageAnswer, RequestError> {
    let here = doc_changes_path(provider, version, None);
    let (versions, both) = versions(site, req, (provider, version), here).await?;
    let changes = both.map(|(old, new)| {
        let c = compare(&old, &new);
        let from = &old.version;
        ListView {
            added: (c.added.iter())
                .map(|p| PageLink::of(p, doc_page_path(provider, version, p.kind, &p.name)))
                .collect(),
            removed: (c.removed.iter())
                .map(|p| PageLink::of(p, doc_page_path(provider, from, p.kind, &p.name)))
                .collect(),
            changed: (c.changed.iter())
                .map(|p| {
                    let path =
                        doc_page_changes_path(provider, version, (p.kind, &p.name), Some(from));
                    PageLink::of(p, path)
                })
                .collect(),
            unchanged: c.unchanged,
        }
    });
    let data = Compared { versions, changes };
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &ListHtml {
            layout,
            page: &data,
        },
    ))
}

/// `/-/providers/…/VERSION/docs/changes/KIND/NAME`.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    (provider, version): (&Provider, &Version),
    (kind, name): (DocKind, &DocName),
) -> Result<PageAnswer, RequestError> {
    let here = doc_page_changes_path(provider, version, (kind, name), None);
    let (versions, both) = versions(site, req, (provider, version), here).await?;
    let changes = match both {
        None => None,
        Some((old, new)) => {
            let changes = site.mirror.page_changes((&old, &new), (kind, name)).await?;
            let title = (changes.new.as_ref().or(changes.old.as_ref()))
                .map(|p| p.title.clone())
                .unwrap_or_default();
            Some(PageView {
                kind,
                name: name.clone(),
                title,
                all_changes: doc_changes_path(provider, version, Some(&old.version)),
                old_page: (changes.old.as_ref())
                    .map(|p| doc_page_path(provider, &old.version, kind, &p.name)),
                new_page: (changes.new.as_ref())
                    .map(|p| doc_page_path(provider, version, kind, &p.name)),
                changes,
            })
        }
    };
    let data = Compared { versions, changes };
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &PageHtml {
            layout,
            page: &data,
        },
    ))
}
