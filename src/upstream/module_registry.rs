//! The module registry protocol (`modules.v1`) as tfmirror reads it: a
//! module's versions, and where one version's source is. Answers are read
//! as the clients read them ([`super::wire`]).

use url::Url;

use super::client::{not_json, Client, UpstreamError};
use super::registry::endpoint;
use super::wire::{self, FieldError, Node};
use crate::address::{Module, Version};

/// The header that carries a module's download location.
pub const X_TERRAFORM_GET: &str = "x-terraform-get";

fn module_path<'a>(module: &'a Module, tail: &[&'a str]) -> Vec<&'a str> {
    let mut path = vec![
        module.namespace.as_str(),
        module.name.as_str(),
        module.system.as_str(),
    ];
    path.extend_from_slice(tail);
    path
}

/// A module's versions at the registry at `base`, sorted; versions that are
/// not semantic versions are left out (and logged). The first entry of
/// `modules` is the module asked for, as the protocol says.
pub async fn versions(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    module: &Module,
) -> Result<Vec<Version>, UpstreamError> {
    let url = endpoint(base, &module_path(module, &["versions"]))?;
    let (doc, _, final_url) = client.get_document(&url, token).await?;
    let listed = read_versions(&doc).map_err(|e| UpstreamError::from((&final_url, e)))?;
    let Some(listed) = listed else {
        return Err(UpstreamError::invalid(
            &final_url,
            "field `modules`: lists no module",
        ));
    };
    let mut versions: Vec<Version> = listed
        .iter()
        .filter_map(|v| {
            let parsed = Version::parse(v).ok();
            if parsed.is_none() {
                tracing::warn!(%module, version = %v, "ignoring a module version that is not semantic versioning");
            }
            parsed
        })
        .collect();
    versions.sort();
    versions.dedup();
    Ok(versions)
}

/// The version strings of the first module of a versions answer, or `None`
/// when it lists no module. Both clients read `modules` and `versions` as
/// lists of pointers and use each element, so a `null` element is refused
/// (the clients fail on it); everything else they ignore is ignored here.
pub fn read_versions(doc: &serde_json::Value) -> Result<Option<Vec<String>>, FieldError> {
    let root = Node::root(doc).object()?;
    let modules = root.get("modules").items()?;
    let Some(first) = modules.first() else {
        return Ok(None);
    };
    first
        .required_object()?
        .get("versions")
        .items()?
        .iter()
        .map(|v| v.required_object()?.get("version").string())
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// Where a module version's source is, as given, with the URL a relative
/// location resolves against: the URL that was asked (both clients resolve
/// against it, not against where a redirect led).
///
/// The clients differ here, and tfmirror accepts what either accepts:
/// Terraform reads only the `X-Terraform-Get` header, on a `200` or a
/// `204`; OpenTofu reads the `location` of a JSON body on a `200` first and
/// falls back to the header when it is empty, and on a `204` reads the
/// header. So a non-empty JSON `location` wins (OpenTofu's order, the one
/// the clients that read both take), else the header. What tfmirror hands
/// on is its own answer, which both clients read the same way.
pub async fn location(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    module: &Module,
    version: &Version,
) -> Result<(String, Url), UpstreamError> {
    let url = endpoint(base, &module_path(module, &[version.as_str(), "download"]))?;
    let (headers, body, final_url) = client.get_small(&url, token).await?;
    let location =
        pick_location(&headers, &body).map_err(|why| UpstreamError::invalid(&final_url, why))?;
    Ok((location, url))
}

/// The location of a download answer, by the rules [`location`] gives, or
/// why there is none.
fn pick_location(headers: &http::HeaderMap, body: &[u8]) -> Result<String, String> {
    let header = headers
        .get(X_TERRAFORM_GET)
        .map(|v| {
            v.to_str()
                .map(|s| s.trim().to_owned())
                .map_err(|_| "X-Terraform-Get is not text".to_owned())
        })
        .transpose()?
        .filter(|s| !s.is_empty());
    let from_body = if body.iter().all(u8::is_ascii_whitespace) {
        Err("the body is empty".to_owned())
    } else {
        match wire::first_value(body) {
            Ok(doc) => Node::root(&doc)
                .object()
                .and_then(|o| o.get("location").string())
                .map_err(|e| format!("field {e}"))
                .and_then(|l| {
                    let l = l.trim().to_owned();
                    if l.is_empty() {
                        Err("field `location` is empty or absent".to_owned())
                    } else {
                        Ok(l)
                    }
                }),
            Err(e) => Err(not_json(headers, body, &e)),
        }
    };
    match (from_body, header) {
        (Ok(location), _) | (Err(_), Some(location)) => Ok(location),
        (Err(why), None) => Err(format!(
            "no download location: no X-Terraform-Get header, and in the body {why}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn headers(location: Option<&str>) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        if let Some(l) = location {
            h.insert(X_TERRAFORM_GET, l.parse().unwrap());
        }
        h
    }

    #[test]
    fn the_json_location_comes_first_then_the_header() {
        let body = br#"{"location": "git::https://a.example/m.git"}"#;
        // Both present and different: OpenTofu's order.
        assert_eq!(
            pick_location(&headers(Some("https://b.example/m.zip")), body).unwrap(),
            "git::https://a.example/m.git"
        );
        // A 204 (no body), or a 200 whose body is not JSON (Terraform reads
        // only the header), or whose location is empty or null.
        for body in [
            &b""[..],
            b"not json",
            br#"{"location": ""}"#,
            br#"{"location": null}"#,
            b"{}",
            br#"{"location": 5}"#,
        ] {
            assert_eq!(
                pick_location(&headers(Some(" ./m.tar.gz ")), body).unwrap(),
                "./m.tar.gz",
                "{}",
                String::from_utf8_lossy(body)
            );
        }
        // Extra fields, and OpenTofu's use_registry_credentials, are fine.
        let body = br#"{"location": "https://a.example/m.zip", "use_registry_credentials": false, "x": [1]}"#;
        assert_eq!(
            pick_location(&headers(None), body).unwrap(),
            "https://a.example/m.zip"
        );
    }

    #[test]
    fn no_location_at_all_is_refused_with_the_reason() {
        let err = pick_location(&headers(None), b"").unwrap_err();
        assert!(
            err.contains("no X-Terraform-Get header") && err.contains("the body is empty"),
            "{err}"
        );
        let err = pick_location(&headers(None), b"<html>oops</html>").unwrap_err();
        assert!(
            err.contains("not JSON") && err.contains("<html>oops"),
            "{err}"
        );
        let err = pick_location(&headers(None), br#"{"location": 5}"#).unwrap_err();
        assert!(
            err.contains("`location`: expected a string, found the number 5"),
            "{err}"
        );
    }

    #[test]
    fn versions_are_read_as_the_clients_read_them() {
        let doc = json!({"modules": [{"source": "x", "versions": [{"version": "1.0.0", "root": {"providers": null}, "submodules": null}, {"version": null}]}], "meta": {}});
        assert_eq!(read_versions(&doc).unwrap().unwrap(), ["1.0.0", ""]);
        assert_eq!(read_versions(&json!({"modules": []})).unwrap(), None);
        assert_eq!(read_versions(&json!({"modules": null})).unwrap(), None);
        assert_eq!(
            read_versions(&json!({"Modules": [{"Versions": null}]})).unwrap(),
            Some(vec![])
        );
        let err = read_versions(&json!({"modules": [null]})).unwrap_err();
        assert_eq!(err.path, "modules[0]");
        let err = read_versions(&json!({"modules": [{"versions": [null]}]})).unwrap_err();
        assert_eq!(err.path, "modules[0].versions[0]");
        let err = read_versions(&json!({"modules": [{"versions": [{"version": 1}]}]})).unwrap_err();
        assert_eq!(err.path, "modules[0].versions[0].version");
    }
}
