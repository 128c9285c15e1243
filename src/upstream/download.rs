//! The byte loop of an archive download: the origin's body, hashed as it
//! arrives, capped at `upstream.max_archive_size`, bounded by the idle
//! timeout between frames, and written to a local file in batches. What
//! the bytes mean (whether they match the signed checksum) is the
//! mirror's business.

use std::time::Duration;

use super::client::Fetched;
use crate::verify::Sha256;
use http_body_util::BodyExt;
use tokio::io::AsyncWriteExt;
use url::Url;

use super::client::error_chain;
use super::{Client, UpstreamError};
use crate::metrics::Metrics;
use crate::store::space::{NoRoom, Room};

/// How many downloaded bytes are gathered before they are written out.
const WRITE_BATCH: usize = 1024 * 1024;

/// Why a download did not complete.
#[derive(Debug, thiserror::Error)]
pub enum DownloadError {
    /// The request itself failed.
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    /// No bytes came for longer than the request timeout.
    #[error("stalled for {0}s")]
    Stalled(u64),
    /// The connection broke mid-body.
    #[error("failed: {0}")]
    Broken(String),
    /// The origin announced more bytes than the cap.
    #[error(
        "the origin announces {announced} bytes, more than upstream.max_archive_size ({limit})"
    )]
    AnnouncedTooLarge {
        /// What it announced.
        announced: u64,
        /// The cap, for people.
        limit: String,
    },
    /// More bytes came than the cap allows.
    #[error("the archive is larger than upstream.max_archive_size ({0})")]
    TooLarge(String),
    /// The body ended before (or went past) its announced length.
    #[error("the origin announced {announced} bytes and sent {sent}")]
    WrongLength {
        /// What it announced.
        announced: u64,
        /// What it sent.
        sent: u64,
    },
    /// Writing the local file failed.
    #[error("writing the download failed: {0}")]
    Write(#[from] std::io::Error),
    /// What the origin announced would eat into `cache.min_free_space`.
    #[error(
        "the file ({} announced by the origin) does not fit in the cache's free space ({}); nothing was downloaded",
        .0.size(),
        .0.describe()
    )]
    NoRoomAnnounced(NoRoom),
    /// With no size announced, the next bytes would eat into
    /// `cache.min_free_space`.
    #[error(
        "the origin announced no size, and after {} the next bytes do not fit in the cache's free space ({}); the download was stopped",
        human(*.written),
        .no.describe()
    )]
    NoRoom {
        /// Why.
        no: NoRoom,
        /// What was written before.
        written: u64,
    },
}

/// A download whose answer has arrived and whose body has not been read.
pub struct Download {
    body: Fetched,
    announced: Option<u64>,
    max_size: u64,
    idle: Duration,
    room: Option<Room>,
}

/// What a finished download wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    /// Bytes written.
    pub size: u64,
    /// Their SHA-256, lowercase hex.
    pub sha256: String,
}

impl Download {
    /// Requests `url` (presenting `bearer` to its host, when given);
    /// refuses an announced size over `max_size` before any of the body is
    /// read.
    pub async fn start(
        client: &Client,
        url: &Url,
        bearer: Option<&str>,
        max_size: u64,
    ) -> Result<Download, DownloadError> {
        let (resp, _) = client.get(url, bearer).await?;
        let announced = resp
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
        if let Some(announced) = announced.filter(|n| *n > max_size) {
            return Err(DownloadError::AnnouncedTooLarge {
                announced,
                limit: human(max_size),
            });
        }
        Ok(Download {
            body: resp.into_body(),
            announced,
            max_size,
            idle: client.request_timeout(),
            room: None,
        })
    }

    /// Keeps `room`'s reserve free: an announced size that would eat into
    /// it is refused now, before any of the body is read; otherwise each
    /// batch of the body is checked before it is written.
    pub fn keeping(mut self, room: Room) -> Result<Download, DownloadError> {
        if let Some(announced) = self.announced {
            room.fits(announced)
                .map_err(DownloadError::NoRoomAnnounced)?;
        }
        self.room = Some(room);
        Ok(self)
    }

    /// The size the origin announced, if it did.
    pub fn announced(&self) -> Option<u64> {
        self.announced
    }

    /// Reads the whole body into `file`. After each batch reaches the file
    /// (flushed, so that readers opening it by path see the bytes),
    /// `written` is told how far the file goes, when `flush_batches` is on.
    pub async fn write_to(
        mut self,
        file: &mut tokio::fs::File,
        metrics: &Metrics,
        flush_batches: bool,
        mut written: impl FnMut(u64),
    ) -> Result<Downloaded, DownloadError> {
        let _in_flight = metrics.download_started();
        let mut hasher = Sha256::new();
        let mut size: u64 = 0;
        // Network frames are small; the disk gets them in batches.
        let mut pending: Vec<u8> = Vec::with_capacity(WRITE_BATCH);
        loop {
            let frame = match tokio::time::timeout(self.idle, self.body.frame()).await {
                Err(_) => return Err(DownloadError::Stalled(self.idle.as_secs())),
                Ok(None) => break,
                Ok(Some(Err(e))) => return Err(DownloadError::Broken(error_chain(&e))),
                Ok(Some(Ok(frame))) => frame,
            };
            if let Ok(data) = frame.into_data() {
                hasher.update(&data);
                size += data.len() as u64;
                if size > self.max_size {
                    return Err(DownloadError::TooLarge(human(self.max_size)));
                }
                metrics.fetched(data.len() as u64);
                pending.extend_from_slice(&data);
                if pending.len() >= WRITE_BATCH {
                    self.room_for(&pending, size)?;
                    write_batch(file, &mut pending, flush_batches).await?;
                    if flush_batches {
                        written(size);
                    }
                }
            }
        }
        self.room_for(&pending, size)?;
        write_batch(file, &mut pending, flush_batches).await?;
        if flush_batches {
            written(size);
        }
        if let Some(announced) = self.announced.filter(|n| *n != size) {
            return Err(DownloadError::WrongLength {
                announced,
                sent: size,
            });
        }
        Ok(Downloaded {
            size,
            sha256: crate::verify::hex(&hasher.finalize()),
        })
    }
}

impl Download {
    /// Whether `pending`, the bytes up to `received`, may be written, when
    /// the size was not announced (an announced one was checked whole).
    fn room_for(&self, pending: &[u8], received: u64) -> Result<(), DownloadError> {
        match &self.room {
            Some(room) if self.announced.is_none() => {
                let size = pending.len() as u64;
                room.fits(size).map_err(|no| DownloadError::NoRoom {
                    no,
                    written: received - size,
                })
            }
            _ => Ok(()),
        }
    }
}

/// Writes the gathered bytes; flushes them to the kernel when readers follow
/// the file by path.
async fn write_batch(
    file: &mut tokio::fs::File,
    pending: &mut Vec<u8>,
    flush: bool,
) -> std::io::Result<()> {
    if pending.is_empty() {
        return Ok(());
    }
    file.write_all(pending).await?;
    pending.clear();
    if flush {
        file.flush().await?;
    }
    Ok(())
}

fn human(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}
