//! The protocol's JSON documents, rendered once per record: `index.json`
//! per version list, and `:version.json` per version record and set of
//! cached archives (an archive arriving in the cache adds its `h1:`). Each
//! platform's `h1:` is the cached archive's own, or the one the origin
//! reported in its `packages` field.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::Mirror;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::protocol::{IndexDocument, Rendered, VersionDocument};
use crate::store::{IndexRecord, VersionRecord};

impl Mirror {
    /// A provider's `index.json`, rendered once per version list: of what
    /// the policy lets clients see, which the list decides (the rules do
    /// not change while the mirror runs) unless a cooldown or an
    /// operator's decisions are at work, which change with time: such a
    /// rendering is made afresh each time.
    pub async fn index_document(&self, provider: &Provider) -> Result<Rendered, RequestError> {
        let record = self.index(provider).await?;
        let (visible, _, changing) = self.visible_index(provider, record.clone()).await;
        if changing {
            return Ok(Rendered::new(&IndexDocument::from_record(&visible)));
        }
        if let Some((seen, rendered)) = self.providers.rendered_indexes.get(provider).await {
            if Arc::ptr_eq(&seen, &record) {
                return Ok(rendered);
            }
        }
        // Boxed: keeping the rendering is a large future, and a document
        // found rendered needs none of it.
        Ok(Box::pin(self.render_index(provider, record, &visible)).await)
    }

    /// Renders a version list's document (`visible`, as clients may see
    /// `record`) and keeps it for the next request.
    async fn render_index(
        &self,
        provider: &Provider,
        record: Arc<IndexRecord>,
        visible: &IndexRecord,
    ) -> Rendered {
        let rendered = Rendered::new(&IndexDocument::from_record(visible));
        self.providers
            .rendered_indexes
            .insert(provider.clone(), (record, rendered.clone()))
            .await;
        rendered
    }

    /// A version's `:version.json`. With `sign`, each archive link carries
    /// the query `sign` makes for it (signed links, made for this answer
    /// and never kept); without, plain links, rendered once per record and
    /// set of cached archives.
    pub async fn version_document(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
        sign: Option<&(dyn Fn(&ArchiveKey) -> String + Sync)>,
    ) -> Result<Rendered, RequestError> {
        let key = (provider.clone(), version.clone());
        let record = self.version_at(&key).await?;
        if sign.is_none() {
            if let Some((seen, complete, rendered)) =
                self.providers.rendered_versions.get(&key).await
            {
                // Complete: every archive's h1: is in it, so nothing can
                // change.
                if complete && Arc::ptr_eq(&seen, &record) {
                    return Ok(rendered);
                }
            }
        }
        // Boxed: reading which archives are cached is a large future, and
        // a document found rendered needs none of it.
        Ok(Box::pin(self.render_version(key, record, sign)).await)
    }

    /// Renders a version's document: with `sign`'s links, for this answer
    /// alone; without, kept for the next request.
    async fn render_version(
        &self,
        key: (Provider, Version),
        record: Arc<VersionRecord>,
        sign: Option<&(dyn Fn(&ArchiveKey) -> String + Sync)>,
    ) -> Rendered {
        let h1 = self.known_h1(&record).await;
        if let Some(sign) = sign {
            let (provider, version) = (&key.0, &key.1);
            let query =
                |platform: &Platform| Some(sign(&ArchiveKey::new(provider, version, platform)));
            return Rendered::new(&VersionDocument::from_record(&record, &h1, query));
        }
        // Complete once every platform has an h1:; a cached archive's own
        // hash that disagrees with a reported one amends the record, which
        // renders it again.
        let complete = h1.len() == record.packages.len();
        let rendered = Rendered::new(&VersionDocument::from_record(&record, &h1, |_| None));
        self.providers
            .rendered_versions
            .insert(key, (record, complete, rendered.clone()))
            .await;
        rendered
    }

    /// The `h1:` hashes of the archives of `record` that are in the cache.
    pub async fn cached_h1(&self, record: &VersionRecord) -> BTreeMap<Platform, String> {
        self.held_archives(record)
            .await
            .into_iter()
            .map(|(platform, archive)| (platform, archive.h1.clone()))
            .collect()
    }

    /// Every `h1:` hash known for `record`: the cached archives' own, and
    /// for the others what the origin reported in its `packages` field.
    pub async fn known_h1(&self, record: &VersionRecord) -> BTreeMap<Platform, String> {
        let mut known = self.cached_h1(record).await;
        for (platform, pkg) in &record.packages {
            if let Some(reported) = &pkg.reported_h1 {
                known
                    .entry(platform.clone())
                    .or_insert_with(|| reported.clone());
            }
        }
        known
    }
}
