//! The registries' documentation answers, read as Go's `encoding/json`
//! reads them ([`crate::upstream::wire`]): `null` is the empty value,
//! absent and unknown fields are fine, a value of the wrong type is
//! refused with the field and the URL. An entry whose name or ID could
//! not be used in a path is passed over and said, never fatal to the rest.

use std::collections::BTreeMap;

use serde_json::Value;
use url::Url;

use super::DocKind;
use crate::address::DocName;
use crate::upstream::wire::{Node, Object};
use crate::upstream::UpstreamError;

/// The most documents one version's list is read to; the rest are
/// passed over and said. The largest public providers list a few
/// thousand.
pub const MAX_LISTED: usize = 10_000;

/// A document as a registry lists it, before its content is fetched.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listed {
    /// What it describes.
    pub kind: DocKind,
    /// Its name (`resource`, `s3_bucket`; `index` for the overview).
    pub name: DocName,
    /// Its title, as the registry gives it.
    pub title: String,
    /// The registry's grouping of it (often empty).
    pub subcategory: String,
    /// Its one-line description, where the registry gives one.
    pub description: String,
    /// Where its content is fetched from.
    pub at: Source,
}

/// Where a listed document's content is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// registry.terraform.io's document ID (`GET /v2/provider-docs/ID`).
    TerraformId(String),
    /// A path below the version's folder of registry.opentofu.org's
    /// static files (`resources/NAME.md`).
    OpenTofuPath(String),
}

/// A version's list of documents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// The documents kept, in the registry's order.
    pub listed: Vec<Listed>,
    /// Entries passed over, each with why (a category this build does
    /// not know, another language than HCL, a name no path may hold).
    pub passed_over: BTreeMap<String, usize>,
    /// The licences the registry names for the documentation.
    pub licenses: Vec<License>,
    /// Whether the registry says the licence does not let it republish
    /// the documentation.
    pub incompatible_license: bool,
}

/// A licence a registry names for a version's documentation.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct License {
    /// Its SPDX identifier (`MPL-2.0`).
    pub spdx: String,
    /// The file it was found in (`LICENSE`).
    pub file: String,
    /// Where it can be read.
    pub link: String,
    /// Whether the registry may republish under it.
    pub is_compatible: bool,
}

impl Listing {
    fn pass_over(&mut self, why: impl Into<String>) {
        *self.passed_over.entry(why.into()).or_default() += 1;
    }

    fn keep(&mut self, listed: Listed) {
        if self.listed.len() >= MAX_LISTED {
            self.pass_over(format!("more than {MAX_LISTED} documents"));
        } else {
            self.listed.push(listed);
        }
    }
}

/// registry.terraform.io's list of a version's documents
/// (`GET /v1/providers/NS/NAME/VERSION`, its `docs[]`): HCL documents
/// only; each one's ID is all digits.
pub fn terraform_listing(doc: &Value, url: &Url) -> Result<Listing, UpstreamError> {
    let root = Node::root(doc).object().map_err(|e| (url, e))?;
    let mut listing = Listing::default();
    for item in root.get("docs").items().map_err(|e| (url, e))? {
        let item = item.object().map_err(|e| (url, e))?;
        let field = |key: &str| item.get(key).string().map_err(|e| (url, e));
        let (id, category, language) = (field("id")?, field("category")?, field("language")?);
        let Some(kind) = DocKind::from_terraform_category(&category) else {
            listing.pass_over(format!(
                "category {category:?}, which this build does not know"
            ));
            continue;
        };
        if !language.is_empty() && language != "hcl" {
            listing.pass_over(format!("language {language:?}"));
            continue;
        }
        let Ok(name) = DocName::parse(&field("slug")?) else {
            listing.pass_over("a name no page may have");
            continue;
        };
        if id.is_empty() || id.len() > 20 || !id.bytes().all(|b| b.is_ascii_digit()) {
            listing.pass_over("an ID that is not a number");
            continue;
        }
        listing.keep(Listed {
            kind,
            title: field("title")?,
            subcategory: field("subcategory")?,
            description: String::new(),
            name,
            at: Source::TerraformId(id),
        });
    }
    Ok(listing)
}

/// One document's content from registry.terraform.io
/// (`GET /v2/provider-docs/ID`: `data.attributes.content`, and whether
/// the registry cut it, `truncated`).
pub fn terraform_content(doc: &Value, url: &Url) -> Result<(String, bool), UpstreamError> {
    let attributes = Node::root(doc)
        .object()
        .and_then(|o| o.get("data").object())
        .and_then(|o| o.get("attributes").object())
        .map_err(|e| (url, e))?;
    let content = attributes.get("content").string().map_err(|e| (url, e))?;
    let truncated = attributes
        .get("truncated")
        .boolean()
        .map_err(|e| (url, e))?;
    Ok((content, truncated))
}

/// registry.opentofu.org's `index.json` of a version's documentation:
/// the overview (`docs.index`, at `index.md`), then each kind's list
/// (`docs.resources[]` at `resources/NAME.md`, …), the licences and
/// whether they let the registry republish.
pub fn opentofu_listing(doc: &Value, url: &Url) -> Result<Listing, UpstreamError> {
    let root = Node::root(doc).object().map_err(|e| (url, e))?;
    let docs = root.get("docs").object().map_err(|e| (url, e))?;
    let mut listing = Listing::default();
    let index = docs.get("index");
    if !index.is_empty_value() {
        let item = index.object().map_err(|e| (url, e))?;
        let overview = opentofu_item(&item, (DocKind::Overview, DocName::index()), url)?;
        listing.keep(Listed {
            at: Source::OpenTofuPath("index.md".into()),
            ..overview
        });
    }
    for kind in DocKind::ALL {
        let Some((folder, key)) = kind.opentofu_folder() else {
            continue;
        };
        for item in docs.get(key).items().map_err(|e| (url, e))? {
            let item = item.object().map_err(|e| (url, e))?;
            let name = item.get("name").string().map_err(|e| (url, e))?;
            let Ok(name) = DocName::parse(&name) else {
                listing.pass_over("a name no page may have");
                continue;
            };
            let listed = opentofu_item(&item, (kind, name), url)?;
            let path = format!("{folder}/{}.md", listed.name);
            listing.keep(Listed {
                at: Source::OpenTofuPath(path),
                ..listed
            });
        }
    }
    for license in root.get("license").items().map_err(|e| (url, e))? {
        let license = license.object().map_err(|e| (url, e))?;
        let field = |key: &str| license.get(key).string().map_err(|e| (url, e));
        listing.licenses.push(License {
            spdx: field("spdx")?,
            file: field("file")?,
            link: field("link")?,
            is_compatible: license
                .get("is_compatible")
                .boolean()
                .map_err(|e| (url, e))?,
        });
    }
    listing.incompatible_license = root
        .get("incompatible_license")
        .boolean()
        .map_err(|e| (url, e))?;
    Ok(listing)
}

/// One item of registry.opentofu.org's lists, of `kind` and named `name`
/// (read by the caller: the overview's is always `index`).
fn opentofu_item(
    item: &Object<'_>,
    (kind, name): (DocKind, DocName),
    url: &Url,
) -> Result<Listed, UpstreamError> {
    let field = |key: &str| item.get(key).string().map_err(|e| (url, e));
    Ok(Listed {
        kind,
        name,
        title: field("title")?,
        subcategory: field("subcategory")?,
        description: field("description")?,
        at: Source::OpenTofuPath(String::new()),
    })
}

#[cfg(test)]
mod tests;
