//! Names on OpenTofu's OCI paths: a content digest (`sha256:<hex>`) and
//! a manifest reference (a tag, which is a version with `_` for `+`, or a
//! digest).

use std::fmt;

use super::{InvalidName, Module, Provider, Version};

/// A `sha256:` content digest, lowercase hex: the only algorithm
/// OpenTofu accepts.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(String);

impl Digest {
    /// Parses `sha256:` and 64 lowercase hex digits.
    pub fn parse(given: &str) -> Result<Digest, InvalidName> {
        let hex = given
            .strip_prefix("sha256:")
            .ok_or_else(|| InvalidName::new("digest", given, "expected sha256:<hex>"))?;
        if hex.len() != 64
            || !hex
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
        {
            return Err(InvalidName::new(
                "digest",
                given,
                "expected 64 lowercase hex digits after sha256:",
            ));
        }
        Ok(Digest(given.to_owned()))
    }

    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Digest {
        Digest(format!(
            "sha256:{}",
            crate::verify::hex(&crate::verify::Sha256::digest(bytes))
        ))
    }

    /// The digest of content whose SHA-256 is `hex` (lowercase).
    pub fn from_sha256_hex(hex: &str) -> Result<Digest, InvalidName> {
        Digest::parse(&format!("sha256:{hex}"))
    }

    /// `sha256:<hex>`.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The hex digits alone.
    pub fn hex(&self) -> &str {
        &self.0["sha256:".len()..]
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a manifest request names: a tag or a digest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reference {
    /// A version, written as a tag.
    Tag(Version),
    /// A manifest's digest.
    Digest(Digest),
}

impl Reference {
    /// Parses a digest (`sha256:…`) or a tag (a version, `_` for `+`).
    pub fn parse(given: &str) -> Result<Reference, InvalidName> {
        if given.contains(':') {
            return Digest::parse(given).map(Reference::Digest);
        }
        Version::parse(&given.replace('_', "+")).map(Reference::Tag)
    }
}

/// An OCI repository the mirror serves: a provider's
/// (`<hostname>/<namespace>/<type>`) or a registry module's
/// (`<hostname>/<namespace>/<name>/<system>`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OciRepo {
    /// A provider's versions, each an image index.
    Provider(Provider),
    /// A module's versions, each an image manifest.
    Module(Module),
}

impl fmt::Display for OciRepo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OciRepo::Provider(p) => write!(f, "{}/{}/{}", p.hostname, p.namespace, p.kind),
            OciRepo::Module(m) => {
                write!(f, "{}/{}/{}/{}", m.hostname, m.namespace, m.name, m.system)
            }
        }
    }
}

/// A version as an OCI tag: `+` is not allowed in tags, so it is written
/// `_`, as OpenTofu reads it.
pub fn tag_of(version: &Version) -> String {
    version.as_str().replace('+', "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_references_are_validated() {
        let hex = "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a";
        assert_eq!(Digest::of(b"{}").hex(), hex);
        assert!(Digest::parse(&format!("sha256:{hex}")).is_ok());
        for bad in [
            hex.to_owned(),
            format!("sha512:{hex}"),
            format!("sha256:{}", hex.to_uppercase()),
            "sha256:abc".to_owned(),
        ] {
            assert!(Digest::parse(&bad).is_err(), "{bad}");
        }
        let v = Version::parse("1.2.3+build.4").unwrap();
        assert_eq!(tag_of(&v), "1.2.3_build.4");
        assert_eq!(
            Reference::parse("1.2.3_build.4").unwrap(),
            Reference::Tag(v)
        );
        assert!(Reference::parse("latest").is_err());
    }
}
