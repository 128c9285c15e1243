//! `[releases]`: which CLI releases the mirror serves, where each product
//! comes from, which versions and platforms it keeps, and which keys must
//! have signed them.

use anyhow::{bail, Context as _};
use url::Url;

use crate::address::{Platform, Product, Version};
use crate::constraints::Constraints;
use crate::verify::signature::Keyring;

pub use crate::config::releases::{ProductSource, ReleasesConfig};

/// HashiCorp's release signing key (fingerprint
/// `C874 011F 0AB4 0511 0D02 1055 3436 5D94 72D7 468F`), with the
/// expiry HashiCorp extended to 2030.
pub const HASHICORP_KEY: &str = include_str!("../../keys/hashicorp-release.asc");
/// OpenTofu's release signing key (fingerprint
/// `E3E6 E43D 84CB 852E ADB0 051D 0C0A F313 E5FD 9F80`).
pub const OPENTOFU_KEY: &str = include_str!("../../keys/opentofu-release.asc");

/// One product's source, checked and compiled.
#[derive(Debug, Clone)]
pub struct Source {
    /// The product.
    pub product: Product,
    /// The origin's version list.
    pub list_url: Url,
    /// The download URL template.
    download_url: String,
    /// The versions served.
    pub versions: Option<Constraints>,
    /// The platforms served (empty: all).
    pub platforms: Vec<Platform>,
    /// The keys that may sign the checksums.
    pub keys: Keyring,
    /// The bearer token for the origin's hosts, if one is configured.
    token: Option<Token>,
}

/// A bearer token, kept out of debug output.
#[derive(Clone)]
struct Token(String);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Source {
    /// The URL of a release file at the origin.
    pub fn download_url(&self, version: &Version, artifact: &str) -> anyhow::Result<Url> {
        let url = self
            .download_url
            .replace("{version}", version.as_str())
            .replace("{artifact}", artifact);
        Url::parse(&url).with_context(|| format!("{url:?} is not a URL"))
    }

    /// The bearer token sent to the origin's hosts, if one is configured.
    pub fn token(&self) -> Option<&str> {
        self.token.as_ref().map(|t| t.0.as_str())
    }

    /// Whether `version` is served.
    pub fn serves_version(&self, version: &Version) -> bool {
        self.versions
            .as_ref()
            .is_none_or(|c| c.allows(version.semver()))
    }

    /// Whether archives for `platform` are served.
    pub fn serves_platform(&self, platform: &Platform) -> bool {
        self.platforms.is_empty() || self.platforms.contains(platform)
    }
}

impl ReleasesConfig {
    /// The source of `product`'s releases, as configured.
    pub fn source_config(&self, product: Product) -> &ProductSource {
        match product {
            Product::Terraform => &self.terraform,
            Product::Tofu => &self.tofu,
        }
    }

    /// The enabled products' sources, checked: the URLs, the constraint and
    /// the keys, with errors naming the key.
    pub fn sources(&self) -> anyhow::Result<Vec<Source>> {
        let mut out = Vec::new();
        for &product in &self.products {
            if out.iter().any(|s: &Source| s.product == product) {
                continue;
            }
            out.push(self.source_for(product)?);
        }
        Ok(out)
    }

    /// `product`'s source as configured, checked, whether or not
    /// `products` enables it (`tfmirror verify` checks what the store
    /// holds of a product no longer served).
    pub fn source_for(&self, product: Product) -> anyhow::Result<Source> {
        let what = format!("releases.{product}");
        let given = self.source_config(product);
        if !matches!(given.list_url.scheme(), "https" | "http") {
            bail!("{what}.list_url: {} must be an https URL", given.list_url);
        }
        if !given.download_url.contains("{artifact}") {
            bail!(
                "{what}.download_url: {:?} must contain {{artifact}} (and usually {{version}})",
                given.download_url
            );
        }
        let probe = given
            .download_url
            .replace("{version}", "1.0.0")
            .replace("{artifact}", "file");
        match Url::parse(&probe) {
            Ok(u) if matches!(u.scheme(), "https" | "http") => {}
            _ => bail!(
                "{what}.download_url: {:?} is not an https URL template",
                given.download_url
            ),
        }
        let versions = given
            .versions
            .as_deref()
            .map(Constraints::parse)
            .transpose()
            .with_context(|| format!("{what}.versions"))?;
        let keys = if given.key_files.is_empty() {
            let builtin = match product {
                Product::Terraform => HASHICORP_KEY,
                Product::Tofu => OPENTOFU_KEY,
            };
            Keyring::from_armored([builtin]).context("the built-in release key")?
        } else {
            let mut texts = Vec::new();
            for file in &given.key_files {
                texts
                    .push(std::fs::read_to_string(file).with_context(|| {
                        format!("{what}.key_files: reading {}", file.display())
                    })?);
            }
            Keyring::from_armored(texts.iter().map(String::as_str))
                .with_context(|| format!("{what}.key_files"))?
        };
        let token = crate::upstream::credentials::configured_token(
            given.token.as_deref(),
            given.token_file.as_deref(),
            &format!("{what}.token_file"),
        )?
        .map(Token);
        Ok(Source {
            product,
            list_url: given.list_url.clone(),
            download_url: given.download_url.clone(),
            versions,
            platforms: given.platforms.clone(),
            keys,
            token,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_in_keys_are_the_vendors() {
        let config = ReleasesConfig {
            products: vec![Product::Terraform, Product::Tofu],
            ..ReleasesConfig::default()
        };
        let sources = config.sources().unwrap();
        assert_eq!(sources[0].keys.key_ids(), ["34365D9472D7468F"]);
        assert_eq!(sources[1].keys.key_ids(), ["0C0AF313E5FD9F80"]);
        let v = Version::parse("1.8.0").unwrap();
        assert_eq!(
            sources[1]
                .download_url(&v, "tofu_1.8.0_SHA256SUMS")
                .unwrap()
                .as_str(),
            "https://github.com/opentofu/opentofu/releases/download/v1.8.0/tofu_1.8.0_SHA256SUMS"
        );
    }

    #[test]
    fn mistakes_are_named_by_key() {
        let mut config = ReleasesConfig {
            products: vec![Product::Tofu],
            ..ReleasesConfig::default()
        };
        config.tofu.download_url = "https://example.com/{version}/".into();
        let e = format!("{:#}", config.sources().unwrap_err());
        assert!(e.contains("releases.tofu.download_url"), "{e}");
        config.tofu = ProductSource::official(Product::Tofu);
        config.tofu.versions = Some(">= nonsense".into());
        let e = format!("{:#}", config.sources().unwrap_err());
        assert!(e.contains("releases.tofu.versions"), "{e}");
        config.tofu = ProductSource::official(Product::Tofu);
        config.tofu.key_files = vec!["/nonexistent/key.asc".into()];
        let e = format!("{:#}", config.sources().unwrap_err());
        assert!(e.contains("releases.tofu.key_files"), "{e}");
    }

    #[test]
    fn a_token_is_read_from_its_file_and_kept_out_of_debug_output() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("upper.token");
        std::fs::write(&file, "s3cret-between-tiers\n").unwrap();
        let mut config = ReleasesConfig {
            products: vec![Product::Tofu],
            ..ReleasesConfig::default()
        };
        assert_eq!(config.sources().unwrap()[0].token(), None);
        config.tofu.token_file = Some(file);
        let source = config.sources().unwrap().remove(0);
        assert_eq!(source.token(), Some("s3cret-between-tiers"));
        assert!(!format!("{source:?}").contains("s3cret"));
        config.tofu.token = Some("inline ".into());
        assert_eq!(config.sources().unwrap()[0].token(), Some("inline"));
        config.tofu.token = None;
        config.tofu.token_file = Some(dir.path().join("missing"));
        let e = format!("{:#}", config.sources().unwrap_err());
        assert!(e.contains("releases.tofu.token_file"), "{e}");
    }
}
