//! `[releases]`: which CLI releases the mirror serves and where each comes
//! from (checked and compiled by [`crate::releases`]).

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use url::Url;

use crate::address::{Platform, Product};

/// `[releases]`: Terraform and OpenTofu CLI releases, verified against the
/// vendor's key and served in the layouts version managers read. Off
/// until `products` names a product, like any origin a site has not
/// allowed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ReleasesConfig {
    /// `products`: the CLIs served, `"terraform"` and/or `"tofu"`. Default
    /// none: release paths answer 404.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub products: Vec<Product>,
    /// `[releases.terraform]`: where Terraform's releases come from.
    pub terraform: ProductSource,
    /// `[releases.tofu]`: where OpenTofu's releases come from.
    pub tofu: ProductSource,
}

impl Default for ReleasesConfig {
    fn default() -> Self {
        ReleasesConfig {
            products: Vec::new(),
            terraform: ProductSource::official(Product::Terraform),
            tofu: ProductSource::official(Product::Tofu),
        }
    }
}

/// Where one product's releases come from, and what of them is kept.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProductSource {
    /// `list_url`: the origin's list of versions: a HashiCorp-style product
    /// `index.json` for Terraform (default
    /// `https://releases.hashicorp.com/terraform/index.json`), a TofuDL
    /// `api.json` for OpenTofu (default `https://get.opentofu.org/tofu/api.json`).
    /// Another tfmirror serves both (`https://mirror/terraform/index.json`,
    /// `https://mirror/tofu/api.json`).
    pub list_url: Url,
    /// `download_url`: where a release's files are, with `{version}` and
    /// `{artifact}` in place of the version and the file name. Default
    /// `https://releases.hashicorp.com/terraform/{version}/{artifact}` and
    /// `https://github.com/opentofu/opentofu/releases/download/v{version}/{artifact}`.
    pub download_url: String,
    /// `versions`: a version constraint (`">= 1.5.0"`) the versions served
    /// must meet; others are neither listed nor fetched. Default: all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
    /// `platforms`: the platforms whose archives are served and synced
    /// (`["linux_amd64"]`). Default: all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub platforms: Vec<Platform>,
    /// `key_files`: ASCII-armored public keys that may sign the release
    /// checksums, replacing the vendor's key built into tfmirror (for
    /// self-built binaries, or after a key rotation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_files: Vec<PathBuf>,
    /// `token`: a bearer token sent with every request to the hosts of
    /// `list_url` and `download_url` (never after a redirect to another
    /// host), for an upper tier's release paths behind `[auth]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// `token_file`: a file holding that token, read at start.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
}

impl ProductSource {
    /// The vendor's own release site.
    pub fn official(product: Product) -> ProductSource {
        let (list, download) = match product {
            Product::Terraform => (
                "https://releases.hashicorp.com/terraform/index.json",
                "https://releases.hashicorp.com/terraform/{version}/{artifact}",
            ),
            Product::Tofu => (
                "https://get.opentofu.org/tofu/api.json",
                "https://github.com/opentofu/opentofu/releases/download/v{version}/{artifact}",
            ),
        };
        ProductSource {
            list_url: Url::parse(list).expect("the official list URLs parse"),
            download_url: download.to_owned(),
            versions: None,
            platforms: Vec::new(),
            key_files: Vec::new(),
            token: None,
            token_file: None,
        }
    }
}
