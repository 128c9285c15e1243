//! A version's documentation fetched from its registry, through the
//! upstream client (the request forgery guard, the CA file, timeouts, rate
//! limits and `Retry-After`, the host's credentials), within a budget of
//! requests: registry.terraform.io needs one request per document, and a
//! large provider lists over a thousand. A document that fails is passed
//! over and counted; a list that fails fails the fetch.

use std::collections::BTreeMap;

use url::Url;

use super::wire::{self, Listed, Listing, Source};
use crate::address::{Provider, Version};
pub use crate::config::docs::Shape;
use crate::store::docs::MAX_PAGE;
use crate::upstream::registry::endpoint;
use crate::upstream::{Client, UpstreamError};

/// What one version's fetch brought.
#[derive(Debug, Default)]
pub struct Fetched {
    /// The URL its list was read at.
    pub source: String,
    /// The list, as read.
    pub listing: Listing,
    /// Each document fetched, with its content and whether the registry
    /// cut it short.
    pub pages: Vec<(Listed, Vec<u8>, bool)>,
    /// Documents listed and not fetched, each reason with how many.
    pub failed: BTreeMap<String, usize>,
}

/// Where a provider version's documentation is listed: below `base`, the
/// registry's root for the `terraform` shape
/// (`https://registry.terraform.io/`), the root of its documentation files
/// for `opentofu` (`https://api.opentofu.org/registry/docs/`).
pub fn listing_url(
    base: &Url,
    shape: Shape,
    provider: &Provider,
    version: &Version,
) -> Result<Url, UpstreamError> {
    let (namespace, name) = (provider.namespace.as_str(), provider.kind.as_str());
    match shape {
        Shape::Terraform => endpoint(
            base,
            &["v1", "providers", namespace, name, version.as_str()],
        ),
        Shape::OpenTofu => endpoint(
            base,
            &[
                "providers",
                namespace,
                name,
                &format!("v{version}"),
                "index.json",
            ],
        ),
    }
}

/// Fetches a version's documentation, at most `budget` requests in all
/// (the list's included); documents past the budget are counted as not
/// fetched.
pub async fn fetch(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    shape: Shape,
    (provider, version): (&Provider, &Version),
    budget: usize,
) -> Result<Fetched, UpstreamError> {
    let list_url = listing_url(base, shape, provider, version)?;
    let (doc, _, final_url) = client.get_document(&list_url, token).await?;
    let listing = match shape {
        Shape::Terraform => wire::terraform_listing(&doc, &final_url)?,
        Shape::OpenTofu => wire::opentofu_listing(&doc, &final_url)?,
    };
    let mut fetched = Fetched {
        source: final_url.to_string(),
        ..Fetched::default()
    };
    let mut left = budget.saturating_sub(1);
    for listed in &listing.listed {
        if left == 0 {
            *fetched
                .failed
                .entry(format!("past the budget of {budget} requests"))
                .or_default() += 1;
            continue;
        }
        left -= 1;
        match content(client, base, &final_url, token, &listed.at).await {
            Ok((bytes, truncated)) if bytes.len() <= MAX_PAGE => {
                fetched.pages.push((listed.clone(), bytes, truncated));
            }
            Ok((bytes, _)) => {
                *fetched
                    .failed
                    .entry(format!("larger than {MAX_PAGE} bytes"))
                    .or_default() += 1;
                tracing::warn!(page = %listed.name, size = bytes.len(), "documentation page too large, passed over");
            }
            Err(e) => {
                tracing::warn!(page = %listed.name, error = %e, "documentation page not fetched");
                *fetched.failed.entry(failure(&e)).or_default() += 1;
            }
        }
    }
    fetched.listing = listing;
    Ok(fetched)
}

/// A failure's reason in a word, for counting (the URL left out).
fn failure(e: &UpstreamError) -> String {
    match e {
        UpstreamError::NotFound { .. } => "not found".into(),
        UpstreamError::Status { status, .. } => format!("answered {status}"),
        UpstreamError::Timeout { .. } => "timed out".into(),
        UpstreamError::Invalid { .. } => "unusable answer".into(),
        UpstreamError::Refused { .. } => "refused by the request forgery guard".into(),
        UpstreamError::Busy { .. } | UpstreamError::Unreachable { .. } => "unreachable".into(),
    }
}

/// One document's content and whether the registry cut it short.
async fn content(
    client: &Client,
    base: &Url,
    list_url: &Url,
    token: Option<&str>,
    at: &Source,
) -> Result<(Vec<u8>, bool), UpstreamError> {
    match at {
        Source::TerraformId(id) => {
            let url = endpoint(base, &["v2", "provider-docs", id])?;
            let (doc, _, final_url) = client.get_document(&url, token).await?;
            let (text, truncated) = wire::terraform_content(&doc, &final_url)?;
            Ok((text.into_bytes(), truncated))
        }
        Source::OpenTofuPath(path) => {
            // Below the list's folder: `resources/NAME.md` is two
            // segments, each checked when the list was read.
            let mut url = list_url.clone();
            {
                let mut segments = url
                    .path_segments_mut()
                    .map_err(|()| UpstreamError::invalid(list_url, "not a base URL"))?;
                segments.pop();
                segments.extend(path.split('/'));
            }
            let (bytes, _) = client.get_bytes(&url, token).await?;
            Ok((bytes.to_vec(), false))
        }
    }
}
