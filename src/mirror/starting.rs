//! How the archive index starts and ends: the daemon takes its snapshot
//! when it is sealed for the store as it is now and otherwise walks the
//! store while it serves, and writes a new snapshot when it stops
//! ([`residency::snapshot`]); a command walks the store before it starts
//! and notes, before its first change to the store's archives, that it
//! changed them ([`crate::store::changes`]).

use std::time::{Duration, Instant};

use anyhow::Context as _;

use super::residency::{snapshot, Archives};
use super::Mirror;
use crate::config::Config;
use crate::store::Store;

/// What a mirror does with the archive index at its start and end.
pub(super) enum Role {
    /// The daemon: the snapshot it started from is sealed with this, and
    /// so is the one it writes when it stops.
    Daemon(snapshot::Seal),
    /// A command: it notes its first change to the store's archives.
    Command(tokio::sync::OnceCell<()>),
}

/// How many archives the daemon's walk hands to the index at a time.
const FOUND_BATCH: usize = 1024;

/// How long the daemon waits before it walks the store again after a walk
/// failed, at first; the wait doubles after each failure, up to
/// [`WALK_RETRY_MAX`].
const WALK_RETRY: Duration = Duration::from_secs(5);

/// The longest wait between two walks of the store.
const WALK_RETRY_MAX: Duration = Duration::from_secs(300);

/// The archives the index starts with, and the mirror's role. The daemon
/// gets `None` when it has no snapshot to take: it walks the store while
/// it serves ([`Mirror::walk_the_store`]).
pub(super) async fn archives(
    config: &Config,
    store: &dyn Store,
    daemon: bool,
) -> anyhow::Result<(Option<Archives>, Role)> {
    let started = Instant::now();
    if daemon {
        let changed = crate::store::changes::last(store)
            .await
            .with_context(|| format!("reading the change note in {}", store.location()))?;
        let seal = snapshot::Seal {
            location: store.location(),
            changed,
        };
        let dir = config.cache.dir.clone();
        let taken = {
            let seal = seal.clone();
            tokio::task::spawn_blocking(move || snapshot::take(&dir, &seal)).await?
        };
        match taken {
            Ok(archives) => {
                tracing::info!(
                    archives = archives.len(),
                    elapsed_ms = started.elapsed().as_millis(),
                    "archive index read from the snapshot"
                );
                return Ok((Some(archives), Role::Daemon(seal)));
            }
            Err(snapshot::Unused::Missing) => tracing::info!(
                "no archive index snapshot to start from; the store is walked while the daemon serves"
            ),
            Err(why) => tracing::info!("{why}; the store is walked while the daemon serves"),
        }
        return Ok((None, Role::Daemon(seal)));
    }
    let mut archives = Archives::default();
    store
        .each_archive(&mut |a| archives.push(&a))
        .await
        .with_context(|| format!("listing the archives in {}", store.location()))?;
    Ok((Some(archives), Role::Command(tokio::sync::OnceCell::new())))
}

impl Mirror {
    /// Whether the daemon is still walking the store to build its archive
    /// index (see [`Mirror::walk_the_store`]).
    pub fn index_walking(&self) -> bool {
        self.residency.walking()
    }

    /// Waits until the archive index knows the whole store: at once after
    /// a start from the snapshot, else once the walk has ended and what it
    /// evicted is removed.
    pub async fn index_built(&self) {
        let mut built = self.index_built.subscribe();
        // The sender lives as long as the mirror, which `&self` borrows.
        let _ = built.wait_for(|b| *b).await;
    }

    /// Builds the daemon's archive index from the store while it serves,
    /// when it started without a snapshot; returns at once otherwise. A
    /// walk that fails is tried again, after 5 s at first and at most
    /// 5 min later; until one succeeds, nothing is evicted. The daemon
    /// runs this beside its listener and drops it when it stops.
    pub async fn walk_the_store(&self) {
        let mut wait = WALK_RETRY;
        while self.residency.walking() {
            let started = Instant::now();
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
            match walked {
                Ok(()) => {
                    let evicted = self.residency.walked();
                    tracing::info!(
                        archives = self.residency.usage().1,
                        elapsed_ms = started.elapsed().as_millis(),
                        "archive index built from the store"
                    );
                    self.evict(evicted).await;
                    self.index_built.send_replace(true);
                }
                Err(e) => {
                    tracing::warn!(
                        error = %e,
                        retry_in_s = wait.as_secs(),
                        "could not walk {} to build the archive index; nothing is evicted until a walk succeeds",
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
    }

    /// Before a change to the store's archives: a command notes the first
    /// one in the store (see [`crate::store::changes`]).
    pub(super) async fn changing_archives(&self) -> Result<(), crate::store::StoreError> {
        let Role::Command(noted) = &self.role else {
            return Ok(());
        };
        noted
            .get_or_try_init(|| crate::store::changes::note(self.store.as_ref()))
            .await
            .copied()
    }

    /// Writes the daemon's archive index snapshot, for its next start
    /// (after it drained; nothing is stored after this). A command has
    /// none to write.
    pub async fn save_index(&self) -> anyhow::Result<()> {
        let Role::Daemon(seal) = &self.role else {
            return Ok(());
        };
        if self.residency.walking() {
            tracing::info!("the store was still being walked: no archive index snapshot is written, and the next start walks it again");
            return Ok(());
        }
        let started = Instant::now();
        let bytes = self.residency.snapshot(seal);
        let dir = self.config.cache.dir.clone();
        let tmp = dir.join("tmp");
        let size = bytes.len();
        tokio::task::spawn_blocking(move || snapshot::write(&dir, &tmp, &bytes))
            .await?
            .with_context(|| {
                format!(
                    "writing {}",
                    snapshot::path(&self.config.cache.dir).display()
                )
            })?;
        tracing::info!(
            archives = self.residency.usage().1,
            bytes = size,
            elapsed_ms = started.elapsed().as_millis(),
            "archive index snapshot written for the next start"
        );
        Ok(())
    }
}
