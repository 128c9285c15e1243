//! A held version's documentation read for people and agents alike, and
//! what changed in it between two held versions: for a provider, which
//! pages were added, removed or changed (pages are matched by kind and
//! name, and compared by their SHA-256, so no content is read); for one
//! page, its lines ([`crate::docs::changes`]). Read from the store alone:
//! no registry is asked anything.

use std::sync::Arc;

use serde::Serialize;

use super::Mirror;
use crate::address::{DocName, Provider, Version};
use crate::docs::changes::{self, TextChanges};
use crate::docs::DocKind;
use crate::error::RequestError;
use crate::store::docs::{self as kept, PageEntry, VersionDocs};
use crate::store::StoreError;

/// Which pages two versions' documentation lists differ by.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ListChanges {
    /// Pages only the newer list names, in its order.
    pub added: Vec<PageEntry>,
    /// Pages only the older list names, in its order.
    pub removed: Vec<PageEntry>,
    /// Pages both name whose content differs, as the newer names them,
    /// in its order.
    pub changed: Vec<PageEntry>,
    /// Pages both name with the same content.
    pub unchanged: usize,
}

/// How one page differs between two versions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PageChanges {
    /// The page as the older version's list names it; none where it has
    /// no such page.
    pub old: Option<PageEntry>,
    /// The page as the newer version's list names it; none where it has
    /// no such page.
    pub new: Option<PageEntry>,
    /// How its lines differ.
    pub text: TextChanges,
}

/// The pages of `new` not in `old`, of `old` not in `new`, and those of
/// both whose content differs.
pub fn compare(old: &VersionDocs, new: &VersionDocs) -> ListChanges {
    let key = |p: &PageEntry| (p.kind, p.name.clone());
    let old_pages: std::collections::HashMap<_, &PageEntry> =
        old.pages.iter().map(|p| (key(p), p)).collect();
    let new_keys: std::collections::HashSet<_> = new.pages.iter().map(key).collect();
    let mut out = ListChanges {
        added: Vec::new(),
        removed: (old.pages.iter())
            .filter(|p| !new_keys.contains(&key(p)))
            .cloned()
            .collect(),
        changed: Vec::new(),
        unchanged: 0,
    };
    for page in &new.pages {
        match old_pages.get(&key(page)) {
            None => out.added.push(page.clone()),
            Some(before) if before.sha256 != page.sha256 => out.changed.push(page.clone()),
            Some(_) => out.unchanged += 1,
        }
    }
    out
}

/// A store that failed to read the documentation kept.
fn unreadable(e: &StoreError) -> RequestError {
    RequestError::DiskUnavailable(format!("the documentation kept cannot be read: {e}"))
}

impl Mirror {
    /// `version`'s documentation list, for a version the mirror holds;
    /// `None` where none is kept. A version not held is no page. The list
    /// is read from the store each time, and parsed only where its bytes
    /// are not those parsed last (a version of a large provider lists
    /// over a thousand pages, and each of its pages needs the list).
    pub async fn held_docs(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Result<Option<Arc<VersionDocs>>, RequestError> {
        if !(self.held_versions(provider).iter()).any(|(v, _)| v == version) {
            return Err(RequestError::NoSuchPage(format!(
                "this mirror holds no archive of {provider} {version}: its documentation is kept with the version"
            )));
        }
        let read = kept::version_bytes(self.store(), provider, version).await;
        let Some(bytes) = read.map_err(|e| unreadable(&e))? else {
            return Ok(None);
        };
        let key = (provider.clone(), version.clone());
        if let Some((parsed, docs)) = self.docs.lists.get(&key) {
            if *parsed == *bytes {
                return Ok(Some(docs));
            }
        }
        let docs = kept::version_from(&bytes, provider, version).map_err(|e| unreadable(&e))?;
        let docs = Arc::new(docs);
        self.docs.lists.insert(key, (bytes.into(), docs.clone()));
        Ok(Some(docs))
    }

    /// A kept page's Markdown (bytes that are not UTF-8 replaced).
    pub async fn doc_content(&self, page: &PageEntry) -> Result<String, RequestError> {
        let content = self.doc_bytes(page).await?;
        Ok(String::from_utf8_lossy(&content).into_owned())
    }

    /// A kept page's content, as the source gave it.
    pub async fn doc_bytes(&self, page: &PageEntry) -> Result<Vec<u8>, RequestError> {
        kept::page(self.store(), &page.sha256)
            .await
            .map_err(|e| unreadable(&e))?
            .ok_or_else(|| {
                RequestError::DiskUnavailable(format!(
                    "the content of {} page {} is no longer in the store",
                    page.kind.as_str(),
                    page.name
                ))
            })
    }

    /// How page `kind`/`name` differs from `old` to `new` (their lists
    /// as [`Mirror::held_docs`] read them). A page neither names is no
    /// page; one only one names is compared with an empty one.
    pub async fn page_changes(
        &self,
        (old, new): (&VersionDocs, &VersionDocs),
        (kind, name): (DocKind, &DocName),
    ) -> Result<PageChanges, RequestError> {
        let find = |docs: &VersionDocs| {
            (docs.pages.iter())
                .find(|p| p.kind == kind && &p.name == name)
                .cloned()
        };
        let (old_page, new_page) = (find(old), find(new));
        if old_page.is_none() && new_page.is_none() {
            return Err(RequestError::NoSuchPage(format!(
                "neither {} {} nor {} keeps a {} page {name}",
                new.provider,
                old.version,
                new.version,
                kind.as_str()
            )));
        }
        let mut texts = [String::new(), String::new()];
        for (text, page) in texts.iter_mut().zip([&old_page, &new_page]) {
            if let Some(page) = page {
                *text = self.doc_content(page).await?;
            }
        }
        let [before, after] = texts;
        let text = tokio::task::spawn_blocking(move || changes::lines(&before, &after))
            .await
            .map_err(|e| RequestError::Internal(format!("comparing two pages: {e}")))?;
        Ok(PageChanges {
            old: old_page,
            new: new_page,
            text,
        })
    }
}
