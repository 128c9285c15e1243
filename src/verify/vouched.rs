//! How a provider version's SHA256SUMS came to be trusted: signed by a key
//! the registry listed, signed by a key an operator pinned, or published
//! without any key and accepted after every other check (keyless, which
//! only `registry.opentofu.org` may be opted into). The label travels with
//! each stored version record, into bundles, listings, metrics and logs,
//! so that a keyless version is never mistaken for a signed one.

use serde::{Deserialize, Serialize};

/// The one registry host whose keyless providers may be accepted: the
/// OpenTofu Registry, where OpenTofu itself skips the signature check for
/// providers published without a key.
pub const KEYLESS_HOST: &str = "registry.opentofu.org";

/// How a version's SHA256SUMS was vouched for.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
)]
#[serde(rename_all = "kebab-case")]
pub enum Verification {
    /// Signed by a key the registry listed for the provider. Records kept
    /// before labels existed read as this.
    #[default]
    Signed,
    /// Signed by a key an operator pinned with a `[[trust]]` rule.
    PinnedKey,
    /// Published without a signing key: the signature file was fetched
    /// but no key can check it; every other check passed, and the version
    /// is pinned on first sight.
    Keyless,
}

impl Verification {
    /// The label's name, as configuration, metrics and JSON spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            Verification::Signed => "signed",
            Verification::PinnedKey => "pinned-key",
            Verification::Keyless => "keyless",
        }
    }

    /// Reads a label's name.
    pub fn parse(name: &str) -> Option<Verification> {
        [
            Verification::Signed,
            Verification::PinnedKey,
            Verification::Keyless,
        ]
        .into_iter()
        .find(|v| v.as_str() == name)
    }

    /// Says in words how a version was verified, naming the key.
    pub fn describe(self, key_id: &str) -> String {
        match self {
            Verification::Signed => format!("signed by key {key_id} (listed by the registry)"),
            Verification::PinnedKey => format!("signed by pinned key {key_id}"),
            Verification::Keyless => {
                "keyless (no signing key published; checksums, sizes and hashes checked and pinned)"
                    .to_owned()
            }
        }
    }

    /// Whether this is the default label (left out of stored records).
    pub fn is_signed(&self) -> bool {
        *self == Verification::Signed
    }

    /// The weaker of two labels: keyless, then signed by a listed key,
    /// then signed by a pinned key.
    #[must_use]
    pub fn weaker(self, other: Verification) -> Verification {
        let rank = |v: Verification| match v {
            Verification::Keyless => 0,
            Verification::Signed => 1,
            Verification::PinnedKey => 2,
        };
        if rank(other) < rank(self) {
            other
        } else {
            self
        }
    }
}

impl std::fmt::Display for Verification {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What vouched for a SHA256SUMS document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vouched {
    /// The ID of the key that made the signature; empty when keyless.
    pub key_id: String,
    /// How.
    pub verification: Verification,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_round_trip_and_the_weakest_wins() {
        for v in [
            Verification::Signed,
            Verification::PinnedKey,
            Verification::Keyless,
        ] {
            assert_eq!(Verification::parse(v.as_str()), Some(v));
            let json = serde_json::to_string(&v).unwrap();
            assert_eq!(json, format!("\"{}\"", v.as_str()));
        }
        assert_eq!(Verification::parse("unsigned"), None);
        assert_eq!(
            Verification::PinnedKey.weaker(Verification::Keyless),
            Verification::Keyless
        );
        assert_eq!(
            Verification::PinnedKey.weaker(Verification::Signed),
            Verification::Signed
        );
        assert_eq!(
            Verification::Signed.weaker(Verification::PinnedKey),
            Verification::Signed
        );
        assert!(Verification::Keyless.describe("").contains("keyless"));
        assert!(Verification::PinnedKey
            .describe("ABCD")
            .contains("pinned key ABCD"));
    }
}
