//! The server-side request forgery guard: upstream connections go only to
//! public addresses, checked on the addresses a name resolves to and then
//! connected to (so a name cannot resolve to a public address for the check
//! and to a private one for the connection), and on IP literals in URLs.
//! Hosts the operator configured are exempt.

use std::collections::HashSet;
use std::future::Future;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use http::Uri;
use hyper_util::client::legacy::connect::dns::Name;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tower_service::Service;

use crate::config::UpstreamConfig;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
type BoxFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;

/// A connection refused because of where it would have gone.
#[derive(Debug, Clone, thiserror::Error)]
#[error("refusing to connect to {host} at {addr}, a {range} address (configure the host under [upstream.hosts] or set upstream.allow_private_addresses to allow it)")]
pub struct AddressRefused {
    /// The host name or literal that was asked for.
    pub host: String,
    /// The address it resolved to.
    pub addr: IpAddr,
    /// Which kind of range the address is in.
    pub range: &'static str,
}

/// The kind of non-public range `ip` is in, if any.
pub fn non_public_range(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_range(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return v4_range(v4);
            }
            let first = v6.segments()[0];
            if v6.is_loopback() {
                Some("loopback")
            } else if v6.is_unspecified() {
                Some("unspecified")
            } else if first & 0xfe00 == 0xfc00 {
                Some("unique-local")
            } else if first & 0xffc0 == 0xfe80 {
                Some("link-local")
            } else if v6.is_multicast() {
                Some("multicast")
            } else if v6.segments()[..6] == [0, 0, 0, 0, 0, 0] {
                // IPv4-compatible addresses (deprecated) hide any IPv4 range.
                Some("IPv4-compatible")
            } else {
                None
            }
        }
    }
}

fn v4_range(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, ..] = ip.octets();
    if ip.is_loopback() {
        Some("loopback")
    } else if ip.is_private() {
        Some("private")
    } else if ip.is_link_local() {
        Some("link-local")
    } else if ip.is_multicast() {
        Some("multicast")
    } else if a == 100 && (64..128).contains(&b) {
        Some("shared (carrier-grade NAT)")
    } else if a == 0 || ip.is_broadcast() || a >= 240 {
        Some("reserved")
    } else {
        None
    }
}

/// Resolves names, keeping only public addresses.
#[derive(Clone, Default)]
pub struct PublicResolver;

impl Service<Name> for PublicResolver {
    type Response = std::vec::IntoIter<SocketAddr>;
    type Error = BoxError;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, name: Name) -> Self::Future {
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let all: Vec<SocketAddr> = tokio::net::lookup_host((host.as_str(), 0)).await?.collect();
            let mut refused = None;
            let public: Vec<SocketAddr> = all
                .into_iter()
                .filter(|a| match non_public_range(a.ip()) {
                    None => true,
                    Some(range) => {
                        refused.get_or_insert((a.ip(), range));
                        false
                    }
                })
                .collect();
            match (public.is_empty(), refused) {
                (true, Some((addr, range))) => {
                    Err(Box::new(AddressRefused { host, addr, range }) as BoxError)
                }
                _ => Ok(public.into_iter()),
            }
        })
    }
}

/// Connects over TCP, through [`PublicResolver`] unless the host is exempt.
#[derive(Clone)]
pub struct GuardedConnector {
    open: HttpConnector,
    public_only: HttpConnector<PublicResolver>,
    /// `host:port` authorities exempt from the guard.
    exempt: Arc<HashSet<String>>,
    allow_all: bool,
}

impl GuardedConnector {
    /// The connector for the `[upstream]` settings.
    pub fn new(config: &UpstreamConfig) -> Self {
        let mut open = HttpConnector::new();
        let mut public_only = HttpConnector::new_with_resolver(PublicResolver);
        configure(&mut open, config);
        configure(&mut public_only, config);
        GuardedConnector {
            open,
            public_only,
            exempt: Arc::new(exempt_authorities(config)),
            allow_all: config.allow_private_addresses,
        }
    }

    fn is_exempt(&self, host: &str, port: u16) -> bool {
        self.allow_all || self.exempt.contains(&format!("{host}:{port}"))
    }

    /// The address a program that connects by itself (git) must use for
    /// `host:port`: `None` when the host is exempt from the guard, else a
    /// public address it resolves to (pinned, so that a second lookup
    /// cannot lead elsewhere). Refused when it has only non-public ones.
    pub async fn pinned_address(&self, host: &str, port: u16) -> Result<Option<IpAddr>, BoxError> {
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        if self.is_exempt(&host, port) {
            return Ok(None);
        }
        if let Ok(addr) = host.parse::<IpAddr>() {
            return match non_public_range(addr) {
                Some(range) => Err(Box::new(AddressRefused { host, addr, range })),
                None => Ok(Some(addr)),
            };
        }
        let name: Name = host.parse()?;
        let mut found = PublicResolver.call(name).await?;
        Ok(found.next().map(|a| a.ip()))
    }
}

fn configure<R>(c: &mut HttpConnector<R>, config: &UpstreamConfig) {
    // TLS is layered on top; this connector opens TCP for https URLs too.
    c.enforce_http(false);
    c.set_connect_timeout(Some(config.connect_timeout));
    c.set_nodelay(true);
}

/// The `host:port` authorities the operator configured: each host under
/// `[upstream.hosts]` (on its port, or on 443 and 80 when it names none) and
/// the hosts of its `services` URLs.
fn exempt_authorities(config: &UpstreamConfig) -> HashSet<String> {
    let mut out = HashSet::new();
    for (host, hc) in &config.hosts {
        let host = host.as_str();
        match host.rsplit_once(':') {
            Some((_, port)) if port.bytes().all(|b| b.is_ascii_digit()) => {
                out.insert(host.to_owned());
            }
            _ => {
                out.insert(format!("{host}:443"));
                out.insert(format!("{host}:80"));
            }
        }
        for url in hc.services.values() {
            if let (Some(h), Some(p)) = (url.host_str(), url.port_or_known_default()) {
                out.insert(format!(
                    "{}:{p}",
                    h.trim_start_matches('[').trim_end_matches(']')
                ));
            }
        }
    }
    out
}

impl Service<Uri> for GuardedConnector {
    type Response = TokioIo<TcpStream>;
    type Error = BoxError;
    type Future = BoxFuture<Self::Response>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // Both connectors are always ready.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let host = uri
            .host()
            .unwrap_or("")
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_ascii_lowercase();
        let port = uri.port_u16().unwrap_or(match uri.scheme_str() {
            Some("http") => 80,
            _ => 443,
        });
        if self.is_exempt(&host, port) {
            let connecting = self.open.call(uri);
            return Box::pin(async move { connecting.await.map_err(Into::into) });
        }
        // An address literal skips name resolution: check it here.
        if let Ok(addr) = host.parse::<IpAddr>() {
            if let Some(range) = non_public_range(addr) {
                let refused = AddressRefused { host, addr, range };
                return Box::pin(async move { Err(Box::new(refused) as BoxError) });
            }
        }
        let connecting = self.public_only.call(uri);
        Box::pin(async move { connecting.await.map_err(Into::into) })
    }
}

/// The refusal in an error's chain, if that is what it is.
pub fn refusal_in(e: &(dyn std::error::Error + 'static)) -> Option<AddressRefused> {
    let mut current = Some(e);
    while let Some(err) = current {
        if let Some(r) = err.downcast_ref::<AddressRefused>() {
            return Some(r.clone());
        }
        current = err.source();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges() {
        for (ip, range) in [
            ("127.0.0.1", Some("loopback")),
            ("10.1.2.3", Some("private")),
            ("172.31.255.255", Some("private")),
            ("192.168.0.1", Some("private")),
            ("169.254.169.254", Some("link-local")),
            ("224.0.0.1", Some("multicast")),
            ("100.64.0.1", Some("shared (carrier-grade NAT)")),
            ("0.0.0.0", Some("reserved")),
            ("255.255.255.255", Some("reserved")),
            ("::1", Some("loopback")),
            ("::", Some("unspecified")),
            ("fd00::1", Some("unique-local")),
            ("fe80::1", Some("link-local")),
            ("ff02::1", Some("multicast")),
            ("::ffff:10.0.0.1", Some("private")),
            ("::10.0.0.1", Some("IPv4-compatible")),
            ("172.32.0.1", None),
            ("100.128.0.1", None),
            ("8.8.8.8", None),
            ("2606:4700::1111", None),
            ("::ffff:8.8.8.8", None),
        ] {
            assert_eq!(non_public_range(ip.parse().unwrap()), range, "{ip}");
        }
    }

    async fn connect(config: &UpstreamConfig, uri: &str) -> Result<(), BoxError> {
        GuardedConnector::new(config)
            .call(uri.parse().unwrap())
            .await
            .map(drop)
    }

    #[tokio::test]
    async fn literals_and_names_of_private_addresses_are_refused_unless_configured() {
        let mut config = crate::config::Config::default().upstream;
        // Port 9 (discard) on loopback: nothing listens, so an allowed
        // attempt fails to connect instead.
        for uri in [
            "https://127.0.0.1:9/",
            "https://[::1]:9/",
            "https://localhost:9/",
        ] {
            let err = connect(&config, uri).await.unwrap_err();
            let refused = refusal_in(&*err).unwrap_or_else(|| panic!("{uri}: {err}"));
            assert_eq!(refused.range, "loopback", "{uri}");
        }
        config.hosts.insert(
            "localhost:9".parse().unwrap(),
            crate::config::HostConfig::default(),
        );
        let err = connect(&config, "https://localhost:9/").await.unwrap_err();
        assert!(refusal_in(&*err).is_none(), "{err}");
        // Another port of the same host is still refused.
        let err = connect(&config, "https://localhost:10/").await.unwrap_err();
        assert!(refusal_in(&*err).is_some(), "{err}");
        config.allow_private_addresses = true;
        let err = connect(&config, "https://127.0.0.1:9/").await.unwrap_err();
        assert!(refusal_in(&*err).is_none(), "{err}");
    }
}
