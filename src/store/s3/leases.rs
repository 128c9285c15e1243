//! Download leases: an instance claims an archive's download with a lease
//! object created conditionally and renewed while the download runs, so
//! that instances sharing the bucket fetch it once between them; a lease
//! whose holder died lapses and is taken over.

use std::io;
use std::time::Duration;

use object_store::path::Path as Key;
use object_store::{
    GetOptions, ObjectStore, ObjectStoreExt, PutMode, PutOptions, PutPayload, UpdateVersion,
};

use super::S3Store;
use crate::address::ArchiveKey;
use crate::store::{Claim, StoreError};

/// A claim to download an archive, as kept in its lease object.
#[derive(serde::Serialize, serde::Deserialize)]
struct Lease {
    /// The instance holding it.
    holder: String,
    /// Until when, in milliseconds since the Unix epoch.
    expires_at_ms: u64,
}

impl S3Store {
    /// Claims the download of `key` with a lease object created
    /// conditionally, or takes over a lease that lapsed.
    pub(super) async fn claim_lease(&self, key: &ArchiveKey) -> Result<Claim, StoreError> {
        let lease_key = self.lease_key(key);
        let lease = Lease {
            holder: self.instance.clone(),
            expires_at_ms: now_ms() + millis(self.lease_time),
        };
        let body = serde_json::to_vec(&lease).map_err(io::Error::other)?;
        let create = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        match self
            .bucket
            .put_opts(&lease_key, PutPayload::from(body.clone()), create)
            .await
        {
            Ok(_) => {
                self.renew_in_background(key, lease_key);
                return Ok(Claim::Granted);
            }
            Err(object_store::Error::AlreadyExists { .. }) => {}
            Err(e) => return Err(self.failed(&e)),
        }
        // Held by someone: take it over only when it has lapsed, and only
        // if nobody else took it over first.
        let got = match self
            .bucket
            .get_opts(&lease_key, GetOptions::default())
            .await
        {
            Ok(got) => got,
            // Released in between: ask again later.
            Err(object_store::Error::NotFound { .. }) => return Ok(Claim::Busy),
            Err(e) => return Err(self.failed(&e)),
        };
        let version = UpdateVersion {
            e_tag: got.meta.e_tag.clone(),
            version: got.meta.version.clone(),
        };
        let held: Option<Lease> = got
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok());
        if held.is_some_and(|l| l.expires_at_ms > now_ms()) {
            return Ok(Claim::Busy);
        }
        let update = PutOptions {
            mode: PutMode::Update(version),
            ..PutOptions::default()
        };
        match self
            .bucket
            .put_opts(&lease_key, PutPayload::from(body), update)
            .await
        {
            Ok(_) => {
                tracing::info!(archive = %key, "took over a lapsed download lease");
                self.renew_in_background(key, lease_key);
                Ok(Claim::Granted)
            }
            Err(
                object_store::Error::Precondition { .. } | object_store::Error::NotFound { .. },
            ) => Ok(Claim::Busy),
            Err(e) => Err(self.failed(&e)),
        }
    }

    /// Stops renewing the lease on `key` and removes it.
    pub(super) async fn release_lease(&self, key: &ArchiveKey) {
        let task = self
            .renewing
            .lock()
            .expect("lease renewals lock")
            .remove(key);
        if let Some(task) = task {
            task.abort();
            if let Err(e) = self.delete(&self.lease_key(key)).await {
                tracing::warn!(archive = %key, error = %e, "could not release a download lease; it lapses by itself");
            }
        }
    }

    /// Keeps renewing the lease on `key` until released.
    pub(super) fn renew_in_background(&self, key: &ArchiveKey, lease_key: Key) {
        let (bucket, holder, every) = (
            self.bucket.clone(),
            self.instance.clone(),
            self.lease_time / 3,
        );
        let lease_time = self.lease_time;
        let task = tokio::spawn(async move {
            loop {
                // A period, not an ordering: the lease must be rewritten
                // well before it lapses (a third of its life), for as long
                // as the download runs.
                tokio::time::sleep(every).await;
                let lease = Lease {
                    holder: holder.clone(),
                    expires_at_ms: now_ms() + millis(lease_time),
                };
                let body = serde_json::to_vec(&lease).expect("a lease serializes");
                if let Err(e) = bucket.put(&lease_key, PutPayload::from(body)).await {
                    tracing::warn!(lease = %lease_key, error = %e, "could not renew a download lease");
                }
            }
        });
        if let Some(old) = self
            .renewing
            .lock()
            .expect("lease renewals lock")
            .insert(key.clone(), task)
        {
            old.abort();
        }
    }
}

pub(super) fn now_ms() -> u64 {
    u64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_millis(),
    )
    .unwrap_or(u64::MAX)
}

pub(super) fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// A name for this process that no other instance shares.
pub(super) fn instance_id() -> String {
    let mut bytes = [0u8; 8];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut bytes)
        .expect("the system's random source works");
    format!("{}-{}", std::process::id(), hex::encode(bytes))
}
