//! One namespace or type part of a provider address, checked and
//! normalized as Terraform reads it.

use super::{plain, InvalidName, MAX_PART_LEN};

/// Whether a part may hold underscores: a namespace may (Terraform reads
/// `app.terraform.io/openai_inc/kube` from 1.16 on, for HCP Terraform
/// organisations), a provider type may not (`hashicorp/google_beta` is no
/// address: the type names resources in the configuration's language).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Underscores {
    /// Allowed anywhere, and kept as they are.
    Allowed,
    /// Refused.
    Refused,
}

/// Checks one namespace or type part the way Terraform checks provider
/// address parts: letters, digits and single dashes (and, in a namespace,
/// underscores), no leading or trailing dash, case-folded with the IDNA
/// mapping rules.
pub(super) fn parse_part(
    what: &'static str,
    given: &str,
    underscores: Underscores,
) -> Result<String, InvalidName> {
    if plain::normalized_part(given, MAX_PART_LEN) {
        return Ok(given.to_owned());
    }
    map_part(what, given, underscores)
}

/// [`parse_part`] through the IDNA mapping, for a part not already in its
/// normalized form. Underscores, where allowed, are kept where they are
/// and the pieces between them mapped.
pub(super) fn map_part(
    what: &'static str,
    given: &str,
    underscores: Underscores,
) -> Result<String, InvalidName> {
    let err = |reason| InvalidName::new(what, given, reason);
    let allowed = |c: char| {
        c.is_alphanumeric() || c == '-' || (c == '_' && underscores == Underscores::Allowed)
    };
    let kinds = match underscores {
        Underscores::Allowed => "only letters, digits, dashes and underscores are allowed",
        Underscores::Refused => "only letters, digits and dashes are allowed",
    };
    if given.is_empty() {
        return Err(err("must not be empty"));
    }
    if given.len() > MAX_PART_LEN * 4 {
        return Err(err("too long"));
    }
    if given.contains('.') {
        return Err(err("dots are not allowed"));
    }
    if given.contains("--") {
        return Err(err("consecutive dashes are not allowed"));
    }
    if !given.chars().all(allowed) {
        return Err(err(kinds));
    }
    let mut mapped = String::with_capacity(given.len());
    for (i, piece) in given.split('_').enumerate() {
        if i > 0 {
            mapped.push('_');
        }
        if piece.is_empty() {
            continue;
        }
        let (piece, result) = idna::domain_to_unicode(piece);
        if result.is_err() || piece.is_empty() || piece.contains('.') {
            return Err(err("not a valid name"));
        }
        mapped.push_str(&piece);
    }
    if mapped.starts_with('-') || mapped.ends_with('-') {
        return Err(err("must not start or end with a dash"));
    }
    if !mapped.chars().all(allowed) || mapped.contains("--") {
        return Err(err(kinds));
    }
    if mapped.len() > MAX_PART_LEN {
        return Err(err("too long"));
    }
    Ok(mapped)
}
