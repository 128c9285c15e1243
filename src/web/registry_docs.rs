//! The documentation the mirror keeps, served in the OpenTofu Registry's
//! static shape below `/-/registry-docs/HOST/` (the root a tool built for
//! that API is pointed at, and the `tfmirror-docs.v1` service a lower tier
//! reads): `providers/NS/TYPE/index.json` lists the versions held whose
//! documentation is kept, `…/vVERSION/index.json` a version's documents,
//! and `…/vVERSION/index.md` and `…/vVERSION/FOLDER/NAME.md` each
//! document's Markdown as the source gave it. Kinds the shape has no
//! folder for are not listed.
//!
//! A version held whose documentation is not kept yet is captured when its
//! list is asked for, as when one of its archives is kept (its host has a
//! source, the mirror is online, the policy allows it): so a lower tier
//! that asks right after fetching an archive through this mirror gets the
//! documentation, not a miss.

use std::collections::BTreeMap;

use serde::Serialize;
use serde_json::{json, Value};

use super::answer::PageAnswer;
use super::routes::RegistryDoc;
use super::Site;
use crate::address::{Provider, Version};
use crate::docs::DocKind;
use crate::error::RequestError;
use crate::store::docs::{PageEntry, VersionDocs};

/// Go's zero time, as `encoding/json` writes it: what the shape's
/// required `published` says where the mirror does not know when a
/// version was published.
const UNKNOWN_TIME: &str = "0001-01-01T00:00:00Z";

/// One entry of a version's lists, as the shape names its fields.
#[derive(Debug, Serialize)]
struct Item<'a> {
    name: &'a str,
    title: &'a str,
    subcategory: &'a str,
    description: &'a str,
    edit_link: &'static str,
}

impl<'a> Item<'a> {
    fn of(page: &'a PageEntry) -> Item<'a> {
        Item {
            name: page.name.as_str(),
            title: &page.title,
            subcategory: &page.subcategory,
            description: &page.description,
            edit_link: "",
        }
    }
}

/// Answers a path of the documentation files.
pub async fn answer(site: Site<'_>, asked: &RegistryDoc) -> Result<PageAnswer, RequestError> {
    match asked {
        RegistryDoc::Provider(provider) => provider_index(site, provider).await,
        RegistryDoc::Version(provider, version) => {
            let docs = kept(site, provider, version).await?;
            Ok(PageAnswer::json(&version_index(&docs)))
        }
        RegistryDoc::Page(provider, version, kind, name) => {
            let docs = kept(site, provider, version).await?;
            let entry = (docs.pages.iter())
                .find(|p| p.kind == *kind && &p.name == name)
                .ok_or_else(|| {
                    RequestError::NoSuchPage(format!(
                        "the documentation of {provider} {version} kept here has no {} page {name}",
                        kind.as_str()
                    ))
                })?;
            let markdown = site.mirror.doc_bytes(entry).await?;
            Ok(PageAnswer::new(
                http::StatusCode::OK,
                "text/markdown; charset=utf-8",
                markdown,
            ))
        }
    }
}

/// A held version's documentation, captured now where none is kept yet;
/// a miss names why.
async fn kept(
    site: Site<'_>,
    provider: &Provider,
    version: &Version,
) -> Result<VersionDocs, RequestError> {
    site.mirror
        .docs_now(provider, version)
        .await?
        .map_err(|why| {
            RequestError::NoSuchPage(format!(
                "this mirror keeps no documentation of {provider} {version}: {why}"
            ))
        })
}

/// `providers/NS/TYPE/index.json`: the provider, and the versions held
/// whose documentation is kept, newest first.
async fn provider_index(site: Site<'_>, provider: &Provider) -> Result<PageAnswer, RequestError> {
    let mut versions = Vec::new();
    for (version, _) in site.mirror.held_versions(provider) {
        if site.mirror.held_docs(provider, &version).await?.is_some() {
            versions.push(json!({"id": format!("v{version}"), "published": UNKNOWN_TIME}));
        }
    }
    if versions.is_empty() {
        return Err(RequestError::NoSuchPage(format!(
            "this mirror keeps the documentation of no version of {provider}"
        )));
    }
    let addr = json!({
        "display": format!("{}/{}", provider.namespace, provider.kind),
        "namespace": provider.namespace.as_str(),
        "name": provider.kind.as_str(),
    });
    Ok(PageAnswer::json(&json!({
        "addr": addr,
        "description": "",
        "popularity": 0,
        "fork_count": 0,
        "is_blocked": false,
        "versions": versions,
    })))
}

/// `…/vVERSION/index.json`: the version's documents by kind, the
/// overview under `index`, its licences. `incompatible_license` is set
/// only where a licence the source named says it may not be republished:
/// this mirror does not judge licences itself.
fn version_index(docs: &VersionDocs) -> Value {
    let mut lists: BTreeMap<&str, Vec<Item<'_>>> = BTreeMap::new();
    let mut index = None;
    for kind in DocKind::ALL {
        match kind.opentofu_folder() {
            Some((_, key)) => {
                let items = (docs.pages.iter())
                    .filter(|p| p.kind == kind)
                    .map(Item::of)
                    .collect();
                lists.insert(key, items);
            }
            None => index = docs.pages.iter().find(|p| p.kind == kind).map(Item::of),
        }
    }
    let mut all = json!(lists);
    if let Some(index) = index {
        all["index"] = json!(index);
    }
    json!({
        "id": format!("v{}", docs.version),
        "published": UNKNOWN_TIME,
        "docs": all,
        "cdktf_docs": {},
        "license": docs.licenses,
        "incompatible_license": docs.licenses.iter().any(|l| !l.is_compatible),
        "link": "",
    })
}

#[cfg(test)]
mod tests;
