//! What documentation a site keeps, in its inventory: the provider versions
//! whose list of pages it keeps, and every page by its SHA-256. An export
//! for the site then carries the documentation of the versions it holds
//! without any, and only the pages it lacks. An inventory that lists any
//! is of format 3 (`docs`, `doc_pages`); one that lists none stays of
//! format 2, which earlier builds read.

use std::collections::{BTreeMap, BTreeSet};

use crate::address::{Provider, Version};
use crate::store::docs as kept;
use crate::store::{Store, StoreError};

/// The documentation a site keeps.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HeldDocs {
    /// The versions whose list of pages it keeps.
    pub versions: BTreeMap<Provider, BTreeSet<Version>>,
    /// The pages it keeps, by SHA-256 (lowercase hex).
    pub pages: BTreeSet<String>,
}

impl HeldDocs {
    /// What `store` keeps: every version list (one this build cannot read
    /// too: the site keeps something there), and every page.
    pub async fn of_store(store: &dyn Store) -> Result<HeldDocs, StoreError> {
        let mut out = HeldDocs::default();
        let listed = kept::listed_versions(store).await?;
        for (provider, version) in listed.into_iter().filter_map(|(l, _)| l.ok()) {
            out.versions.entry(provider).or_default().insert(version);
        }
        out.pages = (kept::kept_pages(store).await?.into_iter())
            .map(|p| p.sha256)
            .collect();
        Ok(out)
    }

    /// Whether it lists nothing.
    pub fn is_empty(&self) -> bool {
        self.versions.is_empty() && self.pages.is_empty()
    }

    /// Whether the site keeps a list of `provider` `version`'s pages.
    pub fn keeps(&self, provider: &Provider, version: &Version) -> bool {
        (self.versions.get(provider)).is_some_and(|vs| vs.contains(version))
    }

    /// Whether the site keeps the page `sha256`.
    pub fn has_page(&self, sha256: &str) -> bool {
        self.pages.contains(sha256)
    }

    /// Adds a version's list and its pages.
    pub fn add<'a>(
        &mut self,
        (provider, version): (&Provider, &Version),
        pages: impl IntoIterator<Item = &'a str>,
    ) {
        (self.versions.entry(provider.clone()).or_default()).insert(version.clone());
        self.pages.extend(pages.into_iter().map(str::to_owned));
    }

    /// Adds what `other` lists.
    pub fn merge(&mut self, other: &HeldDocs) {
        for (provider, versions) in &other.versions {
            (self.versions.entry(provider.clone()).or_default()).extend(versions.iter().cloned());
        }
        self.pages.extend(other.pages.iter().cloned());
    }
}

/// The document's `docs`, read: each key a full provider address, as
/// `providers` are.
pub(super) fn versions_of(
    listed: BTreeMap<String, BTreeSet<Version>>,
) -> Result<BTreeMap<Provider, BTreeSet<Version>>, String> {
    let mut out = BTreeMap::new();
    for (source, versions) in listed {
        match Provider::from_source(&source) {
            Ok(p) if p.to_string() == source => {
                out.insert(p, versions);
            }
            Ok(_) => {
                return Err(format!(
                    "docs.{source:?} is not a full provider address (hostname/namespace/type, in lower case)"
                ))
            }
            Err(e) => return Err(format!("docs.{source:?}: {e}")),
        }
    }
    Ok(out)
}

/// The document's `doc_pages`, read: each a SHA-256 in lowercase hex.
pub(super) fn pages_of(listed: BTreeSet<String>) -> Result<BTreeSet<String>, String> {
    if let Some(bad) = listed
        .iter()
        .find(|s| s.len() != 64 || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
    {
        return Err(format!(
            "doc_pages: {bad:?} is not a SHA-256 in lowercase hex"
        ));
    }
    Ok(listed)
}
