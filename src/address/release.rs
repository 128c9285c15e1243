//! Names for the CLI releases tfmirror serves: the product (`terraform`,
//! `tofu`) and the file names of a release's artifacts.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{string_name, InvalidName, Platform, Version};

/// A CLI whose releases tfmirror can serve.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Product {
    /// HashiCorp Terraform.
    Terraform,
    /// OpenTofu.
    #[serde(alias = "opentofu")]
    Tofu,
}

impl Product {
    /// Both products, in the order pages list them.
    pub const ALL: [Product; 2] = [Product::Terraform, Product::Tofu];

    /// The product's name in paths, records and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Product::Terraform => "terraform",
            Product::Tofu => "tofu",
        }
    }

    /// The product's name for people.
    pub fn title(self) -> &'static str {
        match self {
            Product::Terraform => "Terraform",
            Product::Tofu => "OpenTofu",
        }
    }

    /// The registry a source address without a hostname names, when the
    /// configuration is read by this product's CLI: `registry.terraform.io`
    /// for Terraform, `registry.opentofu.org` for OpenTofu.
    pub fn default_registry(self) -> &'static str {
        match self {
            Product::Terraform => "registry.terraform.io",
            Product::Tofu => "registry.opentofu.org",
        }
    }

    /// How a release's file names begin: `terraform_`, `tofu_`.
    fn prefix(self) -> &'static str {
        match self {
            Product::Terraform => "terraform_",
            Product::Tofu => "tofu_",
        }
    }

    /// The name of a release's checksum document, `<product>_<version>_SHA256SUMS`.
    pub fn sums_name(self, version: &Version) -> String {
        format!("{}{version}_SHA256SUMS", self.prefix())
    }

    /// The name of a release's zip archive for a platform.
    pub fn zip_name(self, version: &Version, platform: &Platform) -> String {
        format!("{}{version}_{platform}.zip", self.prefix())
    }

    /// The platform of a release archive's file name
    /// (`<product>_<version>_<os>_<arch>.<ext>`), when it names one.
    pub fn platform_of(self, version: &Version, file: &ArtifactName) -> Option<Platform> {
        let rest = file
            .as_str()
            .strip_prefix(self.prefix())?
            .strip_prefix(version.as_str())?
            .strip_prefix('_')?;
        let stem = [".zip", ".tar.gz"]
            .iter()
            .find_map(|ext| rest.strip_suffix(ext))?;
        Platform::parse(stem).ok()
    }
}

impl fmt::Display for Product {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Product {
    type Err = InvalidName;
    fn from_str(s: &str) -> Result<Self, InvalidName> {
        match s {
            "terraform" => Ok(Product::Terraform),
            "tofu" | "opentofu" => Ok(Product::Tofu),
            _ => Err(InvalidName::new(
                "product",
                s,
                "must be \"terraform\" or \"tofu\"",
            )),
        }
    }
}

/// The file name of one artifact of a release (`terraform_1.9.0_linux_amd64.zip`,
/// `tofu_1.8.0_SHA256SUMS.gpgsig`): ASCII letters, digits, `.`, `_`, `-`
/// and `+`, not starting with a dot, at most 200 bytes. Only such names
/// are ever joined into a path or a URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct ArtifactName(String);
string_name!(ArtifactName);

impl ArtifactName {
    /// Checks a release file name.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let err = |reason| InvalidName::new("release file name", given, reason);
        if given.is_empty() || given.len() > 200 {
            return Err(err("must be 1 to 200 bytes"));
        }
        if given.starts_with('.') {
            return Err(err("must not start with a dot"));
        }
        if !given
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+'))
        {
            return Err(err(
                "only ASCII letters, digits, '.', '_', '-' and '+' are allowed",
            ));
        }
        Ok(ArtifactName(given.to_owned()))
    }
}

/// One file of one release, as the store keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReleaseFile {
    /// The product.
    pub product: Product,
    /// The version.
    pub version: Version,
    /// The file's name.
    pub name: ArtifactName,
}

impl ReleaseFile {
    /// The platform of a release file that is a platform's zip (the files
    /// whose executables are read); `None` for anything else.
    pub fn zip_platform(&self) -> Option<Platform> {
        if !self.name.as_str().ends_with(".zip") {
            return None;
        }
        self.product.platform_of(&self.version, &self.name)
    }
}

impl fmt::Display for ReleaseFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {} {}", self.product, self.version, self.name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn artifact_names_are_plain_file_names() {
        for good in [
            "terraform_1.0.3_linux_amd64.zip",
            "tofu_1.8.0_SHA256SUMS.gpgsig",
            "tofu_1.9.0-rc1_darwin_arm64.tar.gz",
        ] {
            assert!(ArtifactName::parse(good).is_ok(), "{good}");
        }
        for bad in ["", ".hidden", "a/b", "a\\b", "..", "a b", "é.zip"] {
            assert!(ArtifactName::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn archive_names_give_their_platform() {
        let v = Version::parse("1.8.0").unwrap();
        let name = |s: &str| ArtifactName::parse(s).unwrap();
        assert_eq!(
            Product::Tofu.platform_of(&v, &name("tofu_1.8.0_linux_arm64.tar.gz")),
            Some(Platform::parse("linux_arm64").unwrap())
        );
        assert_eq!(
            Product::Terraform.platform_of(&v, &name("terraform_1.8.0_windows_386.zip")),
            Some(Platform::parse("windows_386").unwrap())
        );
        assert_eq!(
            Product::Tofu.platform_of(&v, &name("tofu_1.8.0_SHA256SUMS")),
            None
        );
        assert_eq!(
            Product::Tofu.platform_of(&v, &name("tofu_1.8.0_amd64.deb")),
            None
        );
        assert_eq!(
            Product::Terraform.platform_of(&v, &name("tofu_1.8.0_linux_amd64.zip")),
            None
        );
        assert_eq!(
            Product::Terraform.zip_name(&v, &Platform::parse("linux_amd64").unwrap()),
            "terraform_1.8.0_linux_amd64.zip"
        );
        assert_eq!("opentofu".parse::<Product>().unwrap(), Product::Tofu);
        assert!("packer".parse::<Product>().is_err());
    }
}
