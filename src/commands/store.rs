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
    /// Whether this command noted that it changes the store's archives.
    noted: std::sync::OnceLock<()>,
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
            noted: std::sync::OnceLock::new(),
        })
    }

    /// The store.
    pub fn store(&self) -> &dyn Store {
        self.store.as_ref()
    }

    /// Before a change to the store's archives: notes the first one in
    /// the store, so that the daemon's next start does not trust an index
    /// snapshot taken before it (`crate::store::changes`).
    pub fn changing_archives(&self) -> Result<(), crate::store::StoreError> {
        if self.noted.get().is_none() {
            self.wait(crate::store::changes::note(self.store()))?;
            let _ = self.noted.set(());
        }
        Ok(())
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

/// The policy of `config` with the operator's decisions held in `store`.
pub fn gate(config: &Config, store: &CommandStore) -> anyhow::Result<crate::policy::Gate> {
    let decisions = store.wait(store.store().read_decisions()).map_err(|e| {
        anyhow::anyhow!("reading the policy decisions in {}: {e}", store.location())
    })?;
    Ok(crate::policy::Gate {
        policy: crate::policy::Policy::new(&config.policy)?,
        decisions: decisions.unwrap_or_default(),
    })
}
