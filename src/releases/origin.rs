//! The release origins: their version lists, read as the version managers
//! read them (Go's `encoding/json`: `null` is empty, unknown fields are
//! ignored, versions that are not semantic versions are left out), and a
//! release's checksum document with its signatures, verified.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use super::config::Source;
use crate::address::{Product, Version};
use crate::error::RequestError;
use crate::store::ReleaseRecord;
use crate::upstream::wire::{FieldError, Node};
use crate::upstream::{Client, UpstreamError};
use crate::verify::Sha256Sums;

/// The versions `source`'s list names, with the files it lists for each
/// (OpenTofu's `api.json` lists them; Terraform's `index.json` is read for
/// its version keys).
pub(super) async fn list(
    client: &Client,
    source: &Source,
) -> Result<BTreeMap<Version, Vec<String>>, UpstreamError> {
    let (doc, _, url) = client
        .get_document(&source.list_url, source.token())
        .await?;
    read_list(source.product, &doc).map_err(|e| UpstreamError::from((&url, e)))
}

/// Reads a product's version list: Terraform's `{"versions": {"<v>": …}}`
/// or TofuDL's `{"versions": [{"id": "<v>", "files": […]}]}`.
pub(super) fn read_list(
    product: Product,
    doc: &Value,
) -> Result<BTreeMap<Version, Vec<String>>, FieldError> {
    let root = Node::root(doc).object()?;
    let mut out = BTreeMap::new();
    let mut keep = |id: &str, files: Vec<String>| match Version::parse(id) {
        Ok(v) => {
            out.insert(v, files);
        }
        Err(_) => {
            tracing::debug!(target: super::RELEASES_LOG, %product, version = id, "leaving out a version that is not semantic versioning");
        }
    };
    match product {
        Product::Terraform => {
            for (id, _) in root.get("versions").object()?.entries() {
                keep(id, Vec::new());
            }
        }
        Product::Tofu => {
            for item in root.get("versions").items()? {
                let entry = item.object()?;
                let id = entry.get("id").string()?;
                let files = entry.get("files").strings()?;
                keep(&id, files);
            }
        }
    }
    Ok(out)
}

/// The names of the signature files over a release's checksums that are
/// tried: Terraform's `…_SHA256SUMS.sig`, `…_SHA256SUMS.72D7468F.sig` (the
/// name tfenv and tfswitch ask for) and `…_SHA256SUMS.<key ID>.sig` for
/// each configured key (short ID, as releases.hashicorp.com names them);
/// OpenTofu's `…_SHA256SUMS.gpgsig`. Whichever name, a signature counts
/// only when a configured key made it.
fn signature_names(source: &Source, sums_name: &str) -> Vec<String> {
    match source.product {
        Product::Terraform => {
            let mut names = vec![
                format!("{sums_name}.sig"),
                format!("{sums_name}.72D7468F.sig"),
            ];
            for id in source.keys.key_ids() {
                let short = &id[id.len().saturating_sub(8)..];
                let name = format!("{sums_name}.{short}.sig");
                if !names.contains(&name) {
                    names.push(name);
                }
            }
            names
        }
        Product::Tofu => vec![format!("{sums_name}.gpgsig")],
    }
}

/// The files published beside a release's checksums that are passed on
/// unchecked when the origin has them: OpenTofu's cosign signature and
/// certificate (tenv fetches both before it falls back to OpenPGP).
pub(super) fn extra_names(product: Product, sums_name: &str) -> Vec<String> {
    match product {
        Product::Terraform => Vec::new(),
        Product::Tofu => vec![format!("{sums_name}.sig"), format!("{sums_name}.pem")],
    }
}

/// Fetches a release's checksum document and its signatures, and verifies
/// them with the source's keys: at least one signature must verify, and
/// only those that do are kept. Nothing is returned (or kept) otherwise.
pub(super) async fn verified_release(
    client: &Client,
    source: &Source,
    version: &Version,
    now_ms: u64,
) -> Result<ReleaseRecord, RequestError> {
    let product = source.product;
    let what = format!("{} {version}", product.title());
    let sums_name = product.sums_name(version);
    let url_of = |name: &str| {
        source
            .download_url(version, name)
            .map_err(|e| RequestError::Internal(format!("{what}: {e:#}")))
    };
    let sums_url = url_of(&sums_name)?;
    let sums = match client.get_bytes(&sums_url, source.token()).await {
        Ok((bytes, _)) => bytes,
        Err(UpstreamError::NotFound { .. }) => {
            return Err(RequestError::NotAtOrigin(format!(
                "{what} is not released: {sums_url} answered 404"
            )))
        }
        Err(e) => return Err(RequestError::upstream(&e, &format!("fetching {sums_name}"))),
    };
    let parsed = Sha256Sums::parse(&sums)
        .map_err(|e| RequestError::UpstreamInvalid(format!("{sums_url}: {e}")))?;
    let sums_text = String::from_utf8(sums.to_vec())
        .map_err(|_| RequestError::UpstreamInvalid(format!("{sums_url}: not UTF-8 text")))?;
    let mut signatures = BTreeMap::new();
    let mut key_id = None;
    let mut refused = Vec::new();
    for name in signature_names(source, &sums_name) {
        let url = url_of(&name)?;
        let sig = match client.get_bytes(&url, source.token()).await {
            Ok((bytes, _)) => bytes,
            Err(UpstreamError::NotFound { .. }) => continue,
            Err(e) => return Err(RequestError::upstream(&e, &format!("fetching {name}"))),
        };
        match source.keys.verify(&sums, &sig, "release signing keys") {
            Ok(signed) => {
                key_id = Some(signed.key_id);
                signatures.insert(name, base64::engine::general_purpose::STANDARD.encode(&sig));
            }
            Err(e) => refused.push(format!("{url}: {e}")),
        }
    }
    let Some(key_id) = key_id else {
        let why = if refused.is_empty() {
            format!(
                "the origin publishes no signature ({} answered 404)",
                signature_names(source, &sums_name).join(", ")
            )
        } else {
            refused.join("; ")
        };
        return Err(RequestError::VerificationFailed(format!(
            "{what}: {sums_name} did not verify with releases.{product}'s keys ({}): {why}; nothing was stored",
            source.keys.key_ids().join(", ")
        )));
    };
    let mut extras = BTreeMap::new();
    for name in extra_names(product, &sums_name) {
        let url = url_of(&name)?;
        match client.get_bytes(&url, source.token()).await {
            Ok((bytes, _)) => {
                extras.insert(
                    name,
                    base64::engine::general_purpose::STANDARD.encode(&bytes),
                );
            }
            Err(e) => {
                tracing::debug!(target: super::RELEASES_LOG, %url, error = %e, "not passing on a file the origin does not serve");
            }
        }
    }
    if parsed.names().next().is_none() {
        return Err(RequestError::UpstreamInvalid(format!(
            "{sums_url}: lists no files"
        )));
    }
    Ok(ReleaseRecord {
        product,
        version: version.clone(),
        sums_name,
        sums: sums_text,
        signatures,
        extras,
        key_id,
        verified_at_ms: now_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    #[test]
    fn lists_are_read_as_go_reads_them() {
        let tf = serde_json::json!({
            "name": "terraform",
            "versions": {
                "1.0.3": {"builds": null, "extra": 1},
                "0.12.0-alpha4": {},
                "not-a-version": {},
            },
            "unknown": [1, 2],
        });
        let got = read_list(Product::Terraform, &tf).unwrap();
        assert_eq!(
            got.keys().cloned().collect::<Vec<_>>(),
            [v("0.12.0-alpha4"), v("1.0.3")]
        );
        let null = serde_json::json!({"versions": null});
        assert!(read_list(Product::Terraform, &null).unwrap().is_empty());
        let tofu = serde_json::json!({"versions": [
            {"id": "1.8.0", "files": ["tofu_1.8.0_linux_amd64.zip", null]},
            {"id": "1.9.0-rc1", "files": null, "more": true},
            {"id": null},
        ]});
        let got = read_list(Product::Tofu, &tofu).unwrap();
        assert_eq!(got[&v("1.8.0")], ["tofu_1.8.0_linux_amd64.zip", ""]);
        assert!(got[&v("1.9.0-rc1")].is_empty());
        assert_eq!(got.len(), 2);
        // What Go refuses: a list where an object is wanted.
        let wrong = serde_json::json!({"versions": {"1.8.0": {}}});
        let e = read_list(Product::Tofu, &wrong).unwrap_err();
        assert!(e.to_string().contains("versions"), "{e}");
    }
}
