//! Records (version lists, version records, module pins) in the bucket:
//! one `PUT` each, with a copy in the local tier that is read when the
//! bucket cannot be.

use std::io;
use std::path::PathBuf;

use object_store::path::Path as Key;
use object_store::{ObjectStoreExt, PutPayload};

use super::S3Store;
use crate::store::{DiskStore, StoreError};

impl S3Store {
    pub(super) async fn read_json<T: serde::de::DeserializeOwned>(
        &self,
        key: &Key,
        what: &'static str,
    ) -> Result<Option<T>, StoreError> {
        let Some(bytes) = self.read_bytes(key).await? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| StoreError::Corrupt {
                what,
                reason: e.to_string(),
            })
    }

    /// Reads a record from the bucket; when the bucket cannot be reached,
    /// from the local tier's copy, if there is one.
    pub(super) async fn read_record<T: serde::de::DeserializeOwned>(
        &self,
        key: &Key,
        local: impl FnOnce(&DiskStore) -> PathBuf,
        what: &'static str,
    ) -> Result<Option<T>, StoreError> {
        match self.read_json(key, what).await {
            Err(StoreError::Unavailable(e)) => {
                let Some(tier) = &self.tier else {
                    return Err(StoreError::Unavailable(e));
                };
                match tier.disk.read_json(&local(&tier.disk)) {
                    Ok(Some(copy)) => Ok(Some(copy)),
                    _ => Err(StoreError::Unavailable(e)),
                }
            }
            other => other,
        }
    }

    /// Writes a record to the bucket, and a copy to the local tier.
    pub(super) async fn write_record<T: serde::Serialize>(
        &self,
        key: &Key,
        local: impl FnOnce(&DiskStore) -> PathBuf,
        value: &T,
    ) -> Result<(), StoreError> {
        self.write_json(key, value).await?;
        if let Some(tier) = &self.tier {
            tier.keep_record(local(&tier.disk), value).await;
        }
        Ok(())
    }

    pub(super) async fn write_json<T: serde::Serialize>(
        &self,
        key: &Key,
        value: &T,
    ) -> Result<(), StoreError> {
        let bytes = serde_json::to_vec_pretty(value).map_err(io::Error::other)?;
        self.bucket
            .put(key, PutPayload::from(bytes))
            .await
            .map_err(|e| self.failed(&e))?;
        Ok(())
    }
}
