//! The evidence kept with a version record, checked again: wherever a
//! record comes from (the cache, a bundle from another site), its SHA256SUMS
//! signatures must count under today's trust policy and each package's
//! checksum must be the one its signed SHA256SUMS lists.

use base64::Engine;

use super::VersionRecord;
use crate::verify::{Sha256Sums, TrustPolicy};

/// Why a record's evidence does not count.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Rejected(String);

/// Checks a signed version record's evidence. Records of unsigned imports
/// have none and fail.
pub fn check_record(trust: &TrustPolicy, record: &VersionRecord) -> Result<(), Rejected> {
    if record.unsigned_import {
        return Err(Rejected(
            "it is an unsigned import, with no signature to check".into(),
        ));
    }
    let mut parsed = Vec::with_capacity(record.sums.len());
    for signed in &record.sums {
        let signature = base64::engine::general_purpose::STANDARD
            .decode(&signed.signature)
            .map_err(|_| Rejected("the stored signature is not base64".into()))?;
        trust
            .check(
                &record.provider,
                signed.document.as_bytes(),
                &signature,
                &signed.keys,
            )
            .map_err(|e| Rejected(e.to_string()))?;
        parsed.push(
            Sha256Sums::parse(signed.document.as_bytes()).map_err(|e| Rejected(e.to_string()))?,
        );
    }
    for (platform, pkg) in &record.packages {
        let sums = parsed.get(pkg.sums).ok_or_else(|| {
            Rejected(format!(
                "{platform}: its SHA256SUMS is missing from the record"
            ))
        })?;
        if sums.get(&pkg.filename).as_deref() != Some(pkg.sha256.as_str()) {
            return Err(Rejected(format!(
                "{platform}: the signed SHA256SUMS does not list {} with the recorded checksum",
                pkg.filename
            )));
        }
    }
    Ok(())
}
