//! The origin's SHA256SUMS document: one `<sha256 hex>  <file name>` line per
//! archive of a provider version, as written by `sha256sum`.

use std::collections::BTreeMap;

/// A parsed SHA256SUMS document: file name → lowercase hex SHA-256.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sha256Sums(BTreeMap<String, String>);

/// Why a SHA256SUMS document was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SumsError {
    /// The document is not UTF-8 text.
    #[error("SHA256SUMS is not text")]
    NotText,
    /// A line names a checksum that is not 64 hex digits.
    #[error("SHA256SUMS line {0} does not hold a SHA-256 checksum")]
    BadChecksum(usize),
    /// The same file is listed twice with different checksums.
    #[error("SHA256SUMS lists {0} twice with different checksums")]
    Conflict(String),
}

impl Sha256Sums {
    /// Parses a document. Blank lines are skipped; every other line must be a
    /// checksum followed by a file name (`sha256sum`'s binary-mode `*` marker
    /// in front of the name is accepted).
    pub fn parse(text: &[u8]) -> Result<Self, SumsError> {
        let text = std::str::from_utf8(text).map_err(|_| SumsError::NotText)?;
        let mut sums = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            let mut fields = line.split_whitespace();
            let (Some(sum), Some(name), None) = (fields.next(), fields.next(), fields.next())
            else {
                if line.trim().is_empty() {
                    continue;
                }
                return Err(SumsError::BadChecksum(i + 1));
            };
            if sum.len() != 64 || !sum.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(SumsError::BadChecksum(i + 1));
            }
            let name = name.strip_prefix('*').unwrap_or(name);
            let sum = sum.to_ascii_lowercase();
            match sums.get(name) {
                Some(existing) if existing != &sum => {
                    return Err(SumsError::Conflict(name.to_owned()))
                }
                _ => {
                    sums.insert(name.to_owned(), sum);
                }
            }
        }
        Ok(Sha256Sums(sums))
    }

    /// The checksum recorded for `file_name`, if any.
    pub fn get(&self, file_name: &str) -> Option<&str> {
        self.0.get(file_name).map(String::as_str)
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
        assert_eq!(s.get("p_1.0.0_linux_amd64.zip"), Some(a.as_str()));
        assert_eq!(
            s.get("p_1.0.0_darwin_arm64.zip"),
            Some("b".repeat(64).as_str())
        );
        assert_eq!(s.get("P_1.0.0_LINUX_AMD64.zip"), None);
    }

    #[test]
    fn rejects_malformed_and_conflicting_lines() {
        let a = "a".repeat(64);
        let c = "c".repeat(64);
        assert_eq!(
            Sha256Sums::parse(b"abc  file.zip\n"),
            Err(SumsError::BadChecksum(1))
        );
        assert_eq!(
            Sha256Sums::parse(format!("{a}  x.zip\nonlyonefield\n").as_bytes()),
            Err(SumsError::BadChecksum(2))
        );
        assert_eq!(
            Sha256Sums::parse(format!("{a}  x.zip\n{c}  x.zip\n").as_bytes()),
            Err(SumsError::Conflict("x.zip".into()))
        );
        assert!(Sha256Sums::parse(format!("{a}  x.zip\n{a}  x.zip\n").as_bytes()).is_ok());
        assert_eq!(Sha256Sums::parse(b"\xff\xfe"), Err(SumsError::NotText));
    }
}
