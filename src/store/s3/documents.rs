//! The bucket's small records addressed by path (keyless pins, the change
//! note, the journal's entries), what it says of one item, and the
//! journal's place in it.

use std::sync::Arc;

use async_trait::async_trait;
use futures_util::TryStreamExt;
use object_store::aws::AmazonS3;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};

use super::S3Store;
use crate::store::journal::{Journal, Place};
use crate::store::{HeldItem, Item, KeptDocument, StoreError};

/// The bucket's prefix, where a journal writes.
pub struct BucketPlace {
    bucket: Arc<AmazonS3>,
    prefix: Key,
    name: String,
}

#[async_trait]
impl Place for BucketPlace {
    async fn put(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError> {
        let key = path
            .iter()
            .fold(self.prefix.clone(), |key, part| key.join(*part));
        self.bucket
            .put(&key, PutPayload::from(bytes))
            .await
            .map_err(|e| failed(&self.name, &e))?;
        Ok(())
    }
}

fn failed(name: &str, e: &object_store::Error) -> StoreError {
    StoreError::Unavailable(std::io::Error::other(format!("bucket {name}: {e}")))
}

impl S3Store {
    /// Its prefix, as a journal writes there.
    pub fn place(&self) -> Box<dyn Place> {
        Box::new(BucketPlace {
            bucket: self.bucket.clone(),
            prefix: self.prefix.clone(),
            name: self.name.clone(),
        })
    }

    /// The same store, noting its changes in `journal`.
    #[must_use]
    pub fn with_journal(mut self, journal: Arc<Journal>) -> S3Store {
        self.journal = Some(journal);
        self
    }

    /// The record at `path` below the prefix.
    pub(super) async fn document(&self, path: &[&str]) -> Result<Option<Vec<u8>>, StoreError> {
        let bytes = self.read_bytes(&self.key(path.iter().copied())).await?;
        Ok(bytes.map(|b| b.to_vec()))
    }

    /// Keeps a record at `path` below the prefix.
    pub(super) async fn put_document(
        &self,
        path: &[&str],
        bytes: Vec<u8>,
    ) -> Result<(), StoreError> {
        self.bucket
            .put(&self.key(path.iter().copied()), PutPayload::from(bytes))
            .await
            .map_err(|e| self.failed(&e))?;
        Ok(())
    }

    /// The paths of the records below `top`.
    pub(super) async fn documents(&self, top: &str) -> Result<Vec<Vec<String>>, StoreError> {
        let skip = self.key([top]).parts().count() - 1;
        Ok(self
            .list_below(top)
            .await?
            .iter()
            .map(|o| {
                o.location
                    .parts()
                    .skip(skip)
                    .map(|p| p.as_ref().to_owned())
                    .collect()
            })
            .collect())
    }

    /// The names of the records in `dir` that sort after `after`, in
    /// order: the bucket lists from `after` on (`start-after`), so an
    /// old, long folder costs nothing to a reader of its end.
    pub(super) async fn documents_after(
        &self,
        dir: &[&str],
        after: &str,
    ) -> Result<Vec<String>, StoreError> {
        let folder = self.key(dir.iter().copied());
        let offset = folder.clone().join(after);
        let listed: Vec<_> = if after.is_empty() {
            self.bucket.list(Some(&folder)).try_collect().await
        } else {
            (self.bucket.list_with_offset(Some(&folder), &offset))
                .try_collect()
                .await
        }
        .map_err(|e| self.failed(&e))?;
        let depth = folder.parts().count() + 1;
        let mut names: Vec<String> = listed
            .iter()
            .filter(|o| o.location.parts().count() == depth)
            .filter_map(|o| o.location.filename().map(str::to_owned))
            .filter(|name| name.as_str() > after)
            .collect();
        names.sort();
        Ok(names)
    }

    /// The records below `dir`, with their sizes and when the bucket last
    /// had them written.
    pub(super) async fn documents_aged(
        &self,
        dir: &[&str],
    ) -> Result<Vec<KeptDocument>, StoreError> {
        let folder = self.key(dir.iter().copied());
        let listed: Vec<_> =
            (self.bucket.list(Some(&folder)).try_collect().await).map_err(|e| self.failed(&e))?;
        let skip = folder.parts().count();
        Ok(listed
            .into_iter()
            .map(|o| KeptDocument {
                path: (o.location.parts().skip(skip))
                    .map(|p| p.as_ref().to_owned())
                    .collect(),
                size: o.size,
                written: o.last_modified.into(),
            })
            .collect())
    }

    /// Removes the record at `path`.
    pub(super) async fn remove_document_at(&self, path: &[&str]) -> Result<(), StoreError> {
        self.delete(&self.key(path.iter().copied())).await
    }

    /// Whether the bucket (not the local tier) holds `item`: an archive
    /// with its `.h1` object, as a listing counts it. Its last use is when
    /// it was written: the bucket's objects are not rewritten on use.
    pub(super) async fn held_item(&self, item: &Item) -> Result<Option<HeldItem>, StoreError> {
        let object = match item {
            Item::Archive(key) => {
                if self.head(&self.h1_key(key)).await?.is_none() {
                    return Ok(None);
                }
                self.archive_key(key)
            }
            Item::Module(module, version) => {
                self.module_key(module, &[version.as_str(), "package.tar.gz"])
            }
            Item::Release(file) => self.release_file_key(file),
        };
        Ok(self.head(&object).await?.map(|meta| HeldItem {
            size: meta.size,
            last_used: u64::try_from(meta.last_modified.timestamp()).unwrap_or(0),
        }))
    }

    async fn head(&self, key: &Key) -> Result<Option<object_store::ObjectMeta>, StoreError> {
        match self.bucket.head(key).await {
            Ok(meta) => Ok(Some(meta)),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(self.failed(&e)),
        }
    }
}
