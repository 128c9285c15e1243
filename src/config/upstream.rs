//! `[upstream]`: the origin registries, how they are reached, and each
//! one's own settings (`[upstream.hosts."<hostname>"]`).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::address::Hostname;
use crate::verify::Unsigned;

/// `[upstream]`: the origin registries.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UpstreamConfig {
    /// `allowed_hosts`: registry hostnames whose providers may be mirrored.
    /// Requests for any other hostname answer 403 and cause no outbound
    /// traffic. Hosts under `[upstream.hosts]` are allowed implicitly.
    /// Default `["registry.terraform.io", "registry.opentofu.org"]`.
    pub allowed_hosts: Vec<Hostname>,
    /// `ca_file`: a PEM file of extra root certificates trusted for upstream
    /// TLS, in addition to the system's and the built-in roots.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ca_file: Option<PathBuf>,
    /// `connect_timeout`: how long to wait for an upstream TCP and TLS
    /// connection. Default `10s`.
    #[serde(with = "humantime_serde")]
    pub connect_timeout: Duration,
    /// `request_timeout`: how long an upstream metadata request may take in
    /// all, and how long an archive download may go without receiving a byte.
    /// Default `60s`.
    #[serde(with = "humantime_serde")]
    pub request_timeout: Duration,
    /// `max_archive_size`: the largest archive downloaded; a larger one is
    /// refused with 502 and nothing is stored. Default `1GiB`.
    pub max_archive_size: bytesize::ByteSize,
    /// `stream_above`: archives the origin announces as larger than this
    /// are sent to the clients waiting for them while they download, the
    /// last byte held back until the whole archive has verified (a failure
    /// cuts those connections short, so no client gets a bad archive).
    /// Smaller ones are verified before the first byte is sent, and a
    /// failure answers 502 with its reason. Default `8MiB`.
    pub stream_above: bytesize::ByteSize,
    /// `max_fetches`: the most upstream requests in flight at once, archive
    /// downloads included. Further requests wait for a slot, within
    /// `request_timeout`. Default `64`.
    pub max_fetches: usize,
    /// `max_fetches_per_host`: the most upstream requests in flight to any
    /// one host. Default `16`.
    pub max_fetches_per_host: usize,
    /// `allow_private_addresses`: allow connecting to loopback, private,
    /// link-local, unique-local and multicast addresses for every host.
    /// Off by default: such addresses are refused (server-side request
    /// forgery guard) except for hosts configured under `[upstream.hosts]`
    /// and the hosts of their `services` URLs.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub allow_private_addresses: bool,
    /// `offline`: never connect to an origin: serve what the cache holds and
    /// answer 404 for anything else, so that clients can fall through to
    /// their next installation method. Also `tfmirror serve --offline`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub offline: bool,
    /// `reject_expired_keys`: refuse SHA256SUMS signed by a key that has
    /// expired. Off by default, as in Terraform, which accepts such
    /// signatures with a warning. Revoked keys and expired signatures are
    /// always refused.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub reject_expired_keys: bool,
    /// `credentials_file`: a Terraform `credentials.tfrc.json` whose
    /// `credentials` give tokens for registry hosts. `TF_TOKEN_<host>`
    /// environment variables are honoured too, as Terraform honours them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials_file: Option<PathBuf>,
    /// `[upstream.hosts."<hostname>"]`: per-registry settings, keyed by the
    /// hostname as it appears in provider addresses.
    pub hosts: BTreeMap<Hostname, HostConfig>,
}

/// `[upstream.hosts."<hostname>"]`: one origin registry's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HostConfig {
    /// `services`: replaces service discovery for this host, exactly like the
    /// `host` block of the Terraform CLI configuration, e.g.
    /// `{ "providers.v1" = "https://registry.internal:8443/v1/providers/" }`.
    /// An empty entry only allows the host.
    #[serde(default)]
    pub services: BTreeMap<String, Url>,
    /// `insecure_http`: allow plain `http` URLs for this registry (its own
    /// host and the hosts of its `services`). Off by default: everything
    /// else is fetched over https only. Packages are still verified.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub insecure_http: bool,
    /// `token`: a bearer token sent to this registry's discovery and API
    /// requests (never to download hosts), for private registries.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// `token_file`: a file holding that token, read at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// `unsigned`: what becomes of a provider version this registry
    /// publishes without a signing key (`signing_keys` null, `[]`, or
    /// entries with no key): `"refuse"` (the default) or `"checked"`,
    /// which accepts it once every check that needs no key passed
    /// (checksums, the `packages` sizes and hashes, a signature file that
    /// answers) and pins it on first sight, labelled keyless. Allowed only
    /// for `registry.opentofu.org`, where OpenTofu itself installs such
    /// providers.
    #[serde(default, skip_serializing_if = "Unsigned::is_refuse")]
    pub unsigned: Unsigned,
    /// `unsigned_sources`: narrows `unsigned = "checked"` to the providers
    /// matching these `namespace/type` globs, e.g. `["netbirdio/*",
    /// "openstack/openstack"]`. Default: every provider of the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unsigned_sources: Vec<String>,
}
