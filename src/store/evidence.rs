//! The evidence kept with a version record, checked again: wherever a
//! record comes from (the cache, a bundle from another site), its SHA256SUMS
//! signatures must count under today's trust policy and each package's
//! checksum must be the one its signed SHA256SUMS lists.

use base64::Engine;

use super::VersionRecord;
use crate::address::Platform;
use crate::verify::{Sha256Sums, TrustPolicy, Verification};

/// Why a record's evidence does not count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Rejected {
    /// The record was imported from a static directory, unsigned.
    #[error("it is an unsigned import, with no signature to check")]
    UnsignedImport,
    /// A stored signature cannot be decoded.
    #[error("the stored signature is not base64")]
    NotBase64,
    /// A signature does not count under today's trust policy.
    #[error(transparent)]
    Signature(#[from] crate::verify::SignatureError),
    /// A stored SHA256SUMS cannot be read.
    #[error(transparent)]
    Sums(#[from] crate::verify::SumsError),
    /// A package names a SHA256SUMS the record does not hold.
    #[error("{0}: its SHA256SUMS is missing from the record")]
    MissingSums(Platform),
    /// The signed SHA256SUMS does not list the package with its checksum.
    #[error("{platform}: the signed SHA256SUMS does not list {file} with the recorded checksum")]
    NotListed {
        /// The package's platform.
        platform: Platform,
        /// Its archive's file name.
        file: String,
    },
}

/// Checks a signed version record's evidence, and says how it is
/// verified under today's policy (the weakest label of its documents). A
/// keyless record counts only where its host is opted in for it; records
/// of unsigned imports have no evidence and fail.
pub fn check_record(trust: &TrustPolicy, record: &VersionRecord) -> Result<Verification, Rejected> {
    if record.unsigned_import {
        return Err(Rejected::UnsignedImport);
    }
    let mut parsed = Vec::with_capacity(record.sums.len());
    let mut label = None;
    for signed in &record.sums {
        let signature = base64::engine::general_purpose::STANDARD
            .decode(&signed.signature)
            .map_err(|_| Rejected::NotBase64)?;
        let vouched = trust.check(
            &record.provider,
            signed.document.as_bytes(),
            &signature,
            &signed.keys,
        )?;
        label = Some(label.map_or(vouched.verification, |l: Verification| {
            l.weaker(vouched.verification)
        }));
        parsed.push(Sha256Sums::parse(signed.document.as_bytes())?);
    }
    for (platform, pkg) in &record.packages {
        let sums = parsed
            .get(pkg.sums)
            .ok_or_else(|| Rejected::MissingSums(platform.clone()))?;
        if sums.get(&pkg.filename).as_deref() != Some(pkg.sha256.as_str()) {
            return Err(Rejected::NotListed {
                platform: platform.clone(),
                file: pkg.filename.clone(),
            });
        }
    }
    Ok(label.unwrap_or_default())
}
