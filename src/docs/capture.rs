//! One version's documentation fetched ([`super::fetch`]) and kept in the
//! store ([`crate::store::docs`]): each page's content first, by its hash,
//! then the version's list of them.

use url::Url;

use super::fetch::{self, Shape};
use crate::address::{Provider, Version};
use crate::store::docs::{self as kept, PageEntry, VersionDocs, DOCS_FORMAT};
use crate::store::{Store, StoreError};
use crate::upstream::{Client, UpstreamError};

/// Why a version's documentation was not kept.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// Its list could not be fetched or read.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Where and how a version's documentation is fetched.
#[derive(Clone, Copy)]
pub struct From<'a> {
    /// The upstream client.
    pub client: &'a Client,
    /// The source's root.
    pub base: &'a Url,
    /// Its shape.
    pub shape: Shape,
    /// The host's token, where one is configured.
    pub token: Option<&'a str>,
    /// The most requests the version takes.
    pub budget: usize,
}

/// A version's documentation as kept, with each page's content, in the
/// order of its list.
#[derive(Debug)]
pub struct CapturedDocs {
    /// The version's list, as written to the store.
    pub docs: VersionDocs,
    /// Each listed page's content, as fetched and kept.
    pub contents: Vec<Vec<u8>>,
}

/// Fetches `version`'s documentation and keeps it; `now_ms` is when.
/// Returns what was kept, with the pages' contents, so that what reads
/// them next need not read them back from the store.
pub async fn capture(
    from: From<'_>,
    store: &dyn Store,
    (provider, version): (&Provider, &Version),
    now_ms: u64,
) -> Result<CapturedDocs, CaptureError> {
    let fetched = fetch::fetch(
        from.client,
        from.base,
        from.token,
        from.shape,
        (provider, version),
        from.budget,
    )
    .await?;
    let mut pages = Vec::with_capacity(fetched.pages.len());
    let mut contents = Vec::with_capacity(fetched.pages.len());
    for (listed, content, truncated) in fetched.pages {
        let sha256 = kept::keep_page(store, &content).await?;
        pages.push(PageEntry {
            kind: listed.kind,
            name: listed.name.clone(),
            title: listed.title.clone(),
            subcategory: listed.subcategory.clone(),
            description: listed.description.clone(),
            sha256,
            size: content.len() as u64,
            truncated,
        });
        contents.push(content);
    }
    let mut passed_over = fetched.listing.passed_over;
    for (why, n) in fetched.failed {
        *passed_over
            .entry(format!("not fetched: {why}"))
            .or_default() += n;
    }
    let docs = VersionDocs {
        format: DOCS_FORMAT,
        provider: provider.clone(),
        version: version.clone(),
        source: fetched.source,
        fetched_at_ms: now_ms,
        licenses: fetched.listing.licenses,
        pages,
        passed_over,
    };
    kept::write_version(store, &docs).await?;
    Ok(CapturedDocs { docs, contents })
}
