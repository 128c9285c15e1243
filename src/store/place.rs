//! Where a process writes the small documents that announce its changes
//! (the journal's entries, the change note): the store's root, on disk or
//! in a bucket, reached without the store itself, whose writes would be
//! noted in turn.

use std::path::PathBuf;

use async_trait::async_trait;

use super::{atomic, StoreError};

/// Where a journal and the change note are written: the store's root.
#[async_trait]
pub trait Place: Send + Sync {
    /// Writes a small document at `path` below the store's root, whole.
    async fn put(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError>;
}

/// A place on disk: the cache directory, staging in its `tmp/`.
pub struct DiskPlace {
    /// The cache directory.
    pub root: PathBuf,
    /// Where files are staged.
    pub tmp: PathBuf,
}

#[async_trait]
impl Place for DiskPlace {
    async fn put(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError> {
        let file: PathBuf = path.iter().fold(self.root.clone(), |p, s| p.join(s));
        let tmp = self.tmp.clone();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(atomic::dir_of(&file))?;
            atomic::write(&tmp, &file, &bytes)
        })
        .await
        .map_err(std::io::Error::other)??;
        Ok(())
    }
}
