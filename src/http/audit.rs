//! The audit trail: one event per archive or module package served, on its
//! own target ([`AUDIT_LOG`]) so that operators can route it to a file
//! (`log.audit_file`) or pick it out of the log for their shipper. It
//! names the client and who opened the mirror (`identity`: `token`, with
//! its fingerprint, since tokens have no names and the token itself is a
//! secret; `oidc` or `person`, with `issuer`, `subject` and the `claims`
//! the deciding rule read), what was served and how many bytes; the request's span adds its ID and cache
//! outcome (`hit`, `miss`). A provider archive's event says how its version
//! was verified, so that keyless versions stand out in the trail.

use crate::address::{ArchiveKey, Module, Version};
use crate::auth::{Who, WhoKind};
use crate::verify::Verification;

/// The target of the audit events.
pub const AUDIT_LOG: &str = crate::log_context::AUDIT_TARGET;

/// What a request served, for the audit trail.
#[derive(Debug, Clone)]
pub enum Served {
    /// A provider archive.
    Archive(ArchiveKey),
    /// A module version's package.
    Package(Module, Version),
}

/// Records one served artifact; a provider archive with how its version
/// was verified (`signed`, `pinned-key`, `keyless`). `who`: who sent the
/// request, or asked for the signed link it followed.
pub fn record(
    served: &Served,
    client: &str,
    who: Option<&Who>,
    bytes: Option<u64>,
    verification: Option<Verification>,
) {
    let identity = who.map_or("-", |w| w.kind.as_str());
    let token = match who {
        Some(w) if w.kind == WhoKind::Token => w.subject.as_str(),
        _ => "-",
    };
    let issuer = who.map_or("-", |w| if w.issuer.is_empty() { "-" } else { &w.issuer });
    let subject = who.map_or("-", |w| w.subject.as_str());
    let claims = who.map(Who::claims_text).unwrap_or_default();
    let bytes = bytes.unwrap_or(0);
    match served {
        Served::Archive(key) => tracing::info!(
            target: AUDIT_LOG,
            client,
            identity,
            token,
            issuer,
            subject,
            claims,
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
            identity,
            token,
            issuer,
            subject,
            claims,
            kind = "module",
            source = %module,
            version = %version,
            bytes,
            "served"
        ),
    }
}
