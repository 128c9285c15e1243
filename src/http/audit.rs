//! The audit trail: one event per archive or module package served, on its
//! own target ([`AUDIT_LOG`]) so that operators can route it to a file
//! (`log.audit_file`) or pick it out of the log for their shipper. It
//! names the client, the token that opened the mirror (by fingerprint:
//! tokens have no names, and the token itself is a secret), what was
//! served and how many bytes; the request's span adds its ID and cache
//! outcome (`hit`, `miss`). A provider archive's event says how its version
//! was verified, so that keyless versions stand out in the trail.

use crate::address::{ArchiveKey, Module, Version};
use crate::verify::{self, Verification};

/// The target of the audit events.
pub const AUDIT_LOG: &str = "tfmirror::audit";

/// What a request served, for the audit trail.
#[derive(Debug, Clone)]
pub enum Served {
    /// A provider archive.
    Archive(ArchiveKey),
    /// A module version's package.
    Package(Module, Version),
}

/// A token's fingerprint, `sha256:` and the first 12 hex digits of its
/// SHA-256: enough to tell tokens apart in the trail, nothing to use.
pub fn token_fingerprint(authorization: Option<&str>) -> Option<String> {
    let token = crate::auth::bearer(authorization)?;
    let digest = verify::hex(&verify::Sha256::digest(token.as_bytes()));
    Some(format!("sha256:{}", &digest[..12]))
}

/// Records one served artifact; a provider archive with how its version
/// was verified (`signed`, `pinned-key`, `keyless`).
pub fn record(
    served: &Served,
    client: &str,
    token: Option<&str>,
    bytes: Option<u64>,
    verification: Option<Verification>,
) {
    let token = token.unwrap_or("-");
    let bytes = bytes.unwrap_or(0);
    match served {
        Served::Archive(key) => tracing::info!(
            target: AUDIT_LOG,
            client,
            token,
            kind = "provider",
            source = %key.provider,
            version = %key.version,
            platform = %key.platform,
            verification = verification.map_or("-", Verification::as_str),
            bytes,
            "served"
        ),
        Served::Package(module, version) => tracing::info!(
            target: AUDIT_LOG,
            client,
            token,
            kind = "module",
            source = %module,
            version = %version,
            bytes,
            "served"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_named_by_a_short_fingerprint() {
        let a = token_fingerprint(Some("Bearer s3cret")).unwrap();
        assert_eq!(a.len(), "sha256:".len() + 12);
        assert!(!a.contains("s3cret"));
        assert_eq!(token_fingerprint(Some("bearer s3cret")), Some(a.clone()));
        assert_ne!(token_fingerprint(Some("Bearer other")), Some(a));
        assert_eq!(token_fingerprint(Some("Basic abc")), None);
        assert_eq!(token_fingerprint(None), None);
    }
}
