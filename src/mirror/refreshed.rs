//! One value read again at most every so often, such as the operator's
//! decisions. A request takes the held copy under a shared lock, without
//! hashing a key or noting the read for an eviction policy (a cache of one
//! needs neither). Once the copy is older than its lifetime, the first
//! request to notice loads it again and the others wait for that load.

use std::future::Future;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

/// A value and when it was loaded; see the module's documentation.
pub(super) struct Refreshed<T> {
    lifetime: Duration,
    held: RwLock<Option<(Instant, Arc<T>)>>,
    /// Held by the request that loads.
    loading: tokio::sync::Mutex<()>,
}

impl<T> Refreshed<T> {
    /// Nothing held yet; each copy is used for `lifetime` after it loads.
    pub(super) fn new(lifetime: Duration) -> Self {
        Refreshed {
            lifetime,
            held: RwLock::new(None),
            loading: tokio::sync::Mutex::new(()),
        }
    }

    /// The held copy, if it is younger than its lifetime.
    pub(super) fn live(&self) -> Option<Arc<T>> {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
        let (loaded, value) = held.as_ref()?;
        (loaded.elapsed() < self.lifetime).then(|| value.clone())
    }

    /// The held copy, however old: what a load may keep parts of.
    pub(super) fn last(&self) -> Option<Arc<T>> {
        let held = self.held.read().unwrap_or_else(PoisonError::into_inner);
        held.as_ref().map(|(_, value)| value.clone())
    }

    /// Holds `value` from now, as if it had just been loaded (a change
    /// this instance made itself).
    pub(super) fn set(&self, value: Arc<T>) {
        *self.held.write().unwrap_or_else(PoisonError::into_inner) = Some((Instant::now(), value));
    }

    /// The slow half of a read, for when [`Refreshed::live`] found no
    /// copy: a new one from `load`, or the one another request loaded
    /// meanwhile. One load runs at a time; requests that ask meanwhile get
    /// its result. A load given up (its request dropped) leaves the next
    /// request to load.
    pub(super) async fn get_or_load<F, Fut>(&self, load: F) -> Arc<T>
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Arc<T>>,
    {
        let _loading = self.loading.lock().await;
        // Loaded by another request while this one waited (or since the
        // caller looked).
        if let Some(value) = self.live() {
            return value;
        }
        let value = load().await;
        *self.held.write().unwrap_or_else(PoisonError::into_inner) =
            Some((Instant::now(), value.clone()));
        value
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test]
    async fn one_load_for_every_request_that_asks_at_once() {
        let held = Arc::new(Refreshed::new(Duration::from_secs(60)));
        let loads = Arc::new(AtomicUsize::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let mut asking = Vec::new();
        for _ in 0..8 {
            let (held, loads, mut released) = (held.clone(), loads.clone(), released.clone());
            asking.push(tokio::spawn(async move {
                held.get_or_load(|| async move {
                    loads.fetch_add(1, Ordering::SeqCst);
                    // Every request is waiting by the time the load ends.
                    released.wait_for(|r| *r).await.unwrap();
                    Arc::new(42)
                })
                .await
            }));
        }
        // The load has started and the other seven wait for it.
        while loads.load(Ordering::SeqCst) == 0 {
            tokio::task::yield_now().await;
        }
        release.send(true).unwrap();
        for ask in asking {
            assert_eq!(*ask.await.unwrap(), 42);
        }
        assert_eq!(loads.load(Ordering::SeqCst), 1);
        assert_eq!(held.live().as_deref(), Some(&42));
    }

    #[tokio::test]
    async fn an_old_copy_is_loaded_again() {
        let held = Refreshed::new(Duration::ZERO);
        assert_eq!(held.live(), None);
        assert_eq!(*held.get_or_load(|| async { Arc::new(1) }).await, 1);
        // Older than a lifetime of zero as soon as it is held.
        assert_eq!(held.live(), None);
        assert_eq!(*held.get_or_load(|| async { Arc::new(2) }).await, 2);
        let kept = Refreshed::new(Duration::from_secs(60));
        kept.get_or_load(|| async { Arc::new(1) }).await;
        assert_eq!(*kept.get_or_load(|| async { Arc::new(2) }).await, 1);
    }

    #[tokio::test]
    async fn a_load_given_up_leaves_the_next_request_to_load() {
        let held = Refreshed::new(Duration::from_secs(60));
        let never = held.get_or_load(std::future::pending::<Arc<u8>>);
        // Polled once (the load starts and holds the lock), then dropped.
        assert!(futures_util::poll!(Box::pin(never)).is_pending());
        let got = tokio::time::timeout(
            Duration::from_secs(10),
            held.get_or_load(|| async { Arc::new(3) }),
        )
        .await
        .expect("the lock was released");
        assert_eq!(*got, 3);
    }
}
