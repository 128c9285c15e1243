//! A provider documentation page's name as a path segment
//! (`/-/providers/…/VERSION/docs/resource/s3_bucket`).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use super::{string_name, InvalidName};

/// The longest page name kept (registry.opentofu.org's bound).
pub const MAX_DOC_NAME: usize = 255;

/// A documentation page's name: `s3_bucket`, `terraform-migration`;
/// `index` for a version's overview. ASCII letters, digits, space, `.`,
/// `_`, `@` and `-`, at most [`MAX_DOC_NAME`] bytes, not starting with a
/// dot: the names registries give their documents, none of which can
/// leave a folder or need more than a space escaped in a URL.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct DocName(String);
string_name!(DocName);

impl DocName {
    /// Checks a page name.
    pub fn parse(given: &str) -> Result<Self, InvalidName> {
        let bad = |reason| Err(InvalidName::new("documentation page name", given, reason));
        if given.is_empty() || given.len() > MAX_DOC_NAME {
            return bad("must be 1 to 255 characters");
        }
        if given.starts_with('.') {
            return bad("must not start with a dot");
        }
        if !given
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b' ' | b'.' | b'_' | b'@' | b'-'))
        {
            return bad("may hold only letters, digits, space, '.', '_', '@' and '-'");
        }
        Ok(DocName(given.to_owned()))
    }

    /// The name of a version's overview page.
    pub fn index() -> Self {
        DocName("index".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::{DocName, MAX_DOC_NAME};

    #[test]
    fn page_names_are_those_a_path_may_hold() {
        for good in [
            "resource",
            "s3_bucket",
            "terraform-migration",
            "v1.2",
            "a b",
            "x@y",
        ] {
            assert_eq!(DocName::parse(good).unwrap().as_str(), good);
        }
        let long = "a".repeat(MAX_DOC_NAME + 1);
        for bad in [
            "",
            ".hidden",
            "..",
            "a/b",
            "a\\b",
            "a%2fb",
            "é",
            "a\nb",
            long.as_str(),
        ] {
            assert!(DocName::parse(bad).is_err(), "{bad:?}");
        }
        assert!(DocName::parse(&"a".repeat(MAX_DOC_NAME)).is_ok());
        assert_eq!(DocName::index().as_str(), "index");
        assert!(serde_json::from_str::<DocName>("\"../x\"").is_err());
    }
}
