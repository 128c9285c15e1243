//! `[docs]`: where the mirror fetches the documentation of the provider
//! versions it keeps (read by [`crate::mirror`]'s documentation capture;
//! see `docs/documentation.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::address::{Hostname, Provider};

/// `[docs]`: documentation capture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct DocsConfig {
    /// `enabled`: whether a provider version's documentation is fetched
    /// when the mirror keeps one of its archives. Default `true`.
    pub enabled: bool,
    /// `max_requests_per_version`: the most requests one version's
    /// documentation takes, its list included (registry.terraform.io
    /// needs one per document). Default 2,000.
    pub max_requests_per_version: usize,
    /// `backfill_pause`: the daemon, once started, fetches the
    /// documentation of every version it holds and keeps none of, one
    /// version at a time, pausing this long between two (`tfmirror docs
    /// backfill` does it at once). Default 2 seconds.
    #[serde(with = "humantime_serde")]
    pub backfill_pause: std::time::Duration,
    /// `backfill_every`: how long after one backfill the daemon runs the
    /// next, so that a capture that failed (a registry or an upper tier
    /// that was down) is tried again without a restart. Default 6 hours;
    /// longer than zero.
    #[serde(with = "humantime_serde")]
    pub backfill_every: std::time::Duration,
    /// `[docs.hosts."HOST"]`: where a registry host's documentation is,
    /// and in which shape; replaces the built-in source of
    /// registry.terraform.io and registry.opentofu.org. A host not named
    /// and not built in has none fetched.
    pub hosts: BTreeMap<Hostname, DocsHost>,
}

/// `[docs.hosts."HOST"]`: one registry host's documentation source.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DocsHost {
    /// `source`: `"terraform"` (registry.terraform.io's `/v1/providers/…`
    /// list and `/v2/provider-docs/ID`), `"opentofu"` (registry.opentofu.
    /// org's static files, `/registry/docs/providers/…`) or `"none"`.
    pub source: DocsSource,
    /// `url`: the root the source's paths are below. Default
    /// `https://HOST/`.
    #[serde(default)]
    pub url: Option<Url>,
}

/// Which registry's documentation answers a host gives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// registry.terraform.io's: `GET /v1/providers/NS/NAME/VERSION` lists
    /// the documents, `GET /v2/provider-docs/ID` serves each.
    Terraform,
    /// registry.opentofu.org's static files:
    /// `/registry/docs/providers/NS/NAME/vVERSION/index.json`, then each
    /// document's Markdown below it.
    OpenTofu,
}

/// `source` of `[docs.hosts."HOST"]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DocsSource {
    /// registry.terraform.io's shape.
    Terraform,
    /// registry.opentofu.org's shape.
    Opentofu,
    /// No documentation is fetched from this host.
    None,
}

impl Default for DocsConfig {
    fn default() -> Self {
        DocsConfig {
            enabled: true,
            max_requests_per_version: 2_000,
            backfill_pause: std::time::Duration::from_secs(2),
            backfill_every: std::time::Duration::from_secs(6 * 3600),
            hosts: BTreeMap::new(),
        }
    }
}

impl super::Config {
    /// Where `provider`'s documentation is fetched from, in which shape
    /// (`[docs]`, and `tfmirror-docs.v1` among its host's `services`);
    /// `None` where its host has no source.
    pub fn docs_source(&self, provider: &Provider) -> Option<(Shape, Url)> {
        let host = self.upstream.hosts.get(&provider.hostname);
        let redirected = host.is_some_and(|h| !h.services.is_empty());
        let upper = host.and_then(|h| h.services.get(DOCS_SERVICE));
        (self.docs).source_for(&provider.hostname, redirected, upper)
    }

    /// Why a mirror of this configuration keeps no documentation of a
    /// version of `provider` (or none yet), for people; `offline` is
    /// whether it is offline.
    pub fn why_no_docs(&self, provider: &Provider, offline: bool) -> String {
        if offline {
            "this mirror is offline and fetches none: documentation comes with the versions in bundles".into()
        } else if self.docs_source(provider).is_none() {
            format!(
                "this mirror fetches no documentation from {}: [docs] names no source for it",
                provider.hostname
            )
        } else {
            "none is kept yet: it is fetched in the background when an archive of the version is kept, and by the daemon's backfill (or `tfmirror docs backfill`); a failure is in the log".into()
        }
    }
}

impl DocsConfig {
    /// Where `host`'s documentation is fetched from, and in which shape;
    /// `None` where capture is off or the host has no source. For the
    /// `terraform` shape the URL is the registry's root; for `opentofu`,
    /// the root of its documentation files (`providers/…` is below it).
    /// A source named here comes first. Then, where `[upstream.hosts.
    /// "HOST"] services` names [`DOCS_SERVICE`] (`upper`: a tfmirror above
    /// this one), its documentation files there. Then
    /// registry.terraform.io is built in as `terraform` at its own root,
    /// registry.opentofu.org as `opentofu` at
    /// `https://api.opentofu.org/registry/docs/`, unless `redirected`
    /// (`services` sends the host's protocol elsewhere): a mirror's
    /// documentation is read only through the service it names.
    pub fn source_for(
        &self,
        host: &Hostname,
        redirected: bool,
        upper: Option<&Url>,
    ) -> Option<(Shape, Url)> {
        if !self.enabled {
            return None;
        }
        let files = |url: Url| with_slash(url).join("registry/docs/").ok();
        let (source, url) = match (self.hosts.get(host), host.as_str()) {
            (Some(h), _) => (h.source, h.url.clone()),
            (None, _) if upper.is_some() => {
                return upper.map(|u| (Shape::OpenTofu, with_slash(u.clone())))
            }
            (None, _) if redirected => return None,
            (None, "registry.terraform.io") => (DocsSource::Terraform, None),
            (None, "registry.opentofu.org") => (
                DocsSource::Opentofu,
                Url::parse("https://api.opentofu.org/").ok(),
            ),
            (None, _) => return None,
        };
        let url = url.or_else(|| Url::parse(&format!("https://{host}/")).ok())?;
        match source {
            DocsSource::Terraform => Some((Shape::Terraform, url)),
            DocsSource::Opentofu => Some((Shape::OpenTofu, files(url)?)),
            DocsSource::None => None,
        }
    }
}

/// The service key of a tfmirror's documentation files in
/// `[upstream.hosts."HOST"] services`: where a lower tier reads the
/// documentation an upper tfmirror keeps of the host's providers
/// (`https://UPPER/-/registry-docs/HOST/`, in the OpenTofu Registry's
/// shape).
pub const DOCS_SERVICE: &str = "tfmirror-docs.v1";

/// `url` with its path ending in `/`, so that paths join below it.
fn with_slash(mut url: Url) -> Url {
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    url
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host(s: &str) -> Hostname {
        Hostname::parse(s).unwrap()
    }

    #[test]
    fn the_public_registries_are_built_in_and_others_have_none_unless_named() {
        let config = DocsConfig::default();
        let (shape, url) = config
            .source_for(&host("registry.terraform.io"), false, None)
            .unwrap();
        assert_eq!(
            (shape, url.as_str()),
            (Shape::Terraform, "https://registry.terraform.io/")
        );
        let (shape, url) = config
            .source_for(&host("registry.opentofu.org"), false, None)
            .unwrap();
        assert_eq!(
            (shape, url.as_str()),
            (Shape::OpenTofu, "https://api.opentofu.org/registry/docs/")
        );
        assert_eq!(
            config.source_for(&host("registry.example"), false, None),
            None
        );
        // Sent elsewhere by `[upstream.hosts]`, a public registry has no
        // built-in source; an upper tfmirror's documentation service is
        // read in the OpenTofu Registry's shape, with or without a slash.
        assert_eq!(
            config.source_for(&host("registry.terraform.io"), true, None),
            None
        );
        let upper =
            Url::parse("https://dmz.example:8443/-/registry-docs/registry.terraform.io").unwrap();
        let (shape, url) = config
            .source_for(&host("registry.terraform.io"), true, Some(&upper))
            .unwrap();
        assert_eq!(
            (shape, url.as_str()),
            (
                Shape::OpenTofu,
                "https://dmz.example:8443/-/registry-docs/registry.terraform.io/"
            )
        );

        let config: DocsConfig = toml::from_str(
            r#"
            [hosts."registry.example"]
            source = "opentofu"
            [hosts."registry.terraform.io"]
            source = "none"
            [hosts."tf.example:8443"]
            source = "terraform"
            url = "https://docs.example/api/"
            "#,
        )
        .unwrap();
        // A source named comes before an upper tier's service.
        let (shape, url) = config
            .source_for(&host("registry.example"), true, Some(&upper))
            .unwrap();
        assert_eq!(
            (shape, url.as_str()),
            (Shape::OpenTofu, "https://registry.example/registry/docs/")
        );
        assert_eq!(
            config.source_for(&host("registry.terraform.io"), false, Some(&upper)),
            None
        );
        let (shape, url) = config
            .source_for(&host("tf.example:8443"), false, None)
            .unwrap();
        assert_eq!(
            (shape, url.as_str()),
            (Shape::Terraform, "https://docs.example/api/")
        );
        let off = DocsConfig {
            enabled: false,
            ..DocsConfig::default()
        };
        assert_eq!(
            off.source_for(&host("registry.terraform.io"), false, Some(&upper)),
            None
        );
    }

    #[test]
    fn an_unknown_source_or_key_is_refused_by_name() {
        let e = toml::from_str::<DocsConfig>("[hosts.\"r.example\"]\nsource = \"gitlab\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown variant `gitlab`"), "{e}");
        let e = toml::from_str::<DocsConfig>("max_request = 3\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `max_request`"), "{e}");
    }
}
