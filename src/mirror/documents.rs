//! The protocol's JSON documents, rendered once per record: `index.json`
//! per version list, and `:version.json` per version record and set of
//! cached archives (an archive this mirror stores adds its `h1:` at once;
//! one stored by another process shows within [`UNHELD_RECHECK`]). Each
//! platform's `h1:` is the cached archive's own, or the one the origin
//! reported in its `packages` field.

use std::collections::BTreeMap;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::held::{ready_now, VersionKey};
use super::{Held, Mirror};
use crate::address::{Platform, Provider, Version};
use crate::advisories::Summary;
use crate::error::RequestError;
use crate::metrics::{CacheKind, CacheOutcome};
use crate::protocol::{IndexDocument, Rendered, VersionDocument};
use crate::store::{IndexRecord, PolicyDecisions, VersionRecord};

/// How long a `:version.json` that lacks some archive's `h1:` is answered
/// as rendered before the store is asked again which archives it holds.
/// An archive this mirror stores renders the document again at once; this
/// bounds how long one stored by another process (`tfmirror import`,
/// another instance on the same bucket) goes unseen, and spares the store
/// a lookup per archive not held on every request.
pub const UNHELD_RECHECK: Duration = Duration::from_secs(10);

/// A `:version.json` (unsigned links) as last rendered while some
/// platform's `h1:` was not known. (One with every `h1:` cannot change
/// while its record does not, and is kept with the record.)
#[derive(Clone)]
pub(super) struct RenderedVersion {
    /// The record it was rendered from.
    record: Arc<VersionRecord>,
    /// How many archives the mirror had stored when it was rendered.
    kept: u64,
    /// When it was rendered, by the mirror's clock (Unix milliseconds).
    at_ms: u64,
    rendered: Rendered,
}

impl Mirror {
    /// A provider's `index.json`, rendered once per version list: of what
    /// the policy lets clients see, which the list decides (the rules do
    /// not change while the mirror runs) unless a cooldown or an
    /// operator's decisions are at work, which change with time: such a
    /// rendering is made afresh each time.
    pub async fn index_document(
        self: &Arc<Self>,
        provider: &Provider,
    ) -> Result<Rendered, RequestError> {
        let held = self.held_index(provider).await?;
        let decisions = self.decisions().await;
        let advised = self.advised_versions(provider).await;
        Ok(self.index_rendering(&decisions, provider, &held, &advised))
    }

    /// [`Mirror::index_document`] when all it needs is held in memory now
    /// (the live version list, the operator's decisions), found without
    /// waiting, so that a request answered from memory carries no state
    /// for loading; `None` otherwise, with nothing noted or counted, for
    /// [`Mirror::index_document`] to answer.
    pub fn held_index_document(&self, provider: &Provider) -> Option<Rendered> {
        self.check_host(&provider.hostname).ok()?;
        if self.policy.has_advisory_rules() {
            // The advisories against held versions are matched by
            // `index_document`.
            return None;
        }
        let held = self.live(&self.providers.indexes, provider)?;
        let decisions = self.decisions_now()?;
        self.note(CacheKind::Index, CacheOutcome::Hit);
        Some(self.index_rendering(&decisions, provider, &held, &BTreeMap::default()))
    }

    /// `index.json` of the list `held`, as `decisions` let clients see it.
    fn index_rendering(
        &self,
        decisions: &PolicyDecisions,
        provider: &Provider,
        held: &Held<IndexRecord, Rendered>,
        advised: &BTreeMap<Version, Summary>,
    ) -> Rendered {
        let (visible, denied, changing) =
            self.visible_index_by(decisions, provider, held.value.clone(), advised);
        let render = || Rendered::new(&IndexDocument::from_record(&visible));
        if changing && denied.is_empty() && self.policy.has_advisory_rules() {
            // With rules by advisory every list is `changing`, so the
            // slot below only ever holds the whole list's rendering, which
            // is the answer whenever nothing is left out.
            return held.made.get_or_init(render).clone();
        }
        if changing {
            return render();
        }
        // Kept with the list as it is held: one lookup finds both, and a
        // list held in its place starts unrendered.
        held.made.get_or_init(render).clone()
    }

    /// A version's `:version.json`, with plain links (an answer with signed
    /// links is made from it), rendered once per record and set of cached
    /// archives.
    pub async fn version_document(
        self: &Arc<Self>,
        provider: &Provider,
        version: &Version,
    ) -> Result<Rendered, RequestError> {
        let key = (provider.clone(), version.clone());
        let held = self.held_version_at(&key).await?;
        if let Some(rendered) = self.rendered_now(&VersionKey::of(&key), &held) {
            return Ok(rendered);
        }
        // Boxed: reading which archives are cached is a large future, and
        // a document found rendered needs none of it.
        Ok(Box::pin(self.render_version(key, held)).await)
    }

    /// [`Mirror::version_document`] with plain links when all it needs is
    /// held in memory now: the live record, a rendering of it that still
    /// holds, and the operator's decisions, with nothing for the policy to
    /// decide (see [`Mirror::held_index_document`]); `None` otherwise, with
    /// nothing noted or counted.
    pub fn held_version_document(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Option<Rendered> {
        self.check_host(&provider.hostname).ok()?;
        if !self.undecided(&*self.decisions_now()?) {
            return None;
        }
        let key = VersionKey(provider, version);
        let held = self.live(&self.providers.versions, &key)?;
        let rendered = self.rendered_now(&key, &held)?;
        self.note(CacheKind::Version, CacheOutcome::Hit);
        Some(rendered)
    }

    /// The unsigned `:version.json` of the record `held`, if one rendered
    /// from it still holds: a complete one, kept with the record as it is
    /// held (so one lookup finds both, and a record held in its place,
    /// amended or loaded again, starts unrendered), or one that lacks some
    /// `h1:` while it is current. (A read of the latter that would wait
    /// counts as none: the document is rendered again.)
    fn rendered_now(
        &self,
        key: &VersionKey<'_>,
        held: &Held<VersionRecord, Rendered>,
    ) -> Option<Rendered> {
        if let Some(complete) = held.made.get() {
            return Some(complete.clone());
        }
        let kept = ready_now(pin!(self.providers.rendered_versions.get(key))).flatten()?;
        (Arc::ptr_eq(&kept.record, &held.value) && self.still_current(&kept))
            .then_some(kept.rendered)
    }

    /// Whether a rendering that lacks some `h1:` still says what the
    /// store holds: no archive has been stored here since and it is
    /// younger than [`UNHELD_RECHECK`] (a clock that went back counts as
    /// older).
    fn still_current(&self, kept: &RenderedVersion) -> bool {
        kept.kept == self.providers.archives_kept.load(Ordering::Acquire)
            && self
                .clock
                .unix_ms()
                .checked_sub(kept.at_ms)
                .is_some_and(|age| Duration::from_millis(age) < UNHELD_RECHECK)
    }

    /// Renders a version's document, kept for the next request (with
    /// `held` when it is complete).
    async fn render_version(
        &self,
        key: (Provider, Version),
        held: Held<VersionRecord, Rendered>,
    ) -> Rendered {
        let record = held.value;
        // Read before the store is: an archive stored while this renders
        // makes the rendering out of date.
        let kept = self.providers.archives_kept.load(Ordering::Acquire);
        let at_ms = self.clock.unix_ms();
        let h1 = self.known_h1(&record).await;
        // Complete once every platform has an h1:; a cached archive's own
        // hash that disagrees with a reported one amends the record, which
        // renders it again.
        let rendered = Rendered::new(&VersionDocument::from_record(&record, &h1, |_| None));
        if h1.len() == record.packages.len() {
            // Another request may have rendered it first: the same bytes.
            let _ = held.made.set(rendered.clone());
            self.providers.rendered_versions.invalidate(&key).await;
        } else {
            let kept = RenderedVersion {
                record,
                kept,
                at_ms,
                rendered: rendered.clone(),
            };
            self.providers.rendered_versions.insert(key, kept).await;
        }
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
