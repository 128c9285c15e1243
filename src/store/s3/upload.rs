//! Archives and packages into the bucket: created once and whole, in one
//! conditional `PUT` or in parts copied into place conditionally, and the
//! bytes an instance that lost the race finds checked against its own.

use std::path::Path;
use std::sync::atomic::Ordering;

use futures_util::StreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, WriteMultipart};

use super::S3Store;
use crate::store::{h1_of_file, StoreError};
use crate::verify::Sha256;

/// Objects up to this size are created with one `PUT`; larger ones are
/// uploaded in parts.
pub(super) const ONE_PUT: u64 = 16 * 1024 * 1024;
/// The size of one part of a large upload.
pub(super) const PART: usize = 8 * 1024 * 1024;
/// Parts of one upload in flight at once.
pub(super) const PARTS_IN_FLIGHT: usize = 2;

impl S3Store {
    /// Uploads the file at `path` to `key`: created only when absent
    /// (`create`) or replacing what is there. Large files go up in parts
    /// under `tmp/` and are copied into place, so the object appears whole.
    pub(super) async fn upload(
        &self,
        path: &Path,
        key: &Key,
        create: bool,
    ) -> object_store::Result<()> {
        let size = tokio::fs::metadata(path)
            .await
            .map_err(|e| generic(e.to_string()))?
            .len();
        let mode = if create {
            PutMode::Create
        } else {
            PutMode::Overwrite
        };
        if size <= ONE_PUT {
            let bytes = tokio::fs::read(path)
                .await
                .map_err(|e| generic(e.to_string()))?;
            let opts = PutOptions {
                mode,
                ..PutOptions::default()
            };
            return self
                .bucket
                .put_opts(key, PutPayload::from(bytes), opts)
                .await
                .map(drop);
        }
        let n = self.uploads.fetch_add(1, Ordering::Relaxed);
        let part_key = self.key(["tmp", &format!("{}-{n}", self.instance)]);
        let uploaded = self.upload_parts(path, &part_key).await;
        let copied = match uploaded {
            Ok(()) if create => self.bucket.copy_if_not_exists(&part_key, key).await,
            Ok(()) => self.bucket.copy(&part_key, key).await,
            Err(e) => Err(e),
        };
        // Best effort: a bucket lifecycle rule on tmp/ removes what a crash
        // leaves (`docs/several-instances.md`).
        let _ = self.bucket.delete(&part_key).await;
        copied
    }

    pub(super) async fn upload_parts(&self, path: &Path, key: &Key) -> object_store::Result<()> {
        use tokio::io::AsyncReadExt;
        let mut file = tokio::fs::File::open(path)
            .await
            .map_err(|e| generic(e.to_string()))?;
        let mut upload =
            WriteMultipart::new_with_chunk_size(self.bucket.put_multipart(key).await?, PART);
        let mut buf = vec![0u8; PART];
        loop {
            let n = match file.read(&mut buf).await {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) => {
                    let _ = upload.abort().await;
                    return Err(generic(e.to_string()));
                }
            };
            upload.wait_for_capacity(PARTS_IN_FLIGHT).await?;
            upload.write(&buf[..n]);
        }
        upload.finish().await.map(drop)
    }

    /// The SHA-256 of an object's bytes, read from the bucket.
    pub(super) async fn sha256_of(&self, key: &Key) -> Result<String, StoreError> {
        let got = self.bucket.get(key).await.map_err(|e| self.failed(&e))?;
        let mut stream = got.into_stream();
        let mut hasher = Sha256::new();
        while let Some(chunk) = stream.next().await {
            hasher.update(&chunk.map_err(|e| self.failed(&e))?);
        }
        Ok(hex::encode(hasher.finalize()))
    }

    /// Creates `key` from the checked file at `path` whose SHA-256 is
    /// `sha256`. When another instance created it first, its bytes are
    /// checked against `sha256` and kept when they match; bytes that do not
    /// match are replaced with these.
    pub(super) async fn create_checked(
        &self,
        path: &Path,
        key: &Key,
        sha256: &str,
    ) -> Result<bool, StoreError> {
        match self.upload(path, key, true).await {
            Ok(()) => Ok(true),
            Err(object_store::Error::AlreadyExists { .. }) => {
                let theirs = self.sha256_of(key).await?;
                if theirs == sha256 {
                    return Ok(false);
                }
                tracing::error!(object = %key, expected = sha256, found = %theirs, bucket = %self.name, "an object in the bucket does not match its verified checksum; replacing it");
                self.upload(path, key, false)
                    .await
                    .map_err(|e| self.failed(&e))?;
                Ok(true)
            }
            Err(e) => Err(self.failed(&e)),
        }
    }
}

/// An `object_store` error for a local failure during an upload.
pub(super) fn generic(reason: String) -> object_store::Error {
    object_store::Error::Generic {
        store: "tfmirror",
        source: reason.into(),
    }
}

/// The file's `h1:` hash and SHA-256.
pub(super) fn hash_file(path: &Path) -> Result<(String, String), StoreError> {
    let h1 = h1_of_file(path)?;
    Ok((h1, crate::verify::sha256_of_file(path)?))
}
