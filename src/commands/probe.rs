//! `tfmirror probe`: asks a running daemon whether it is alive
//! (`/healthz`) or ready to serve (`/readyz`, with `--ready`) and exits 0
//! or 1, so that a container's `HEALTHCHECK`, a Kubernetes `exec` probe or
//! a script needs no shell or HTTP client of its own.
//!
//! Without `--url` it asks the daemon this configuration describes, on its
//! own listening address (a wildcard address is asked on loopback). Like
//! the kubelet's HTTPS probes, it does not verify the daemon's own
//! certificate there, which need not name that address; it sends nothing
//! secret and reads only the status. With `--url` the certificate is
//! verified against the built-in and system roots and `--ca-file`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use url::Url;

use crate::config::Config;

/// What `tfmirror probe` was asked.
#[derive(Debug, Clone, clap::Args)]
pub struct ProbeArgs {
    /// Configuration file (TOML) of the daemon to ask.
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Ask `/readyz` (ready to serve) instead of `/healthz` (alive).
    #[arg(long)]
    pub ready: bool,
    /// The daemon's base URL (default: its `server.listen` address).
    #[arg(long)]
    pub url: Option<Url>,
    /// With --url: extra CA certificates (PEM) to trust.
    #[arg(long, requires = "url")]
    pub ca_file: Option<PathBuf>,
    /// How long to wait for the answer.
    #[arg(long, default_value = "5s", value_parser = humantime::parse_duration)]
    pub timeout: Duration,
}

/// The address a daemon listening on `listen` is asked on: loopback for a
/// wildcard address.
fn asked_at(listen: SocketAddr) -> SocketAddr {
    let ip = match listen.ip() {
        IpAddr::V4(v4) if v4.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(v6) if v6.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, listen.port())
}

/// The URL probed: `--url` joined with the path, or the daemon's own
/// address.
fn probe_url(config: &Config, args: &ProbeArgs) -> anyhow::Result<Url> {
    let path = if args.ready { "readyz" } else { "healthz" };
    let base = if let Some(url) = &args.url {
        url.clone()
    } else {
        let scheme = if config.server.tls { "https" } else { "http" };
        Url::parse(&format!("{scheme}://{}/", asked_at(config.server.listen)))?
    };
    let base = if base.path().ends_with('/') {
        base
    } else {
        Url::parse(&format!("{base}/"))?
    };
    Ok(base.join(path)?)
}

/// `tfmirror probe`: `Ok` when the daemon answers 200.
pub fn command(config: &Config, args: &ProbeArgs) -> anyhow::Result<()> {
    let url = probe_url(config, args)?;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut client = reqwest::Client::builder()
        .timeout(args.timeout)
        .user_agent(concat!("tfmirror-probe/", env!("CARGO_PKG_VERSION")));
    if args.url.is_none() {
        client = client.danger_accept_invalid_certs(true);
    } else {
        let tls = crate::upstream::client::tls_config(args.ca_file.as_deref(), "--ca-file")?;
        client = client.tls_backend_preconfigured(tls);
    }
    let client = client.build().context("building the probe's client")?;
    let answer = super::runtime()?.block_on(async {
        let response = client.get(url.clone()).send().await?;
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        anyhow::Ok((status, body))
    });
    match answer {
        Ok((status, _)) if status == reqwest::StatusCode::OK => {
            println!("{url}: {status}");
            Ok(())
        }
        Ok((status, body)) => anyhow::bail!("{url}: {status}: {}", body.trim()),
        Err(e) => Err(e).with_context(|| format!("asking {url}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(ready: bool, url: Option<&str>) -> ProbeArgs {
        ProbeArgs {
            config: None,
            ready,
            url: url.map(|u| u.parse().unwrap()),
            ca_file: None,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn the_daemon_is_asked_where_it_listens() {
        let mut config = Config::default();
        config.server.listen = "0.0.0.0:8443".parse().unwrap();
        config.server.tls = true;
        assert_eq!(
            probe_url(&config, &args(false, None)).unwrap().as_str(),
            "https://127.0.0.1:8443/healthz"
        );
        config.server.listen = "[::]:80".parse().unwrap();
        config.server.tls = false;
        assert_eq!(
            probe_url(&config, &args(true, None)).unwrap().as_str(),
            "http://[::1]/readyz"
        );
        assert_eq!(
            probe_url(&config, &args(true, Some("https://mirror.example/base")))
                .unwrap()
                .as_str(),
            "https://mirror.example/base/readyz"
        );
    }
}
