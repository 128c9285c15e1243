//! The origin side of the mirror as one value: the HTTPS client with its
//! limits, the credentials for origin registries, and service discovery,
//! built once from `[upstream]` and shared by the provider mirror, the
//! module proxy and the commands that ask origins directly.

use std::sync::Arc;

use super::{Client, Credentials, Discovery};
use crate::config::Config;
use crate::metrics::Metrics;

/// Everything needed to ask an origin registry something.
pub struct Origin {
    /// The HTTPS client, with the forgery guard and fetch limits.
    pub client: Client,
    /// Tokens for origin registries, by hostname.
    pub credentials: Credentials,
    /// Service discovery, remembered for `cache.index_ttl`.
    pub discovery: Discovery,
}

impl Origin {
    /// Builds the client, loads the credentials (from the configuration and
    /// the process's environment) and sets up discovery.
    pub fn new(config: &Config, metrics: Arc<Metrics>) -> anyhow::Result<Origin> {
        let client = Client::new(&config.upstream, metrics)?;
        let credentials = Credentials::load(&config.upstream, std::env::vars())?;
        let discovery = Discovery::new(
            client.clone(),
            credentials.clone(),
            config.upstream.hosts.clone(),
            config.cache.index_ttl,
        );
        Ok(Origin {
            client,
            credentials,
            discovery,
        })
    }
}
