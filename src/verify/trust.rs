//! Which signatures count for which providers.
//!
//! By default a provider version's SHA256SUMS must be signed by one of the
//! keys its origin registry lists for it. `[[trust]]` rules narrow that:
//! when a rule matches a provider (its `hostname`, and its `namespace`
//! glob), the signature must be made by a key the rule pins, by ID or from
//! a file of armored keys, whatever the registry lists. A registry that has
//! been taken over cannot then vouch for packages with a key of its own.

use std::path::PathBuf;

use anyhow::Context;

use crate::address::{Hostname, Provider};
use crate::verify::signature::{is_valid_key_id, Keyring, SignatureError, Signed};

/// `[[trust]]`: one key-pinning rule.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct TrustRule {
    /// `hostname`: the registry hostname the rule applies to, e.g.
    /// `"registry.terraform.io"`.
    pub hostname: Hostname,
    /// `namespace`: a glob over provider namespaces (`*` any run of
    /// characters, `?` one character, `[…]` a class), e.g. `"hashicorp"`.
    /// Default `"*"`: every namespace of the host.
    #[serde(default = "any_namespace")]
    pub namespace: String,
    /// `key_ids`: the keys that may sign, as 16-digit key IDs or 40-digit
    /// fingerprints (of the primary key or a subkey). Such keys are taken
    /// from the registry's listing or from `keys_file`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub key_ids: Vec<String>,
    /// `keys_file`: a file of ASCII-armored public keys that may sign
    /// (narrowed further by `key_ids` when both are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keys_file: Option<PathBuf>,
}

fn any_namespace() -> String {
    "*".into()
}

/// A rule ready for use.
#[derive(Debug, Clone)]
struct Rule {
    hostname: Hostname,
    namespace: glob::Pattern,
    key_ids: Vec<String>,
    keys: Option<Keyring>,
}

/// The signature policy: trust rules plus what to do about expired keys.
#[derive(Debug, Clone, Default)]
pub struct TrustPolicy {
    rules: Vec<Rule>,
    reject_expired_keys: bool,
}

impl TrustPolicy {
    /// Compiles `[[trust]]` rules, reading their key files.
    pub fn new(rules: &[TrustRule], reject_expired_keys: bool) -> anyhow::Result<TrustPolicy> {
        let mut compiled = Vec::new();
        for (n, rule) in rules.iter().enumerate() {
            let what = format!(
                "trust rule {} ({} {})",
                n + 1,
                rule.hostname,
                rule.namespace
            );
            let namespace = glob::Pattern::new(&rule.namespace.to_ascii_lowercase())
                .with_context(|| format!("{what}: namespace is not a valid glob"))?;
            if rule.key_ids.is_empty() && rule.keys_file.is_none() {
                anyhow::bail!("{what}: give key_ids, keys_file or both");
            }
            if let Some(bad) = rule.key_ids.iter().find(|id| !is_valid_key_id(id)) {
                anyhow::bail!(
                    "{what}: key_ids entry {bad:?} is not a 16-digit key ID or a 40-digit fingerprint"
                );
            }
            let keys = match &rule.keys_file {
                None => None,
                Some(path) => {
                    let text = std::fs::read_to_string(path)
                        .with_context(|| format!("{what}: reading keys_file {}", path.display()))?;
                    let ring = Keyring::from_armored([text.as_str()]).map_err(|e| {
                        anyhow::anyhow!("{what}: keys_file {}: {e}", path.display())
                    })?;
                    if rule.key_ids.is_empty() {
                        Some(ring)
                    } else {
                        Some(ring.retain_ids(&rule.key_ids).ok_or_else(|| {
                            anyhow::anyhow!(
                                "{what}: keys_file {} holds none of the keys in key_ids",
                                path.display()
                            )
                        })?)
                    }
                }
            };
            compiled.push(Rule {
                hostname: rule.hostname.clone(),
                namespace,
                key_ids: rule.key_ids.clone(),
                keys,
            });
        }
        Ok(TrustPolicy {
            rules: compiled,
            reject_expired_keys,
        })
    }

    /// Whether any rule pins the keys of `provider`.
    pub fn is_pinned(&self, provider: &Provider) -> bool {
        self.matching(provider).next().is_some()
    }

    fn matching<'a>(&'a self, provider: &'a Provider) -> impl Iterator<Item = &'a Rule> + 'a {
        self.rules.iter().filter(|r| {
            r.hostname == provider.hostname && r.namespace.matches(provider.namespace.as_str())
        })
    }

    /// Verifies the signature over a provider version's SHA256SUMS
    /// `document` against the keys that count for `provider`: those pinned
    /// by matching rules, else the registry's `listed` (armored) keys.
    /// Returns the signing key's ID.
    pub fn check(
        &self,
        provider: &Provider,
        document: &[u8],
        signature: &[u8],
        listed: &[String],
    ) -> Result<String, SignatureError> {
        let (ring, source) = self.keyring_for(provider, listed)?;
        let Signed {
            key_id,
            key_expired_at,
        } = ring.verify(document, signature, source)?;
        if let Some(at) = key_expired_at {
            if self.reject_expired_keys {
                return Err(SignatureError::KeyExpired { key: key_id, at });
            }
            tracing::warn!(%provider, key = %key_id, expired_at = at, "SHA256SUMS is signed by an expired key; accepting it as Terraform does (upstream.reject_expired_keys = true refuses it)");
        }
        Ok(key_id)
    }

    /// The keys a signature for `provider` must be made by, and how to
    /// name them in errors.
    fn keyring_for(
        &self,
        provider: &Provider,
        listed: &[String],
    ) -> Result<(Keyring, &'static str), SignatureError> {
        let listed_ring = || Keyring::from_armored(listed.iter().map(String::as_str));
        let mut pinned: Option<Keyring> = None;
        let mut any_rule = false;
        for rule in self.matching(provider) {
            any_rule = true;
            let mut found = rule.keys.clone();
            if !rule.key_ids.is_empty() {
                if let Some(from_registry) =
                    listed_ring().ok().and_then(|r| r.retain_ids(&rule.key_ids))
                {
                    found = Some(match found {
                        Some(f) => f.union(from_registry),
                        None => from_registry,
                    });
                }
            }
            if let Some(found) = found {
                pinned = Some(match pinned {
                    Some(p) => p.union(found),
                    None => found,
                });
            }
        }
        match (any_rule, pinned) {
            (false, _) => Ok((listed_ring()?, "registry's signing keys")),
            (true, Some(ring)) => Ok((ring, "keys pinned by [[trust]] rules")),
            (true, None) => Err(SignatureError::NoPinnedKey(provider.to_string())),
        }
    }
}
