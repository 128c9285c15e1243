//! The daemon's upkeep of its archive index, run beside its listener from
//! start to stop: the reconciliation that follows every start, those that
//! follow on `cache.reconcile_every`, on SIGHUP and when another process
//! may have changed the store unseen; and, every few seconds, the store's
//! journal, whose items are checked against the store and brought into
//! the index ([`crate::store::journal`]).

use std::sync::Mutex;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use super::residency::Corrections;
use super::Mirror;
use crate::address::ArchiveKey;
use crate::store::journal::follow::{prune, Follower};
use crate::store::{HeldItem, Item};

/// How many archives a walk hands to the index at a time.
const FOUND_BATCH: usize = 1024;

/// How long the daemon waits before it walks the store again after a walk
/// failed, at first; the wait doubles after each failure, up to
/// [`WALK_RETRY_MAX`].
const WALK_RETRY: Duration = Duration::from_secs(5);

/// The longest wait between two walks of the store.
const WALK_RETRY_MAX: Duration = Duration::from_secs(300);

/// How often the journal is read on a disk cache: a listing of one folder.
const POLL_DISK: Duration = Duration::from_secs(2);

/// How often the journal is read on a bucket: one `LIST` request.
const POLL_BUCKET: Duration = Duration::from_secs(5);

/// How often old journal entries are removed.
const PRUNE_EVERY: Duration = Duration::from_secs(300);

/// Above this many items in one look at the journal, one reconciliation
/// costs less than checking each.
const MANY_CHANGES: usize = 5000;

/// How many items of the journal are checked against the store at once.
const CHECKS_AT_ONCE: usize = 16;

/// What the status page says of the index.
#[derive(Debug, Clone, Default)]
pub struct IndexStatus {
    /// The reconciliation under way: why, and since when (ms since the
    /// epoch, the mirror's clock).
    pub reconciling: Option<(&'static str, u64)>,
    /// The last one that ended.
    pub last: Option<Reconciled>,
}

/// A reconciliation that ended.
#[derive(Debug, Clone, Copy)]
pub struct Reconciled {
    /// When (ms since the epoch, the mirror's clock).
    pub ended_ms: u64,
    /// Why it ran (one of [`crate::metrics::index::REASONS`]).
    pub reason: &'static str,
    /// What it corrected.
    pub corrections: Corrections,
    /// How many have ended since the start, this one included.
    pub count: u64,
}

/// The upkeep's state.
#[derive(Debug, Default)]
pub(super) struct Upkeep {
    /// A reconciliation asked for, with its reason.
    asked: Mutex<Option<&'static str>>,
    wake: tokio::sync::Notify,
    status: Mutex<IndexStatus>,
}

impl Mirror {
    /// Asks the daemon's upkeep for a reconciliation of its archive index
    /// with the store, for `reason` (one of
    /// [`crate::metrics::index::REASONS`]).
    pub fn reconcile_index(&self, reason: &'static str) {
        *self.upkeep.asked.lock().expect("upkeep lock") = Some(reason);
        self.upkeep.wake.notify_one();
    }

    /// What the status page says of the index.
    pub fn index_status(&self) -> IndexStatus {
        self.upkeep.status.lock().expect("upkeep lock").clone()
    }

    /// Keeps the daemon's archive index true while it serves (see the
    /// module documentation). The daemon runs this beside its listener and
    /// drops it when it stops.
    pub async fn keep_index(&self) {
        tokio::join!(self.reconcile_when_due(), self.follow_journal());
    }

    /// Reconciles at once, then whenever one is due.
    async fn reconcile_when_due(&self) {
        let mut reason = "start";
        loop {
            self.reconcile(reason).await;
            self.index_built.send_replace(true);
            reason = self.next_reconciliation().await;
        }
    }

    /// Waits for the next reconciliation: one asked for, or the schedule's
    /// (on the mirror's clock). Returns its reason.
    async fn next_reconciliation(&self) -> &'static str {
        let every = self.config.cache.reconcile_every;
        let due = self.clock.now() + every;
        loop {
            let asked = self.upkeep.wake.notified();
            if let Some(reason) = self.upkeep.asked.lock().expect("upkeep lock").take() {
                return reason;
            }
            if every.is_zero() {
                asked.await;
                continue;
            }
            tokio::select! {
                () = asked => {}
                () = self.clock.sleep_until(due) => return "schedule",
            }
        }
    }

    /// One reconciliation: a walk of the store (tried again until one
    /// succeeds), the module packages and release files listed, what
    /// differs corrected, and what is then over `cache.max_size` evicted.
    async fn reconcile(&self, reason: &'static str) {
        let started = Instant::now();
        self.residency.reconcile_begins(false);
        self.upkeep.status.lock().expect("upkeep lock").reconciling =
            Some((reason, self.clock.unix_ms()));
        let mut wait = WALK_RETRY;
        loop {
            match self.walk().await {
                Ok(()) => break,
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        retry_in_s = wait.as_secs(),
                        "could not walk {} to reconcile the archive index; nothing is evicted until a walk succeeds",
                        self.store.location()
                    );
                    // A store that failed is given time to recover, longer
                    // each time, rather than asked again at once: nothing
                    // announces its recovery, and a walk lists it whole.
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(WALK_RETRY_MAX);
                }
            }
        }
        let packages = self.reconcile_packages().await;
        let from_empty = self.residency.walking();
        let mut corrections = self.residency.reconciled();
        corrections.added += packages.added;
        corrections.dropped += packages.dropped;
        let (bytes, archives) = self.residency.usage();
        let elapsed_ms = started.elapsed().as_millis();
        if from_empty {
            tracing::info!(
                archives,
                bytes,
                elapsed_ms,
                "archive index built from the store"
            );
        } else if corrections.none() {
            tracing::info!(
                reason,
                archives,
                bytes,
                elapsed_ms,
                "archive index reconciled with the store: it agreed"
            );
        } else {
            tracing::info!(
                reason,
                added = corrections.added,
                dropped = corrections.dropped,
                resized = corrections.resized,
                archives,
                bytes,
                elapsed_ms,
                "archive index reconciled with the store: corrected"
            );
        }
        let ended = self.clock.unix_ms();
        self.metrics.index_reconciled(
            reason,
            [corrections.added, corrections.dropped, corrections.resized],
            ended / 1000,
        );
        {
            let mut status = self.upkeep.status.lock().expect("upkeep lock");
            status.reconciling = None;
            let count = status.last.map_or(0, |l| l.count) + 1;
            status.last = Some(Reconciled {
                ended_ms: ended,
                reason,
                corrections,
                count,
            });
        }
        self.evict(self.residency.over(None)).await;
    }

    /// Walks the store's archives into the index.
    async fn walk(&self) -> Result<(), crate::store::StoreError> {
        let mut batch = Vec::with_capacity(FOUND_BATCH);
        let walked = self
            .store
            .each_archive(&mut |a| {
                batch.push(a);
                if batch.len() == FOUND_BATCH {
                    self.residency.found(&batch);
                    batch.clear();
                }
            })
            .await;
        self.residency.found(&batch);
        walked
    }

    /// Brings the index's module packages and release files in line with
    /// the store's listings. A listing that fails leaves them as they are.
    async fn reconcile_packages(&self) -> Corrections {
        let mut corrections = Corrections::default();
        let (modules, releases) = match (
            self.store.list_modules().await,
            self.store.list_releases().await,
        ) {
            (Ok(modules), Ok(releases)) => (modules, releases),
            (Err(e), _) | (_, Err(e)) => {
                tracing::warn!(error = %e, "could not list the module packages and release files to reconcile them; they stay as indexed");
                return corrections;
            }
        };
        let (indexed_modules, indexed_releases) = self.residency.packages();
        let mut present = std::collections::HashSet::new();
        for (pin, _) in modules.into_iter().filter(|(_, held)| *held) {
            let item = Item::Module(pin.module.clone(), pin.version.clone());
            present.insert(item.clone());
            if self
                .residency
                .package_found(&item, pin.size, pin.pinned_at_ms / 1000)
            {
                corrections.added += 1;
                self.modules.package_held(pin);
            }
        }
        for (record, files) in releases {
            for (name, size) in files {
                let Ok(name) = crate::address::ArtifactName::parse(&name) else {
                    continue;
                };
                let item = Item::Release(crate::address::ReleaseFile {
                    product: record.product,
                    version: record.version.clone(),
                    name,
                });
                present.insert(item.clone());
                if self
                    .residency
                    .package_found(&item, size, record.verified_at_ms / 1000)
                {
                    corrections.added += 1;
                }
            }
        }
        let indexed = (indexed_modules.into_iter().map(|(m, v)| Item::Module(m, v)))
            .chain(indexed_releases.into_iter().map(Item::Release));
        for item in indexed {
            if !present.contains(&item) {
                corrections.dropped += 1;
                self.gone_from_store(&item).await;
            }
        }
        corrections
    }

    /// Reads the store's journal every few seconds, and removes its old
    /// entries every few minutes.
    async fn follow_journal(&self) {
        let own = self.store.journal().map(|j| j.writer().to_owned());
        let mut follower = Follower::new(own);
        let poll = if self.config.storage.backend == crate::config::StorageBackend::S3 {
            POLL_BUCKET
        } else {
            POLL_DISK
        };
        let mut pruned = Instant::now();
        loop {
            tokio::time::sleep(poll).await;
            let real_ms = crate::store::journal::now_ms();
            match follower
                .look(self.store.as_ref(), real_ms, self.clock.unix_ms())
                .await
            {
                Ok(news) => {
                    if news.unreadable > 0 {
                        tracing::warn!(
                            entries = news.unreadable,
                            "entries of the store's journal could not be read; passed over"
                        );
                    }
                    for (writer, role) in &news.lost {
                        tracing::warn!(%writer, %role, "a process that was changing the store went silent; the archive index is reconciled with the store");
                    }
                    if !news.lost.is_empty() {
                        self.reconcile_index("writer_lost");
                    }
                    if news.items.len() > MANY_CHANGES {
                        tracing::info!(items = news.items.len(), "other processes changed many items of the store; the archive index is reconciled with it");
                        self.reconcile_index("many_changes");
                    } else if !news.items.is_empty() {
                        self.check_items(news.items).await;
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "could not read the store's journal; trying again");
                }
            }
            if pruned.elapsed() >= PRUNE_EVERY {
                pruned = Instant::now();
                if let Err(e) = prune(self.store.as_ref(), real_ms).await {
                    tracing::warn!(error = %e, "could not remove old entries of the store's journal");
                }
            }
        }
    }

    /// Checks items another process changed against the store, brings each
    /// into the index as the store holds it now, and evicts what is then
    /// over `cache.max_size`.
    async fn check_items(&self, items: Vec<Item>) {
        let count = items.len();
        let checked: Vec<(Item, Result<Option<HeldItem>, crate::store::StoreError>)> =
            futures_util::stream::iter(items)
                .map(|item| async move {
                    let held = self.store.held(&item).await;
                    (item, held)
                })
                .buffer_unordered(CHECKS_AT_ONCE)
                .collect()
                .await;
        let (mut added, mut gone) = (0usize, 0usize);
        for (item, held) in checked {
            match held {
                Ok(Some(held)) => {
                    if self.item_held(&item, held).await {
                        added += 1;
                        self.arrived(item);
                    }
                }
                Ok(None) => {
                    gone += 1;
                    self.gone_from_store(&item).await;
                }
                Err(e) => {
                    tracing::warn!(%item, error = %e, "could not check an item another process changed; the next reconciliation will");
                }
            }
        }
        tracing::debug!(added, gone, "the store's journal read");
        self.evict(self.residency.over(None)).await;
        self.metrics.journal_items(count);
    }

    /// Brings an item the store holds into the index; true when it was not
    /// indexed.
    pub(super) async fn item_held(&self, item: &Item, held: HeldItem) -> bool {
        match item {
            Item::Archive(key) => self.residency.archive_is(key, Some(held)),
            Item::Module(module, version) => {
                let joined = self
                    .residency
                    .package_found(item, held.size, held.last_used);
                if joined {
                    if let Ok(Some(pin)) = self.store.read_module(module, version).await {
                        self.modules.package_held(pin);
                    }
                }
                joined
            }
            Item::Release(_) => self
                .residency
                .package_found(item, held.size, held.last_used),
        }
    }

    /// An item is not in the store (any more): the index and the domain
    /// that owns it forget it.
    pub(super) async fn gone_from_store(&self, item: &Item) {
        match item {
            Item::Archive(key) => self.archive_gone(key).await,
            Item::Module(module, version) => self.package_gone(module, version).await,
            Item::Release(file) => self.residency.forget_release(file),
        }
    }

    /// An archive is not in the store: forgotten by the index and the
    /// provider mirror.
    async fn archive_gone(&self, key: &ArchiveKey) {
        self.residency.archive_is(key, None);
        self.providers.forget_archive(key).await;
    }
}
