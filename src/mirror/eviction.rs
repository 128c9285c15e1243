//! Eviction, for every domain over the shared cache: what the residency
//! index gave up when the cache outgrew `cache.max_size` is removed from
//! the store, and the domain that owned it forgets it — the provider
//! mirror its archive, the module proxy its package (whose pin stays), the
//! CLI releases their file (whose release's record stays). No domain
//! reaches into another's state.

use super::Mirror;
use crate::address::{ArchiveKey, Module, ReleaseFile, Version};
use crate::store::Item;

impl Mirror {
    /// Removes from the store what the residency index gave up. Each item
    /// is looked for first: one the store no longer holds is only
    /// forgotten, and counted as an index correction, not an eviction.
    pub(super) async fn evict(&self, evicted: Vec<Item>) {
        if !evicted.is_empty() {
            self.advised_lists_changed();
        }
        for old in evicted {
            match self.store.held(&old).await {
                Ok(Some(_)) => {}
                Ok(None) => {
                    tracing::info!(item = %old, "the archive index held what the store no longer holds: forgotten, nothing evicted for it");
                    self.metrics.index_dropped(1);
                    self.gone_from_store(&old).await;
                    continue;
                }
                Err(e) => {
                    tracing::warn!(item = %old, error = %e, "could not look for what eviction picked: it stays in the store, and the next reconciliation counts it again");
                    continue;
                }
            }
            match old {
                Item::Archive(old) => match self.store.remove_archive(&old).await {
                    Ok(()) => {
                        tracing::info!(provider = %old.provider, version = %old.version, platform = %old.platform, "evicted least recently used archive");
                        self.providers.forget_archive(&old).await;
                        self.note_evicted(&old).await;
                        self.metrics.evicted("archive");
                    }
                    Err(e) => {
                        tracing::warn!(archive = %old, error = %e, "could not evict archive");
                        self.put_back(&Item::Archive(old)).await;
                    }
                },
                Item::Release(file) => match self.store.remove_release_file(&file).await {
                    Ok(()) => {
                        self.metrics.evicted("release");
                        tracing::info!(target: crate::releases::state::RELEASES_LOG, product = %file.product, version = %file.version, file = %file.name, "evicted least recently used release file; its release's record stays");
                    }
                    Err(e) => {
                        tracing::warn!(target: crate::releases::state::RELEASES_LOG, %file, error = %e, "could not evict release file");
                        self.put_back(&Item::Release(file)).await;
                    }
                },
                Item::Module(module, version) => {
                    match self.store.remove_module(&module, &version).await {
                        Ok(()) => {
                            self.metrics.evicted("module");
                            tracing::info!(%module, %version, "evicted least recently used module package; its pin stays");
                            self.package_gone(&module, &version).await;
                        }
                        Err(e) => {
                            tracing::warn!(%module, %version, error = %e, "could not evict module package");
                            self.put_back(&Item::Module(module, version)).await;
                        }
                    }
                }
            }
        }
    }

    /// Puts back in the index an item whose removal failed, as the store
    /// holds it.
    async fn put_back(&self, item: &Item) {
        if let Ok(Some(held)) = self.store.held(item).await {
            self.item_held(item, held).await;
        }
    }

    /// Counts a newly stored release file, and evicts what the cache must
    /// give up for it.
    pub(crate) async fn release_stored(&self, file: &ReleaseFile, size: u64) {
        self.arrived(Item::Release(file.clone()));
        let evicted = self.residency.stored_release(file, size);
        self.evict(evicted).await;
    }

    /// Records that a release file was served.
    pub(crate) fn release_used(&self, file: &ReleaseFile, size: u64) {
        self.residency.release_used(file, size);
    }

    /// Notes in the version's record that its archive was evicted, so that
    /// `tfmirror check` can say why it is missing.
    async fn note_evicted(&self, key: &ArchiveKey) {
        match self.store.read_version(&key.provider, &key.version).await {
            Ok(Some(record)) => {
                let at = self.clock.unix_ms();
                self.amend_version(&record, |r| {
                    r.evicted_ms.insert(key.platform.clone(), at);
                })
                .await;
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(archive = %key, error = %e, "could not note the eviction in the version's record");
            }
        }
    }

    /// A module package left the store (evicted, or removed by another
    /// process): the module proxy and the residency index forget it.
    pub(super) async fn package_gone(&self, module: &Module, version: &Version) {
        self.modules.forget_package(module, version).await;
        self.residency.forget_module(module, version);
    }
}
