//! Whether the cache can be written. A failed write (disk full, read-only
//! file system, permissions) marks the cache as in trouble: `/readyz` then
//! answers 503 with the reason, while what is cached keeps being served.
//! The mark clears with the next successful write, or when a probe write
//! succeeds at least [`PROBE_AFTER`] after the failure.

use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use crate::cache::atomic;
use crate::error::RequestError;

/// How long after a failure `/readyz` starts probing whether it is over.
pub const PROBE_AFTER: Duration = Duration::from_secs(10);
/// The size of the probe write: enough that a nearly full disk fails it.
const PROBE_BYTES: usize = 1024 * 1024;

/// The cache's write health, shared by everything that writes to it.
#[derive(Clone)]
pub struct DiskHealth {
    tmp_dir: PathBuf,
    trouble: Arc<Mutex<Option<(Instant, String)>>>,
}

impl DiskHealth {
    /// Health of the cache whose temporary directory is `tmp_dir`.
    pub fn new(tmp_dir: PathBuf) -> DiskHealth {
        DiskHealth {
            tmp_dir,
            trouble: Arc::default(),
        }
    }

    /// Records a failed write and gives the answer for the request that hit it.
    pub fn failed(&self, what: &str, err: &std::io::Error) -> RequestError {
        tracing::error!(error = %err, "{what}");
        let reason = format!("the cache cannot be written ({what}: {err})");
        *self.trouble.lock().expect("disk health lock") = Some((Instant::now(), reason.clone()));
        RequestError::Unavailable(format!("{reason}; what is already cached is still served"))
    }

    /// Records a successful write.
    pub fn succeeded(&self) {
        *self.trouble.lock().expect("disk health lock") = None;
    }

    /// Whether the cache can be written, and why not.
    pub fn check(&self) -> Result<(), String> {
        let trouble = self.trouble.lock().expect("disk health lock").clone();
        match trouble {
            None => atomic::temp_file(&self.tmp_dir)
                .map(drop)
                .map_err(|e| format!("the cache directory is not writable: {e}")),
            Some((since, reason)) if since.elapsed() < PROBE_AFTER => Err(reason),
            Some((_, reason)) => match self.probe() {
                Ok(()) => {
                    self.succeeded();
                    Ok(())
                }
                Err(e) => Err(format!("{reason}; still failing: {e}")),
            },
        }
    }

    /// Writes and syncs a scratch file of [`PROBE_BYTES`], then removes it.
    fn probe(&self) -> std::io::Result<()> {
        let mut file = atomic::temp_file(&self.tmp_dir)?;
        file.write_all(&vec![0u8; PROBE_BYTES])?;
        file.as_file().sync_all()?;
        Ok(())
    }
}
