//! OpenPGP verification of the origin's SHA256SUMS document.
//!
//! A registry lists the public keys allowed to sign a provider version
//! (`signing_keys.gpg_public_keys`, each ASCII-armored); the detached
//! signature at `shasums_signature_url` must be a valid signature over the
//! exact SHA256SUMS bytes by one of them, either by a primary key or by a
//! signing subkey whose binding to its primary key verifies.

use pgp::composed::{Deserializable, DetachedSignature, SignedPublicKey};
use pgp::packet::SignatureType;
use pgp::types::KeyDetails;

/// Why a signature was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    /// The registry listed no usable key.
    #[error("the registry lists no usable signing key ({0})")]
    NoKeys(String),
    /// The signature file is not an OpenPGP signature.
    #[error("the SHA256SUMS signature is not a valid OpenPGP signature: {0}")]
    Malformed(String),
    /// The signature is not a data signature.
    #[error("the SHA256SUMS signature is not a signature over a document")]
    WrongType,
    /// No listed key made a valid signature over the document.
    #[error("the SHA256SUMS signature was not made by any of the registry's signing keys ({keys}) over this document; signed by key {signer}")]
    NotSignedByListedKey {
        /// The key IDs that were tried.
        keys: String,
        /// The key ID the signature names as its issuer.
        signer: String,
    },
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

    /// The key IDs (primary keys) in this ring, uppercase hex.
    pub fn key_ids(&self) -> Vec<String> {
        self.keys
            .iter()
            .map(|k| key_id_hex(&k.primary_key))
            .collect()
    }

    /// Verifies a detached signature (binary or ASCII-armored) over
    /// `document`. Returns the ID of the primary key that made it.
    pub fn verify(&self, document: &[u8], signature: &[u8]) -> Result<String, SignatureError> {
        let sig = parse_signature(signature)?;
        if !matches!(
            sig.signature.typ(),
            Some(SignatureType::Binary | SignatureType::Text)
        ) {
            return Err(SignatureError::WrongType);
        }
        for key in &self.keys {
            if sig.verify(&key.primary_key, document).is_ok() {
                return Ok(key_id_hex(&key.primary_key));
            }
            for sub in &key.public_subkeys {
                if sig.verify(&sub.key, document).is_ok()
                    && sub.verify_bindings(&key.primary_key).is_ok()
                {
                    return Ok(key_id_hex(&key.primary_key));
                }
            }
        }
        let signer = sig
            .signature
            .issuer_key_id()
            .first()
            .map(|id| crate::verify::hex(id.as_ref()).to_uppercase())
            .unwrap_or_else(|| "(unnamed)".into());
        Err(SignatureError::NotSignedByListedKey {
            keys: self.key_ids().join(", "),
            signer,
        })
    }
}

/// A key's ID as uppercase hex, the way registries list it.
fn key_id_hex(key: &impl KeyDetails) -> String {
    crate::verify::hex(key.legacy_key_id().as_ref()).to_uppercase()
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
        let id = keys.verify(&sums, &read("SHA256SUMS.sig")).unwrap();
        assert_eq!(id, keys.key_ids()[0]);
        keys.verify(&sums, &read("SHA256SUMS.asc")).unwrap();
    }

    #[test]
    fn accepts_a_gnupg_signing_subkey() {
        let keys = ring("subkey-signer.asc");
        keys.verify(&read("SHA256SUMS"), &read("SHA256SUMS.subkey.sig"))
            .unwrap();
    }

    #[test]
    fn rejects_changed_documents_and_other_keys() {
        let mut sums = read("SHA256SUMS");
        sums[0] ^= 1;
        let keys = ring("signer.asc");
        let err = keys.verify(&sums, &read("SHA256SUMS.sig")).unwrap_err();
        assert!(
            matches!(err, SignatureError::NotSignedByListedKey { .. }),
            "{err}"
        );
        let other = ring("subkey-signer.asc");
        let err = other
            .verify(&read("SHA256SUMS"), &read("SHA256SUMS.sig"))
            .unwrap_err();
        assert!(err.to_string().contains(&keys.key_ids()[0]), "{err}");
    }

    #[test]
    fn rejects_garbage() {
        let keys = ring("signer.asc");
        assert!(matches!(
            keys.verify(b"x", b"not a signature"),
            Err(SignatureError::Malformed(_))
        ));
        assert!(matches!(
            Keyring::from_armored(["nope"]),
            Err(SignatureError::NoKeys(_))
        ));
    }
}
