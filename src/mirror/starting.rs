//! How the archive index starts and ends: the daemon takes its snapshot
//! when it is sealed for the store as it is now, and otherwise starts from
//! nothing; either way it reconciles the index with the store while it
//! serves ([`super::upkeep`]), and writes a new snapshot when it stops
//! ([`residency::snapshot`]). A command walks the store before it starts.

use std::time::Instant;

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
    /// A command: its index is a walk of the store at its start.
    Command,
}

/// The archives the index starts with, and the mirror's role. The daemon
/// gets `None` when it has no snapshot to take: it walks the store while
/// it serves.
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
            Ok((archives, confirmed)) => {
                tracing::info!(
                    archives = archives.len(),
                    confirmed,
                    elapsed_ms = started.elapsed().as_millis(),
                    "archive index read from the snapshot; it is reconciled with the store while the daemon serves"
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
    Ok((Some(archives), Role::Command))
}

impl Mirror {
    /// Whether the daemon is still walking the store to build its archive
    /// index from nothing.
    pub fn index_walking(&self) -> bool {
        self.residency.walking()
    }

    /// Whether the daemon is reconciling its archive index with the store.
    pub fn index_reconciling(&self) -> bool {
        self.residency.reconciling().is_some()
    }

    /// Waits until the archive index has been reconciled with the store
    /// since the start, and what was then over `cache.max_size` is
    /// removed. A command's index is whole from the start.
    pub async fn index_built(&self) {
        let mut built = self.index_built.subscribe();
        // The sender lives as long as the mirror, which `&self` borrows.
        let _ = built.wait_for(|b| *b).await;
    }

    /// Writes the daemon's archive index snapshot, for its next start
    /// (after it drained; nothing is stored after this). A daemon still
    /// building its index from nothing writes none; one still reconciling
    /// writes one that says so. A command has none to write.
    pub async fn save_index(&self) -> anyhow::Result<()> {
        let Role::Daemon(seal) = &self.role else {
            return Ok(());
        };
        if self.residency.walking() {
            tracing::info!("the store was still being walked: no archive index snapshot is written, and the next start walks it again");
            return Ok(());
        }
        let confirmed = self.residency.reconciling().is_none();
        let started = Instant::now();
        let bytes = self.residency.snapshot(seal, confirmed);
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
            confirmed,
            elapsed_ms = started.elapsed().as_millis(),
            "archive index snapshot written for the next start"
        );
        Ok(())
    }

    /// Writes what the store's journal has pending and closes its session:
    /// a command's last step, so that a daemon beside it learns of its last
    /// changes at once.
    pub async fn close(&self) {
        self.store.close().await;
    }
}
