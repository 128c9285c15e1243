//! Names already in their normalized form, recognized without the IDNA
//! machinery: nearly every name a client sends is lowercase ASCII letters,
//! digits and single dashes, which the IDNA mapping leaves as they are.
//! Anything else (capitals, other scripts, `xn--` labels, doubled dashes)
//! takes the full path.

/// Longest DNS label, in bytes.
const MAX_LABEL_LEN: usize = 63;
/// Longest DNS name, in bytes.
const MAX_NAME_LEN: usize = 253;

/// Lowercase ASCII letters and digits, with single dashes between them
/// (never first or last, never two together, so never an `xn--` label's
/// prefix or the dashes IDNA reserves at the third and fourth places).
fn plain_label(label: &[u8]) -> bool {
    let (Some(&first), Some(&last)) = (label.first(), label.last()) else {
        return false;
    };
    if first == b'-' || last == b'-' {
        return false;
    }
    let mut after_dash = false;
    for &b in label {
        if b == b'-' {
            if after_dash {
                return false;
            }
            after_dash = true;
        } else if b.is_ascii_lowercase() || b.is_ascii_digit() {
            after_dash = false;
        } else {
            return false;
        }
    }
    true
}

/// A hostname (without port) that `idna::domain_to_ascii_strict` returns
/// unchanged: plain labels of DNS lengths, within a DNS name's length.
pub(super) fn normalized_hostname(host: &str) -> bool {
    host.len() <= MAX_NAME_LEN
        && host
            .as_bytes()
            .split(|&b| b == b'.')
            .all(|label| label.len() <= MAX_LABEL_LEN && plain_label(label))
}

/// A namespace or provider type that the IDNA mapping returns unchanged and
/// that passes every check of a part: one plain label of at most `max`
/// bytes.
pub(super) fn normalized_part(part: &str, max: usize) -> bool {
    part.len() <= max && plain_label(part.as_bytes())
}
