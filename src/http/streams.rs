//! How an HTTP/2 stream's answer is run: at once, on the connection's own
//! task, and only handed to a task of its own when it has to wait.
//!
//! hyper runs each HTTP/2 request through the executor it is given. A new
//! task per stream costs an allocation, a trip through the scheduler, and
//! a second wake of the connection to write what the stream answered. Most
//! of tfmirror's answers never wait (a warm document, a redirect, an
//! error), so [`Streams`] polls the stream once where it arrives: an answer
//! that is ready is queued on the connection, which writes it in the same
//! pass. A stream that waits (a cold fetch, a request body, a file being
//! read, flow control) continues as a task of its own, as before.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

/// The executor for HTTP/2 streams: polls each stream once at once, and
/// spawns it on the tokio runtime only if it is not finished.
#[derive(Clone, Copy, Debug, Default)]
pub struct Streams;

impl<F> hyper::rt::Executor<F> for Streams
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, fut: F) {
        let mut fut = Box::pin(fut);
        if first_poll(fut.as_mut()).is_pending() {
            // The task's first poll registers its own waker; a wake of the
            // no-op one in between is not lost, since that poll looks again.
            tokio::spawn(fut);
        }
    }
}

/// Polls `fut` once with a waker that does nothing. A panic ends this
/// stream alone, as it would in a task of its own, and never the
/// connection it arrived on.
fn first_poll<F: Future<Output = ()>>(fut: Pin<&mut F>) -> Poll<()> {
    let mut cx = Context::from_waker(Waker::noop());
    match std::panic::catch_unwind(AssertUnwindSafe(|| fut.poll(&mut cx))) {
        Ok(poll) => poll,
        Err(_) => {
            // The panic hook has already logged it; what the future held
            // is dropped with it, which resets the stream.
            Poll::Ready(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::rt::Executor;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use std::time::Duration;

    #[tokio::test]
    async fn a_ready_stream_runs_before_execute_returns() {
        let runs = Arc::new(AtomicUsize::new(0));
        let counted = runs.clone();
        Streams.execute(async move {
            counted.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_waiting_stream_continues_as_a_task() {
        let (tx, rx) = tokio::sync::oneshot::channel::<u32>();
        let (done_tx, done_rx) = tokio::sync::oneshot::channel::<u32>();
        Streams.execute(async move {
            let got = rx.await.expect("sent");
            let _ = done_tx.send(got + 1);
        });
        tx.send(41).expect("the stream waits for it");
        let got = tokio::time::timeout(Duration::from_secs(10), done_rx)
            .await
            .expect("the spawned stream finishes")
            .expect("answered");
        assert_eq!(got, 42);
    }

    /// Counts its drop.
    struct Guard(Arc<AtomicUsize>);

    impl Drop for Guard {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_panicking_stream_does_not_unwind_into_the_connection() {
        let dropped = Arc::new(AtomicUsize::new(0));
        let guard = Guard(dropped.clone());
        Streams.execute(async move {
            let _guard = guard;
            panic!("a handler bug");
        });
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "its state is dropped");
    }
}
