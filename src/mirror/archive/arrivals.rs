//! Downloads that clients read while they arrive, and the rule that makes
//! that safe: the producer ([`Publisher`]) says how far the staging file
//! goes and, only after the whole archive's SHA-256 matched, that it
//! verified; the consumer ([`Follow`]) never sends the last byte before
//! that, and ends the body in an error when the download fails.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use tokio::sync::watch;

use super::body::CHUNK;
use super::{ArchiveBody, BodySource, Mirror};
use crate::address::ArchiveKey;

/// How far a download that clients read while it arrives has got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Progress {
    /// This many bytes are in the staging file.
    Running(u64),
    /// All bytes are in and their SHA-256 is the signed one.
    Verified,
    /// The download failed or did not verify: no client may finish.
    Failed,
}

/// A registered download under way.
pub(super) struct Arrival {
    path: std::path::PathBuf,
    size: u64,
    progress: watch::Receiver<Progress>,
}

/// The downloads clients can read while they arrive.
#[derive(Default)]
pub(in crate::mirror) struct Arrivals {
    under_way: Mutex<HashMap<ArchiveKey, Arrival>>,
    /// Signalled when a download is registered.
    pub(super) added: tokio::sync::Notify,
}

impl Arrivals {
    /// Registers a download of `size` bytes being written to `path`.
    pub(super) fn publish(
        &self,
        key: ArchiveKey,
        path: std::path::PathBuf,
        size: u64,
    ) -> Publisher<'_> {
        let (tx, progress) = watch::channel(Progress::Running(0));
        self.under_way.lock().expect("arrivals lock").insert(
            key.clone(),
            Arrival {
                path,
                size,
                progress,
            },
        );
        self.added.notify_waiters();
        Publisher {
            arrivals: self,
            key,
            tx,
        }
    }

    /// Opens a registered download for reading, if there is one.
    pub(super) fn follow(&self, key: &ArchiveKey, mirror: &Arc<Mirror>) -> Option<ArchiveBody> {
        let under_way = self.under_way.lock().expect("arrivals lock");
        let entry = under_way.get(key)?;
        // Gone already (kept or refused): the caller waits for the outcome.
        let file = std::fs::File::open(&entry.path).ok()?;
        let follow = Follow {
            file: Some(file),
            sent: 0,
            size: entry.size,
            progress: entry.progress.clone(),
            mirror: mirror.clone(),
        };
        Some(ArchiveBody {
            size: entry.size,
            source: BodySource::Stream(follow.into_stream()),
        })
    }
}

/// The producer's side: publishes a download's progress; marks it failed
/// and unregisters it when dropped before it verified.
pub(super) struct Publisher<'a> {
    arrivals: &'a Arrivals,
    key: ArchiveKey,
    tx: watch::Sender<Progress>,
}

impl Publisher<'_> {
    pub(super) fn advance(&self, written: u64) {
        self.tx.send_replace(Progress::Running(written));
    }

    pub(super) fn verified(&self) {
        self.tx.send_replace(Progress::Verified);
    }
}

impl Drop for Publisher<'_> {
    fn drop(&mut self) {
        if *self.tx.borrow() != Progress::Verified {
            self.tx.send_replace(Progress::Failed);
        }
        self.arrivals
            .under_way
            .lock()
            .expect("arrivals lock")
            .remove(&self.key);
    }
}

/// The consumer's side: reads an arriving download, holding back its last
/// byte until the whole archive has verified.
pub(super) struct Follow {
    /// `None` once the body has ended in an error.
    file: Option<std::fs::File>,
    sent: u64,
    size: u64,
    progress: watch::Receiver<Progress>,
    mirror: Arc<Mirror>,
}

impl Follow {
    pub(super) fn into_stream(self) -> BoxStream<'static, std::io::Result<Bytes>> {
        futures_util::stream::unfold(self, |mut st| async move {
            let chunk = st.next_chunk().await?;
            if chunk.is_err() {
                // Nothing follows an error.
                st.file = None;
            }
            Some((chunk, st))
        })
        .boxed()
    }

    /// The next piece of the body, an error, or `None` at its end.
    pub(super) async fn next_chunk(&mut self) -> Option<std::io::Result<Bytes>> {
        use std::io::Read;
        loop {
            let mut file = self.file.take()?;
            if self.sent == self.size {
                return None;
            }
            let now = *self.progress.borrow_and_update();
            let limit = match now {
                Progress::Running(written) => written.min(self.size - 1),
                Progress::Verified => self.size,
                Progress::Failed => {
                    return Some(Err(std::io::Error::other(
                        "the download failed; see the mirror's log",
                    )))
                }
            };
            if self.sent < limit {
                let want = usize::try_from((limit - self.sent).min(CHUNK as u64)).unwrap_or(CHUNK);
                let read = tokio::task::spawn_blocking(move || {
                    let mut buf = vec![0u8; want];
                    let n = file.read(&mut buf)?;
                    buf.truncate(n);
                    Ok::<_, std::io::Error>((file, buf))
                })
                .await
                .map_err(std::io::Error::other)
                .and_then(|r| r);
                return match read {
                    Ok((_, buf)) if buf.is_empty() => Some(Err(std::io::Error::other(
                        "the download's file ended early",
                    ))),
                    Ok((file, buf)) => {
                        self.file = Some(file);
                        self.sent += buf.len() as u64;
                        self.mirror.metrics().served(buf.len() as u64);
                        Some(Ok(Bytes::from(buf)))
                    }
                    Err(e) => Some(Err(e)),
                };
            }
            self.file = Some(file);
            if self.progress.changed().await.is_err()
                && *self.progress.borrow() != Progress::Verified
            {
                self.file = None;
                return Some(Err(std::io::Error::other(
                    "the download ended without verifying",
                )));
            }
        }
    }
}
