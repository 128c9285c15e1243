//! The configured tokens: `auth.tokens` and the lines of `auth.token_file`,
//! kept only as SHA-256 digests and compared in constant time.

use std::path::PathBuf;
use std::sync::RwLock;
use std::time::SystemTime;

use anyhow::Context;
use subtle::ConstantTimeEq;

use crate::verify::Sha256;

/// The tokens in force.
pub struct Tokens {
    configured: Vec<[u8; 32]>,
    file: Option<PathBuf>,
    from_file: RwLock<FileTokens>,
}

#[derive(Default)]
struct FileTokens {
    digests: Vec<[u8; 32]>,
    modified: Option<SystemTime>,
}

/// A token's digest.
pub fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes())
}

impl Tokens {
    /// `tokens` (blank ones skipped), and those of `file`, read now.
    pub fn new(tokens: &[String], file: Option<PathBuf>) -> anyhow::Result<Tokens> {
        let t = Tokens {
            configured: (tokens.iter())
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .map(digest)
                .collect(),
            file,
            from_file: RwLock::default(),
        };
        if t.file.is_some() {
            t.reload_file()?;
        }
        Ok(t)
    }

    /// Whether any token may be in force.
    pub fn any(&self) -> bool {
        self.file.is_some() || !self.configured.is_empty()
    }

    /// Whether tokens come from a file.
    pub fn has_file(&self) -> bool {
        self.file.is_some()
    }

    /// Re-reads the token file (one token per line; blank lines and lines
    /// starting with `#` are skipped). On error the tokens in force stay.
    pub fn reload_file(&self) -> anyhow::Result<usize> {
        let Some(path) = &self.file else {
            return Ok(0);
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading auth.token_file {}", path.display()))?;
        let digests: Vec<[u8; 32]> = (text.lines())
            .map(str::trim)
            .filter(|l| !l.is_empty() && !l.starts_with('#'))
            .map(digest)
            .collect();
        let count = digests.len();
        *self.from_file.write().expect("token lock") = FileTokens { digests, modified };
        Ok(count)
    }

    /// Re-reads the token file when its modification time changed.
    pub fn reload_if_changed(&self) {
        let Some(path) = &self.file else { return };
        let now = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if now != self.from_file.read().expect("token lock").modified {
            match self.reload_file() {
                Ok(n) => tracing::info!(tokens = n, "auth.token_file changed; reloaded"),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "auth.token_file changed but could not be read; keeping the tokens in force");
                }
            }
        }
    }

    /// Whether some token in force has `digest` (every one compared,
    /// without stopping at a match), or `name(digest)` equals `name`.
    pub fn find(&self, matches: impl Fn(&[u8; 32]) -> subtle::Choice) -> bool {
        let file = self.from_file.read().expect("token lock");
        let mut found = subtle::Choice::from(0);
        for known in self.configured.iter().chain(&file.digests) {
            found |= matches(known);
        }
        bool::from(found)
    }

    /// Whether `token` is in force.
    pub fn holds(&self, token: &str) -> bool {
        let d = digest(token);
        self.find(|known| known.ct_eq(&d))
    }
}
