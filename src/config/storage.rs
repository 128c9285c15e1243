//! `[storage]`: where the cache keeps what it holds, the local disk or an
//! S3-compatible bucket shared by several instances, and how the bucket is
//! reached.

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

/// `[storage]`: where the cache keeps what it holds.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// `backend`: `"disk"` (the default: everything under `cache.dir`) or
    /// `"s3"` (an S3-compatible bucket, `[storage.s3]`, that several
    /// instances may share; `cache.dir` then holds only files being
    /// downloaded).
    pub backend: StorageBackend,
    /// `[storage.s3]`: the bucket, for `backend = "s3"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub s3: Option<S3Config>,
}

/// `storage.backend`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// Local disk under `cache.dir`.
    Disk,
    /// An S3-compatible bucket.
    S3,
}

/// `[storage.s3]`: an S3-compatible bucket. Secrets are never part of the
/// configuration: credentials come from the environment the way AWS tools
/// read them (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
/// `AWS_SESSION_TOKEN`, `AWS_WEB_IDENTITY_TOKEN_FILE`, or the instance's or
/// container's role), or from `access_key_id` with `secret_access_key_file`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct S3Config {
    /// `bucket`: the bucket's name. Required.
    pub bucket: String,
    /// `prefix`: a key prefix under which everything is kept, so that one
    /// bucket can hold several mirrors' caches. Default: none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
    /// `endpoint`: the S3 API's URL, for S3-compatible servers (SeaweedFS,
    /// `MinIO`, Ceph). Default: Amazon S3 of `region`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Url>,
    /// `region`: the bucket's region. Default `"us-east-1"`.
    #[serde(default = "default_region")]
    pub region: String,
    /// `allow_http`: allows an `http://` endpoint. Default `false`.
    #[serde(default)]
    pub allow_http: bool,
    /// `path_style`: addresses the bucket as `endpoint/bucket/key` rather
    /// than virtual-hosted style, `bucket.endpoint/key`. Default: `true`
    /// when `endpoint` is set (what S3-compatible servers expect: with
    /// `false` the endpoint itself must name the bucket), `false` for
    /// Amazon S3 without `endpoint`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_style: Option<bool>,
    /// `access_key_id`: the access key, when not taken from the
    /// environment; needs `secret_access_key_file`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_key_id: Option<String>,
    /// `secret_access_key_file`: a file holding the secret access key for
    /// `access_key_id` (for example a systemd credential).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_access_key_file: Option<PathBuf>,
    /// `redirect`: answer archive requests with `307 Temporary Redirect` to
    /// a presigned URL of the bucket's object (valid for
    /// `auth.url_lifetime`) instead of streaming it through the instance.
    /// Only for sites whose clients can reach the bucket. Default `false`.
    #[serde(default)]
    pub redirect: bool,
    /// `[storage.s3.local_cache]`: a read-through tier on this instance's
    /// disk (under `cache.dir`): archives it stored or served are kept there
    /// too and served from there, and records are kept beside them. With the
    /// bucket unreachable, what the tier holds is still served. Default: off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local_cache: Option<LocalCacheConfig>,
    /// `lease_time`: how long an instance's claim to download an archive
    /// lasts without renewal. Instances sharing the bucket wait for the
    /// claim's holder rather than download the same archive again; the
    /// holder renews the claim while it downloads, and a claim left by an
    /// instance that died lapses after this long. Default `30s`.
    #[serde(default = "default_lease_time", with = "humantime_serde")]
    pub lease_time: Duration,
}

/// `[storage.s3.local_cache]`: the local read-through tier.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LocalCacheConfig {
    /// `max_size`: the most archive bytes the tier keeps; the least
    /// recently used go first. Required.
    pub max_size: bytesize::ByteSize,
}

impl S3Config {
    /// Whether requests address the bucket in the path: `path_style`, or
    /// its default (path-style exactly when `endpoint` is set).
    pub fn path_style(&self) -> bool {
        self.path_style.unwrap_or(self.endpoint.is_some())
    }

    /// Where and how the bucket is reached, for messages: the endpoint (or
    /// Amazon S3 and the region) and the addressing style.
    pub fn addressing(&self) -> String {
        let place = match &self.endpoint {
            Some(endpoint) => format!("endpoint {endpoint}"),
            None => format!("Amazon S3 in {}", self.region),
        };
        if self.path_style() {
            format!(
                "{place}, path-style addressing (<endpoint>/{}/<key>)",
                self.bucket
            )
        } else if self.endpoint.is_some() {
            format!(
                "{place}, virtual-hosted-style addressing (requests go to the endpoint as it is, so it must name the bucket; S3-compatible servers want path_style = true, the default with an endpoint)"
            )
        } else {
            format!(
                "{place}, virtual-hosted-style addressing ({}.<endpoint>/<key>)",
                self.bucket
            )
        }
    }
}

fn default_region() -> String {
    "us-east-1".into()
}

fn default_lease_time() -> Duration {
    Duration::from_secs(30)
}
