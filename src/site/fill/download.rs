//! A fill's archive downloads: at most `jobs` at once, each counted as
//! stored, already cached, refused by the policy once read, or failed.

use std::sync::Arc;

use futures_util::stream::{self, StreamExt};

use super::Fill;
use crate::address::ArchiveKey;
use crate::error::RequestError;
use crate::mirror::Mirror;

impl Fill<'_> {
    /// Downloads `work`, at most `jobs` at once, and counts the outcome;
    /// returns how many archives the policy refused.
    pub(super) async fn download(
        &mut self,
        mirror: &Arc<Mirror>,
        work: Vec<ArchiveKey>,
        jobs: usize,
    ) -> usize {
        let observer = self.observer;
        self.summary.archives += work.len();
        observer.start(work.len() as u64);
        let results: Vec<(ArchiveKey, Result<Option<u64>, RequestError>)> = stream::iter(work)
            .map(|key| {
                let mirror = mirror.clone();
                async move {
                    if mirror.store().archive(&key).await.ok().flatten().is_some() {
                        return (key, Ok(None));
                    }
                    let fetched = mirror.archive(&key).await.map(|a| Some(a.size));
                    (key, fetched)
                }
            })
            .buffer_unordered(jobs.max(1))
            .inspect(|(key, result)| {
                let line = match result {
                    Ok(Some(size)) => format!(
                        "stored {key} ({})",
                        bytesize::ByteSize(*size).display().iec()
                    ),
                    Ok(None) => format!("cached {key}"),
                    Err(RequestError::Denied(why)) => format!("REFUSED {key}: {why}"),
                    Err(e) => format!("FAILED {key}: {e}"),
                };
                observer.advance(&line);
            })
            .collect()
            .await;
        let mut refused = 0;
        let summary = &mut self.summary;
        for (key, result) in results {
            match result {
                Ok(Some(size)) => {
                    summary.downloaded += 1;
                    summary.bytes += size;
                    summary.stored.push(key.to_string());
                }
                Ok(None) => summary.cached += 1,
                Err(RequestError::Denied(why)) => {
                    refused += 1;
                    summary.refused.push(format!("archive {key}: {why}"));
                }
                Err(e) => summary.failures.push(format!("archive {key}: {e}")),
            }
        }
        observer.finish();
        refused
    }
}
