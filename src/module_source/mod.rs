//! Module sources: reading the download locations registries give
//! ([`source`]), fetching git sources with the `git` CLI ([`git`]) and
//! archives over HTTP(S), turning what was fetched into the
//! deterministic package the mirror serves ([`tree`]), reading a
//! configuration as Terraform or OpenTofu reads it, on disk or inside a
//! package ([`configuration`]), and finding what a packaged module asks of
//! the registries in turn ([`calls`]).
//!
//! [`Fetcher::fetch`] does it all for one source, in a scratch directory
//! under the store's `tmp/`, and hands back the staged package with its
//! tree hash and, for git, the commit; the mirror decides whether to keep
//! it (see `mirror::modules`).

pub mod calls;
pub mod configuration;
pub mod git;
pub mod oci_zip;
pub mod source;
pub mod tree;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use tempfile::{NamedTempFile, TempPath};

use crate::address::Hostname;
use crate::config::Config;
use crate::metrics::Metrics;
use crate::upstream::download::{Download, DownloadError};
use crate::upstream::guard::GuardedConnector;
use crate::upstream::{Client, Credentials, UpstreamError};
use git::{Fetch, Git, GitError};
use source::Source;
use tree::{Packed, TreeError};

/// Why a source could not be fetched and packaged.
#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    /// The source's host could not be asked (HTTP).
    #[error("{0}")]
    Upstream(#[from] UpstreamError),
    /// Downloading an archive failed.
    #[error("{0}")]
    Download(#[from] DownloadError),
    /// git failed.
    #[error("{0}")]
    Git(#[from] GitError),
    /// The fetched tree was refused or could not be packed.
    #[error("{0}")]
    Tree(#[from] TreeError),
    /// The request-forgery guard refused the source's address.
    #[error("{0}")]
    Refused(String),
    /// The package is larger than `modules.max_package_size`.
    #[error(
        "the packaged module is larger than modules.max_package_size ({0}); nothing was stored"
    )]
    TooLarge(String),
    /// Local scratch space could not be used.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The cache's file system is below `cache.min_free_space`, before the
    /// fetch or with the package staged.
    #[error(
        "the cache's file system is low on space ({}); nothing was stored",
        .0.describe()
    )]
    NoRoom(crate::store::space::NoRoom),
}

/// A source fetched and packaged, not yet kept.
pub struct Packaged {
    /// The package, staged in the store's `tmp/`.
    pub staged: TempPath,
    /// Its hashes and size.
    pub packed: Packed,
    /// For git, the commit fetched.
    pub commit: Option<String>,
}

/// Fetches sources and packages them.
pub struct Fetcher {
    client: Client,
    git: Git,
    guard: GuardedConnector,
    credentials: Credentials,
    metrics: Arc<Metrics>,
    max_package: u64,
    max_unpacked: u64,
    timeout: Duration,
    /// `cache.min_free_space`, kept before a fetch, as an archive
    /// downloads, and with the package staged.
    room: crate::store::space::Room,
}

impl Fetcher {
    /// A fetcher with the `[modules]` and `[upstream]` settings, sending
    /// requests through `client`.
    pub fn new(
        config: &Config,
        client: Client,
        credentials: Credentials,
        metrics: Arc<Metrics>,
    ) -> Fetcher {
        Fetcher {
            client,
            git: Git {
                program: config.modules.git.clone(),
                ca_file: config.upstream.ca_file.clone(),
                timeout: config.modules.fetch_timeout,
            },
            guard: GuardedConnector::new(&config.upstream),
            credentials,
            metrics,
            max_package: config.modules.max_package_size.as_u64(),
            max_unpacked: config.modules.max_unpacked_size.as_u64(),
            timeout: config.modules.fetch_timeout,
            room: crate::store::space::Room::of(config),
        }
    }

    /// Fetches `source` and packages its tree into `staging`, working in a
    /// scratch directory under `scratch`.
    pub async fn fetch(
        &self,
        source: &Source,
        scratch: &Path,
        staging: NamedTempFile,
    ) -> Result<Packaged, FetchError> {
        self.room.fits(0).map_err(FetchError::NoRoom)?;
        let work = tempfile::tempdir_in(scratch)?;
        let tree = work.path().join("tree");
        tokio::fs::create_dir(&tree).await?;
        let url = source.url();
        let token = url
            .host_str()
            .and_then(|h| {
                let authority = match url.port() {
                    Some(p) => format!("{h}:{p}"),
                    None => h.to_owned(),
                };
                Hostname::parse(&authority).ok()
            })
            .and_then(|h| self.credentials.token(&h).map(str::to_owned));
        let commit = match source {
            Source::Git {
                url,
                reference,
                depth,
            } => {
                let _slots = self.client.slots(url).await?;
                let host = url.host_str().unwrap_or("");
                let port = url.port_or_known_default().unwrap_or(443);
                let pinned = self
                    .guard
                    .pinned_address(host, port)
                    .await
                    .map_err(|e| FetchError::Refused(e.to_string()))?;
                let fetch = Fetch {
                    url,
                    reference: reference.as_deref(),
                    depth: *depth,
                    pinned,
                    token: token.as_deref(),
                    plain_http: self.client.allows_plain_http(url),
                };
                Some(self.git.fetch(&fetch, &tree).await?)
            }
            Source::Archive { url, format } => {
                let mut file = tokio::fs::File::from_std(tempfile::tempfile_in(work.path())?);
                let download = tokio::time::timeout(
                    self.timeout,
                    Download::start(&self.client, url, token.as_deref(), self.max_package),
                )
                .await
                .map_err(|_| DownloadError::Stalled(self.timeout.as_secs()))??
                .keeping(self.room.clone())?;
                download
                    .write_to(&mut file, &self.metrics, false, |_| {})
                    .await?;
                let mut file = file.into_std().await;
                let (format, tree, cap) = (*format, tree.clone(), self.max_unpacked);
                tokio::task::spawn_blocking(move || {
                    use std::io::Seek;
                    file.rewind()?;
                    tree::unpack(file, format, &tree, cap)
                })
                .await
                .map_err(std::io::Error::other)??;
                None
            }
        };
        let (tree, max, max_content) = (tree.clone(), self.max_package, self.max_unpacked);
        let (staged, packed) = tokio::task::spawn_blocking(move || {
            let mut staging = staging;
            let packed = tree::pack(&tree, staging.as_file_mut(), max_content)?;
            staging.as_file().sync_all()?;
            Ok::<_, TreeError>((staging.into_temp_path(), packed))
        })
        .await
        .map_err(std::io::Error::other)??;
        if packed.size > max {
            return Err(FetchError::TooLarge(
                bytesize::ByteSize(max).display().iec().to_string(),
            ));
        }
        drop(work);
        // The package is on the cache's file system now: kept only if the
        // reserve still is.
        self.room.fits(0).map_err(FetchError::NoRoom)?;
        Ok(Packaged {
            staged,
            packed,
            commit,
        })
    }
}
