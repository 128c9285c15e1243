//! OpenPGP signing keys made at test time.

use pgp::composed::{DetachedSignature, KeyType, SecretKeyParamsBuilder, SignedSecretKey};
use pgp::crypto::hash::HashAlgorithm;
use pgp::types::Password;

/// An OpenPGP signing key made at test time.
pub struct Signer {
    key: SignedSecretKey,
}

impl Signer {
    /// An Ed25519 key (quick to make).
    pub fn new(name: &str) -> Signer {
        Self::of_type(name, KeyType::Ed25519Legacy)
    }

    /// An RSA 2048 key, which Terraform v1.0.3 itself can check signatures
    /// of (its OpenPGP library predates `EdDSA` keys).
    pub fn rsa(name: &str) -> Signer {
        Self::of_type(name, KeyType::Rsa(2048))
    }

    fn of_type(name: &str, key_type: KeyType) -> Signer {
        let params = SecretKeyParamsBuilder::default()
            .key_type(key_type)
            .can_certify(true)
            .can_sign(true)
            .primary_user_id(format!("{name} <{name}@origin.test>"))
            .build()
            .unwrap();
        let key = params.generate(rand::thread_rng()).unwrap();
        Signer { key }
    }

    pub fn public_armored(&self) -> String {
        self.key
            .to_public_key()
            .to_armored_string(pgp::composed::ArmorOptions::default())
            .unwrap()
    }

    pub fn key_id(&self) -> String {
        use pgp::types::KeyDetails;
        tfmirror::verify::hex(self.key.primary_key.legacy_key_id().as_ref()).to_uppercase()
    }

    fn signature(&self, data: &[u8]) -> DetachedSignature {
        DetachedSignature::sign_binary_data(
            rand::thread_rng(),
            &self.key.primary_key,
            &Password::empty(),
            HashAlgorithm::Sha256,
            data,
        )
        .unwrap()
    }

    pub fn sign_binary(&self, data: &[u8]) -> Vec<u8> {
        use pgp::ser::Serialize;
        self.signature(data).to_bytes().unwrap()
    }

    pub fn sign_armored(&self, data: &[u8]) -> Vec<u8> {
        self.signature(data)
            .to_armored_bytes(pgp::composed::ArmorOptions::default())
            .unwrap()
    }
}
