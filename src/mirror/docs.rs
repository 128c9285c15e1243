//! The documentation of each provider version the mirror keeps, captured
//! in the background once one of the version's archives is kept
//! ([`crate::docs::capture`]): a protocol answer never waits for it, and a
//! failure to get it never fails an install. A drain (`sync`'s end) waits
//! for it, as for build records.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use super::Mirror;
use crate::address::{Provider, Version};
use url::Url;

use crate::docs::capture::{self, From};
use crate::docs::fetch::Shape;

/// The versions whose documentation is being captured, so that the
/// archives of several platforms start one capture.
#[derive(Debug, Default)]
pub(super) struct DocsState {
    in_flight: Mutex<HashSet<(Provider, Version)>>,
}

impl Mirror {
    /// Where `provider`'s documentation is fetched from, in which shape
    /// (`[docs]`); `None` where its host has no source.
    pub fn docs_source(&self, provider: &Provider) -> Option<(Shape, Url)> {
        let redirected = (self.config.upstream.hosts.get(&provider.hostname))
            .is_some_and(|h| !h.services.is_empty());
        self.config.docs.source_for(&provider.hostname, redirected)
    }

    /// Captures `version`'s documentation in the background, unless it
    /// is kept already, its host has no source (`[docs]`), the mirror is
    /// offline, or a capture of it is under way.
    pub(super) fn capture_docs_later(self: &Arc<Self>, provider: &Provider, version: &Version) {
        if self.offline() {
            return;
        }
        let Some((shape, base)) = self.docs_source(provider) else {
            return;
        };
        let key = (provider.clone(), version.clone());
        {
            let mut in_flight = self
                .docs
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if !in_flight.insert(key.clone()) {
                return;
            }
        }
        let this = self.clone();
        self.tasks.spawn(async move {
            let (provider, version) = &key;
            // A list kept already is not fetched again; one this build
            // cannot read (a later build's, on a shared bucket) is left as
            // it is.
            let held = crate::store::docs::version(this.store.as_ref(), provider, version).await;
            if let Err(e) = &held {
                tracing::warn!(provider = %provider, version = %version, error = %e, "documentation kept that this build cannot read; left as it is");
            }
            if matches!(held, Ok(None)) {
                let from = From {
                    client: &this.origin.client,
                    base: &base,
                    shape,
                    token: this.origin.credentials.token(&provider.hostname),
                    budget: this.config.docs.max_requests_per_version,
                };
                let now = this.clock.unix_ms();
                match capture::capture(from, this.store.as_ref(), (provider, version), now).await {
                    Ok(docs) => tracing::info!(
                        provider = %provider, version = %version, pages = docs.pages.len(),
                        passed_over = docs.passed_over.values().sum::<usize>(),
                        "documentation kept"
                    ),
                    Err(e) => tracing::warn!(
                        provider = %provider, version = %version, error = %e,
                        "documentation not kept; it is fetched again when an archive of the version is next kept"
                    ),
                }
            }
            this.docs
                .in_flight
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&key);
        });
    }
}
