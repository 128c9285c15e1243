//! The configured store as the commands that move or check what it holds
//! (`export`, `import`, their `--static` forms, `verify`) use it: through
//! the [`Store`] trait whichever backend holds the cache, with the store's
//! async calls made from the command's own thread. A bucket is read and
//! written directly, without the local tier a serving instance keeps, so
//! that a command leaves no copy of what it moved on this host's disk.

use std::future::Future;
use std::sync::Arc;

use tokio::runtime::{Handle, Runtime};

use crate::config::Config;
use crate::store::Store;

/// The store a command works on, and the runtime its calls run on.
pub struct CommandStore {
    store: Arc<dyn Store>,
    runtime: Runtime,
    room: crate::store::space::Room,
}

impl CommandStore {
    /// Opens the store `storage.backend` names (a bucket without its local
    /// tier).
    pub fn open(config: &Config) -> anyhow::Result<Self> {
        let runtime = super::runtime()?;
        let mut direct = config.clone();
        if let Some(s3) = &mut direct.storage.s3 {
            s3.local_cache = None;
        }
        let store = runtime.block_on(crate::store::open(&direct, false))?;
        Ok(CommandStore {
            store,
            runtime,
            room: crate::store::space::Room::of(config),
        })
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// `cache.min_free_space` on the file system where the command stages
    /// what it stores.
    pub fn room(&self) -> &crate::store::space::Room {
        &self.room
    }

    /// Where the store is, for people.
    pub fn location(&self) -> String {
        self.store.location()
    }

    /// Runs one of the store's calls (or any other async work) to its end
    /// from the command's thread.
    pub fn wait<T>(&self, work: impl Future<Output = T>) -> T {
        self.runtime.block_on(work)
    }

    /// The runtime, for readers that bridge the store's async streams to
    /// the command's blocking writes.
    pub fn handle(&self) -> &Handle {
        self.runtime.handle()
    }
}

/// What the command changed is noted in the store's journal when it ends:
/// a daemon beside it learns of the last changes at once.
impl Drop for CommandStore {
    fn drop(&mut self) {
        self.runtime.block_on(self.store.close());
    }
}

/// The policy of `config` with the operator's decisions held in `store`.
pub fn gate(config: &Config, store: &CommandStore) -> anyhow::Result<crate::policy::Gate> {
    let decisions = store.wait(store.store().read_decisions()).map_err(|e| {
        anyhow::anyhow!("reading the policy decisions in {}: {e}", store.location())
    })?;
    let policy = crate::policy::Policy::new(&config.policy)?;
    let advisories = if policy.has_advisory_rules() {
        held_database(store)?
    } else {
        None
    };
    Ok(crate::policy::Gate {
        policy,
        decisions: decisions.unwrap_or_default(),
        advisories,
    })
}

/// The advisory database the store keeps, indexed; `None` when nothing
/// was imported.
pub fn held_database(
    store: &CommandStore,
) -> anyhow::Result<Option<std::sync::Arc<crate::advisories::Database>>> {
    let location = store.location();
    let read = async {
        let Some(current) = crate::store::advisories::current(store.store()).await? else {
            return Ok(None);
        };
        crate::store::advisories::database(store.store(), &current).await
    };
    let stored = store
        .wait(read)
        .map_err(|e| anyhow::anyhow!("reading the advisory database in {location}: {e}"))?;
    Ok(stored.map(|s| std::sync::Arc::new(crate::advisories::Database::new(s))))
}
