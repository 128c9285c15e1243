//! The origin's SHA256SUMS document: one `<sha256 hex>  <file name>` line per
//! archive of a provider version, as written by `sha256sum`.
//!
//! Read as Terraform and OpenTofu read it: a file's checksum is the first
//! field of the first line whose second field is the file's name; lines
//! that do not have that shape are passed over, and a checksum that is not
//! 64 hex digits only matters for the file whose line it is on.

use std::collections::BTreeMap;

/// A parsed SHA256SUMS document: file name → the checksum as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sha256Sums(BTreeMap<String, String>);

/// Why a SHA256SUMS document was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SumsError {
    /// The document is not UTF-8 text.
    #[error("SHA256SUMS is not text")]
    NotText,
}

impl Sha256Sums {
    /// Parses a document. Every line with at least two fields names a file
    /// (its second field; `sha256sum`'s binary-mode `*` in front of the name
    /// is taken off) and its checksum (the first); the first line for a
    /// name counts. Other lines are passed over, as the clients pass them
    /// over.
    pub fn parse(text: &[u8]) -> Result<Self, SumsError> {
        let text = std::str::from_utf8(text).map_err(|_| SumsError::NotText)?;
        let mut sums = BTreeMap::new();
        for line in text.split('\n') {
            let mut fields = line.split_whitespace();
            let (Some(sum), Some(name)) = (fields.next(), fields.next()) else {
                continue;
            };
            let name = name.strip_prefix('*').unwrap_or(name);
            sums.entry(name.to_owned())
                .or_insert_with(|| sum.to_owned());
        }
        Ok(Sha256Sums(sums))
    }

    /// The checksum recorded for `file_name` (lowercase hex), if its line
    /// holds one.
    pub fn get(&self, file_name: &str) -> Option<String> {
        self.0
            .get(file_name)
            .filter(|s| s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()))
            .map(|s| s.to_ascii_lowercase())
    }

    /// Every file name the document lists, in name order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.0.keys().map(String::as_str)
    }

    /// What the line for `file_name` holds where it is not a SHA-256
    /// checksum (for messages), or `None`.
    pub fn malformed(&self, file_name: &str) -> Option<&str> {
        self.0
            .get(file_name)
            .filter(|_| self.get(file_name).is_none())
            .map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sha256sum_output() {
        let a = "a".repeat(64);
        let b = "B".repeat(64);
        let doc = format!("{a}  p_1.0.0_linux_amd64.zip\n\n{b} *p_1.0.0_darwin_arm64.zip\n");
        let s = Sha256Sums::parse(doc.as_bytes()).unwrap();
        assert_eq!(s.get("p_1.0.0_linux_amd64.zip"), Some(a.clone()));
        assert_eq!(s.get("p_1.0.0_darwin_arm64.zip"), Some("b".repeat(64)));
        assert_eq!(s.get("P_1.0.0_LINUX_AMD64.zip"), None);
    }

    #[test]
    fn reads_as_the_clients_read_it() {
        let a = "a".repeat(64);
        let c = "c".repeat(64);
        // Lines of other shapes are passed over; the first line for a
        // name counts; a third field is ignored; CRLF line ends are fine.
        let doc = format!(
            "# comment line\nonlyonefield\n{a}  x.zip\n{c}  x.zip\n{c}  y.zip extra\r\nabc  z.zip\n"
        );
        let s = Sha256Sums::parse(doc.as_bytes()).unwrap();
        assert_eq!(s.get("x.zip"), Some(a));
        assert_eq!(s.get("y.zip"), Some(c));
        assert_eq!(s.get("z.zip"), None);
        assert_eq!(s.malformed("z.zip"), Some("abc"));
        assert_eq!(s.malformed("x.zip"), None);
        assert_eq!(Sha256Sums::parse(b"\xff\xfe"), Err(SumsError::NotText));
    }
}
