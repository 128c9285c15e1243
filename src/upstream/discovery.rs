//! Remote service discovery: maps a registry hostname to the base URL of its
//! `providers.v1` or `modules.v1` service, from
//! `https://<hostname>/.well-known/terraform.json` or from
//! `[upstream.hosts."<hostname>"] services`, and remembers the document for
//! `cache.index_ttl`.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use url::Url;

use super::client::{Client, UpstreamError};
use super::credentials::Credentials;
use crate::address::Hostname;
use crate::config::HostConfig;

/// The service identifier of the provider registry protocol.
pub const PROVIDERS_V1: &str = "providers.v1";

/// The service identifier of the module registry protocol.
pub const MODULES_V1: &str = "modules.v1";

/// A host's discovery document and the URL it was read from (relative
/// service URLs resolve against it).
struct Found {
    services: serde_json::Map<String, serde_json::Value>,
    url: Url,
}

/// Finds and remembers the service base URLs of registry hosts.
pub struct Discovery {
    client: Client,
    credentials: Credentials,
    overrides: BTreeMap<Hostname, HostConfig>,
    found: moka::future::Cache<Hostname, Arc<Found>>,
}

impl Discovery {
    /// A discovery service that asks hosts through `client`, except those
    /// whose services are configured in `overrides`.
    pub fn new(
        client: Client,
        credentials: Credentials,
        overrides: BTreeMap<Hostname, HostConfig>,
        ttl: Duration,
    ) -> Self {
        Discovery {
            client,
            credentials,
            overrides,
            found: moka::future::Cache::builder()
                .max_capacity(10_000)
                .time_to_live(ttl)
                .build(),
        }
    }

    /// The base URL of `host`'s provider registry API.
    pub async fn providers_base(&self, host: &Hostname) -> Result<Arc<Url>, UpstreamError> {
        self.service_base(host, PROVIDERS_V1).await
    }

    /// The base URL of `host`'s module registry API.
    pub async fn modules_base(&self, host: &Hostname) -> Result<Arc<Url>, UpstreamError> {
        self.service_base(host, MODULES_V1).await
    }

    /// The base URL of `service` at `host`, from the configuration or the
    /// host's discovery document. Concurrent lookups of one host share one
    /// request.
    async fn service_base(
        &self,
        host: &Hostname,
        service: &str,
    ) -> Result<Arc<Url>, UpstreamError> {
        if let Some(url) = self
            .overrides
            .get(host)
            .and_then(|h| h.services.get(service))
        {
            return Ok(Arc::new(with_trailing_slash(url.clone())));
        }
        let found = self
            .found
            .try_get_with(host.clone(), async {
                self.discover(host).await.map(Arc::new)
            })
            .await
            .map_err(|e: Arc<UpstreamError>| (*e).clone())?;
        let invalid = |reason: String| UpstreamError::Invalid {
            url: found.url.to_string(),
            reason,
        };
        let base = found
            .services
            .get(service)
            .ok_or_else(|| invalid(format!("{host} offers no {service} service")))?
            .as_str()
            .ok_or_else(|| invalid(format!("{service} is not a URL string")))?;
        let resolved = found
            .url
            .join(base)
            .map_err(|e| invalid(format!("{service} URL {base:?}: {e}")))?;
        tracing::debug!(%host, service, base = %resolved, "discovered registry service");
        Ok(Arc::new(with_trailing_slash(resolved)))
    }

    async fn discover(&self, host: &Hostname) -> Result<Found, UpstreamError> {
        let url = Url::parse(&format!(
            "https://{}/.well-known/terraform.json",
            host.authority()
        ))
        .map_err(|e| UpstreamError::Invalid {
            url: host.to_string(),
            reason: e.to_string(),
        })?;
        let (doc, _, url) = self
            .client
            .get_document(&url, self.credentials.token(host))
            .await?;
        // The clients read the document into a map: `null` is a host that
        // offers no services; anything but an object is refused.
        let services = match doc {
            serde_json::Value::Object(map) => map,
            serde_json::Value::Null => serde_json::Map::new(),
            _ => {
                return Err(UpstreamError::invalid(
                    &url,
                    "the discovery document is not a JSON object",
                ))
            }
        };
        Ok(Found { services, url })
    }
}

/// Makes sure relative endpoint paths resolve beneath the base URL.
fn with_trailing_slash(mut url: Url) -> Url {
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url
}
