//! Who may use the mirror.
//!
//! When `[auth]` configures any token, the JSON endpoints require
//! `Authorization: Bearer <token>`, which Terraform and OpenTofu send when
//! the CLI configuration has credentials for the mirror's host. They send no
//! credentials when downloading archives, so the archive URLs that
//! `:version.json` hands out carry an expiring HMAC signature
//! (`?expires=<unix seconds>&sig=<hex>`) instead.
//!
//! Tokens are compared by their SHA-256 digests in constant time and never
//! logged. The token file is re-read when it changes and on SIGHUP.

use std::path::{Path, PathBuf};
use std::sync::RwLock;
use std::time::{Duration, SystemTime};

use anyhow::Context;
use ring::hmac;
use subtle::ConstantTimeEq;

use crate::address::{ArchiveKey, Module, Provider, Version};
use crate::clock::SharedClock;
use crate::config::AuthConfig;
use crate::error::RequestError;
use crate::store::atomic;
use crate::verify::Sha256;

/// The tokens in force and the key that signs archive URLs.
pub struct Auth {
    static_tokens: Vec<[u8; 32]>,
    token_file: Option<PathBuf>,
    from_file: RwLock<FileTokens>,
    url_key: hmac::Key,
    url_lifetime: Duration,
    session_lifetime: Duration,
    clock: SharedClock,
}

#[derive(Default)]
struct FileTokens {
    digests: Vec<[u8; 32]>,
    modified: Option<SystemTime>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes())
}

impl Auth {
    /// Sets up authentication from `[auth]`. The URL-signing key is taken
    /// from `auth.url_key_file`, or generated once and kept as
    /// `<data_dir>/url-signing.key`. Links expire by `clock`.
    pub fn new(config: &AuthConfig, data_dir: &Path, clock: SharedClock) -> anyhow::Result<Auth> {
        let key_bytes = match &config.url_key_file {
            Some(path) => {
                let bytes = std::fs::read(path)
                    .with_context(|| format!("reading auth.url_key_file {}", path.display()))?;
                if bytes.len() < 32 {
                    anyhow::bail!(
                        "auth.url_key_file {} must hold at least 32 bytes",
                        path.display()
                    );
                }
                bytes
            }
            None => generated_key(data_dir)?,
        };
        let auth = Auth {
            static_tokens: config
                .tokens
                .iter()
                .map(|t| t.trim())
                .filter(|t| !t.is_empty())
                .map(digest)
                .collect(),
            token_file: config.token_file.clone(),
            from_file: RwLock::default(),
            url_key: hmac::Key::new(hmac::HMAC_SHA256, &key_bytes),
            url_lifetime: config.url_lifetime,
            session_lifetime: config.session_lifetime,
            clock,
        };
        if auth.token_file.is_some() {
            auth.reload_token_file()?;
        }
        Ok(auth)
    }

    /// Whether any token is configured (and so requests must carry one).
    pub fn enabled(&self) -> bool {
        self.token_file.is_some() || !self.static_tokens.is_empty()
    }

    /// Re-reads the token file (one token per line; blank lines and lines
    /// starting with `#` are skipped). On error the tokens in force stay.
    pub fn reload_token_file(&self) -> anyhow::Result<usize> {
        let Some(path) = &self.token_file else {
            return Ok(0);
        };
        let modified = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("reading auth.token_file {}", path.display()))?;
        let digests: Vec<[u8; 32]> = text
            .lines()
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
        let Some(path) = &self.token_file else { return };
        let now = std::fs::metadata(path).and_then(|m| m.modified()).ok();
        if now != self.from_file.read().expect("token lock").modified {
            match self.reload_token_file() {
                Ok(n) => tracing::info!(tokens = n, "auth.token_file changed; reloaded"),
                Err(e) => {
                    tracing::error!(error = %format!("{e:#}"), "auth.token_file changed but could not be read; keeping the tokens in force");
                }
            }
        }
    }

    /// Checks a request's `Authorization` header value: a bearer token, or
    /// HTTP Basic authentication whose password is a token (any user
    /// name), which is what version managers send (tenv's
    /// `TFENV_REMOTE_PASSWORD`, curl's `.netrc` for tfenv).
    pub fn check_token_or_basic(&self, authorization: Option<&str>) -> Result<(), RequestError> {
        match basic_password(authorization) {
            Some(password) if self.enabled() => self.check(Some(&format!("Bearer {password}"))),
            _ => self.check(authorization),
        }
    }

    /// Checks a request's `Authorization` header value.
    pub fn check(&self, authorization: Option<&str>) -> Result<(), RequestError> {
        if !self.enabled() {
            return Ok(());
        }
        let presented = bearer(authorization).ok_or_else(|| {
                RequestError::Unauthenticated(
                    "this mirror requires a token: add a credentials block for its host to the CLI configuration".into(),
                )
            })?;
        let d = digest(presented);
        let file = self.from_file.read().expect("token lock");
        // Compare against every token, without stopping at a match.
        let mut found = subtle::Choice::from(0);
        for known in self.static_tokens.iter().chain(&file.digests) {
            found |= known.ct_eq(&d);
        }
        if bool::from(found) {
            Ok(())
        } else {
            Err(RequestError::Unauthenticated(
                "the token is not valid for this mirror".into(),
            ))
        }
    }

    /// The keyed name of a token in force (`authorization` as a request
    /// carries it): what a session says it was opened with, which tells
    /// nothing of the token without the signing key. `None` for a token
    /// not in force.
    pub fn token_name(&self, authorization: Option<&str>) -> Option<String> {
        self.check(authorization).ok()?;
        let token = bearer(authorization)?;
        Some(self.name_of(&digest(token)))
    }

    fn name_of(&self, digest: &[u8; 32]) -> String {
        let tag = hmac::sign(&self.url_key, &[b"token\n".as_slice(), digest].concat());
        hex::encode(&tag.as_ref()[..16])
    }

    /// Whether a token named `name` ([`Auth::token_name`]) is still in force.
    pub fn names_a_token(&self, name: &str) -> bool {
        let file = self.from_file.read().expect("token lock");
        let mut found = subtle::Choice::from(0);
        for known in self.static_tokens.iter().chain(&file.digests) {
            found |= self.name_of(known).as_bytes().ct_eq(name.as_bytes());
        }
        bool::from(found)
    }

    /// Signs `text` with the key that signs links (for sessions).
    pub fn sign_text(&self, text: &[u8]) -> String {
        hex::encode(hmac::sign(&self.url_key, text).as_ref())
    }

    /// Whether `signature` ([`Auth::sign_text`]) signs `text`.
    pub fn signs_text(&self, text: &[u8], signature: &str) -> bool {
        decode_hex(signature).is_some_and(|tag| hmac::verify(&self.url_key, text, &tag).is_ok())
    }

    /// How long a session lasts (`auth.session_lifetime`).
    pub fn session_lifetime(&self) -> Duration {
        self.session_lifetime
    }

    /// The time, in seconds since the epoch, by this mirror's clock.
    pub fn now_secs(&self) -> u64 {
        self.clock.unix_secs()
    }

    /// The query string that makes an archive URL valid until now plus the
    /// configured lifetime.
    pub fn sign_archive(&self, key: &ArchiveKey) -> String {
        self.sign(&archive_resource(key))
    }

    /// Checks an archive request's query string.
    pub fn check_archive(&self, key: &ArchiveKey, query: Option<&str>) -> Result<(), RequestError> {
        self.check_signed(
            &archive_resource(key),
            query,
            &format!("{}/{}.json", key.provider, key.version),
        )
    }

    /// The query string that makes the URLs of a version's `index`th
    /// SHA256SUMS document and of its signature valid, as
    /// [`Auth::sign_archive`] does for archives.
    pub fn sign_sums(&self, provider: &Provider, version: &Version, index: usize) -> String {
        self.sign(&sums_resource(provider, version, index))
    }

    /// Checks the query string of a request for a SHA256SUMS document or
    /// its signature.
    pub fn check_sums(
        &self,
        provider: &Provider,
        version: &Version,
        index: usize,
        query: Option<&str>,
    ) -> Result<(), RequestError> {
        self.check_signed(
            &sums_resource(provider, version, index),
            query,
            &format!("the download of {provider} {version}"),
        )
    }

    /// The query string that makes the URL of a module version's package
    /// valid, as [`Auth::sign_archive`] does for archives.
    pub fn sign_module(&self, module: &Module, version: &Version) -> String {
        self.sign(&module_resource(module, version))
    }

    /// Checks the query string of a request for a module package.
    pub fn check_module(
        &self,
        module: &Module,
        version: &Version,
        query: Option<&str>,
    ) -> Result<(), RequestError> {
        self.check_signed(
            &module_resource(module, version),
            query,
            &format!("the download of module {module} {version}"),
        )
    }

    fn sign(&self, resource: &str) -> String {
        let expires = self.clock.unix_secs() + self.url_lifetime.as_secs();
        let tag = hmac::sign(&self.url_key, &signed_text(resource, expires));
        format!("expires={expires}&sig={}", crate::verify::hex(tag.as_ref()))
    }

    /// Checks a signed link to `resource`; a refusal tells the client to
    /// ask for `again` to get a fresh link.
    fn check_signed(
        &self,
        resource: &str,
        query: Option<&str>,
        again: &str,
    ) -> Result<(), RequestError> {
        if !self.enabled() {
            return Ok(());
        }
        let refuse = |why: &str| {
            Err(RequestError::LinkRefused(format!(
                "link {why}; ask the mirror for {again} again"
            )))
        };
        let (mut expires, mut sig) = (None, None);
        for (name, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match name.as_ref() {
                "expires" => expires = value.parse::<u64>().ok(),
                "sig" => sig = decode_hex(&value),
                _ => {}
            }
        }
        let (Some(expires), Some(sig)) = (expires, sig) else {
            return refuse("is not signed");
        };
        if hmac::verify(&self.url_key, &signed_text(resource, expires), &sig).is_err() {
            return refuse("has a wrong signature");
        }
        if expires < self.clock.unix_secs() {
            return refuse("has expired");
        }
        Ok(())
    }
}

/// What an archive link's signature names.
fn archive_resource(key: &ArchiveKey) -> String {
    let ArchiveKey {
        provider,
        version,
        platform,
    } = key;
    format!("{provider}\n{version}\n{platform}")
}

/// What a checksum link's signature names (no platform has a space).
fn sums_resource(provider: &Provider, version: &Version, index: usize) -> String {
    format!("{provider}\n{version}\nsums {index}")
}

/// What a module package link's signature names (no provider address
/// starts with `module`).
fn module_resource(module: &Module, version: &Version) -> String {
    format!("module\n{module}\n{version}")
}

/// What a link's signature covers.
fn signed_text(resource: &str, expires: u64) -> Vec<u8> {
    format!("{resource}\n{expires}").into_bytes()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() > 128 {
        return None;
    }
    hex::decode(s).ok()
}

/// The URL-signing key kept in the data directory, made on first use.
fn generated_key(data_dir: &Path) -> anyhow::Result<Vec<u8>> {
    let path = data_dir.join("url-signing.key");
    if let Ok(bytes) = std::fs::read(&path) {
        if bytes.len() >= 32 {
            return Ok(bytes);
        }
    }
    let mut key = vec![0u8; 32];
    ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), &mut key)
        .map_err(|_| anyhow::anyhow!("the system's random number generator failed"))?;
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("creating server.data_dir {}", data_dir.display()))?;
    atomic::write(data_dir, &path, &key).with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(key)
}

/// The token of an `Authorization: Bearer <token>` header value (the
/// scheme in any case), if it has one.
pub fn bearer(authorization: Option<&str>) -> Option<&str> {
    let (scheme, rest) = authorization?.split_once(' ')?;
    let token = rest.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// The password of an `Authorization: Basic` header value, if it is one.
fn basic_password(authorization: Option<&str>) -> Option<String> {
    use base64::Engine as _;
    let (scheme, rest) = authorization?.split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("basic") {
        return None;
    }
    let decoded = base64::engine::general_purpose::STANDARD
        .decode(rest.trim())
        .ok()?;
    let text = String::from_utf8(decoded).ok()?;
    let (_, password) = text.split_once(':')?;
    (!password.is_empty()).then(|| password.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::{Platform, Provider, Version};

    #[test]
    fn release_paths_take_a_token_as_a_basic_password() {
        let dir = tempfile::tempdir().unwrap();
        let a = auth(dir.path(), &["s3cret"], Duration::from_secs(60));
        assert!(a.check_token_or_basic(Some("Bearer s3cret")).is_ok());
        // "ci:s3cret" and ":s3cret" in base64.
        assert!(a.check_token_or_basic(Some("Basic Y2k6czNjcmV0")).is_ok());
        assert!(a.check_token_or_basic(Some("Basic OnMzY3JldA==")).is_ok());
        for bad in [
            None,
            Some("Basic czNjcmV0"),
            Some("Basic Y2k6bm9wZQ=="),
            Some("Basic !!"),
        ] {
            let e = a.check_token_or_basic(bad).unwrap_err();
            assert_eq!(e.status(), http::StatusCode::UNAUTHORIZED, "{bad:?}");
        }
        let open = auth(dir.path(), &[], Duration::from_secs(60));
        assert!(open.check_token_or_basic(None).is_ok());
    }

    fn key() -> ArchiveKey {
        let provider = Provider {
            hostname: "r.example".parse().unwrap(),
            namespace: "ns".parse().unwrap(),
            kind: "t".parse().unwrap(),
        };
        ArchiveKey::new(
            &provider,
            &Version::parse("1.0.0").unwrap(),
            &Platform::parse("linux_amd64").unwrap(),
        )
    }

    fn auth(dir: &Path, tokens: &[&str], lifetime: Duration) -> Auth {
        auth_on(dir, tokens, lifetime, crate::clock::system())
    }

    fn auth_on(dir: &Path, tokens: &[&str], lifetime: Duration, clock: SharedClock) -> Auth {
        let cfg = AuthConfig {
            tokens: tokens
                .iter()
                .map(std::string::ToString::to_string)
                .collect(),
            token_file: None,
            url_key_file: None,
            url_lifetime: lifetime,
            session_lifetime: Duration::from_secs(8 * 3600),
        };
        Auth::new(&cfg, dir, clock).unwrap()
    }

    #[test]
    fn bearer_tokens_are_checked() {
        let dir = tempfile::tempdir().unwrap();
        let a = auth(dir.path(), &["s3cret", "other"], Duration::from_secs(60));
        assert!(a.check(Some("Bearer s3cret")).is_ok());
        assert!(a.check(Some("bearer other")).is_ok());
        for bad in [
            None,
            Some("Bearer"),
            Some("Bearer nope"),
            Some("Basic s3cret"),
            Some("s3cret"),
        ] {
            let e = a.check(bad).unwrap_err();
            assert_eq!(e.status(), http::StatusCode::UNAUTHORIZED, "{bad:?}");
        }
        let open = auth(dir.path(), &[], Duration::from_secs(60));
        assert!(!open.enabled());
        assert!(open.check(None).is_ok());
    }

    #[test]
    fn archive_links_are_signed_and_expire() {
        let dir = tempfile::tempdir().unwrap();
        let a = auth(dir.path(), &["t"], Duration::from_secs(60));
        let q = a.sign_archive(&key());
        assert!(a.check_archive(&key(), Some(&q)).is_ok());
        let mut other = key();
        other.platform = Platform::parse("darwin_arm64").unwrap();
        assert!(
            a.check_archive(&other, Some(&q)).is_err(),
            "bound to the archive"
        );
        let tampered = q.replace("expires=", "expires=9");
        assert!(a.check_archive(&key(), Some(&tampered)).is_err());
        assert!(a.check_archive(&key(), None).is_err());
        // The key is kept: a second instance accepts the first's links.
        let b = auth(dir.path(), &["t"], Duration::from_secs(60));
        assert!(b.check_archive(&key(), Some(&q)).is_ok());
        // A link is good for its lifetime, and refused after it.
        let clock = crate::clock::ManualClock::new();
        let timed = auth_on(dir.path(), &["t"], Duration::from_secs(60), clock.clone());
        let q = timed.sign_archive(&key());
        clock.advance(Duration::from_secs(59));
        assert!(timed.check_archive(&key(), Some(&q)).is_ok());
        clock.advance(Duration::from_secs(2));
        let e = timed.check_archive(&key(), Some(&q)).unwrap_err();
        assert!(e.to_string().contains("expired"), "{e}");
        assert_eq!(e.status(), http::StatusCode::FORBIDDEN);
    }
}
