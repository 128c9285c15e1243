//! Keyless versions' pins ([`KeylessPin`]), kept in every store under
//! `pins/<host>/<namespace>/<type>/<version>.json`, and the comparison of a
//! pin with what a later answer (from the origin, or in a bundle) says.

use std::collections::BTreeMap;

use super::{KeylessPin, PinnedPackage, Store, StoreError, VersionRecord};
use crate::address::{Platform, Provider, Version};
use crate::verify::Sha256;

/// The folder the pins are kept in.
const TOP: &str = "pins";

/// The path of a version's pin.
fn file_name(version: &Version) -> String {
    format!("{version}.json")
}

/// A keyless version's pin, if it has one.
pub async fn read(
    store: &dyn Store,
    provider: &Provider,
    version: &Version,
) -> Result<Option<KeylessPin>, StoreError> {
    let name = file_name(version);
    let path = [
        TOP,
        provider.hostname.as_str(),
        provider.namespace.as_str(),
        provider.kind.as_str(),
        &name,
    ];
    let Some(bytes) = store.read_document(&path).await? else {
        return Ok(None);
    };
    serde_json::from_slice(&bytes)
        .map(Some)
        .map_err(|e| StoreError::Corrupt {
            what: "keyless pin",
            reason: e.to_string(),
        })
}

/// Keeps a pin, replacing the version's earlier one.
pub async fn write(store: &dyn Store, pin: &KeylessPin) -> Result<(), StoreError> {
    let bytes = serde_json::to_vec_pretty(pin).map_err(std::io::Error::other)?;
    let name = file_name(&pin.version);
    let path = [
        TOP,
        pin.provider.hostname.as_str(),
        pin.provider.namespace.as_str(),
        pin.provider.kind.as_str(),
        &name,
    ];
    store.write_document(&path, bytes).await
}

/// Every pin the store holds; one that cannot be read is skipped and
/// logged.
pub async fn list(store: &dyn Store) -> Result<Vec<KeylessPin>, StoreError> {
    let mut out = Vec::new();
    for path in store.list_documents(TOP).await? {
        let parts: Vec<&str> = path.iter().map(String::as_str).collect();
        let Some(bytes) = store.read_document(&parts).await? else {
            continue;
        };
        match serde_json::from_slice::<KeylessPin>(&bytes) {
            Ok(pin) => out.push(pin),
            Err(e) => {
                tracing::warn!(path = %parts.join("/"), error = %e, "ignoring an unreadable keyless pin");
            }
        }
    }
    out.sort_by(|a, b| (&a.provider, &a.version).cmp(&(&b.provider, &b.version)));
    Ok(out)
}

/// SHA-256 of a document, lowercase hex.
pub fn digest(document: &str) -> String {
    crate::verify::hex(&Sha256::digest(document.as_bytes()))
}

/// What a keyless version record says, as a pin would hold it.
pub fn of_record(record: &VersionRecord, now_ms: u64) -> Option<KeylessPin> {
    let sums = record.sums.first()?;
    let packages = record
        .packages
        .iter()
        .map(|(platform, pkg)| {
            (
                platform.clone(),
                PinnedPackage {
                    filename: pkg.filename.clone(),
                    sha256: pkg.sha256.clone(),
                    size: pkg.size,
                    h1: pkg.reported_h1.clone(),
                },
            )
        })
        .collect();
    Some(KeylessPin {
        provider: record.provider.clone(),
        version: record.version.clone(),
        sums_sha256: digest(&sums.document),
        sums_url: sums.url.clone(),
        packages,
        pinned_at_ms: now_ms,
        repin: None,
        replaced: Vec::new(),
    })
}

/// How a later answer differs from the pin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{provider} {version} is keyless and was pinned on first sight, but {what}; published versions never change, so this is refused (`tfmirror approve {provider} {version} --repin --reason …` accepts a documented re-publication)")]
pub struct Mismatch {
    /// The provider.
    pub provider: String,
    /// The version.
    pub version: String,
    /// What differs.
    pub what: String,
}

/// Compares `seen` (what an answer says now) with `pin`: the SHA256SUMS
/// document, and for each platform both know, the file name, checksum,
/// and the size and `h1:` where both give them. Returns the pin extended
/// with what `seen` adds (platforms, sizes and hashes it lacked).
pub fn compare(pin: &KeylessPin, seen: &KeylessPin) -> Result<KeylessPin, Mismatch> {
    let differs = |what: String| Mismatch {
        provider: pin.provider.to_string(),
        version: pin.version.to_string(),
        what,
    };
    if pin.sums_sha256 != seen.sums_sha256 {
        return Err(differs(format!(
            "its SHA256SUMS now has SHA-256 {} where the pinned one had {}",
            seen.sums_sha256, pin.sums_sha256
        )));
    }
    let mut merged = pin.clone();
    for (platform, now) in &seen.packages {
        let Some(was) = pin.packages.get(platform) else {
            merged.packages.insert(platform.clone(), now.clone());
            continue;
        };
        check_package(platform, was, now).map_err(differs)?;
        let entry = merged.packages.get_mut(platform).expect("pinned above");
        entry.size = entry.size.or(now.size);
        entry.h1 = entry.h1.clone().or_else(|| now.h1.clone());
    }
    Ok(merged)
}

/// Compares one platform's package with its pin.
pub fn check_package(
    platform: &Platform,
    was: &PinnedPackage,
    now: &PinnedPackage,
) -> Result<(), String> {
    if was.filename != now.filename || !was.sha256.eq_ignore_ascii_case(&now.sha256) {
        return Err(format!(
            "{platform}: {} with SHA-256 {} differs from the pinned {} with {}",
            now.filename, now.sha256, was.filename, was.sha256
        ));
    }
    if let (Some(a), Some(b)) = (was.size, now.size) {
        if a != b {
            return Err(format!(
                "{platform}: the archive's size {b} differs from the pinned {a}"
            ));
        }
    }
    if let (Some(a), Some(b)) = (&was.h1, &now.h1) {
        if a != b {
            return Err(format!(
                "{platform}: the archive's {b} differs from the pinned {a}"
            ));
        }
    }
    Ok(())
}

/// What becomes of a version's pin when an answer for it is accepted.
#[derive(Debug, Clone, PartialEq)]
pub enum Settled {
    /// First sight: `seen` becomes the pin.
    First(KeylessPin),
    /// The answer matches the pin and adds nothing.
    Same(KeylessPin),
    /// The answer matches the pin and adds platforms, sizes or hashes.
    Extended(KeylessPin),
    /// An operator allowed a re-pin, and the answer differs: it becomes
    /// the pin, recording the one it replaced.
    Repinned {
        /// The pin replaced.
        old: Box<KeylessPin>,
        /// The new pin.
        new: KeylessPin,
    },
}

impl Settled {
    /// The pin to keep from now on.
    pub fn pin(&self) -> &KeylessPin {
        match self {
            Settled::First(p) | Settled::Same(p) | Settled::Extended(p) => p,
            Settled::Repinned { new, .. } => new,
        }
    }
}

/// Decides what an accepted answer `seen` does to the `stored` pin: an
/// answer that differs is a [`Mismatch`], unless a re-pin was allowed.
pub fn settle(stored: Option<KeylessPin>, mut seen: KeylessPin) -> Result<Settled, Mismatch> {
    let Some(pin) = stored else {
        return Ok(Settled::First(seen));
    };
    if let (Some(allowed), true) = (&pin.repin, compare(&pin, &seen).is_err()) {
        let mut done = allowed.clone();
        done.replaced_sums_sha256.clone_from(&pin.sums_sha256);
        seen.replaced.clone_from(&pin.replaced);
        seen.replaced.push(done);
        return Ok(Settled::Repinned {
            old: Box::new(pin),
            new: seen,
        });
    }
    let merged = compare(&pin, &seen)?;
    Ok(if merged == pin {
        Settled::Same(pin)
    } else {
        Settled::Extended(merged)
    })
}

/// Pins by provider and version, for look-ups.
pub type Pins = BTreeMap<(Provider, Version), KeylessPin>;

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(sums: &str, sha: &str, size: Option<u64>, h1: Option<&str>) -> KeylessPin {
        let platform = Platform::parse("linux_amd64").unwrap();
        KeylessPin {
            provider: Provider::from_source("registry.opentofu.org/acme/widget").unwrap(),
            version: Version::parse("1.0.0").unwrap(),
            sums_sha256: digest(sums),
            sums_url: "https://o.example/SHA256SUMS".parse().unwrap(),
            packages: [(
                platform,
                PinnedPackage {
                    filename: "w.zip".into(),
                    sha256: sha.into(),
                    size,
                    h1: h1.map(str::to_owned),
                },
            )]
            .into(),
            pinned_at_ms: 1,
            repin: None,
            replaced: Vec::new(),
        }
    }

    #[test]
    fn a_pin_refuses_every_change_and_learns_what_it_lacked() {
        let first = pin("sums", "aa", None, None);
        let merged = compare(&first, &pin("sums", "AA", Some(5), Some("h1:x"))).unwrap();
        let linux = Platform::parse("linux_amd64").unwrap();
        assert_eq!(merged.packages[&linux].size, Some(5));
        assert_eq!(merged.packages[&linux].h1.as_deref(), Some("h1:x"));
        let err = compare(&first, &pin("other sums", "aa", None, None)).unwrap_err();
        assert!(err.to_string().contains("SHA256SUMS now has"), "{err}");
        assert!(err.to_string().contains("--repin"), "{err}");
        assert!(compare(&first, &pin("sums", "bb", None, None))
            .unwrap_err()
            .what
            .contains("differs from the pinned w.zip with aa"));
        assert!(compare(&merged, &pin("sums", "aa", Some(6), None))
            .unwrap_err()
            .what
            .contains("size 6 differs from the pinned 5"));
        assert!(compare(&merged, &pin("sums", "aa", None, Some("h1:y")))
            .unwrap_err()
            .what
            .contains("h1:y differs"));
    }
}
