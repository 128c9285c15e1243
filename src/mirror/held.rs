//! Values held in memory with an expiry by the mirror's clock, and the
//! one way they are read: found live, or loaded once however many
//! requests ask at the same time.

use std::future::Future;
use std::hash::Hash;
use std::pin::{pin, Pin};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use moka::ops::compute::Op;
use moka::Equivalent;

use super::Mirror;
use crate::address::{Provider, Version};
use crate::error::RequestError;

/// How the mirror's in-memory caches hash their keys: aHash, keyed at
/// random for each cache (the names hashed are the clients' choice, so
/// the hash must not be one they can predict), at about a quarter of the
/// standard library's hash's cost for a provider's three names, which
/// nearly every request pays.
pub(super) type KeyHash = ahash::RandomState;

/// One of the mirror's in-memory caches.
pub(super) type Cache<K, V> = moka::future::Cache<K, V, KeyHash>;

/// A version's key in the mirror's caches, `(provider, version)`,
/// borrowed: a lookup with it copies no name (a copied key is four
/// strings made and freed for each `:version.json`). It hashes as the
/// key it stands for.
#[derive(Hash)]
pub(super) struct VersionKey<'a>(pub(super) &'a Provider, pub(super) &'a Version);

impl<'a> VersionKey<'a> {
    /// The borrowed form of `key`.
    pub(super) fn of(key: &'a (Provider, Version)) -> Self {
        VersionKey(&key.0, &key.1)
    }
}

impl Equivalent<(Provider, Version)> for VersionKey<'_> {
    fn equivalent(&self, key: &(Provider, Version)) -> bool {
        *self.0 == key.0 && *self.1 == key.1
    }
}

/// An empty cache of at most `capacity` entries.
pub(super) fn bounded<K, V>(capacity: u64) -> Cache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    moka::future::Cache::builder()
        .max_capacity(capacity)
        .build_with_hasher(KeyHash::new())
}

/// An empty cache of at most `capacity` entries, each dropped `ttl` after
/// it was put in.
pub(super) fn bounded_for<K, V>(capacity: u64, ttl: Duration) -> Cache<K, V>
where
    K: Hash + Eq + Send + Sync + 'static,
    V: Clone + Send + Sync + 'static,
{
    moka::future::Cache::builder()
        .max_capacity(capacity)
        .time_to_live(ttl)
        .build_with_hasher(KeyHash::new())
}

/// The output of `future` if it is ready when first polled, or `None` if
/// it would wait (the caller then drops it). For reads that wait only when
/// some upkeep on the way does, and that have another way round then.
/// Pinned where it is made (`ready_now(pin!(…))`), it is not moved.
pub(super) fn ready_now<F: Future>(future: Pin<&mut F>) -> Option<F::Output> {
    match future.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(output) => Some(output),
        Poll::Pending => None,
    }
}

/// A loaded value and how long it may be held in memory (`None`: until
/// memory is needed for others).
#[derive(Debug)]
pub(super) struct Timed<T> {
    pub(super) value: Arc<T>,
    pub(super) ttl: Option<Duration>,
}

/// A value held in memory, when it expires by the mirror's clock
/// (milliseconds since the Unix epoch), and what is made from it once, on
/// first use, and kept as long as it is held (`M`: a version list's
/// rendered `index.json`; nothing for other values). A value held in its
/// place starts with nothing made.
#[derive(Debug)]
pub(super) struct Held<T, M = ()> {
    pub(super) value: Arc<T>,
    pub(super) expires_ms: Option<u64>,
    pub(super) made: Arc<OnceLock<M>>,
}

impl<T, M> Clone for Held<T, M> {
    fn clone(&self) -> Self {
        Held {
            value: self.value.clone(),
            expires_ms: self.expires_ms,
            made: self.made.clone(),
        }
    }
}

impl<T, M> Held<T, M> {
    /// `value`, expiring at `expires_ms`, with nothing made from it yet.
    pub(super) fn new(value: Arc<T>, expires_ms: Option<u64>) -> Self {
        Held {
            value,
            expires_ms,
            made: Arc::default(),
        }
    }

    pub(super) fn live_at(&self, now_ms: u64) -> bool {
        self.expires_ms.is_none_or(|e| now_ms < e)
    }
}

impl Mirror {
    /// What `cache` holds for `key` (its value, and what is made from it),
    /// loaded by `load` when absent or expired by the mirror's clock.
    /// However many requests ask at once, one load runs and its result (or
    /// error) is shared. Also says whether the value was found held in
    /// memory.
    pub(super) async fn held<K, T, M, F, Fut>(
        &self,
        cache: &Cache<K, Held<T, M>>,
        key: &K,
        load: F,
    ) -> Result<(Held<T, M>, bool), RequestError>
    where
        K: Hash + Eq + Clone + Send + Sync + 'static,
        T: Send + Sync + 'static,
        M: Send + Sync + 'static,
        F: Fn() -> Fut + Send + Sync,
        Fut: std::future::Future<Output = Result<Timed<T>, RequestError>> + Send,
    {
        // Held and live: the key is not copied and no load is prepared.
        if let Some(held) = self.live(cache, key) {
            return Ok((held, true));
        }
        // Boxed: the load's state (the cache's entry machinery, fetching
        // and verifying) is large, and every caller's future would
        // otherwise carry it (and be copied whole) even when the value is
        // found. Its type is erased too: the caller's future names a boxed
        // future, not every type the load is made of.
        let load: std::pin::Pin<Box<dyn std::future::Future<Output = _> + Send + '_>> =
            Box::pin(self.load_held(cache, key.clone(), load));
        load.await
    }

    /// What `cache` holds for `key`, if it is live by the mirror's clock:
    /// found without waiting, so a request's future keeps no state for it.
    /// The cache's read is ready at once unless upkeep it does on the way
    /// has to wait; such a read counts as not found, and [`Mirror::held`]
    /// then finds the value through the cache's entry.
    pub(super) fn live<K, Q, T, M>(
        &self,
        cache: &Cache<K, Held<T, M>>,
        key: &Q,
    ) -> Option<Held<T, M>>
    where
        K: Hash + Eq + Send + Sync + 'static,
        Q: Equivalent<K> + Hash + ?Sized,
        T: Send + Sync + 'static,
        M: Send + Sync + 'static,
    {
        ready_now(pin!(cache.get(key)))
            .flatten()
            .filter(|h| h.live_at(self.clock.unix_ms()))
    }

    /// The slow half of [`Mirror::held`]: the value loaded (or waited for)
    /// through the cache's entry, an expired one dropped and loaded again.
    async fn load_held<K, T, M, F, Fut>(
        &self,
        cache: &Cache<K, Held<T, M>>,
        key: K,
        load: F,
    ) -> Result<(Held<T, M>, bool), RequestError>
    where
        K: Hash + Eq + Clone + Send + Sync + 'static,
        T: Send + Sync + 'static,
        M: Send + Sync + 'static,
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = Result<Timed<T>, RequestError>>,
    {
        let mut attempts = 0;
        loop {
            let entry = cache
                .entry(key.clone())
                // Boxed: a load (fetching and verifying) is a large future,
                // moved about by the cache's machinery.
                .or_try_insert_with(Box::pin(async {
                    let loaded = load().await?;
                    Ok::<_, RequestError>(Held::new(
                        loaded.value,
                        loaded.ttl.map(|ttl| {
                            self.clock
                                .unix_ms()
                                .saturating_add(u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX))
                        }),
                    ))
                }))
                .await
                .map_err(|e| (*e).clone())?;
            let loaded_now = entry.is_fresh();
            let held = entry.into_value();
            attempts += 1;
            if loaded_now || held.live_at(self.clock.unix_ms()) || attempts == 3 {
                return Ok((held, !loaded_now));
            }
            // Expired: drop it, unless another request already replaced it.
            let stale = held.value;
            cache
                .entry(key.clone())
                .and_compute_with(|current| async move {
                    match current {
                        Some(c) if Arc::ptr_eq(&c.value().value, &stale) => Op::Remove,
                        _ => Op::Nop,
                    }
                })
                .await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::future::{pending, ready};
    use std::pin::pin;

    use super::{bounded, ready_now, Cache, VersionKey};
    use crate::address::{Provider, Version};

    #[tokio::test]
    async fn a_borrowed_version_key_finds_what_its_owned_key_put_in() {
        let cache: Cache<(Provider, Version), u8> = bounded(10);
        let provider = Provider::from_source("r.example/ns/t").unwrap();
        let other = Provider::from_source("r.example/ns/u").unwrap();
        let (v1, v2) = (
            Version::parse("1.5.0").unwrap(),
            Version::parse("1.5.1").unwrap(),
        );
        cache.insert((provider.clone(), v1.clone()), 1).await;
        cache.insert((other.clone(), v2.clone()), 2).await;
        assert_eq!(cache.get(&VersionKey(&provider, &v1)).await, Some(1));
        assert_eq!(cache.get(&VersionKey(&other, &v2)).await, Some(2));
        // The same names in other pairs are other keys.
        assert_eq!(cache.get(&VersionKey(&provider, &v2)).await, None);
        assert_eq!(cache.get(&VersionKey(&other, &v1)).await, None);
        let owned = (provider.clone(), v1.clone());
        assert_eq!(cache.get(&VersionKey::of(&owned)).await, Some(1));
    }

    #[test]
    fn a_read_that_would_wait_counts_as_not_ready() {
        assert_eq!(ready_now(pin!(ready(7))), Some(7));
        assert_eq!(ready_now(pin!(pending::<u8>())), None);
        // Ready after a wait of its own: not ready when first polled.
        let mut waited = false;
        let once_pending = std::future::poll_fn(|cx| {
            if std::mem::replace(&mut waited, true) {
                std::task::Poll::Ready(1)
            } else {
                cx.waker().wake_by_ref();
                std::task::Poll::Pending
            }
        });
        assert_eq!(ready_now(pin!(once_pending)), None);
    }
}
