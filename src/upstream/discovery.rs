//! Remote service discovery: maps a registry hostname to the base URL of its
//! `providers.v1` service, from `https://<hostname>/.well-known/terraform.json`
//! or from `[upstream.hosts."<hostname>"] services`, and remembers the answer
//! for `cache.index_ttl`.

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

/// Finds and remembers the `providers.v1` base URL of registry hosts.
pub struct Discovery {
    client: Client,
    credentials: Credentials,
    overrides: BTreeMap<Hostname, HostConfig>,
    found: moka::future::Cache<Hostname, Arc<Url>>,
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

    /// The base URL of `host`'s provider registry API. Concurrent lookups of
    /// one host share one request.
    pub async fn providers_base(&self, host: &Hostname) -> Result<Arc<Url>, UpstreamError> {
        if let Some(url) = self
            .overrides
            .get(host)
            .and_then(|h| h.services.get(PROVIDERS_V1))
        {
            return Ok(Arc::new(with_trailing_slash(url.clone())));
        }
        self.found
            .try_get_with(host.clone(), async {
                self.discover(host).await.map(Arc::new)
            })
            .await
            .map_err(|e: Arc<UpstreamError>| (*e).clone())
    }

    async fn discover(&self, host: &Hostname) -> Result<Url, UpstreamError> {
        let url = Url::parse(&format!(
            "https://{}/.well-known/terraform.json",
            host.authority()
        ))
        .map_err(|e| UpstreamError::Invalid {
            url: host.to_string(),
            reason: e.to_string(),
        })?;
        let (doc, final_url) = self
            .client
            .get_json::<serde_json::Map<String, serde_json::Value>>(
                &url,
                self.credentials.token(host),
            )
            .await?;
        let invalid = |reason: String| UpstreamError::Invalid {
            url: final_url.to_string(),
            reason,
        };
        let base = doc
            .get(PROVIDERS_V1)
            .ok_or_else(|| invalid(format!("{host} offers no {PROVIDERS_V1} service")))?
            .as_str()
            .ok_or_else(|| invalid(format!("{PROVIDERS_V1} is not a URL string")))?;
        let resolved = final_url
            .join(base)
            .map_err(|e| invalid(format!("{PROVIDERS_V1} URL {base:?}: {e}")))?;
        tracing::debug!(%host, base = %resolved, "discovered provider registry");
        Ok(with_trailing_slash(resolved))
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
