//! Whether the cache can be written. A failed write (disk full, read-only
//! file system, permissions) marks the cache as in trouble: `/readyz` then
//! answers 503 with the reason, while what is cached keeps being served.
//! The mark clears with the next successful write, or when a probe write
//! succeeds at least [`PROBE_AFTER`] after the failure.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::{Store, StoreError};

/// How long after a failure `/readyz` starts probing whether it is over.
pub const PROBE_AFTER: Duration = Duration::from_secs(10);
/// The size of the probe write: enough that a nearly full disk fails it.
const PROBE_BYTES: usize = 1024 * 1024;

/// Why the cache cannot be written right now.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unwritable {
    /// A write failed while the mirror was doing something.
    #[error("the cache cannot be written ({what}: {error})")]
    Write {
        /// What the mirror was doing.
        what: String,
        /// The store's error.
        error: String,
    },
    /// The probe write of `/readyz` failed.
    #[error("the cache ({location}) cannot be written: {error}")]
    Probe {
        /// The store, as people name it.
        location: String,
        /// The store's error.
        error: String,
    },
    /// A write failed, and so does the probe since.
    #[error("{first}; still failing: {error}")]
    StillFailing {
        /// The failure first recorded.
        first: Box<Unwritable>,
        /// The probe's error.
        error: String,
    },
}

/// The cache's write health, shared by everything that writes to it.
#[derive(Clone, Default)]
pub struct StoreHealth {
    trouble: Arc<Mutex<Option<(Instant, Unwritable)>>>,
}

impl StoreHealth {
    /// Whether a write has failed and no write or probe has succeeded since.
    pub fn is_failing(&self) -> bool {
        self.trouble.lock().expect("store health lock").is_some()
    }

    /// A store in good health.
    pub fn new() -> StoreHealth {
        StoreHealth::default()
    }

    /// Records a failed write while doing `what`.
    pub fn failed(&self, what: &str, err: &StoreError) -> Unwritable {
        let reason = Unwritable::Write {
            what: what.to_owned(),
            error: err.to_string(),
        };
        *self.trouble.lock().expect("store health lock") = Some((Instant::now(), reason.clone()));
        reason
    }

    /// Records a successful write.
    pub fn succeeded(&self) {
        *self.trouble.lock().expect("store health lock") = None;
    }

    /// Whether the cache can be written, and why not.
    pub async fn check(&self, store: &dyn Store) -> Result<(), Unwritable> {
        let trouble = self.trouble.lock().expect("store health lock").clone();
        match trouble {
            None => store.probe(0).await.map_err(|e| Unwritable::Probe {
                location: store.location(),
                error: e.to_string(),
            }),
            Some((since, reason)) if since.elapsed() < PROBE_AFTER => Err(reason),
            Some((_, reason)) => match store.probe(PROBE_BYTES).await {
                Ok(()) => {
                    self.succeeded();
                    Ok(())
                }
                Err(e) => Err(Unwritable::StillFailing {
                    first: Box::new(reason),
                    error: e.to_string(),
                }),
            },
        }
    }
}
