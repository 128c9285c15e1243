//! The bounds on requests to origins in flight (`upstream.max_fetches` in
//! all, `upstream.max_fetches_per_host` per host), and the answer bodies
//! that hold their slots until they are dropped.

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context as TaskContext, Poll};
use std::time::Duration;

use bytes::Bytes;
use hyper::body::Incoming;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use url::Url;

use super::UpstreamError;

/// Slots under the fetch limits, given back when dropped.
pub struct Slots {
    pub(super) _held: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

/// An upstream response body, holding the request's slots until dropped.
pub struct Fetched {
    pub(super) body: Incoming,
    pub(super) _slots: (OwnedSemaphorePermit, OwnedSemaphorePermit),
}

impl hyper::body::Body for Fetched {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut TaskContext<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// The bounds on upstream requests in flight.
pub(super) struct Limits {
    pub(super) total: Arc<Semaphore>,
    pub(super) total_max: usize,
    pub(super) per_host: Mutex<HashMap<String, Arc<Semaphore>>>,
    pub(super) per_host_max: usize,
}

impl Limits {
    pub(super) async fn acquire_total(
        &self,
        url: &Url,
        wait: Duration,
    ) -> Result<OwnedSemaphorePermit, UpstreamError> {
        let limit = format!("upstream.max_fetches ({})", self.total_max);
        acquire(self.total.clone(), url, wait, limit).await
    }

    pub(super) async fn acquire_host(
        &self,
        url: &Url,
        host: &str,
        wait: Duration,
    ) -> Result<OwnedSemaphorePermit, UpstreamError> {
        let semaphore = {
            let mut map = self.per_host.lock().expect("per-host limits lock");
            // Forget hosts no request is using, so the map stays small.
            if map.len() > 1024 {
                map.retain(|_, s| s.available_permits() < self.per_host_max);
            }
            map.entry(host.to_owned())
                .or_insert_with(|| Arc::new(Semaphore::new(self.per_host_max)))
                .clone()
        };
        let limit = format!(
            "upstream.max_fetches_per_host ({}) for {host}",
            self.per_host_max
        );
        acquire(semaphore, url, wait, limit).await
    }
}

async fn acquire(
    semaphore: Arc<Semaphore>,
    url: &Url,
    wait: Duration,
    limit: String,
) -> Result<OwnedSemaphorePermit, UpstreamError> {
    match tokio::time::timeout(wait, semaphore.acquire_owned()).await {
        Ok(Ok(permit)) => Ok(permit),
        _ => Err(UpstreamError::Busy {
            url: url.to_string(),
            limit,
            secs: wait.as_secs(),
        }),
    }
}
