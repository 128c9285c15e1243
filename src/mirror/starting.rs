//! How the archive index starts and ends: the daemon takes its snapshot
//! when it is sealed for the store as it is now and walks the store
//! otherwise, and writes a new snapshot when it stops
//! ([`residency::snapshot`]); a command walks the store and notes, before
//! its first change to the store's archives, that it changed them
//! ([`crate::store::changes`]).

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
    /// A command: it notes its first change to the store's archives.
    Command(tokio::sync::OnceCell<()>),
}

/// The archives the index starts with, and the mirror's role.
pub(super) async fn archives(
    config: &Config,
    store: &dyn Store,
    daemon: bool,
) -> anyhow::Result<(Archives, Role)> {
    let started = Instant::now();
    let role = if daemon {
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
                return Ok((archives, Role::Daemon(seal)));
            }
            Err(snapshot::Unused::Missing) => {}
            Err(why) => tracing::info!("{why}; walking the store instead"),
        }
        Role::Daemon(seal)
    } else {
        Role::Command(tokio::sync::OnceCell::new())
    };
    let mut archives = Archives::default();
    store
        .each_archive(&mut |a| archives.push(&a))
        .await
        .with_context(|| format!("listing the archives in {}", store.location()))?;
    if daemon {
        tracing::info!(
            archives = archives.len(),
            elapsed_ms = started.elapsed().as_millis(),
            "archive index built from the store"
        );
    }
    Ok((archives, role))
}

impl Mirror {
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
