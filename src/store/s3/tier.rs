//! The local read-through tier (`[storage.s3.local_cache]`): archives this
//! instance stored or served, and copies of the records, on its own disk
//! in the disk store's layout, served from there also while the bucket is
//! down; the least recently used leave first above `max_size`.

use std::io;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures_util::StreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as Key;
use object_store::ObjectStoreExt;

use super::S3Store;
use crate::address::ArchiveKey;
use crate::store::{atomic, inventory, DiskStore, StoreError};

/// The local read-through tier: archives and records on this instance's
/// disk, in the disk store's layout.
pub(super) struct Tier {
    pub(super) disk: DiskStore,
    pub(super) max_bytes: u64,
    /// Archives being copied in from the bucket.
    pub(super) filling: Mutex<std::collections::HashSet<ArchiveKey>>,
}

impl Tier {
    /// Removes the least recently used archives above the tier's size.
    pub(super) async fn trim(self: &Arc<Self>) {
        let tier = self.clone();
        let _ = tokio::task::spawn_blocking(move || {
            inventory::evict(
                &tier.disk,
                tier.max_bytes,
                |_| false,
                |_| Ok::<_, std::convert::Infallible>(()),
            )
        })
        .await;
    }

    /// Keeps a copy of a record; the bucket holds the original.
    pub(super) async fn keep_record<T: serde::Serialize>(&self, path: PathBuf, value: &T) {
        let Ok(bytes) = serde_json::to_vec_pretty(value) else {
            return;
        };
        let tmp = self.disk.tmp_dir().to_path_buf();
        let written = tokio::task::spawn_blocking(move || atomic::write(&tmp, &path, &bytes)).await;
        if let Ok(Err(e)) = written {
            tracing::warn!(error = %e, "could not keep a record in the local cache tier");
        }
    }
}

impl S3Store {
    /// Copies an archive from the bucket into the local tier, in the
    /// background, unless a copy is under way.
    pub(super) fn fill_tier(&self, key: &ArchiveKey) {
        let Some(tier) = self.tier.clone() else {
            return;
        };
        if !tier.filling.lock().expect("tier lock").insert(key.clone()) {
            return;
        }
        let (bucket, object, h1_key, key) = (
            self.bucket.clone(),
            self.archive_key(key),
            self.h1_key(key),
            key.clone(),
        );
        tokio::spawn(async move {
            let filled = copy_into_tier(&bucket, &tier, &object, &h1_key, &key).await;
            if let Err(e) = filled {
                tracing::warn!(archive = %key, error = %e, "could not copy an archive into the local cache tier");
            }
            tier.filling.lock().expect("tier lock").remove(&key);
            tier.trim().await;
        });
    }
}

/// Copies an archive and its `h1:` hash from the bucket into the tier.
async fn copy_into_tier(
    bucket: &AmazonS3,
    tier: &Tier,
    object: &Key,
    h1_key: &Key,
    key: &ArchiveKey,
) -> Result<(), StoreError> {
    use tokio::io::AsyncWriteExt;
    let failed = |e: object_store::Error| StoreError::Unavailable(io::Error::other(e.to_string()));
    let h1 = bucket
        .get(h1_key)
        .await
        .map_err(failed)?
        .bytes()
        .await
        .map_err(failed)?;
    let h1 = String::from_utf8_lossy(&h1).trim().to_owned();
    let (file, staged) = atomic::temp_file(tier.disk.tmp_dir())?.into_parts();
    let mut file = tokio::fs::File::from_std(file);
    let mut stream = bucket.get(object).await.map_err(failed)?.into_stream();
    while let Some(chunk) = stream.next().await {
        file.write_all(&chunk.map_err(failed)?).await?;
    }
    file.sync_all().await?;
    drop(file);
    let (disk, key) = (tier.disk.clone(), key.clone());
    tokio::task::spawn_blocking(move || {
        disk.keep_hashed(staged, &key.provider, &key.version, &key.platform, &h1)
    })
    .await
    .map_err(io::Error::other)?
}
