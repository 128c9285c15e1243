//! An archive as clients receive it: its size and its bytes, a stream (an
//! arriving download, an object in a bucket) or the stored file itself
//! (for connections that send files as they are), held as being read, and
//! so safe from eviction, for as long as it is sent.

use std::sync::Arc;

use bytes::Bytes;
use futures_util::stream::BoxStream;
use futures_util::StreamExt;
use tokio_util::io::ReaderStream;

use super::Mirror;
use crate::address::ArchiveKey;

/// Chunk size for reading archives.
pub(super) const CHUNK: usize = 128 * 1024;

/// An archive ready to send: its size and its bytes.
pub struct ArchiveBody {
    /// The size, for `Content-Length`.
    pub size: u64,
    /// Where the bytes come from.
    pub(super) source: BodySource,
}

/// Where the bytes of an [`ArchiveBody`] come from.
pub(super) enum BodySource {
    /// A stream of bytes (an arriving download, an object in a bucket).
    Stream(BoxStream<'static, std::io::Result<Bytes>>),
    /// The stored file on this machine's disk, held as being read.
    Stored {
        file: std::fs::File,
        mirror: Arc<Mirror>,
        reading: Reading,
    },
}

impl ArchiveBody {
    /// The bytes as a stream; an error cuts the response short.
    pub fn into_stream(self) -> BoxStream<'static, std::io::Result<Bytes>> {
        match self.source {
            BodySource::Stream(stream) => stream,
            BodySource::Stored {
                file,
                mirror,
                reading,
            } => counted(tokio::fs::File::from_std(file), mirror, reading),
        }
    }

    /// For a connection that sends files as they are: the stored file when
    /// the bytes are one on this machine, else the stream.
    pub fn into_file_or_stream(self) -> FileOrStream {
        match self.source {
            BodySource::Stored {
                file,
                mirror,
                reading,
            } => FileOrStream::File(StoredFile {
                file,
                sent: Box::new(move |n| {
                    // The guard lives as long as the sender: the archive is being read.
                    let _ = &reading;
                    mirror.metrics().sent_from_file(n);
                }),
            }),
            BodySource::Stream(stream) => FileOrStream::Stream(stream),
        }
    }
}

/// An archive's bytes for a connection that sends files as they are.
pub enum FileOrStream {
    /// The stored file.
    File(StoredFile),
    /// A stream of bytes; an error cuts the response short.
    Stream(BoxStream<'static, std::io::Result<Bytes>>),
}

/// The bytes of `reader` as a stream, counted as served, holding the
/// archive as being read for as long as the stream lives.
pub(super) fn counted(
    reader: impl tokio::io::AsyncRead + Send + 'static,
    mirror: Arc<Mirror>,
    reading: Reading,
) -> BoxStream<'static, std::io::Result<Bytes>> {
    ReaderStream::with_capacity(reader, CHUNK)
        .map(move |chunk| {
            let _ = &reading;
            if let Ok(data) = &chunk {
                mirror.metrics().served(data.len() as u64);
            }
            chunk
        })
        .boxed()
}

/// An archive's file on this machine's disk, for sending it as it is.
pub struct StoredFile {
    /// The open file.
    pub file: std::fs::File,
    /// To be called with the length of each part sent; holds the archive
    /// as being read (safe from eviction) for as long as it lives.
    pub sent: Box<dyn FnMut(u64) + Send>,
}

/// Marks an archive as being read; dropping it ends that.
pub(super) struct Reading {
    mirror: Arc<Mirror>,
    key: ArchiveKey,
}

impl Reading {
    pub(super) fn new(mirror: &Arc<Mirror>, key: &ArchiveKey) -> Reading {
        mirror.residency.reading(key);
        Reading {
            mirror: mirror.clone(),
            key: key.clone(),
        }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.mirror.residency.done_reading(&self.key);
    }
}
