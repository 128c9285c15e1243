//! Configuration: built-in defaults, then a TOML file, then environment
//! variables `TFMIRROR_<SECTION>__<KEY>`, each layer overriding the one before.
//!
//! Every key is documented here; `config/tfmirror.toml` is the commented
//! example and `docs/configuration.md` the reference. Unknown keys and
//! invalid values are errors that name the key.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use figment::providers::{Env, Format, Serialized, Toml};
use figment::Figment;
use serde::{Deserialize, Serialize};
use url::Url;

use crate::address::{Hostname, Platform};
use crate::verify::{TrustPolicy, TrustRule, Unsigned};

pub mod advisories;
mod auth;
pub mod docs;
mod oidc;
pub mod policy;
pub mod releases;
mod storage;
mod upstream;
pub mod watch;

pub use auth::{AuthConfig, ClaimsParameter, Grant, OidcIssuerConfig, OidcRuleConfig};
pub use storage::{LocalCacheConfig, S3Config, StorageBackend, StorageConfig};
pub use upstream::{HostConfig, UpstreamConfig};

/// The whole configuration.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// `[server]`: how clients reach the mirror.
    pub server: ServerConfig,
    /// `[cache]`: where and how long content is kept.
    pub cache: CacheConfig,
    /// `[upstream]`: which origin registries may be contacted, and how.
    pub upstream: UpstreamConfig,
    /// `[log]`: what the daemon logs and how.
    pub log: LogConfig,
    /// `[auth]`: who may use the mirror.
    pub auth: AuthConfig,
    /// `[modules]`: the module registry proxy.
    pub modules: ModulesConfig,
    /// `[storage]`: where the cache is kept (local disk or a bucket).
    pub storage: StorageConfig,
    /// `[[trust]]`: rules pinning the keys that may sign the providers of a
    /// registry and namespace (see `docs/security.md`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trust: Vec<TrustRule>,
    /// `[policy]` and `[[policy.rule]]`: which provider and module versions
    /// the mirror answers for and moves (see `docs/policy.md`).
    #[serde(default)]
    pub policy: policy::PolicyConfig,
    /// `[watch]`, `[[watch.provider]]` and `[[watch.module]]`: what the
    /// daemon fetches ahead of time, and how often it asks the origins for
    /// new versions (see `docs/air-gap.md`).
    #[serde(default)]
    pub watch: watch::WatchConfig,
    /// `[releases]`, `[releases.terraform]` and `[releases.tofu]`: the
    /// Terraform and OpenTofu CLI releases the mirror serves (see
    /// `docs/releases.md`).
    #[serde(default)]
    pub releases: Box<releases::ReleasesConfig>,
    /// `[advisories]`: where a connected mirror fetches its advisory
    /// database, and how often (see `docs/advisories.md`).
    #[serde(default)]
    pub advisories: advisories::AdvisoriesConfig,
    /// `[docs]`: where the documentation of the provider versions the
    /// mirror keeps is fetched (see `docs/documentation.md`).
    #[serde(default)]
    pub docs: docs::DocsConfig,
}

/// `[modules]`: how module sources are fetched and packaged.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ModulesConfig {
    /// `git`: the git program used to fetch git sources. Default `"git"`
    /// (found on `PATH`).
    pub git: PathBuf,
    /// `fetch_timeout`: how long one step of fetching a source (a git
    /// fetch, an archive download) may take. Default `10m`.
    #[serde(with = "humantime_serde")]
    pub fetch_timeout: Duration,
    /// `max_package_size`: the largest archive source downloaded, and the
    /// largest package kept. Default `256 MiB`.
    pub max_package_size: bytesize::ByteSize,
    /// `max_unpacked_size`: the most file content one source may unpack
    /// to (stops decompression bombs). Default `1 GiB`.
    pub max_unpacked_size: bytesize::ByteSize,
}

/// `[log]`: logging.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `format`: `"pretty"` (human-readable lines, the default) or `"json"`
    /// (one JSON object per line, for log collectors).
    pub format: LogFormat,
    /// `level`: the least severe level logged, or a full filter such as
    /// `"info,tfmirror=debug"`. Default `"info"`. `RUST_LOG`, when set, wins.
    pub level: String,
    /// `audit_file`: a file the daemon appends the audit trail to, one
    /// JSON object per served archive or module package (target
    /// `tfmirror::audit`), whatever `level` and `format` say. Default:
    /// none (the audit lines go with the rest of the log).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub audit_file: Option<PathBuf>,
}

/// `log.format`.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Pretty,
    /// One JSON object per line.
    Json,
}

/// `[server]`: the listening socket and its TLS identity.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ServerConfig {
    /// `listen`: the address and port to listen on. Default `127.0.0.1:8443`.
    pub listen: SocketAddr,
    /// `tls`: serve HTTPS (default `true`). `false` serves plain HTTP, for use
    /// behind a reverse proxy that terminates TLS; Terraform itself only talks
    /// to `https` mirrors.
    pub tls: bool,
    /// `tls_cert`: PEM file with the certificate chain to present. When this
    /// and `tls_key` are absent, a certificate is generated on first start and
    /// kept in `data_dir`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_cert: Option<PathBuf>,
    /// `tls_key`: PEM file with the private key of `tls_cert`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_key: Option<PathBuf>,
    /// `hostnames`: extra DNS names or IP addresses to put in the generated
    /// certificate, besides `localhost`, `127.0.0.1` and `::1`.
    pub hostnames: Vec<String>,
    /// `data_dir`: where the generated certificate and its local authority are
    /// kept, and the daemon's documentation search index (`docs-index`,
    /// made anew at each start). Default: `$STATE_DIRECTORY` under systemd, else the platform's
    /// data directory (`~/.local/share/tfmirror`).
    pub data_dir: PathBuf,
    /// `shutdown_grace`: on SIGTERM or SIGINT, how long requests and archive
    /// downloads in flight may take to finish before the daemon exits.
    /// Default `30s`. A second signal exits at once.
    #[serde(with = "humantime_serde")]
    pub shutdown_grace: Duration,
    /// `max_connections`: the most client connections served at once.
    /// Further connections wait in the listen queue until one closes.
    /// Default `1024`.
    pub max_connections: usize,
    /// `header_timeout`: how long a new connection may take for its TLS
    /// handshake, and any connection to send a request's headers, before it
    /// is closed (slow clients cannot hold connections open). Default `30s`.
    #[serde(with = "humantime_serde")]
    pub header_timeout: Duration,
    /// `public_url`: the URL clients reach the mirror by, when that is not
    /// this instance's own address (several instances behind a load
    /// balancer). The status page's recipes name it. Default: the scheme
    /// the instance serves and the `Host` the client sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<Url>,
    /// `trusted_proxies`: addresses or networks (`10.0.0.0/8`) of proxies
    /// and load balancers whose `X-Forwarded-For`, `-Proto` and `-Host`
    /// headers are believed: the client address logged, and the URL on the
    /// status page when `public_url` is not set. From anyone else these
    /// headers are ignored. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub trusted_proxies: Vec<ipnet::IpNet>,
}

/// `[cache]`: the on-disk cache.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CacheConfig {
    /// `dir`: the cache directory. Default: `$CACHE_DIRECTORY` under
    /// systemd, else the platform's cache directory (`~/.cache/tfmirror`).
    pub dir: PathBuf,
    /// `index_ttl`: how long a provider's version list is served before it is
    /// asked of the origin again. Default `10m`. When the origin cannot be
    /// reached, the last stored list keeps being served.
    #[serde(with = "humantime_serde")]
    pub index_ttl: Duration,
    /// `negative_ttl`: how long the origin's answer that a provider does not
    /// exist (404) is remembered, sparing the origin repeated lookups.
    /// Default `1m`; `0s` turns it off. Failures are never remembered.
    #[serde(with = "humantime_serde")]
    pub negative_ttl: Duration,
    /// `max_size`: the most the cached archives may take, e.g. `"50GiB"`.
    /// Beyond it the least recently used archives are evicted (never one that
    /// is being sent or downloaded). Default: no limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<bytesize::ByteSize>,
    /// `min_free_space`: the free space kept on the file system of `dir`
    /// (where downloads are staged). An archive that would leave less is
    /// refused before it is downloaded (507), and `/readyz` answers 503
    /// while less is free. Default `"256MiB"`; `"0B"` keeps no reserve.
    pub min_free_space: bytesize::ByteSize,
    /// `reconcile_every`: how often the daemon reconciles its archive
    /// index with the store (walks the cache, or lists the bucket) besides
    /// after each start and on SIGHUP: what no tfmirror process changed
    /// (files removed by hand, a bucket's lifecycle rules) is counted
    /// right within this long. Default `1h`; `0s` turns the schedule off.
    #[serde(with = "humantime_serde")]
    pub reconcile_every: Duration,
    /// `allow_unsigned_imports`: serve providers imported with
    /// `tfmirror import --static` from a `terraform providers mirror`
    /// directory, which carry hashes but no signature. Default `false`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_unsigned_imports: bool,
    /// `prefetch_platforms`: platforms whose archives `tfmirror serve`
    /// fetches and verifies in the background as soon as a version is
    /// first asked for, e.g. `["linux_amd64", "darwin_arm64"]`, so that
    /// their `h1:` hashes are known to every later client and to
    /// `tfmirror lock`. A client asking for one meanwhile shares the same
    /// download. Default: none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub prefetch_platforms: Vec<Platform>,
}

/// The platform's per-user directories, or paths under the working
/// directory when none can be determined.
fn project_dirs() -> Option<directories::ProjectDirs> {
    directories::ProjectDirs::from("", "", "tfmirror")
}

impl Default for Config {
    fn default() -> Self {
        // Under systemd (CacheDirectory=, StateDirectory=) the service's own
        // directories are the defaults; elsewhere the user's.
        let from_env = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        let dirs = project_dirs();
        let cache_dir = from_env("CACHE_DIRECTORY")
            .or_else(|| dirs.as_ref().map(|d| d.cache_dir().to_path_buf()))
            .unwrap_or_else(|| PathBuf::from("tfmirror-cache"));
        let data_dir = from_env("STATE_DIRECTORY")
            .or_else(|| dirs.as_ref().map(|d| d.data_dir().to_path_buf()))
            .unwrap_or_else(|| PathBuf::from("tfmirror-data"));
        Config {
            server: ServerConfig {
                listen: SocketAddr::from(([127, 0, 0, 1], 8443)),
                tls: true,
                tls_cert: None,
                tls_key: None,
                hostnames: Vec::new(),
                data_dir,
                shutdown_grace: Duration::from_secs(30),
                max_connections: 1024,
                header_timeout: Duration::from_secs(30),
                public_url: None,
                trusted_proxies: Vec::new(),
            },
            cache: CacheConfig {
                dir: cache_dir,
                index_ttl: Duration::from_secs(600),
                negative_ttl: Duration::from_secs(60),
                max_size: None,
                min_free_space: bytesize::ByteSize::mib(256),
                reconcile_every: Duration::from_secs(3600),
                allow_unsigned_imports: false,
                prefetch_platforms: Vec::new(),
            },
            upstream: UpstreamConfig {
                allowed_hosts: ["registry.terraform.io", "registry.opentofu.org"]
                    .into_iter()
                    .map(|h| Hostname::parse(h).expect("built-in hostname"))
                    .collect(),
                ca_file: None,
                credentials_file: None,
                max_archive_size: bytesize::ByteSize::gib(1),
                stream_above: bytesize::ByteSize::mib(8),
                max_fetches: 64,
                max_fetches_per_host: 16,
                allow_private_addresses: false,
                offline: false,
                reject_expired_keys: false,
                connect_timeout: Duration::from_secs(10),
                request_timeout: Duration::from_secs(60),
                hosts: BTreeMap::new(),
            },
            log: LogConfig {
                format: LogFormat::Pretty,
                level: "info".into(),
                audit_file: None,
            },
            auth: AuthConfig::default(),
            trust: Vec::new(),
            policy: policy::PolicyConfig::default(),
            watch: watch::WatchConfig::default(),
            releases: Box::default(),
            advisories: advisories::AdvisoriesConfig::default(),
            docs: docs::DocsConfig::default(),
            storage: StorageConfig {
                backend: StorageBackend::Disk,
                s3: None,
            },
            modules: ModulesConfig {
                git: PathBuf::from("git"),
                fetch_timeout: Duration::from_secs(600),
                max_package_size: bytesize::ByteSize::mib(256),
                max_unpacked_size: bytesize::ByteSize::gib(1),
            },
        }
    }
}

impl Config {
    /// Loads the configuration: defaults, then `file` (when given), then the
    /// `TFMIRROR_` environment variables.
    pub fn load(file: Option<&Path>) -> anyhow::Result<Config> {
        let mut figment = Figment::from(Serialized::defaults(Config::default()));
        if let Some(path) = file {
            if !path.is_file() {
                bail!("configuration file {} does not exist", path.display());
            }
            figment = figment.merge(Toml::file_exact(path));
        }
        figment = figment.merge(Env::prefixed("TFMIRROR_").split("__"));
        let config: Config = figment.extract().map_err(|e| {
            let messages: Vec<String> = e.into_iter().map(|e| e.to_string()).collect();
            anyhow::anyhow!("invalid configuration: {}", messages.join("; "))
        })?;
        config.validate()?;
        Ok(config)
    }

    /// Checks the rules that span several keys.
    pub fn validate(&self) -> anyhow::Result<()> {
        match (&self.server.tls_cert, &self.server.tls_key) {
            (Some(_), None) | (None, Some(_)) => {
                bail!("server.tls_cert and server.tls_key must be given together")
            }
            _ => {}
        }
        for name in &self.server.hostnames {
            if name.is_empty() || name.contains(|c: char| c.is_whitespace() || c == '/') {
                bail!("server.hostnames: {name:?} is not a hostname or IP address");
            }
        }
        for (what, d) in [
            ("cache.index_ttl", self.cache.index_ttl),
            ("server.header_timeout", self.server.header_timeout),
            ("upstream.connect_timeout", self.upstream.connect_timeout),
            ("upstream.request_timeout", self.upstream.request_timeout),
            ("auth.url_lifetime", self.auth.url_lifetime),
            ("modules.fetch_timeout", self.modules.fetch_timeout),
            ("docs.backfill_every", self.docs.backfill_every),
        ] {
            if d.is_zero() {
                bail!("{what} must be longer than zero");
            }
        }
        for (what, n) in [
            ("server.max_connections", self.server.max_connections),
            ("upstream.max_fetches", self.upstream.max_fetches),
            (
                "upstream.max_fetches_per_host",
                self.upstream.max_fetches_per_host,
            ),
        ] {
            if n == 0 {
                bail!("{what} must be at least 1");
            }
        }
        if let Some(url) = &self.server.public_url {
            if !matches!(url.scheme(), "https" | "http") || url.host_str().is_none() {
                bail!("server.public_url: {url} must be an https (or http) URL with a host");
            }
        }
        self.validate_storage()?;
        self.auth.validate()?;
        // Compiles the rules (globs, key IDs, key files, keyless opt-ins)
        // to report errors now. What the domains above compile from their
        // sections (policy rules, the watch list, release sources) is
        // checked where the configuration is loaded for a command.
        self.trust_policy()?;
        for (host, hc) in &self.upstream.hosts {
            for (service, url) in &hc.services {
                if !matches!(url.scheme(), "https" | "http") {
                    bail!(
                        "upstream.hosts.\"{host}\".services.\"{service}\": {url} must be an https URL"
                    );
                }
            }
        }
        Ok(())
    }

    /// The signature policy: `[[trust]]`, `upstream.reject_expired_keys`,
    /// and each host's `unsigned` opt-in.
    pub fn trust_policy(&self) -> anyhow::Result<TrustPolicy> {
        let mut trust = TrustPolicy::new(&self.trust, self.upstream.reject_expired_keys)?;
        for (host, hc) in &self.upstream.hosts {
            match hc.unsigned {
                Unsigned::Checked => trust = trust.allow_keyless(host, &hc.unsigned_sources)?,
                Unsigned::Refuse if !hc.unsigned_sources.is_empty() => bail!(
                    "upstream.hosts.\"{host}\".unsigned_sources narrows unsigned = \"checked\", which is not set for this host"
                ),
                Unsigned::Refuse => {}
            }
        }
        Ok(trust)
    }

    fn validate_storage(&self) -> anyhow::Result<()> {
        if self.storage.backend == StorageBackend::S3 && self.cache.max_size.is_some() {
            bail!(
                "cache.max_size bounds the disk cache; with storage.backend = \"s3\" bound the bucket with lifecycle rules and the local tier with storage.s3.local_cache.max_size (docs/several-instances.md)"
            );
        }
        let Some(s3) = &self.storage.s3 else {
            if self.storage.backend == StorageBackend::S3 {
                bail!("storage.backend = \"s3\" needs a [storage.s3] section naming the bucket");
            }
            return Ok(());
        };
        if s3.bucket.is_empty() {
            bail!("storage.s3.bucket must name a bucket");
        }
        if s3.access_key_id.is_some() != s3.secret_access_key_file.is_some() {
            bail!("storage.s3.access_key_id and storage.s3.secret_access_key_file must be given together");
        }
        if s3.lease_time.is_zero() {
            bail!("storage.s3.lease_time must be longer than zero");
        }
        if let Some(endpoint) = &s3.endpoint {
            match endpoint.scheme() {
                "https" => {}
                "http" if s3.allow_http => {}
                "http" => bail!(
                    "storage.s3.endpoint: {endpoint} is plain http; set storage.s3.allow_http = true to allow it"
                ),
                _ => bail!("storage.s3.endpoint: {endpoint} must be an https URL"),
            }
        }
        Ok(())
    }

    /// Renders the effective configuration as TOML, for `check-config`.
    /// Tokens are shown only as their number.
    pub fn to_toml(&self) -> anyhow::Result<String> {
        let mut shown = self.clone();
        shown.auth.tokens = shown
            .auth
            .tokens
            .iter()
            .map(|_| "(hidden)".to_string())
            .collect();
        let hidden = || Some("(hidden)".to_string());
        for host in shown.upstream.hosts.values_mut() {
            if host.token.is_some() {
                host.token = hidden();
            }
        }
        for source in [&mut shown.releases.terraform, &mut shown.releases.tofu] {
            if source.token.is_some() {
                source.token = hidden();
            }
        }
        for target in &mut shown.watch.oci {
            if target.token.is_some() {
                target.token = hidden();
            }
        }
        let value = serde_json::to_value(&shown).context("serializing configuration")?;
        toml::to_string_pretty(&value).context("rendering configuration")
    }
}

#[cfg(test)]
// figment's Jail closures return its own (large) error type.
#[allow(clippy::result_large_err)]
mod tests;
