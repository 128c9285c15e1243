//! Checking a release record that did not come straight from the origin
//! (a bundle's, or one held for a while): its checksum document must be
//! the release's, and its signatures must verify with this site's keys.

use std::collections::BTreeMap;

use base64::Engine as _;

use super::config::Source;
use crate::address::ArtifactName;
use crate::store::ReleaseRecord;
use crate::verify::Sha256Sums;

/// Checks `record` against `source` (the product's keys as this site
/// configures them): the checksum document is named for the release and
/// lists files, every kept signature verifies (those that do not are
/// dropped), at least one does, and the files passed on beside them are
/// only those the origin publishes under the document's name. Returns the
/// record as it may be kept, or why it may not.
pub fn check_record(source: &Source, mut record: ReleaseRecord) -> Result<ReleaseRecord, String> {
    let product = source.product;
    if record.product != product {
        return Err(format!("it is a {} release", record.product.title()));
    }
    let expected = product.sums_name(&record.version);
    if record.sums_name != expected {
        return Err(format!(
            "its checksum document is named {:?}, not {expected:?}",
            record.sums_name
        ));
    }
    let sums = Sha256Sums::parse(record.sums.as_bytes()).map_err(|e| format!("{expected}: {e}"))?;
    if sums.names().next().is_none() {
        return Err(format!("{expected} lists no files"));
    }
    let beside = format!("{expected}.");
    let allowed_extras = super::origin::extra_names(product, &expected);
    if let Some(name) = record.extras.keys().find(|n| !allowed_extras.contains(n)) {
        return Err(format!(
            "it passes on {name:?}, which is not a file published beside {expected}"
        ));
    }
    let mut kept = BTreeMap::new();
    let mut key_id = None;
    let mut refused = Vec::new();
    for (name, b64) in std::mem::take(&mut record.signatures) {
        if !name.starts_with(&beside) || ArtifactName::parse(&name).is_err() {
            refused.push(format!(
                "{name:?} is not a signature file name of {expected}"
            ));
            continue;
        }
        let Ok(sig) = base64::engine::general_purpose::STANDARD.decode(&b64) else {
            refused.push(format!("{name}: not base64"));
            continue;
        };
        match source
            .keys
            .verify(record.sums.as_bytes(), &sig, "release signing keys")
        {
            Ok(signed) => {
                key_id = Some(signed.key_id);
                kept.insert(name, b64);
            }
            Err(e) => refused.push(format!("{name}: {e}")),
        }
    }
    let Some(key_id) = key_id else {
        let why = if refused.is_empty() {
            "it carries no signature".to_owned()
        } else {
            refused.join("; ")
        };
        return Err(format!(
            "{expected} did not verify with releases.{product}'s keys ({}): {why}",
            source.keys.key_ids().join(", ")
        ));
    };
    record.signatures = kept;
    record.key_id = key_id;
    Ok(record)
}

/// The signed SHA-256 of `name` in a verified record, if its checksum
/// document lists it.
pub fn listed_sha256(record: &ReleaseRecord, name: &ArtifactName) -> Option<String> {
    Sha256Sums::parse(record.sums.as_bytes())
        .ok()?
        .get(name.as_str())
}
