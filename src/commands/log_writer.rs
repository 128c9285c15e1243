//! The daemon's log writer: lines are appended to a shared buffer on the
//! thread that logs them, and a logging thread writes the buffer out in
//! batches. A request that logs pays for a short copy under a lock; the
//! logging thread is woken once per batch, not once per line, and a batch
//! goes out in one write.
//!
//! Nothing is dropped: once [`MAX_QUEUED_BYTES`] wait (nothing reads
//! standard error), threads that log wait until the logging thread has
//! written them. Dropping the [`Flushed`] guard writes what is left and
//! stops the thread.

use std::io::Write;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

/// How many bytes of log lines may wait to be written before threads that
/// log wait for the writer (a few thousand lines).
pub const MAX_QUEUED_BYTES: usize = 2 * 1024 * 1024;

/// How long the logging thread lets lines gather after the first of a batch
/// arrives, unless the batch fills first: the longest a line waits.
const GATHER: Duration = Duration::from_millis(25);

/// A batch this big is written at once.
const FULL_BATCH: usize = 64 * 1024;

/// What the logging threads share.
struct Shared {
    queue: Mutex<Queue>,
    /// Signalled when a batch starts (to the logging thread), when it is
    /// full, and when the queue is stopped.
    arrived: Condvar,
    /// Signalled when the logging thread has taken the queued lines.
    taken: Condvar,
}

#[derive(Default)]
struct Queue {
    lines: Vec<u8>,
    stopping: bool,
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        // A panic while holding the lock leaves whole lines behind (a line
        // is appended in one copy), so the queue stays usable.
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The writer handed to the log formatter; cheap to clone.
#[derive(Clone)]
pub struct BatchWriter {
    shared: Arc<Shared>,
}

/// Writes what is queued and stops the logging thread when dropped.
pub struct Flushed {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

/// Starts the logging thread, writing to `out`.
pub fn start<W: Write + Send + 'static>(out: W) -> std::io::Result<(BatchWriter, Flushed)> {
    let shared = Arc::new(Shared {
        queue: Mutex::new(Queue::default()),
        arrived: Condvar::new(),
        taken: Condvar::new(),
    });
    let thread = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("tfmirror-log".into())
            .spawn(move || write_batches(&shared, out))?
    };
    Ok((
        BatchWriter {
            shared: shared.clone(),
        },
        Flushed {
            shared,
            thread: Some(thread),
        },
    ))
}

/// The logging thread: waits for a batch to start, lets it gather, takes
/// it and writes it.
fn write_batches<W: Write>(shared: &Shared, mut out: W) {
    let mut batch = Vec::with_capacity(FULL_BATCH);
    loop {
        let mut queue = shared.lock();
        while queue.lines.is_empty() && !queue.stopping {
            queue = shared
                .arrived
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        if !queue.stopping && queue.lines.len() < FULL_BATCH {
            queue = shared
                .arrived
                .wait_timeout_while(queue, GATHER, |q| q.lines.len() < FULL_BATCH && !q.stopping)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let stopping = queue.stopping;
        std::mem::swap(&mut queue.lines, &mut batch);
        drop(queue);
        shared.taken.notify_all();
        if !batch.is_empty() {
            // Standard error gone: nothing else can be done with the lines.
            let _ = out.write_all(&batch).and_then(|()| out.flush());
            batch.clear();
            if batch.capacity() > 4 * FULL_BATCH {
                batch.shrink_to(FULL_BATCH);
            }
        }
        if stopping && shared.lock().lines.is_empty() {
            return;
        }
    }
}

impl BatchWriter {
    /// Queues `line` (one formatted log line, written whole).
    fn queue(&self, line: &[u8]) {
        let shared = &*self.shared;
        let mut queue = shared.lock();
        while queue.lines.len() >= MAX_QUEUED_BYTES && !queue.stopping {
            queue = shared
                .taken
                .wait(queue)
                .unwrap_or_else(PoisonError::into_inner);
        }
        let first = queue.lines.is_empty();
        queue.lines.extend_from_slice(line);
        let full = queue.lines.len() >= FULL_BATCH;
        drop(queue);
        // The logging thread waits for the first line of a batch, then for
        // the batch to fill (or its gathering time to pass).
        if first || full {
            shared.arrived.notify_one();
        }
    }
}

impl Write for BatchWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.queue(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for BatchWriter {
    type Writer = BatchWriter;

    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

impl Drop for Flushed {
    fn drop(&mut self) {
        self.shared.lock().stopping = true;
        self.shared.arrived.notify_all();
        self.shared.taken.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer the test can read back, whose writes can be held up.
    #[derive(Clone, Default)]
    struct Sink {
        written: Arc<Mutex<Vec<u8>>>,
        writes: Arc<Mutex<usize>>,
        gate: Arc<Mutex<()>>,
    }

    impl Write for Sink {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            let _open = self.gate.lock().unwrap();
            self.written.lock().unwrap().extend_from_slice(buf);
            *self.writes.lock().unwrap() += 1;
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn every_line_is_written_whole_and_in_order_by_the_time_the_guard_drops() {
        let sink = Sink::default();
        let (writer, flushed) = start(sink.clone()).unwrap();
        let threads: Vec<_> = (0..4)
            .map(|t| {
                let mut w = writer.clone();
                std::thread::spawn(move || {
                    for i in 0..5_000 {
                        w.write_all(format!("thread {t} line {i}\n").as_bytes())
                            .unwrap();
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        drop(flushed);
        let written = String::from_utf8(sink.written.lock().unwrap().clone()).unwrap();
        assert_eq!(written.lines().count(), 20_000);
        for t in 0..4 {
            let own: Vec<usize> = written
                .lines()
                .filter_map(|l| l.strip_prefix(&format!("thread {t} line ")))
                .map(|n| n.parse().unwrap())
                .collect();
            assert_eq!(own, (0..5_000).collect::<Vec<_>>(), "thread {t}");
        }
        // Batched: far fewer writes than lines.
        let batches = *sink.writes.lock().unwrap();
        assert!(batches < 2_000, "{batches} writes for 20,000 lines");
    }

    #[test]
    fn a_stalled_reader_holds_loggers_back_and_loses_nothing() {
        let sink = Sink::default();
        let stalled = sink.gate.lock().unwrap();
        let (writer, flushed) = start(sink.clone()).unwrap();
        let line = [b'x'; 1023];
        let logger = {
            let mut w = writer.clone();
            std::thread::spawn(move || {
                for _ in 0..(3 * MAX_QUEUED_BYTES / 1024) {
                    w.write_all(&line).unwrap();
                    w.write_all(b"\n").unwrap();
                }
            })
        };
        // The logger fills the queue, the writer holds one batch, and the
        // logger waits: it cannot have finished while the reader stalls.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while writer.shared.lock().lines.len() < MAX_QUEUED_BYTES {
            assert!(
                std::time::Instant::now() < deadline,
                "the queue never filled"
            );
            std::thread::yield_now();
        }
        assert!(!logger.is_finished());
        drop(stalled);
        logger.join().unwrap();
        drop(flushed);
        assert_eq!(sink.written.lock().unwrap().len(), 3 * MAX_QUEUED_BYTES);
    }
}
