//! Request paths → typed requests.
//!
//! The mirror protocol's paths are `/:hostname/:namespace/:type/index.json`
//! and `/:hostname/:namespace/:type/:version.json`; tfmirror serves archives
//! beside them as `/:hostname/:namespace/:type/terraform-provider-<type>_<version>_<os>_<arch>.zip`,
//! the name `terraform providers mirror` gives them, and lock file blocks as
//! `/:hostname/:namespace/:type/:version.lock.hcl`. `/`, `/healthz`,
//! `/readyz` and `/metrics` are one-segment paths outside the protocol's
//! four-segment space. Each segment is
//! percent-decoded and parsed into its validated type; anything else is a
//! bad request.

use percent_encoding::percent_decode_str;

use crate::address::{ArchiveKey, Hostname, Namespace, Provider, ProviderType, Version};
use crate::error::RequestError;

/// The longest request path accepted.
const MAX_PATH_LEN: usize = 1024;

/// What a request asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `/`: the page that says what this server is.
    Home,
    /// `/healthz`: the process is alive.
    Health,
    /// `/readyz`: the mirror can serve.
    Ready,
    /// `/metrics`: Prometheus metrics.
    Metrics,
    /// `index.json`: a provider's versions.
    Index(Provider),
    /// `:version.json`: a version's packages.
    Version(Provider, Version),
    /// An archive.
    Archive(ArchiveKey),
    /// `:version.lock.hcl`: a lock file block with the hashes of the
    /// platforms the query names (tfmirror's own, beside the protocol).
    Lock(Provider, Version),
}

/// Parses a raw (still percent-encoded) request path.
pub fn parse(raw_path: &str) -> Result<Route, RequestError> {
    let bad = |m: &str| RequestError::InvalidRequest(m.to_owned());
    if raw_path.len() > MAX_PATH_LEN {
        return Err(bad("request path too long"));
    }
    match raw_path {
        "/" => return Ok(Route::Home),
        "/healthz" => return Ok(Route::Health),
        "/readyz" => return Ok(Route::Ready),
        "/metrics" => return Ok(Route::Metrics),
        _ => {}
    }
    let rest = raw_path
        .strip_prefix('/')
        .ok_or_else(|| bad("request path must start with /"))?;
    let segments = rest
        .split('/')
        .map(decode_segment)
        .collect::<Result<Vec<String>, RequestError>>()?;
    let [host, namespace, kind, leaf] = segments.as_slice() else {
        return Err(bad(
            "not a mirror path: expected /:hostname/:namespace/:type/index.json, /:hostname/:namespace/:type/:version.json or an archive beside them",
        ));
    };
    let provider = Provider {
        hostname: Hostname::parse(host)?,
        namespace: Namespace::parse(namespace)?,
        kind: ProviderType::parse(kind)?,
    };
    if leaf == "index.json" {
        return Ok(Route::Index(provider));
    }
    if let Some((version, platform)) = provider.parse_archive_name(leaf) {
        return Ok(Route::Archive(ArchiveKey {
            provider,
            version,
            platform,
        }));
    }
    if let Some(version) = leaf.strip_suffix(".lock.hcl") {
        let version = Version::parse(version)?;
        return Ok(Route::Lock(provider, version));
    }
    if let Some(version) = leaf.strip_suffix(".json") {
        let version = Version::parse(version)?;
        return Ok(Route::Version(provider, version));
    }
    Err(bad(
        "not a mirror path: the last segment must be index.json, <version>.json or an archive of this provider",
    ))
}

/// Percent-decodes one segment and refuses what no valid name contains:
/// separators (including encoded ones), dot segments, control characters.
fn decode_segment(raw: &str) -> Result<String, RequestError> {
    let bad = |m: &str| Err(RequestError::InvalidRequest(m.to_owned()));
    if raw.is_empty() {
        return bad("empty path segment");
    }
    let Ok(decoded) = percent_decode_str(raw).decode_utf8() else {
        return bad("path segment is not UTF-8");
    };
    if decoded == "." || decoded == ".." {
        return bad("dot segments are not allowed");
    }
    if decoded
        .chars()
        .any(|c| c == '/' || c == '\\' || c.is_control())
    {
        return bad("path segment holds a separator or control character");
    }
    Ok(decoded.into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Platform;

    fn provider(h: &str, n: &str, t: &str) -> Provider {
        Provider {
            hostname: Hostname::parse(h).unwrap(),
            namespace: Namespace::parse(n).unwrap(),
            kind: ProviderType::parse(t).unwrap(),
        }
    }

    #[test]
    fn parses_the_three_shapes() {
        let p = provider("registry.terraform.io", "hashicorp", "aws");
        assert_eq!(parse("/").unwrap(), Route::Home);
        assert_eq!(
            parse("/registry.terraform.io/hashicorp/aws/index.json").unwrap(),
            Route::Index(p.clone())
        );
        assert_eq!(
            parse("/Registry.Terraform.IO:443/HashiCorp/AWS/5.1.0.json").unwrap(),
            Route::Version(p.clone(), Version::parse("5.1.0").unwrap())
        );
        assert_eq!(
            parse(
                "/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.1.0_linux_arm64.zip"
            )
            .unwrap(),
            Route::Archive(ArchiveKey::new(
                &p,
                &Version::parse("5.1.0").unwrap(),
                &Platform::parse("linux_arm64").unwrap()
            ))
        );
        assert_eq!(
            parse("/example.com:8443/%C3%BCn/t/index.json").unwrap(),
            Route::Index(provider("example.com:8443", "ün", "t"))
        );
    }

    #[test]
    fn hostile_paths_are_bad_requests() {
        let long = format!("/a.example/{}/t/index.json", "n".repeat(2000));
        for path in [
            "",
            "//",
            "/a.example/ns/t",
            "/a.example/ns/t/",
            "/a.example/ns//t/index.json",
            "/a.example/../t/index.json",
            "/a.example/%2e%2e/t/index.json",
            "/a.example/ns%2Ft/x/index.json",
            "/a.example/ns/t%00/index.json",
            "/a.example/ns/t/1.0.json",
            "/a.example/ns/t/../index.json",
            "/a.example/ns/t/terraform-provider-other_1.0.0_linux_amd64.zip",
            "/a.example/ns/t/x/index.json",
            "/a.example/ns/t/%ff.json",
            "/a.example/ns/t/index.json/extra",
            long.as_str(),
        ] {
            let e = parse(path).unwrap_err();
            assert_eq!(e.status(), http::StatusCode::BAD_REQUEST, "{path:?}");
        }
    }
}
