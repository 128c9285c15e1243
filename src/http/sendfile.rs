//! Archives sent with `sendfile(2)` on plain-HTTP/1.1 connections: the
//! stored file's bytes go from the page cache to the socket without being
//! read into tfmirror.
//!
//! hyper writes whatever bytes a response body yields, so the body of a
//! file sent this way yields placeholders: slices of `BLANK`, one per
//! part, each announced first in the connection's [`SendQueue`] with the
//! file range it stands for. The connection's writer ([`Conn`]) sends every
//! slice of `BLANK` it is asked to write as the next bytes of the queued
//! range instead. HTTP/1.1 answers one request at a time per connection,
//! and the body's parts are written in the order they were yielded, so the
//! queue and the placeholders stay in step. hyper is told to queue body
//! parts rather than copy them into its own buffer (`writev(true)` in the
//! listener), which is what keeps the placeholders recognisable; the tests
//! compare archives sent this way byte for byte.

use std::collections::VecDeque;
use std::fs::File;
use std::io;
use std::os::fd::AsFd;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{ready, Context, Poll};

use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};
use tokio::io::{AsyncRead, AsyncWrite, Interest, ReadBuf};
use tokio::net::TcpStream;

/// The most bytes one part of a sent file stands for.
const PART: usize = 1024 * 1024;

/// What a body yields in place of a file's bytes. Its contents are never
/// sent (and never read, so never in memory): only where a slice of it
/// lies matters.
static BLANK: [u8; PART] = [0; PART];

/// The file ranges a connection still has to send, in the order its
/// response bodies yielded their placeholders. One per connection, handed
/// to each of its requests as a request extension.
#[derive(Clone, Default)]
pub struct SendQueue(Arc<Mutex<VecDeque<Pending>>>);

/// A range of a file the writer has still to send.
struct Pending {
    file: Arc<File>,
    offset: u64,
    left: u64,
}

impl SendQueue {
    /// A body of the first `size` bytes of `file`, sent by the connection
    /// from the file itself. `sent` is called with the length of each part
    /// as it is handed on (for metrics), and lives as long as the body.
    pub fn body(
        &self,
        file: File,
        size: u64,
        mut sent: Box<dyn FnMut(u64) + Send>,
    ) -> BoxStream<'static, io::Result<Bytes>> {
        let queue = self.clone();
        let file = Arc::new(file);
        stream::unfold(0u64, move |offset| {
            let step = if offset < size {
                let n = usize::try_from(size - offset).map_or(PART, |left| left.min(PART));
                let len = n as u64;
                // Start reading the part from disk now, so that the send
                // finds it in the page cache rather than waiting for it.
                let _ = rustix::fs::fadvise(
                    file.as_fd(),
                    offset,
                    std::num::NonZeroU64::new(len),
                    rustix::fs::Advice::WillNeed,
                );
                queue.0.lock().expect("send queue lock").push_back(Pending {
                    file: file.clone(),
                    offset,
                    left: len,
                });
                sent(len);
                Some((Ok(Bytes::from_static(&BLANK[..n])), offset + len))
            } else {
                None
            };
            async move { step }
        })
        .boxed()
    }
}

/// Whether `buf` is (a part of) a placeholder.
fn is_placeholder(buf: &[u8]) -> bool {
    let start = BLANK.as_ptr() as usize;
    let at = buf.as_ptr() as usize;
    !buf.is_empty() && at >= start && at < start + PART
}

/// A plain TCP connection whose writer sends placeholders from the files
/// they stand for.
pub struct Conn {
    tcp: TcpStream,
    queue: SendQueue,
}

impl Conn {
    /// Wraps `tcp`; `queue` is the one given to the connection's requests.
    pub fn new(tcp: TcpStream, queue: SendQueue) -> Conn {
        Conn { tcp, queue }
    }

    /// Sends up to `want` bytes of the range at the head of the queue.
    fn poll_send(&self, cx: &mut Context<'_>, want: usize) -> Poll<io::Result<usize>> {
        loop {
            ready!(self.tcp.poll_write_ready(cx))?;
            let sent = self.tcp.try_io(Interest::WRITABLE, || {
                let mut queue = self.queue.0.lock().expect("send queue lock");
                let head = queue.front_mut().ok_or_else(|| {
                    io::Error::other("a file placeholder was written with no file queued")
                })?;
                let count = usize::try_from(head.left).map_or(want, |left| left.min(want));
                let mut offset = head.offset;
                let n = rustix::fs::sendfile(
                    self.tcp.as_fd(),
                    head.file.as_fd(),
                    Some(&mut offset),
                    count,
                )?;
                if n == 0 {
                    // The file is shorter than its record says.
                    return Err(io::ErrorKind::UnexpectedEof.into());
                }
                head.offset = offset;
                head.left -= n as u64;
                if head.left == 0 {
                    queue.pop_front();
                }
                Ok(n)
            });
            match sent {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                done => return Poll::Ready(done),
            }
        }
    }
}

impl AsyncRead for Conn {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_read(cx, buf)
    }
}

impl AsyncWrite for Conn {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        if is_placeholder(buf) {
            self.poll_send(cx, buf.len())
        } else {
            Pin::new(&mut self.tcp).poll_write(cx, buf)
        }
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let Some(first) = bufs.iter().position(|b| !b.is_empty()) else {
            return Poll::Ready(Ok(0));
        };
        if is_placeholder(&bufs[first]) {
            return self.poll_send(cx, bufs[first].len());
        }
        // The ordinary bytes before the next placeholder, in one write.
        let end = bufs[first..]
            .iter()
            .position(|b| is_placeholder(b))
            .map_or(bufs.len(), |p| first + p);
        Pin::new(&mut self.tcp).poll_write_vectored(cx, &bufs[first..end])
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.tcp).poll_shutdown(cx)
    }
}
