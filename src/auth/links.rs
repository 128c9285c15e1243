//! Signed links: the archive, checksum and module package URLs the mirror
//! hands out carry an expiring HMAC signature (`?expires=<unix
//! seconds>&sig=<hex>`), since the clients send no credentials when they
//! follow them. A link handed to an issuer's identity (a CI job, a pod, a
//! person) also carries who that was (`by=`, covered by the signature), so
//! that the audit trail names them when the link is followed.
//!
//! Links are signed per window ([`Auth::link_window`]): a link made at any
//! time in a window expires `auth.url_lifetime` after the window's end, so
//! every link to one resource for one caller in one window is the same,
//! and an answer made of them can be kept for the window
//! ([`super::answers`]) while each link it hands out still has at least
//! the full lifetime to live.

use ring::hmac;

use super::identity::{Who, WhoKind};
use super::Auth;
use crate::address::{ArchiveKey, Module, Provider, Version};
use crate::error::RequestError;

impl Auth {
    /// The query string that makes an archive URL valid for at least the
    /// configured lifetime (until that long after this window's end), naming `by` ([`Auth::link_name`]) as who asked
    /// for it.
    pub fn sign_archive(&self, key: &ArchiveKey, by: Option<&str>) -> String {
        self.sign(&archive_resource(key), by)
    }

    /// Checks an archive request's query string: who asked for the link.
    pub fn check_archive(
        &self,
        key: &ArchiveKey,
        query: Option<&str>,
    ) -> Result<Option<Who>, RequestError> {
        self.check_signed(
            &archive_resource(key),
            query,
            &format!("{}/{}.json", key.provider, key.version),
        )
    }

    /// The query string that makes the URLs of a version's `index`th
    /// SHA256SUMS document and of its signature valid, as
    /// [`Auth::sign_archive`] does for archives.
    pub fn sign_sums(
        &self,
        provider: &Provider,
        version: &Version,
        index: usize,
        by: Option<&str>,
    ) -> String {
        self.sign(&sums_resource(provider, version, index), by)
    }

    /// Checks the query string of a request for a SHA256SUMS document or
    /// its signature.
    pub fn check_sums(
        &self,
        provider: &Provider,
        version: &Version,
        index: usize,
        query: Option<&str>,
    ) -> Result<Option<Who>, RequestError> {
        self.check_signed(
            &sums_resource(provider, version, index),
            query,
            &format!("the download of {provider} {version}"),
        )
    }

    /// The query string that makes the URL of a module version's package
    /// valid, as [`Auth::sign_archive`] does for archives.
    pub fn sign_module(&self, module: &Module, version: &Version, by: Option<&str>) -> String {
        self.sign(&module_resource(module, version), by)
    }

    /// Checks the query string of a request for a module package.
    pub fn check_module(
        &self,
        module: &Module,
        version: &Version,
        query: Option<&str>,
    ) -> Result<Option<Who>, RequestError> {
        self.check_signed(
            &module_resource(module, version),
            query,
            &format!("the download of module {module} {version}"),
        )
    }

    /// What a link handed to `who` says of them (its `by=`): computed once
    /// for an answer, however many links it signs. Only an issuer's
    /// identities ride along. A configured token's link is signed as the
    /// releases before this one signed it, so that instances of either
    /// release behind one load balancer take each other's links during a
    /// rolling upgrade (issuers need every instance upgraded: an older one
    /// refuses `[[auth.oidc]]`).
    pub fn link_name(&self, who: Option<&Who>) -> Option<String> {
        who.filter(|w| w.kind != WhoKind::Token).map(Who::encode)
    }

    /// The window links are signed in now: the mirror's clock in
    /// [`Auth::link_window_length`] steps.
    pub fn link_window(&self) -> u64 {
        self.clock.unix_secs() / self.link_window_length().as_secs()
    }

    /// How long a signing window lasts: a sixtieth of `auth.url_lifetime`,
    /// at least a second and at most a minute, so that a link lives at
    /// most that much longer than the lifetime.
    pub fn link_window_length(&self) -> std::time::Duration {
        window_length(self.url_lifetime)
    }

    fn sign(&self, resource: &str, by: Option<&str>) -> String {
        let window = self.link_window_length().as_secs();
        let expires = (self.link_window() + 1) * window + self.url_lifetime.as_secs();
        let by = by.unwrap_or_default();
        let tag = hmac::sign(&self.url_key, &signed_text(resource, expires, by));
        let sig = crate::verify::hex(tag.as_ref());
        if by.is_empty() {
            format!("expires={expires}&sig={sig}")
        } else {
            format!("expires={expires}&by={by}&sig={sig}")
        }
    }

    /// Checks a signed link to `resource`; a refusal tells the client to
    /// ask for `again` to get a fresh link.
    fn check_signed(
        &self,
        resource: &str,
        query: Option<&str>,
        again: &str,
    ) -> Result<Option<Who>, RequestError> {
        if !self.enabled() {
            return Ok(None);
        }
        let refuse = |why: &str| {
            Err(RequestError::LinkRefused(format!(
                "link {why}; ask the mirror for {again} again"
            )))
        };
        let (mut expires, mut sig, mut by) = (None, None, String::new());
        for (name, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
            match name.as_ref() {
                "expires" => expires = value.parse::<u64>().ok(),
                "sig" => sig = super::decode_hex(&value),
                "by" => by = value.into_owned(),
                _ => {}
            }
        }
        let (Some(expires), Some(sig)) = (expires, sig) else {
            return refuse("is not signed");
        };
        if hmac::verify(&self.url_key, &signed_text(resource, expires, &by), &sig).is_err() {
            return refuse("has a wrong signature");
        }
        if expires < self.clock.unix_secs() {
            return refuse("has expired");
        }
        Ok(Who::decode(&by))
    }
}

/// How long a signing window lasts for links that live `lifetime`.
pub(super) fn window_length(lifetime: std::time::Duration) -> std::time::Duration {
    (lifetime / 60).clamp(
        std::time::Duration::from_secs(1),
        std::time::Duration::from_secs(60),
    )
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

/// What a link's signature covers: a link naming nobody is signed as
/// before callers were named, so links of either kind hold across an
/// upgrade.
fn signed_text(resource: &str, expires: u64, by: &str) -> Vec<u8> {
    if by.is_empty() {
        format!("{resource}\n{expires}").into_bytes()
    } else {
        format!("{resource}\n{expires}\nby {by}").into_bytes()
    }
}
