//! OpenPGP verification of the origin's SHA256SUMS document.
//!
//! A registry lists the public keys allowed to sign a provider version
//! (`signing_keys.gpg_public_keys`, each ASCII-armored); the detached
//! signature at `shasums_signature_url` must be a valid signature over the
//! exact SHA256SUMS bytes by one of them, either by a primary key or by a
//! signing subkey whose binding to its primary key verifies.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::packet::{Signature, SignatureType};
use pgp::types::{KeyDetails, Tag, Timestamp};

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The registry listed no usable key.
    #[error("the registry lists no usable signing key ({0})")]
    NoKeys(String),
    /// The registry lists no signing key for the provider, and keyless
    /// providers are not accepted for it.
    #[error("{provider}: the registry publishes no signing key for this provider (its signing_keys list is empty or null), and this mirror does not accept it without one: {remedy}")]
    Keyless {
        /// The provider.
        provider: String,
        /// What the operator can do about it.
        remedy: String,
    },
    /// Trust rules pin the provider's keys, and none of them is at hand.
    #[error("none of the keys pinned for {0} by [[trust]] rules is listed by the registry or in a keys_file")]
    NoPinnedKey(String),
    /// The signature file is not an OpenPGP signature.
    #[error("the SHA256SUMS signature is not a valid OpenPGP signature: {0}")]
    Malformed(String),
    /// The signature is not a data signature.
    #[error("the SHA256SUMS signature is not a signature over a document")]
    WrongType,
    /// No listed key made a valid signature over the document.
    #[error("the SHA256SUMS signature was not made by any of the {source_of_keys} ({keys}) over this document; signed by key {signer}")]
    NotSignedByListedKey {
        /// Where the keys that were tried came from.
        source_of_keys: &'static str,
        /// The key IDs that were tried.
        keys: String,
        /// The key ID the signature names as its issuer.
        signer: String,
    },
    /// The key that made the signature has been revoked by its owner.
    #[error("the SHA256SUMS signature was made by key {0}, which has been revoked")]
    Revoked(String),
    /// The signature carried an expiry time that has passed.
    #[error("the SHA256SUMS signature by key {key} expired at {at} (Unix time)")]
    SignatureExpired {
        /// The signing key.
        key: String,
        /// When it expired, in seconds since the Unix epoch.
        at: u64,
    },
    /// The signing key has expired, and expired keys are refused
    /// (`upstream.reject_expired_keys`).
    #[error("the SHA256SUMS signature was made by key {key}, which expired at {at} (Unix time), and upstream.reject_expired_keys is set")]
    KeyExpired {
        /// The signing key.
        key: String,
        /// When it expired, in seconds since the Unix epoch.
        at: u64,
    },
}

/// A signature that verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signed {
    /// The ID of the primary key that made it, uppercase hex.
    pub key_id: String,
    /// When the signing key (or the subkey used) expired, if it has, in
    /// seconds since the Unix epoch. Terraform accepts such signatures with
    /// a warning.
    pub key_expired_at: Option<u64>,
}

/// A set of public keys a signature may be made by.
#[derive(Debug, Clone)]
pub struct Keyring {
    keys: Vec<SignedPublicKey>,
}

impl Keyring {
    /// Parses ASCII-armored public keys, one armored block per string (a
    /// block may hold several keys). Blocks that do not parse are skipped;
    /// at least one key must remain.
    pub fn from_armored<'a>(
        blocks: impl IntoIterator<Item = &'a str>,
    ) -> Result<Keyring, SignatureError> {
        let mut keys = Vec::new();
        let mut problems = Vec::new();
        for block in blocks {
            match SignedPublicKey::from_armor_many(block.as_bytes()) {
                Ok((iter, _headers)) => {
                    for key in iter {
                        match key {
                            Ok(k) => keys.push(k),
                            Err(e) => problems.push(e.to_string()),
                        }
                    }
                }
                Err(e) => problems.push(e.to_string()),
            }
        }
        if keys.is_empty() {
            if problems.is_empty() {
                problems.push("none listed".into());
            }
            return Err(SignatureError::NoKeys(problems.join("; ")));
        }
        Ok(Keyring { keys })
    }

    /// The keys of both rings.
    #[must_use]
    pub fn union(mut self, other: Keyring) -> Keyring {
        self.keys.extend(other.keys);
        self
    }

    /// Keeps only the keys that `ids` name: a 16-digit key ID or a
    /// 40-digit fingerprint (hex, any case, spaces and a `0x` prefix
    /// ignored) of the primary key or of one of its subkeys. `None` when no
    /// key is left.
    pub fn retain_ids(mut self, ids: &[String]) -> Option<Keyring> {
        let wanted: Vec<String> = ids.iter().map(|id| normalize_key_id(id)).collect();
        self.keys.retain(|key| {
            let mut prints = vec![fingerprint_hex(&key.primary_key)];
            prints.extend(key.public_subkeys.iter().map(|s| fingerprint_hex(&s.key)));
            prints
                .iter()
                .any(|fp| wanted.iter().any(|w| !w.is_empty() && fp.ends_with(w)))
        });
        (!self.keys.is_empty()).then_some(self)
    }

    /// The key IDs (primary keys) in this ring, uppercase hex.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| key_id_hex(&k.primary_key))
            .collect()
    }

    /// Verifies a detached signature (binary or ASCII-armored) over
    /// `document`, made by a primary key or by a signing subkey bound to
    /// it. A signature by a revoked key or subkey, or one past its own
    /// expiry time, is refused; one by an expired key verifies, and says so.
    /// `source_of_keys` names the ring in errors ("registry's signing keys").
    pub fn verify(
        &self,
        document: &[u8],
        signature: &[u8],
        source_of_keys: &'static str,
    ) -> Result<Signed, SignatureError> {
        let sig = parse_signature(signature)?;
        if !matches!(
            sig.signature.typ(),
            Some(SignatureType::Binary | SignatureType::Text)
        ) {
            return Err(SignatureError::WrongType);
        }
        let now = unix_now();
        for key in &self.keys {
            let primary = &key.primary_key;
            let key_id = key_id_hex(primary);
            let mut made_by = None;
            if sig.verify(primary, document).is_ok() {
                made_by = Some(None);
            } else {
                for sub in &key.public_subkeys {
                    let bound = latest(sub.signatures.iter().filter(|s| {
                        s.typ() == Some(SignatureType::SubkeyBinding)
                            && s.verify_subkey_binding(primary, &sub.key).is_ok()
                    }));
                    if let Some(binding) = bound {
                        if sig.verify(&sub.key, document).is_ok() {
                            made_by = Some(Some((sub, binding)));
                            break;
                        }
                    }
                }
            }
            let Some(subkey) = made_by else { continue };
            let revoked = key
                .details
                .revocation_signatures
                .iter()
                .any(|r| r.verify_key(primary).is_ok());
            let sub_revoked = subkey.is_some_and(|(sub, _)| {
                sub.signatures.iter().any(|s| {
                    s.typ() == Some(SignatureType::SubkeyRevocation)
                        && s.verify_subkey_binding(primary, &sub.key).is_ok()
                })
            });
            if revoked || sub_revoked {
                return Err(SignatureError::Revoked(key_id));
            }
            if let (Some(created), Some(valid_for)) = (
                sig.signature.created(),
                sig.signature.signature_expiration_time(),
            ) {
                let at = expiry(created, valid_for.as_secs());
                if at.is_some_and(|at| at <= now) {
                    return Err(SignatureError::SignatureExpired {
                        key: key_id,
                        at: at.unwrap_or(0),
                    });
                }
            }
            let mut expires = primary_expiry(key);
            if let Some((sub, binding)) = subkey {
                let sub_expiry = binding
                    .key_expiration_time()
                    .and_then(|d| expiry(sub.key.created_at(), d.as_secs()));
                expires = match (expires, sub_expiry) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
            }
            return Ok(Signed {
                key_id,
                key_expired_at: expires.filter(|at| *at <= now),
            });
        }
        let signer = sig.signature.issuer_key_id().first().map_or_else(
            || "(unnamed)".into(),
            |id| crate::verify::hex(id.as_ref()).to_uppercase(),
        );
        Err(SignatureError::NotSignedByListedKey {
            source_of_keys,
            keys: self.key_ids().join(", "),
            signer,
        })
    }
}

/// When a primary key expires, by its latest valid self-signature.
fn primary_expiry(key: &SignedPublicKey) -> Option<u64> {
    let primary = &key.primary_key;
    let certifications = key.details.users.iter().flat_map(|user| {
        user.signatures.iter().filter(|s| {
            s.verify_certification(primary, Tag::UserId, &user.id)
                .is_ok()
        })
    });
    let direct = key
        .details
        .direct_signatures
        .iter()
        .filter(|s| s.verify_key(primary).is_ok());
    let newest = latest(certifications.chain(direct))?;
    expiry(
        primary.created_at(),
        newest.key_expiration_time()?.as_secs(),
    )
}

/// The most recently created of some signatures.
fn latest<'a>(sigs: impl Iterator<Item = &'a Signature>) -> Option<&'a Signature> {
    sigs.max_by_key(|s| s.created().map_or(0, Timestamp::as_secs))
}

/// `start + secs` in Unix seconds; `None` for 0, which means "never".
fn expiry(start: Timestamp, secs: u32) -> Option<u64> {
    (secs > 0).then(|| u64::from(start.as_secs()) + u64::from(secs))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_secs()
}

/// A key ID as given in configuration, reduced to uppercase hex digits.
fn normalize_key_id(id: &str) -> String {
    let id = id.trim();
    let id = id
        .strip_prefix("0x")
        .or_else(|| id.strip_prefix("0X"))
        .unwrap_or(id);
    id.chars()
        .filter(|c| !c.is_whitespace())
        .collect::<String>()
        .to_uppercase()
}

/// Whether a configured key ID is 16 or 40 hex digits.
pub fn is_valid_key_id(id: &str) -> bool {
    let id = normalize_key_id(id);
    matches!(id.len(), 16 | 40) && id.bytes().all(|b| b.is_ascii_hexdigit())
}

/// A key ID as uppercase hex, the way registries list it.
fn key_id_hex(key: &impl KeyDetails) -> String {
    crate::verify::hex(key.legacy_key_id().as_ref()).to_uppercase()
}

/// A key's fingerprint as uppercase hex.
fn fingerprint_hex(key: &impl KeyDetails) -> String {
    crate::verify::hex(key.fingerprint().as_bytes()).to_uppercase()
}

/// Parses a detached signature in binary or ASCII-armored form.
fn parse_signature(bytes: &[u8]) -> Result<DetachedSignature, SignatureError> {
    let trimmed = bytes.trim_ascii_start();
    let parsed = if trimmed.starts_with(b"-----BEGIN PGP SIGNATURE-----") {
        DetachedSignature::from_armor_single(trimmed).map(|(s, _)| s)
    } else {
        DetachedSignature::from_bytes(bytes)
    };
    parsed.map_err(|e| SignatureError::Malformed(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gnupg");

    fn read(name: &str) -> Vec<u8> {
        std::fs::read(format!("{FIXTURES}/{name}")).unwrap()
    }

    fn ring(name: &str) -> Keyring {
        Keyring::from_armored([String::from_utf8(read(name)).unwrap().as_str()]).unwrap()
    }

    /// The fixtures were made by GnuPG 2.2 (see tests/fixtures/gnupg/README.md).
    #[test]
    fn accepts_gnupg_binary_and_armored_signatures() {
        let sums = read("SHA256SUMS");
        let keys = ring("signer.asc");
        let signed = keys.verify(&sums, &read("SHA256SUMS.sig"), "keys").unwrap();
        assert_eq!(signed.key_id, keys.key_ids()[0]);
        assert_eq!(signed.key_expired_at, None);
        keys.verify(&sums, &read("SHA256SUMS.asc"), "keys").unwrap();
    }

    #[test]
    fn accepts_a_gnupg_signing_subkey() {
        let keys = ring("subkey-signer.asc");
        let (sums, sig) = (read("SHA256SUMS"), read("SHA256SUMS.subkey.sig"));
        let signed = keys.verify(&sums, &sig, "keys").unwrap();
        // Reported under the primary key's ID, the one registries list.
        assert_eq!(signed.key_id, keys.key_ids()[0]);
        // The subkey made it: without the subkey, the primary key alone
        // does not verify the signature.
        let mut primary_only = keys.clone();
        primary_only.keys[0].public_subkeys.clear();
        assert!(primary_only.verify(&sums, &sig, "keys").is_err());
    }

    #[test]
    fn rejects_changed_documents_and_other_keys() {
        let mut sums = read("SHA256SUMS");
        sums[0] ^= 1;
        let keys = ring("signer.asc");
        let err = keys
            .verify(&sums, &read("SHA256SUMS.sig"), "keys")
            .unwrap_err();
        assert!(
            matches!(err, SignatureError::NotSignedByListedKey { .. }),
            "{err}"
        );
        let other = ring("subkey-signer.asc");
        let err = other
            .verify(&read("SHA256SUMS"), &read("SHA256SUMS.sig"), "keys")
            .unwrap_err();
        assert!(err.to_string().contains(&keys.key_ids()[0]), "{err}");
    }

    #[test]
    fn rejects_garbage() {
        let keys = ring("signer.asc");
        assert!(matches!(
            keys.verify(b"x", b"not a signature", "keys"),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            Keyring::from_armored(["nope"]),
            Err(SignatureError::NoKeys(_))
        ));
    }

    /// GnuPG keys made with a faked clock in 2020 (see the fixtures' README).
    #[test]
    fn an_expired_key_verifies_and_says_when_it_expired() {
        let keys = ring("expired-signer.asc");
        let signed = keys
            .verify(
                &read("SHA256SUMS"),
                &read("SHA256SUMS.expired-key.sig"),
                "keys",
            )
            .unwrap();
        // Created 2020-01-01, valid for one year (GnuPG's "1y" is 365 days).
        assert_eq!(signed.key_expired_at, Some(1_577_836_800 + 365 * 86_400));
    }

    #[test]
    fn a_revoked_key_is_refused() {
        let keys = ring("revoked-signer.asc");
        let err = keys
            .verify(
                &read("SHA256SUMS"),
                &read("SHA256SUMS.revoked-key.sig"),
                "keys",
            )
            .unwrap_err();
        assert_eq!(err, SignatureError::Revoked(keys.key_ids()[0].clone()));
    }

    #[test]
    fn an_expired_signature_is_refused() {
        let keys = ring("sigexpiry-signer.asc");
        let err = keys
            .verify(
                &read("SHA256SUMS"),
                &read("SHA256SUMS.expired-sig.sig"),
                "keys",
            )
            .unwrap_err();
        // Made 2020-03-15, valid for 30 days.
        assert_eq!(
            err,
            SignatureError::SignatureExpired {
                key: keys.key_ids()[0].clone(),
                at: 1_584_230_400 + 30 * 86_400
            }
        );
    }

    #[test]
    fn keys_are_picked_by_key_id_or_fingerprint_of_key_or_subkey() {
        let both = ring("signer.asc").union(ring("subkey-signer.asc"));
        let signer_id = ring("signer.asc").key_ids()[0].clone();
        let picked = both
            .clone()
            .retain_ids(&[format!("0x{}", signer_id.to_lowercase())]);
        assert_eq!(picked.unwrap().key_ids(), [signer_id]);
        let sub = &ring("subkey-signer.asc").keys[0].public_subkeys[0].key;
        let by_subkey = both.clone().retain_ids(&[fingerprint_hex(sub)]).unwrap();
        assert_eq!(by_subkey.key_ids(), ring("subkey-signer.asc").key_ids());
        assert!(both.retain_ids(&["0123456789ABCDEF".into()]).is_none());
        assert!(is_valid_key_id("34365D9472D7468F"));
        assert!(is_valid_key_id(
            "C874 011F 0AB4 0511 0D02 1055 3436 5D94 72D7 468F"
        ));
        assert!(!is_valid_key_id("34365D94"));
        assert!(!is_valid_key_id("34365D9472D7468G"));
    }
}
