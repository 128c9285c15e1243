//! Provider documentation in the store, kept once: each page's content by
//! its SHA-256 under `docs/pages/<first two hex digits>/<sha256>.md`, and
//! per version only the list of its pages under `docs/versions/<host>/
//! <namespace>/<type>/<version>.json`. A page most versions share is one
//! object; instances on one bucket share both. Pages are written before
//! the list that names them, so a crash between the two leaves pages no
//! list names, never a list that names a page not there; a page read back
//! is checked against its name, so a damaged one is refused, not shown.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::address::{DocName, Provider, Version};
use crate::docs::wire::License;
use crate::docs::DocKind;
use crate::verify::Sha256;

/// The format of the version lists this build writes, and the newest it
/// reads.
pub const DOCS_FORMAT: u32 = 1;

/// The most bytes of one page kept (registry.terraform.io cuts a document
/// at 500 KB, and says so).
pub const MAX_PAGE: usize = 1 << 20;

/// The folder documentation is kept in.
const TOP: &str = "docs";

/// One version's documentation: where it came from, when, under which
/// licences, and its pages.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VersionDocs {
    /// The record's format ([`DOCS_FORMAT`]).
    pub format: u32,
    /// The provider.
    pub provider: Provider,
    /// The version.
    pub version: Version,
    /// Where it was fetched from: the URL the version's list was read at.
    pub source: String,
    /// When, in milliseconds since the Unix epoch.
    pub fetched_at_ms: u64,
    /// The licences the source names for it (none where it names none).
    pub licenses: Vec<License>,
    /// The pages, in the source's order.
    pub pages: Vec<PageEntry>,
    /// The documents the source listed and this build passed over, each
    /// reason with how many.
    #[serde(default)]
    pub passed_over: BTreeMap<String, usize>,
}

/// One page of a version's documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageEntry {
    /// What it describes.
    pub kind: DocKind,
    /// Its name (`resource`; `index` for the overview).
    pub name: DocName,
    /// Its title.
    pub title: String,
    /// The source's grouping of it.
    #[serde(default)]
    pub subcategory: String,
    /// Its one-line description, where the source gives one.
    #[serde(default)]
    pub description: String,
    /// The SHA-256 (lowercase hex) of its content: where it is kept.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the source cut it short.
    #[serde(default)]
    pub truncated: bool,
}

fn corrupt(reason: String) -> StoreError {
    StoreError::Corrupt {
        what: "documentation record",
        reason,
    }
}

fn page_path(sha256: &str) -> [String; 3] {
    [
        TOP.to_owned(),
        "pages".to_owned(),
        format!("{}/{sha256}.md", &sha256[..2]),
    ]
}

fn version_path(provider: &Provider, version: &Version) -> [String; 6] {
    [
        TOP.to_owned(),
        "versions".to_owned(),
        provider.hostname.as_str().to_owned(),
        provider.namespace.as_str().to_owned(),
        provider.kind.as_str().to_owned(),
        format!("{version}.json"),
    ]
}

/// Whether `s` is a SHA-256 in lowercase hex.
fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Keeps a page's content under its SHA-256, which it returns; content of
/// more than [`MAX_PAGE`] bytes is refused.
pub async fn keep_page(store: &dyn Store, content: &[u8]) -> Result<String, StoreError> {
    if content.len() > MAX_PAGE {
        return Err(corrupt(format!(
            "a page of {} bytes, more than the {MAX_PAGE} kept of one",
            content.len()
        )));
    }
    let sha256 = hex::encode(Sha256::digest(content));
    let [top, pages, rest] = page_path(&sha256);
    let (folder, file) = rest.split_once('/').unwrap_or(("", &rest));
    store
        .write_document(&[&top, &pages, folder, file], content.to_vec())
        .await?;
    Ok(sha256)
}

/// A page's content by its SHA-256; `None` where it is not kept. Content
/// whose hash is not its name is refused as damaged.
pub async fn page(store: &dyn Store, sha256: &str) -> Result<Option<Vec<u8>>, StoreError> {
    if !is_sha256(sha256) {
        return Err(corrupt(format!("{sha256:?} is no page's name")));
    }
    let [top, pages, rest] = page_path(sha256);
    let (folder, file) = rest.split_once('/').unwrap_or(("", &rest));
    let Some(bytes) = store.read_document(&[&top, &pages, folder, file]).await? else {
        return Ok(None);
    };
    let got = hex::encode(Sha256::digest(&bytes));
    if got != sha256 {
        return Err(corrupt(format!(
            "the page kept as {sha256} holds content whose SHA-256 is {got}"
        )));
    }
    Ok(Some(bytes))
}

/// Keeps a version's list of pages, replacing the one before. Every page
/// it names must have been kept first ([`keep_page`]).
pub async fn write_version(store: &dyn Store, docs: &VersionDocs) -> Result<(), StoreError> {
    if let Some(bad) = docs.pages.iter().find(|p| !is_sha256(&p.sha256)) {
        return Err(corrupt(format!("{:?} is no page's name", bad.sha256)));
    }
    let path = version_path(&docs.provider, &docs.version);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    let bytes = serde_json::to_vec(docs).map_err(std::io::Error::other)?;
    store.write_document(&parts, bytes).await
}

/// The part of a kept list read before the rest: its format.
#[derive(Deserialize)]
struct Marker {
    format: u32,
}

/// A version's list of pages, if one is kept. A list of a newer format
/// than this build reads, or one that does not read, is an error that
/// names it.
pub async fn version(
    store: &dyn Store,
    provider: &Provider,
    version: &Version,
) -> Result<Option<VersionDocs>, StoreError> {
    let Some(bytes) = version_bytes(store, provider, version).await? else {
        return Ok(None);
    };
    version_from(&bytes, provider, version).map(Some)
}

/// The bytes of the list of `provider` `version` the store keeps, read
/// by [`version_from`]; `None` where none is kept.
pub async fn version_bytes(
    store: &dyn Store,
    provider: &Provider,
    version: &Version,
) -> Result<Option<Vec<u8>>, StoreError> {
    let path = version_path(provider, version);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    store.read_document(&parts).await
}

/// The list of `provider` `version` read from `bytes`, as
/// [`version_bytes`] gave them: refused where it is of a later format
/// than this build reads, does not parse, or describes another version.
pub fn version_from(
    bytes: &[u8],
    provider: &Provider,
    version: &Version,
) -> Result<VersionDocs, StoreError> {
    let where_ = version_path(provider, version).join("/");
    let marker: Marker =
        serde_json::from_slice(bytes).map_err(|e| corrupt(format!("{where_}: {e}")))?;
    if marker.format > DOCS_FORMAT {
        return Err(corrupt(format!(
            "{where_} is of format {}; this build reads formats up to {DOCS_FORMAT}",
            marker.format
        )));
    }
    let docs: VersionDocs =
        serde_json::from_slice(bytes).map_err(|e| corrupt(format!("{where_}: {e}")))?;
    if docs.provider != *provider || docs.version != *version {
        return Err(corrupt(format!(
            "{where_} describes {} {}",
            docs.provider, docs.version
        )));
    }
    Ok(docs)
}

/// A version list the store keeps, by its path: the version it is of, or
/// the path where it names none this build reads (left as it is).
pub type ListedVersion = Result<(Provider, Version), String>;

/// Every version list the store keeps, with its size in bytes.
pub async fn listed_versions(store: &dyn Store) -> Result<Vec<(ListedVersion, u64)>, StoreError> {
    let listed = store.list_documents_aged(&[TOP, "versions"]).await?;
    Ok(listed
        .into_iter()
        .map(|doc| {
            let mut path = vec![TOP.to_owned(), "versions".to_owned()];
            path.extend(doc.path);
            (
                version_of_path(&path).ok_or_else(|| path.join("/")),
                doc.size,
            )
        })
        .collect())
}

/// The version a list's path is of, where it is one this build writes.
fn version_of_path(path: &[String]) -> Option<(Provider, Version)> {
    let [_, _, host, namespace, kind, file] = path else {
        return None;
    };
    let provider = Provider::from_source(&format!("{host}/{namespace}/{kind}")).ok()?;
    let version = Version::parse(file.strip_suffix(".json")?).ok()?;
    (version_path(&provider, &version).as_slice() == path).then_some((provider, version))
}

/// A page the store keeps: its SHA-256, size, and when it was last
/// written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptPage {
    /// Its SHA-256 (lowercase hex), its name.
    pub sha256: String,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written (keeping a page again writes it again).
    pub written: std::time::SystemTime,
}

/// Every page the store keeps; files below the pages' folder that are not
/// named as a page is are passed over.
pub async fn kept_pages(store: &dyn Store) -> Result<Vec<KeptPage>, StoreError> {
    let listed = store.list_documents_aged(&[TOP, "pages"]).await?;
    Ok(listed
        .into_iter()
        .filter_map(|doc| {
            let [folder, file] = doc.path.as_slice() else {
                return None;
            };
            let sha256 = file.strip_suffix(".md")?;
            (is_sha256(sha256) && sha256.starts_with(folder.as_str())).then(|| KeptPage {
                sha256: sha256.to_owned(),
                size: doc.size,
                written: doc.written,
            })
        })
        .collect())
}

/// Removes a version's list of pages (its pages stay until
/// [`remove_page`]).
pub async fn remove_version(
    store: &dyn Store,
    provider: &Provider,
    version: &Version,
) -> Result<(), StoreError> {
    let path = version_path(provider, version);
    let parts: Vec<&str> = path.iter().map(String::as_str).collect();
    store.remove_document(&parts).await
}

/// Removes a page by its SHA-256.
pub async fn remove_page(store: &dyn Store, sha256: &str) -> Result<(), StoreError> {
    if !is_sha256(sha256) {
        return Err(corrupt(format!("{sha256:?} is no page's name")));
    }
    let [top, pages, rest] = page_path(sha256);
    let (folder, file) = rest.split_once('/').unwrap_or(("", &rest));
    store.remove_document(&[&top, &pages, folder, file]).await
}

#[cfg(test)]
mod tests;
