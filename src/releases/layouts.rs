//! The documents version managers read, rendered from verified records:
//!
//! - Terraform, as releases.hashicorp.com lays it out: `/terraform/index.json`
//!   (hc-install, tenv's API mode, tfswitch), `/terraform/<v>/index.json`
//!   (hc-install, tenv) with build URLs into this mirror, and the HTML
//!   listing `/terraform/` whose links name each version (tfenv greps the
//!   versions out of it, tenv reads the `href`s, tfswitch matches `/<v>/"`);
//! - OpenTofu: TofuDL's `/tofu/api.json` (tenv's and tfswitch's mirror
//!   mode, TofuDL) and the GitHub release listing
//!   `/opentofu/opentofu/releases/download/` whose links are `…/v<v>/`
//!   (tenv's HTML list mode).
//!
//! Listings put the newest version first and hold no other version-like
//! text, since some readers take every match in the page.

use serde_json::{json, Value};

use super::Source;
use crate::address::{ArtifactName, Product, Version};
use crate::store::{ReleaseIndexRecord, ReleaseRecord};
use crate::verify::Sha256Sums;

/// Versions newest first.
fn newest_first(list: &ReleaseIndexRecord) -> Vec<&Version> {
    list.versions.keys().rev().collect()
}

/// `/terraform/index.json`: every version, by name.
pub fn product_index(list: &ReleaseIndexRecord) -> Value {
    let product = list.product.as_str();
    let versions: serde_json::Map<String, Value> = list
        .versions
        .keys()
        .map(|v| {
            (
                v.to_string(),
                json!({ "name": product, "version": v.as_str() }),
            )
        })
        .collect();
    json!({ "name": product, "versions": versions })
}

/// The files of a release this mirror serves: the archives its signed
/// checksums list (for the served platforms), the checksums, and their
/// signatures and the files passed on beside them.
pub fn served_files(record: &ReleaseRecord, source: &Source) -> Vec<String> {
    let mut files: Vec<String> = Sha256Sums::parse(record.sums.as_bytes())
        .map(|sums| {
            sums.names()
                .filter(|name| {
                    let Ok(name) = ArtifactName::parse(name) else {
                        return false;
                    };
                    record
                        .product
                        .platform_of(&record.version, &name)
                        .is_none_or(|p| source.serves_platform(&p))
                })
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    files.push(record.sums_name.clone());
    files.extend(record.signatures.keys().cloned());
    files.extend(record.extras.keys().cloned());
    files.sort();
    files
}

/// `/terraform/<v>/index.json`: the release's checksum and signature names
/// and its zip builds, with URLs under `base` (this mirror's URL, no
/// trailing slash).
pub fn version_index(record: &ReleaseRecord, source: &Source, base: &str) -> Value {
    let product = record.product.as_str();
    let version = record.version.as_str();
    let builds: Vec<Value> = served_files(record, source)
        .iter()
        .filter(|f| f.ends_with(".zip"))
        .filter_map(|f| {
            let name = ArtifactName::parse(f).ok()?;
            let platform = record.product.platform_of(&record.version, &name)?;
            Some(json!({
                "name": product,
                "version": version,
                "os": platform.os(),
                "arch": platform.arch(),
                "filename": f,
                "url": format!("{base}/{product}/{version}/{f}"),
            }))
        })
        .collect();
    let signatures: Vec<&String> = record.signatures.keys().collect();
    // The key-ID-named signature first, as releases.hashicorp.com gives it.
    let preferred = signatures
        .iter()
        .find(|s| s.matches('.').count() > 1)
        .or_else(|| signatures.first())
        .map_or("", |s| s.as_str());
    json!({
        "name": product,
        "version": version,
        "shasums": record.sums_name,
        "shasums_signature": preferred,
        "shasums_signatures": signatures,
        "builds": builds,
    })
}

/// `/tofu/api.json`: TofuDL's list, newest first, each version with the
/// files its origin listed (or, for a release held here, the files this
/// mirror serves of it).
pub fn api_json(
    list: &ReleaseIndexRecord,
    held: &dyn Fn(&Version) -> Option<Vec<String>>,
) -> Value {
    let versions: Vec<Value> = newest_first(list)
        .into_iter()
        .map(|v| {
            let files = held(v).unwrap_or_else(|| {
                list.versions[v]
                    .iter()
                    .filter(|f| ArtifactName::parse(f).is_ok())
                    .cloned()
                    .collect()
            });
            json!({ "id": v.as_str(), "files": files })
        })
        .collect();
    json!({ "versions": versions })
}

/// Where a product's HTML listing links each version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ListingStyle {
    /// `/terraform/<v>/`, `/tofu/<v>/`.
    Plain,
    /// `/opentofu/opentofu/releases/download/v<v>/`, as GitHub names tags.
    GithubTags,
}

/// An HTML listing of links, as version managers read them
/// (`templates/listing.html`; every value escaped).
#[derive(askama::Template)]
#[template(path = "listing.html")]
struct Listing {
    title: String,
    links: Vec<(String, String)>,
}

impl Listing {
    fn render(&self) -> String {
        askama::Template::render(self).expect("a listing renders")
    }
}

/// The HTML listing of a product's versions, newest first.
pub fn listing(list: &ReleaseIndexRecord, style: ListingStyle) -> String {
    let product = list.product;
    let links = (newest_first(list).into_iter())
        .map(|v| match style {
            ListingStyle::Plain => (format!("/{product}/{v}/"), format!("{product}_{v}")),
            ListingStyle::GithubTags => (
                format!("/opentofu/opentofu/releases/download/v{v}/"),
                format!("v{v}"),
            ),
        })
        .collect();
    Listing {
        title: format!("{} releases", product.title()),
        links,
    }
    .render()
}

/// The HTML listing of one release's files.
pub fn version_listing(record: &ReleaseRecord, source: &Source) -> String {
    let (product, version) = (record.product, &record.version);
    Listing {
        title: format!("{} {version}", product.title()),
        links: (served_files(record, source).into_iter())
            .map(|f| (format!("/{product}/{version}/{f}"), f.clone()))
            .collect(),
    }
    .render()
}

/// The content type a release file is served with.
pub fn content_type(name: &ArtifactName) -> &'static str {
    let name = name.as_str();
    if name.ends_with(".zip") {
        "application/zip"
    } else if name.ends_with(".tar.gz") {
        "application/gzip"
    } else if name.ends_with("SHA256SUMS") || name.ends_with(".pem") {
        "text/plain; charset=utf-8"
    } else {
        "application/octet-stream"
    }
}

/// What a product's listing pages are called, for the status page.
pub fn listing_path(product: Product) -> &'static str {
    match product {
        Product::Terraform => "/terraform/",
        Product::Tofu => "/tofu/api.json",
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::releases::ReleasesConfig;

    fn v(s: &str) -> Version {
        Version::parse(s).unwrap()
    }

    fn list(product: Product, versions: &[&str]) -> ReleaseIndexRecord {
        ReleaseIndexRecord {
            product,
            fetched_at_ms: 1,
            versions: versions.iter().map(|s| (v(s), Vec::new())).collect(),
        }
    }

    fn source(product: Product, platforms: &[&str]) -> Source {
        let mut config = ReleasesConfig {
            products: vec![product],
            ..ReleasesConfig::default()
        };
        config.terraform.platforms = platforms
            .iter()
            .map(|p| crate::address::Platform::parse(p).unwrap())
            .collect();
        config.sources().unwrap().remove(0)
    }

    fn record() -> ReleaseRecord {
        ReleaseRecord {
            product: Product::Terraform,
            version: v("1.0.3"),
            sums_name: "terraform_1.0.3_SHA256SUMS".into(),
            sums: format!(
                "{a}  terraform_1.0.3_linux_amd64.zip\n{a}  terraform_1.0.3_darwin_arm64.zip\n",
                a = "a".repeat(64)
            ),
            signatures: BTreeMap::from([
                (
                    "terraform_1.0.3_SHA256SUMS.72D7468F.sig".into(),
                    String::new(),
                ),
                ("terraform_1.0.3_SHA256SUMS.sig".into(), String::new()),
            ]),
            extras: BTreeMap::new(),
            key_id: "34365D9472D7468F".into(),
            verified_at_ms: 1,
        }
    }

    #[test]
    fn listings_put_the_newest_first_and_name_nothing_else() {
        let l = list(
            Product::Terraform,
            &["0.15.5", "1.10.0", "1.9.8", "1.10.0-rc1"],
        );
        let page = listing(&l, ListingStyle::Plain);
        // tfenv's pattern, in page order.
        let re =
            regex::Regex::new(r"[0-9]+\.[0-9]+\.[0-9]+(-(rc|beta|alpha|oci)-?[0-9]*)?").unwrap();
        let mut found: Vec<&str> = re.find_iter(&page).map(|m| m.as_str()).collect();
        found.dedup();
        assert_eq!(found, ["1.10.0", "1.10.0-rc1", "1.9.8", "0.15.5"]);
        // tfswitch's pattern for released versions.
        let re = regex::Regex::new(r#"/?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)/?""#).unwrap();
        assert_eq!(re.find_iter(&page).count(), 3);
        let tofu = listing(&list(Product::Tofu, &["1.8.0"]), ListingStyle::GithubTags);
        assert!(
            tofu.contains("href=\"/opentofu/opentofu/releases/download/v1.8.0/\""),
            "{tofu}"
        );
    }

    #[test]
    fn a_version_index_lists_the_served_builds_under_the_mirror() {
        let doc = version_index(
            &record(),
            &source(Product::Terraform, &["linux_amd64"]),
            "http://m:1",
        );
        assert_eq!(
            doc["shasums_signature"],
            "terraform_1.0.3_SHA256SUMS.72D7468F.sig"
        );
        assert_eq!(doc["shasums_signatures"].as_array().unwrap().len(), 2);
        let builds = doc["builds"].as_array().unwrap();
        assert_eq!(builds.len(), 1, "{doc}");
        assert_eq!(
            builds[0]["url"],
            "http://m:1/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip"
        );
        assert_eq!(builds[0]["os"], "linux");
        let all = version_index(&record(), &source(Product::Terraform, &[]), "http://m:1");
        assert_eq!(all["builds"].as_array().unwrap().len(), 2);
    }

    #[test]
    fn api_json_is_newest_first_with_files() {
        let mut l = list(Product::Tofu, &["1.7.0", "1.8.0"]);
        l.versions.insert(
            v("1.7.0"),
            vec!["tofu_1.7.0_linux_amd64.zip".into(), "../x".into()],
        );
        let doc = api_json(&l, &|ver| {
            (ver.as_str() == "1.8.0").then(|| vec!["held".into()])
        });
        assert_eq!(doc["versions"][0]["id"], "1.8.0");
        assert_eq!(doc["versions"][0]["files"], json!(["held"]));
        assert_eq!(
            doc["versions"][1]["files"],
            json!(["tofu_1.7.0_linux_amd64.zip"])
        );
        let total = product_index(&list(Product::Terraform, &["1.0.3"]));
        assert_eq!(total["versions"]["1.0.3"]["version"], "1.0.3");
    }
}
