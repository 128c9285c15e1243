//! A provider version's packages checked one by one: each platform's
//! download answer against the signed SHA256SUMS (fetched and verified once
//! per version), and what the registry's `packages` field reports against
//! the signed checksum. What cannot be checked is a [`Failure`], which
//! says whether the origin was down or its answer was refused.

use base64::Engine;

use super::Mirror;
use crate::address::{Platform, Provider};
use crate::metrics::VerifyOutcome;
use crate::store::{KeyDetails, PackageRecord, SignedSums, VersionRecord};
use crate::upstream::{registry, UpstreamError};
use crate::verify::{Sha256Sums, Verification};

impl Mirror {
    /// Checks one package's metadata against its signed SHA256SUMS, fetching
    /// and verifying each SHA256SUMS document once per version.
    pub(super) async fn verify_package(
        &self,
        record: &mut VersionRecord,
        platform: &Platform,
        pkg: &registry::PackageResponse,
        final_url: &url::Url,
    ) -> Result<PackageRecord, Failure> {
        if pkg.os != platform.os() || pkg.arch != platform.arch() {
            return Err(Failure::OtherPlatform(format!("{}_{}", pkg.os, pkg.arch)));
        }
        let resolve = |field: &'static str, value: &str| {
            final_url.join(value).map_err(|reason| Failure::NotAUrl {
                field,
                value: value.to_owned(),
                reason,
            })
        };
        let download_url = resolve("download_url", &pkg.download_url)?;
        let sums_url = resolve("shasums_url", &pkg.shasums_url)?;
        let sig_url = resolve("shasums_signature_url", &pkg.shasums_signature_url)?;
        let (keys, key_details): (Vec<String>, Vec<KeyDetails>) = pkg
            .signing_keys
            .gpg_public_keys
            .iter()
            .map(|k| (k.ascii_armor.clone(), k.details.clone()))
            .unzip();

        // One SHA256SUMS serves all platforms of a version as a rule; fetch
        // and verify it once, and again only if another platform lists other
        // keys for it.
        let known = record
            .sums
            .iter()
            .position(|s| s.url == sums_url && s.keys == keys);
        let index = if let Some(i) = known {
            i
        } else {
            let signed = self
                .fetch_signed_sums(&record.provider, &sums_url, &sig_url, keys, key_details)
                .await?;
            record.sums.push(signed);
            record.sums.len() - 1
        };
        let sums =
            Sha256Sums::parse(record.sums[index].document.as_bytes()).map_err(Failure::Sums)?;
        let listed =
            sums.get(&pkg.filename)
                .ok_or_else(|| match sums.malformed(&pkg.filename) {
                    Some(held) => Failure::NotAChecksum {
                        file: pkg.filename.clone(),
                        held: held.to_owned(),
                    },
                    None => Failure::NotListed(pkg.filename.clone()),
                })?;
        if !listed.eq_ignore_ascii_case(&pkg.shasum) {
            return Err(Failure::ShasumDiffers {
                given: pkg.shasum.clone(),
                file: pkg.filename.clone(),
                signed: listed,
            });
        }
        let (size, reported_h1) = reported(pkg, platform, &listed)?;
        Ok(PackageRecord {
            filename: pkg.filename.clone(),
            download_url,
            sha256: listed,
            sums: index,
            protocols: pkg.protocols.clone(),
            size,
            reported_h1,
        })
    }

    pub(super) async fn fetch_signed_sums(
        &self,
        provider: &Provider,
        sums_url: &url::Url,
        sig_url: &url::Url,
        keys: Vec<String>,
        key_details: Vec<KeyDetails>,
    ) -> Result<SignedSums, Failure> {
        let (sums, sig) = tokio::join!(
            self.origin.client.get_bytes(sums_url, None),
            self.origin.client.get_bytes(sig_url, None)
        );
        let (sums, _) = sums.map_err(|e| Failure::from_upstream(&e))?;
        let (sig, _) = sig.map_err(|e| Failure::from_upstream(&e))?;
        let vouched = self
            .trust
            .check(provider, &sums, &sig, &keys)
            .map_err(|e| {
                self.metrics.verification(VerifyOutcome::Invalid);
                Failure::Signature(e)
            })?;
        self.metrics
            .verification(if vouched.verification == Verification::Keyless {
                VerifyOutcome::Keyless
            } else {
                VerifyOutcome::Valid
            });
        let document = String::from_utf8(sums.to_vec())
            .map_err(|_| Failure::Sums(crate::verify::SumsError::NotText))?;
        Ok(SignedSums {
            url: sums_url.clone(),
            document,
            signature: base64::engine::general_purpose::STANDARD.encode(&sig),
            signed_by: vouched.key_id,
            verification: vouched.verification,
            keys,
            key_details,
        })
    }
}

/// What the origin's `packages` field says about the package of
/// `platform` (its size and `h1:`), once its `zh:` is checked against the
/// signed checksum `signed`: a `zh:` that differs fails the verification,
/// as a bad signature does; an entry without any `zh:` vouches for
/// nothing and is not used.
pub(super) fn reported(
    pkg: &registry::PackageResponse,
    platform: &Platform,
    signed: &str,
) -> Result<(Option<u64>, Option<String>), Failure> {
    let Some(entry) = pkg.packages.get(platform) else {
        return Ok((None, None));
    };
    let mut matched = false;
    for zh in entry.with_scheme("zh:") {
        if !zh["zh:".len()..].eq_ignore_ascii_case(signed) {
            return Err(Failure::ReportedDiffers {
                reported: zh.to_owned(),
                signed: signed.to_owned(),
            });
        }
        matched = true;
    }
    if !matched {
        tracing::warn!(%platform, "the registry's packages entry has no zh: hash; not using it");
        return Ok((None, None));
    }
    let h1 = entry.with_scheme("h1:").next().map(str::to_owned);
    Ok((Some(entry.size), h1))
}

/// Why one package could not be verified: the origin is down for now
/// ([`Failure::Outage`], tried again later), or its answer was checked and
/// refused (every other cause, which fails the version's verification).
#[derive(Debug, thiserror::Error)]
pub(super) enum Failure {
    /// The origin could not be asked.
    #[error("{0}")]
    Outage(UpstreamError),
    /// The origin's definite answer was unusable (404, a bad body).
    #[error("{0}")]
    Upstream(UpstreamError),
    /// The answer is for another platform than the one asked for.
    #[error("the registry answered for {0} instead")]
    OtherPlatform(String),
    /// A URL field that does not resolve.
    #[error("{field} {value:?} is not a URL: {reason}")]
    NotAUrl {
        /// The field.
        field: &'static str,
        /// Its value.
        value: String,
        /// Why it does not resolve.
        reason: url::ParseError,
    },
    /// The signature over SHA256SUMS does not hold.
    #[error(transparent)]
    Signature(crate::verify::SignatureError),
    /// SHA256SUMS cannot be read.
    #[error(transparent)]
    Sums(crate::verify::SumsError),
    /// The file's line holds something that is not a SHA-256 checksum.
    #[error("the signed SHA256SUMS lists {file} with {held:?}, which is not a SHA-256 checksum")]
    NotAChecksum {
        /// The archive's file name.
        file: String,
        /// What its line holds.
        held: String,
    },
    /// SHA256SUMS has no line for the file.
    #[error("the signed SHA256SUMS has no entry for {0}")]
    NotListed(String),
    /// The registry's `packages` field reports another checksum than the
    /// signed one.
    #[error("the registry's packages field reports {reported} where the signed SHA256SUMS says zh:{signed}")]
    ReportedDiffers {
        /// The reported `zh:` hash.
        reported: String,
        /// The signed checksum.
        signed: String,
    },
    /// The registry's `shasum` is not the signed one.
    #[error(
        "the registry's shasum {given} for {file} differs from the signed SHA256SUMS ({signed})"
    )]
    ShasumDiffers {
        /// The registry's `shasum`.
        given: String,
        /// The archive's file name.
        file: String,
        /// The signed checksum.
        signed: String,
    },
}

impl Failure {
    fn from_upstream(e: &UpstreamError) -> Self {
        if e.is_outage() {
            Failure::Outage(e.clone())
        } else {
            Failure::Upstream(e.clone())
        }
    }
}
