//! Graceful shutdown of the listener's connections. Each connection's
//! task leaves its waker in a slot of its own as it is polled (no lock and
//! no allocation per poll); shutting down raises a flag, wakes every slot
//! so that each connection stops taking requests and finishes the ones in
//! flight, and waits until every connection has ended.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use futures_util::task::AtomicWaker;
use tokio::sync::Notify;

/// The connections of one listener, and whether they are to drain; a
/// copy shares them.
#[derive(Default, Clone)]
pub struct Drain {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    stopping: AtomicBool,
    /// Each open connection's slot, by a number of its own.
    open: Mutex<Open>,
    /// Signalled when the last connection ends.
    ended: Notify,
}

#[derive(Default)]
struct Open {
    next: u64,
    slots: HashMap<u64, Arc<AtomicWaker>>,
}

impl Shared {
    fn open(&self) -> std::sync::MutexGuard<'_, Open> {
        // The map stays whole whatever panicked while it was held.
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drain {
    /// No connections yet.
    pub fn new() -> Drain {
        Drain::default()
    }

    /// `conn`, told to finish what it serves and take nothing more (by
    /// `stop`) once [`Drain::shutdown`] is called, or at once if it was.
    pub fn watch<C, S>(&self, conn: C, stop: S) -> Watched<C, S>
    where
        C: Future,
        S: FnOnce(Pin<&mut C>),
    {
        let slot = Arc::new(AtomicWaker::new());
        let id = {
            let mut open = self.shared.open();
            open.next += 1;
            let id = open.next;
            open.slots.insert(id, slot.clone());
            id
        };
        Watched {
            conn,
            stop: Some(stop),
            slot,
            id,
            shared: self.shared.clone(),
        }
    }

    /// How many connections are open.
    #[cfg(test)]
    fn count(&self) -> usize {
        self.shared.open().slots.len()
    }

    /// Tells every connection to drain, and waits until all have ended.
    pub async fn shutdown(&self) {
        self.shared.stopping.store(true, Ordering::SeqCst);
        for slot in self.shared.open().slots.values() {
            slot.wake();
        }
        loop {
            let ended = self.shared.ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            if self.shared.open().slots.is_empty() {
                return;
            }
            ended.await;
        }
    }
}

pin_project_lite::pin_project! {
    /// A connection a [`Drain`] watches; see [`Drain::watch`].
    pub struct Watched<C, S> {
        #[pin]
        conn: C,
        // Taken when the connection is told to stop.
        stop: Option<S>,
        slot: Arc<AtomicWaker>,
        id: u64,
        shared: Arc<Shared>,
    }

    impl<C, S> PinnedDrop for Watched<C, S> {
        fn drop(this: Pin<&mut Self>) {
            let this = this.project();
            let mut open = this.shared.open();
            open.slots.remove(this.id);
            if open.slots.is_empty() {
                this.shared.ended.notify_waiters();
            }
        }
    }
}

impl<C: Future, S: FnOnce(Pin<&mut C>)> Future for Watched<C, S> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<C::Output> {
        let mut this = self.project();
        if this.stop.is_some() {
            // The waker first, then the flag: a shutdown that raises the
            // flag after this reads it wakes the waker left here.
            this.slot.register(cx.waker());
            if this.shared.stopping.load(Ordering::SeqCst) {
                if let Some(stop) = this.stop.take() {
                    stop(this.conn.as_mut());
                }
            }
        }
        this.conn.poll(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;
    use tokio::sync::{oneshot, Notify};

    /// A connection that, once told to stop, ends when `release` is sent.
    fn connection(drain: &Drain) -> (tokio::task::JoinHandle<()>, oneshot::Sender<()>) {
        let told = Arc::new(Notify::new());
        let (release, released) = oneshot::channel::<()>();
        let waits = told.clone();
        let conn = Box::pin(async move {
            waits.notified().await;
            let _ = released.await;
        });
        let task = tokio::spawn(drain.watch(conn, move |_| told.notify_one()));
        (task, release)
    }

    /// Lets spawned tasks run.
    async fn settle() {
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn shutdown_tells_idle_connections_and_waits_for_each_to_end() {
        let drain = Drain::new();
        let (a, release_a) = connection(&drain);
        let (b, release_b) = connection(&drain);
        settle().await;
        assert_eq!(drain.count(), 2);
        let shutdown = drain.shutdown();
        tokio::pin!(shutdown);
        settle().await;
        assert!(futures_util::poll!(shutdown.as_mut()).is_pending());
        release_a.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), a)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(drain.count(), 1);
        assert!(
            futures_util::poll!(shutdown.as_mut()).is_pending(),
            "one is still open"
        );
        release_b.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), shutdown)
            .await
            .expect("done when the last ended");
        assert!(b.await.is_ok());
        assert_eq!(drain.count(), 0);
    }

    #[tokio::test]
    async fn a_connection_opened_after_shutdown_is_told_at_once() {
        let drain = Drain::new();
        drain.shutdown().await;
        let (task, release) = connection(&drain);
        release.send(()).unwrap();
        tokio::time::timeout(Duration::from_secs(10), task)
            .await
            .expect("told to stop when first polled")
            .unwrap();
        assert_eq!(drain.count(), 0);
    }

    #[tokio::test]
    async fn with_no_connections_shutdown_returns_at_once() {
        let drain = Drain::new();
        assert!(futures_util::FutureExt::now_or_never(drain.shutdown()).is_some());
    }
}
