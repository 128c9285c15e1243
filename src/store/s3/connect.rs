//! Opening a bucket: the `object_store` client built from `[storage.s3]`
//! (endpoint, addressing style, credentials, conditional writes, retries)
//! and the local directories beside it, with nothing asked of the bucket
//! yet; and the probe that proves it can be used.

use std::collections::HashMap;
use std::io;
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use object_store::aws::{AmazonS3Builder, S3ConditionalPut, S3CopyIfNotExists};
use object_store::path::Path as Key;
use object_store::{ClientOptions, ObjectStore, PutMode, PutOptions, PutPayload, RetryConfig};

use super::leases::instance_id;
use super::tier::Tier;
use super::S3Store;
use crate::config::S3Config;
use crate::store::{DiskStore, StoreError};

impl S3Store {
    /// Opens the bucket `config` names; downloads are staged under
    /// `local_dir/tmp`. Nothing is asked of the bucket yet.
    pub fn open(config: &S3Config, local_dir: &Path) -> Result<S3Store, StoreError> {
        // The HTTP client object_store uses runs on rustls with the provider
        // installed for the process: the same ring provider as everywhere
        // else in tfmirror. Installing it again is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut builder = AmazonS3Builder::from_env()
            // First: the client options carry allow_http, set below.
            .with_client_options(
                ClientOptions::new()
                    .with_connect_timeout(Duration::from_secs(5))
                    .with_timeout(Duration::from_secs(300)),
            )
            .with_bucket_name(&config.bucket)
            .with_region(&config.region)
            .with_allow_http(config.allow_http)
            .with_virtual_hosted_style_request(!config.path_style())
            .with_conditional_put(S3ConditionalPut::ETagMatch)
            .with_copy_if_not_exists(S3CopyIfNotExists::Multipart)
            // A bucket that does not answer is reported within seconds (and
            // `/readyz` says so) rather than retried for minutes.
            .with_retry(RetryConfig {
                max_retries: 2,
                retry_timeout: Duration::from_secs(10),
                ..RetryConfig::default()
            });
        if let (Some(id), Some(file)) = (&config.access_key_id, &config.secret_access_key_file) {
            let secret = std::fs::read_to_string(file).map_err(|e| {
                StoreError::Unavailable(io::Error::new(
                    e.kind(),
                    format!("storage.s3.secret_access_key_file {}: {e}", file.display()),
                ))
            })?;
            builder = builder
                .with_access_key_id(id)
                .with_secret_access_key(secret.trim());
        }
        if let Some(endpoint) = &config.endpoint {
            builder = builder.with_endpoint(endpoint.as_str().trim_end_matches('/'));
        }
        let bucket = builder
            .build()
            .map_err(|e| StoreError::Unavailable(io::Error::other(format!("storage.s3: {e}"))))?;
        let tmp = local_dir.join("tmp");
        std::fs::create_dir_all(&tmp)?;
        let prefix = Key::from(config.prefix.trim_matches('/'));
        let name = if config.prefix.is_empty() {
            format!("s3://{}", config.bucket)
        } else {
            format!("s3://{}/{}", config.bucket, prefix)
        };
        let tier = match &config.local_cache {
            Some(local) => Some(Arc::new(Tier {
                disk: DiskStore::open(local_dir)?,
                max_bytes: local.max_size.as_u64(),
                filling: Mutex::default(),
            })),
            None => None,
        };
        Ok(S3Store {
            tier,
            bucket: Arc::new(bucket),
            name,
            addressing: config.addressing(),
            prefix,
            tmp,
            instance: instance_id(),
            lease_time: config.lease_time,
            renewing: Mutex::new(HashMap::new()),
            uploads: AtomicU64::new(0),
            journal: None,
        })
    }
}

impl S3Store {
    /// A conditional write (as archives are created), a read of what was
    /// written, and its removal, under `probe/`.
    pub(super) async fn probe_bucket(&self, bytes: usize) -> Result<(), StoreError> {
        let key = self.key(["probe", &self.instance]);
        let create = PutOptions {
            mode: PutMode::Create,
            ..PutOptions::default()
        };
        let payload = || PutPayload::from(vec![0u8; bytes]);
        match self.bucket.put_opts(&key, payload(), create.clone()).await {
            Ok(_) => {}
            // Left by a probe this instance did not finish.
            Err(object_store::Error::AlreadyExists { .. }) => {
                self.delete(&key).await?;
                self.bucket
                    .put_opts(&key, payload(), create)
                    .await
                    .map_err(|e| self.failed(&e))?;
            }
            Err(e) => return Err(self.failed(&e)),
        }
        let read = self.read_bytes(&key).await?.map(|b| b.len());
        if read != Some(bytes) {
            return Err(StoreError::Unavailable(io::Error::other(format!(
                "bucket {}: the probe object just written reads back as {read:?} bytes, not {bytes}",
                self.name
            ))));
        }
        self.delete(&key).await
    }
}
