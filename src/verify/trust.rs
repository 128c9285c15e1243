//! Which signatures count for which providers.
//!
//! By default a provider version's SHA256SUMS must be signed by one of the
//! keys its origin registry lists for it. `[[trust]]` rules narrow that:
//! when a rule matches a provider (its `hostname`, and its `namespace`
//! glob), the signature must be made by a key the rule pins, by ID or from
//! a file of armored keys, whatever the registry lists. A registry that has
//! been taken over cannot then vouch for packages with a key of its own.
//!
//! A rule whose keys come from `keys_file` also turns a provider the
//! registry publishes without any key into a signed one ("pinned key").
//! Without such a rule, a version whose registry lists no key is refused,
//! unless its host is `registry.opentofu.org` and the operator opted in
//! (`unsigned = "checked"`, optionally narrowed by `unsigned_sources`): it
//! is then labelled keyless, and the mirror's other checks and its pin on
//! first sight stand in for the signature.

use std::path::PathBuf;

use anyhow::Context;

use crate::address::{Hostname, Provider};
use crate::verify::signature::{is_valid_key_id, Keyring, SignatureError, Signed};
use crate::verify::vouched::{Verification, Vouched, KEYLESS_HOST};

/// `unsigned`: what becomes of a provider version whose registry lists no
/// signing key.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unsigned {
    /// Refused, naming the setting that would accept it (the default).
    #[default]
    Refuse,
    /// Accepted after every check that can be made without a key, pinned
    /// on first sight and labelled keyless. Only `registry.opentofu.org`.
    Checked,
}

impl Unsigned {
    /// Whether this is the default, `refuse`.
    pub fn is_refuse(&self) -> bool {
        *self == Unsigned::Refuse
    }
}

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

/// How the keys of matching `[[trust]]` rules are named in errors.
const PINNED: &str = "keys pinned by [[trust]] rules";

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

/// The signature policy: trust rules, what to do about expired keys, and
/// which keyless providers may be accepted.
#[derive(Debug, Clone, Default)]
pub struct TrustPolicy {
    rules: Vec<Rule>,
    reject_expired_keys: bool,
    /// Hosts opted into keyless providers, each with the `namespace/type`
    /// globs it is narrowed to (none: every provider of the host).
    keyless: Vec<(Hostname, Vec<[glob::Pattern; 2]>)>,
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
            keyless: Vec::new(),
        })
    }

    /// Opts `hostname` into keyless providers (`unsigned = "checked"`),
    /// narrowed to the `sources` globs over `namespace/type` when any are
    /// given. Only `registry.opentofu.org` may be opted in: it is the one
    /// registry whose clients install keyless providers themselves.
    pub fn allow_keyless(
        mut self,
        hostname: &Hostname,
        sources: &[String],
    ) -> anyhow::Result<TrustPolicy> {
        let setting = format!("upstream.hosts.\"{hostname}\".unsigned");
        if hostname.as_str() != KEYLESS_HOST {
            anyhow::bail!(
                "{setting} = \"checked\" is allowed only for {KEYLESS_HOST}: OpenTofu skips the signature check only for providers of that registry, and Terraform never does, so keyless answers from any other host are always refused"
            );
        }
        let mut globs = Vec::with_capacity(sources.len());
        for source in sources {
            let lowered = source.trim().to_ascii_lowercase();
            let parts: Vec<&str> = lowered.split('/').collect();
            let [namespace, kind] = parts.as_slice() else {
                anyhow::bail!(
                    "{setting}_sources: {source:?} must be namespace/type (each a glob), e.g. \"netbirdio/*\""
                );
            };
            let compile = |part: &str| {
                glob::Pattern::new(part).with_context(|| {
                    format!("{setting}_sources: {source:?}: {part:?} is not a valid glob")
                })
            };
            globs.push([compile(namespace)?, compile(kind)?]);
        }
        self.keyless.push((hostname.clone(), globs));
        Ok(self)
    }

    /// Whether a version of `provider` published without a signing key may
    /// be accepted (its host opted in, and the provider among its sources).
    pub fn keyless_allowed(&self, provider: &Provider) -> bool {
        self.keyless.iter().any(|(host, globs)| {
            *host == provider.hostname
                && (globs.is_empty()
                    || globs.iter().any(|[ns, kind]| {
                        ns.matches(&provider.namespace.as_str().to_ascii_lowercase())
                            && kind.matches(&provider.kind.as_str().to_ascii_lowercase())
                    }))
        })
    }

    /// Why a keyless version of `provider` is refused, naming the setting
    /// that would accept it where one can.
    fn keyless_refusal(&self, provider: &Provider) -> SignatureError {
        let host = provider.hostname.as_str();
        let remedy = if host != KEYLESS_HOST {
            format!(
                "keyless providers are accepted only from {KEYLESS_HOST}; pin the author's key with a [[trust]] rule (hostname = \"{host}\", namespace = \"{}\", keys_file = …) to install it",
                provider.namespace
            )
        } else if self.keyless.iter().any(|(h, _)| h.as_str() == host) {
            format!(
                "it is not among upstream.hosts.\"{host}\".unsigned_sources; add \"{}/{}\" there, or pin the author's key with a [[trust]] rule",
                provider.namespace, provider.kind
            )
        } else {
            format!(
                "set upstream.hosts.\"{host}\".unsigned = \"checked\" to install keyless providers after every other check, or pin the author's key with a [[trust]] rule"
            )
        };
        SignatureError::Keyless {
            provider: provider.to_string(),
            remedy,
        }
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
    /// Returns the signing key's ID and how it vouched. When the registry
    /// lists no key (blank entries count as none) and no rule pins one, the
    /// version is keyless: accepted as such where the host opted in,
    /// refused otherwise.
    pub fn check(
        &self,
        provider: &Provider,
        document: &[u8],
        signature: &[u8],
        listed: &[String],
    ) -> Result<Vouched, SignatureError> {
        if listed.iter().all(|k| k.trim().is_empty()) && !self.is_pinned(provider) {
            if self.keyless_allowed(provider) {
                return Ok(Vouched {
                    key_id: String::new(),
                    verification: Verification::Keyless,
                });
            }
            return Err(self.keyless_refusal(provider));
        }
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
        let verification = if source == PINNED {
            Verification::PinnedKey
        } else {
            Verification::Signed
        };
        Ok(Vouched {
            key_id,
            verification,
        })
    }

    /// The keys a signature for `provider` must be made by, and how to
    /// name them in errors.
    fn keyring_for(
        &self,
        provider: &Provider,
        listed: &[String],
    ) -> Result<(Keyring, &'static str), SignatureError> {
        let listed_ring = || {
            Keyring::from_armored(
                listed
                    .iter()
                    .map(String::as_str)
                    .filter(|k| !k.trim().is_empty()),
            )
        };
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
            (true, Some(ring)) => Ok((ring, PINNED)),
            (true, None) => Err(SignatureError::NoPinnedKey(provider.to_string())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn provider(source: &str) -> Provider {
        Provider::from_source(source).unwrap()
    }

    #[test]
    fn keyless_is_accepted_only_where_opted_in_and_refusals_say_what_to_set() {
        let opentofu: Hostname = KEYLESS_HOST.parse().unwrap();
        let tofu_widget = provider("registry.opentofu.org/acme/widget");
        let elsewhere = provider("registry.example/acme/widget");
        let none: Vec<String> = vec![String::new(), "  ".into()];

        let refuse = TrustPolicy::default();
        let err = refuse
            .check(&tofu_widget, b"sums", b"sig", &none)
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("set upstream.hosts.\"registry.opentofu.org\".unsigned = \"checked\""),
            "{err}"
        );

        let checked = TrustPolicy::default()
            .allow_keyless(&opentofu, &["acme/*".into()])
            .unwrap();
        let vouched = checked.check(&tofu_widget, b"sums", b"sig", &[]).unwrap();
        assert_eq!(vouched.verification, Verification::Keyless);
        assert!(vouched.key_id.is_empty());
        let err = checked
            .check(&elsewhere, b"sums", b"sig", &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("accepted only from registry.opentofu.org"),
            "{err}"
        );
        let err = checked
            .check(
                &provider("registry.opentofu.org/other/thing"),
                b"s",
                b"s",
                &[],
            )
            .unwrap_err()
            .to_string();
        assert!(err.contains("unsigned_sources"), "{err}");
        // Listed keys are never skipped: a listed key that does not parse
        // still fails as before.
        assert!(matches!(
            checked.check(&tofu_widget, b"s", b"s", &["not a key".into()]),
            Err(SignatureError::NoKeys(_))
        ));

        let err = TrustPolicy::default()
            .allow_keyless(&"registry.terraform.io".parse().unwrap(), &[])
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("allowed only for registry.opentofu.org"),
            "{err}"
        );
        let err = TrustPolicy::default()
            .allow_keyless(&opentofu, &["just-a-namespace".into()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("must be namespace/type"), "{err}");
    }
}
