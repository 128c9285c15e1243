//! What the answers of some routes are made of: a `:version.json` for its
//! caller, the signed query of a link the facade hands out, a module
//! download's location, the platforms of a lock request.

use super::Asked;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::error::RequestError;
use crate::http::App;
use crate::mirror::facade::{Link, PackageAnswer};
use crate::protocol::{Rendered, VersionDocument};

/// A version's `:version.json` for the caller of `asked`: `plain` itself
/// when access control is off; otherwise `plain` with each archive link
/// signed for the caller, made once per signing window and caller
/// ([`crate::auth::answers`]).
pub(super) fn version_for_caller(
    app: &App,
    asked: &Asked<'_>,
    provider: &Provider,
    version: &Version,
    plain: Rendered,
) -> Result<Rendered, RequestError> {
    if !app.auth.enabled() {
        return Ok(plain);
    }
    app.auth
        .signed_answer(asked.who(), asked.path, &plain.bytes, |by| {
            let sign = |platform: &Platform| {
                app.auth
                    .sign_archive(&ArchiveKey::new(provider, version, platform), by)
            };
            let doc = VersionDocument::with_queries(&plain.bytes, sign).map_err(|e| {
                RequestError::Internal(format!(
                    "the answer of {provider} {version} does not read back: {e}"
                ))
            })?;
            Ok(Rendered::new(&doc))
        })
}

/// The facade's download answer for the caller of `asked`: with plain
/// links when access control is off; otherwise with links signed for the
/// caller, made once per signing window and caller.
pub(super) fn package_for_caller(
    app: &App,
    asked: &Asked<'_>,
    key: &ArchiveKey,
    answer: &PackageAnswer,
) -> bytes::Bytes {
    let plain = bytes::Bytes::from(answer.plain());
    if !app.auth.enabled() {
        return plain;
    }
    let Ok(signed) = app
        .auth
        .signed_answer(asked.who(), asked.path, &plain, |by| {
            let query = |link: Link<'_>| link_query(app, key, link, by);
            Ok::<_, std::convert::Infallible>(Rendered::new_json(answer.linked(&query)))
        });
    signed.bytes
}

/// The query of a link the facade hands out: signed when access control
/// is on (clients send no credentials when they follow these links).
/// It names `by` ([`crate::auth::Auth::link_name`]), who asked for it.
fn link_query(app: &App, key: &ArchiveKey, link: Link<'_>, by: Option<&str>) -> String {
    if !app.auth.enabled() {
        return String::new();
    }
    match link {
        Link::Archive(archive) => app.auth.sign_archive(archive, by),
        Link::Sums(index) => app.auth.sign_sums(&key.provider, &key.version, index, by),
    }
}

/// Characters of a subdirectory that must be escaped in a module
/// location: those that would end the path or start a query or fragment.
const SUBDIR_ESCAPED: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'\\');

/// The location a module download answer gives: the package beside the
/// download endpoint (relative, so it holds behind any proxy), then the
/// origin's `//subdir`, then the link's signature.
pub(super) fn module_location(subdir: Option<&str>, query: &str) -> String {
    let mut location = String::from("./package.tar.gz");
    if let Some(subdir) = subdir {
        location.push_str("//");
        location.extend(percent_encoding::utf8_percent_encode(
            subdir,
            SUBDIR_ESCAPED,
        ));
    }
    if !query.is_empty() {
        location.push('?');
        location.push_str(query);
    }
    location
}

/// The `platform` parameters of a lock request: at least one.
pub(super) fn lock_platforms(query: Option<&str>) -> Result<Vec<Platform>, RequestError> {
    let mut platforms = Vec::new();
    for (key, value) in url::form_urlencoded::parse(query.unwrap_or("").as_bytes()) {
        if key == "platform" {
            let platform = Platform::parse(&value)?;
            if !platforms.contains(&platform) {
                platforms.push(platform);
            }
        }
    }
    if platforms.is_empty() {
        return Err(RequestError::InvalidRequest(
            "name the platforms to lock with ?platform=linux_amd64&platform=…".into(),
        ));
    }
    Ok(platforms)
}
