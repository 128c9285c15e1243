//! The module registry protocol (`modules.v1`) as tfmirror reads it: a
//! module's versions, and where one version's source is.

use serde::Deserialize;
use url::Url;

use super::client::{Client, UpstreamError};
use super::registry::endpoint;
use crate::address::{Module, Version};

/// `GET :namespace/:name/:system/versions`.
#[derive(Debug, Deserialize)]
struct VersionsResponse {
    modules: Vec<ModuleVersions>,
}

#[derive(Debug, Deserialize)]
struct ModuleVersions {
    #[serde(default)]
    versions: Vec<VersionEntry>,
}

#[derive(Debug, Deserialize)]
struct VersionEntry {
    version: String,
}

/// `GET :namespace/:name/:system/:version/download` with a body.
#[derive(Debug, Deserialize)]
struct LocationResponse {
    location: String,
}

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
    let (answer, final_url): (VersionsResponse, Url) = client.get_json(&url, token).await?;
    let first = answer
        .modules
        .into_iter()
        .next()
        .ok_or_else(|| UpstreamError::invalid(&final_url, "the answer lists no module"))?;
    let mut versions: Vec<Version> = first
        .versions
        .iter()
        .filter_map(|v| {
            let parsed = Version::parse(&v.version).ok();
            if parsed.is_none() {
                tracing::warn!(%module, version = %v.version, "ignoring a module version that is not semantic versioning");
            }
            parsed
        })
        .collect();
    versions.sort();
    versions.dedup();
    Ok(versions)
}

/// Where a module version's source is: the `X-Terraform-Get` header, or
/// the `location` of a JSON body. Returns it as given, with the URL that
/// gave it (relative locations resolve against that).
pub async fn location(
    client: &Client,
    base: &Url,
    token: Option<&str>,
    module: &Module,
    version: &Version,
) -> Result<(String, Url), UpstreamError> {
    let url = endpoint(base, &module_path(module, &[version.as_str(), "download"]))?;
    let (headers, body, final_url) = client.get_small(&url, token).await?;
    if let Some(header) = headers.get(X_TERRAFORM_GET) {
        let value = header
            .to_str()
            .map_err(|_| UpstreamError::invalid(&final_url, "X-Terraform-Get is not text"))?;
        if !value.trim().is_empty() {
            return Ok((value.trim().to_owned(), final_url));
        }
    }
    let answer: LocationResponse = serde_json::from_slice(&body).map_err(|e| {
        UpstreamError::invalid(
            &final_url,
            format!("no X-Terraform-Get header and no JSON location: {e}"),
        )
    })?;
    if answer.location.trim().is_empty() {
        return Err(UpstreamError::invalid(&final_url, "the location is empty"));
    }
    Ok((answer.location.trim().to_owned(), final_url))
}
