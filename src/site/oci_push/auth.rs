//! Credentials for a site's OCI registry: a configured token (with a
//! username, the password of Basic authentication and of the token
//! service; alone, a bearer token sent as it is), or the entry for the
//! registry in the auth files Docker and Podman write (`auths.<host>`,
//! `auth` = base64 of `username:password`, or `username` and `password`),
//! looked for where they look: `$REGISTRY_AUTH_FILE`,
//! `$XDG_RUNTIME_DIR/containers/auth.json`,
//! `$XDG_CONFIG_HOME/containers/auth.json` (else
//! `~/.config/containers/auth.json`), `$DOCKER_CONFIG/config.json` (else
//! `~/.docker/config.json`). The most specific entry wins: `host/path`
//! over `host` when the repository is below `path`. Credential helpers
//! (`credsStore`, `credHelpers`) are not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::Context;
use base64::Engine;
use serde::Deserialize;

/// What the registry is given when it asks.
#[derive(Clone, Default, PartialEq, Eq)]
pub enum Credential {
    /// Nothing: anonymous.
    #[default]
    Anonymous,
    /// A username and password (or token).
    Basic {
        /// The username.
        username: String,
        /// The password or token.
        password: String,
    },
    /// A bearer token, sent as it is.
    Bearer(String),
}

impl std::fmt::Debug for Credential {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Credential::Anonymous => f.write_str("Anonymous"),
            Credential::Basic { username, .. } => write!(f, "Basic({username}, <hidden>)"),
            Credential::Bearer(_) => f.write_str("Bearer(<hidden>)"),
        }
    }
}

impl Credential {
    /// A configured token, with the username it goes with, if any.
    pub fn configured(username: Option<&str>, token: String) -> Credential {
        match username {
            Some(username) => Credential::Basic {
                username: username.to_owned(),
                password: token,
            },
            None => Credential::Bearer(token),
        }
    }

    /// The `Authorization` value of Basic authentication, if it has one.
    pub fn basic_header(&self) -> Option<String> {
        match self {
            Credential::Basic { username, password } => Some(format!(
                "Basic {}",
                base64::engine::general_purpose::STANDARD.encode(format!("{username}:{password}"))
            )),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct AuthFile {
    #[serde(default)]
    auths: Option<BTreeMap<String, AuthEntry>>,
}

#[derive(Deserialize)]
struct AuthEntry {
    #[serde(default)]
    auth: Option<String>,
    #[serde(default)]
    username: Option<String>,
    #[serde(default)]
    password: Option<String>,
    #[serde(default)]
    identitytoken: Option<String>,
}

/// The credential for `registry` (`host[:port]`) and the repositories
/// below `prefix`: the configured token (with its username, if any), else
/// the entry of the first auth file that has one, else none; and where it
/// came from, for the report.
pub fn resolve(
    registry: &str,
    prefix: &str,
    username: Option<&str>,
    token: Option<String>,
) -> anyhow::Result<(Credential, String)> {
    if let Some(token) = token {
        return Ok((
            Credential::configured(username, token),
            "the configured token".into(),
        ));
    }
    let repository = if prefix.is_empty() { "x" } else { prefix };
    Ok(
        match from_auth_files(&auth_files(), registry, repository)? {
            Some((credential, file)) => (credential, file.display().to_string()),
            None => (Credential::Anonymous, "none (anonymous)".into()),
        },
    )
}

/// The auth files looked in, in order.
pub fn auth_files() -> Vec<PathBuf> {
    let env = |name: &str| {
        std::env::var_os(name)
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    };
    let home = env("HOME");
    let mut files = Vec::new();
    files.extend(env("REGISTRY_AUTH_FILE"));
    files.extend(env("XDG_RUNTIME_DIR").map(|d| d.join("containers/auth.json")));
    match env("XDG_CONFIG_HOME") {
        Some(d) => files.push(d.join("containers/auth.json")),
        None => files.extend(
            home.as_ref()
                .map(|h| h.join(".config/containers/auth.json")),
        ),
    }
    match env("DOCKER_CONFIG") {
        Some(d) => files.push(d.join("config.json")),
        None => files.extend(home.as_ref().map(|h| h.join(".docker/config.json"))),
    }
    files
}

/// The credential the first auth file with an entry for `registry`
/// (`host[:port]`) and `repository` gives, and that file.
pub fn from_auth_files(
    files: &[PathBuf],
    registry: &str,
    repository: &str,
) -> anyhow::Result<Option<(Credential, PathBuf)>> {
    for file in files {
        let text = match std::fs::read(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e).with_context(|| format!("reading {}", file.display())),
        };
        if let Some(credential) = entry_in(&text, file, registry, repository)? {
            return Ok(Some((credential, file.clone())));
        }
    }
    Ok(None)
}

/// The credential an auth file's text gives for a registry and
/// repository.
fn entry_in(
    text: &[u8],
    file: &Path,
    registry: &str,
    repository: &str,
) -> anyhow::Result<Option<Credential>> {
    let parsed: AuthFile = serde_json::from_slice(text).with_context(|| {
        format!(
            "{} is not an auth file (JSON with \"auths\")",
            file.display()
        )
    })?;
    let wanted = format!("{registry}/{repository}");
    let best = parsed
        .auths
        .unwrap_or_default()
        .into_iter()
        .filter_map(|(key, entry)| {
            let key = normalized(&key);
            let fits = key == registry || wanted.starts_with(&format!("{key}/"));
            fits.then_some((key.len(), key, entry))
        })
        .max_by_key(|(len, _, _)| *len);
    let Some((_, key, entry)) = best else {
        return Ok(None);
    };
    let what = format!("{}: auths.\"{key}\"", file.display());
    if let Some(encoded) = entry.auth.as_deref().filter(|a| !a.is_empty()) {
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .ok()
            .and_then(|d| String::from_utf8(d).ok())
            .with_context(|| format!("{what}.auth is not base64 of username:password"))?;
        let (username, password) = decoded
            .split_once(':')
            .with_context(|| format!("{what}.auth is not base64 of username:password"))?;
        return Ok(Some(Credential::Basic {
            username: username.to_owned(),
            password: password.to_owned(),
        }));
    }
    if let (Some(username), Some(password)) = (entry.username, entry.password) {
        return Ok(Some(Credential::Basic { username, password }));
    }
    if entry.identitytoken.is_some() {
        anyhow::bail!("{what} holds an identity token, which tfmirror does not exchange; configure a token instead");
    }
    anyhow::bail!("{what} has neither auth nor username and password")
}

/// An auth file's key as `host[:port][/path]`: without a scheme and
/// without Docker's `/v1/` or `/v2/` suffix.
fn normalized(key: &str) -> String {
    let key = key
        .trim_start_matches("https://")
        .trim_start_matches("http://")
        .trim_end_matches('/');
    key.strip_suffix("/v1")
        .or_else(|| key.strip_suffix("/v2"))
        .unwrap_or(key)
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn basic(user: &str, pass: &str) -> Credential {
        Credential::Basic {
            username: user.into(),
            password: pass.into(),
        }
    }

    #[test]
    fn the_most_specific_entry_for_the_registry_wins() {
        let encoded = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        let text = serde_json::json!({
            "auths": {
                "https://reg.example:5000/v2/": { "auth": encoded("site:one") },
                "reg.example:5000/tofu/team": { "username": "team", "password": "two" },
                "other.example": { "auth": encoded("x:y") },
            },
            "credsStore": "desktop",
        })
        .to_string();
        let file = Path::new("auth.json");
        let find = |repo: &str| entry_in(text.as_bytes(), file, "reg.example:5000", repo).unwrap();
        assert_eq!(find("tofu/a/b/c"), Some(basic("site", "one")));
        assert_eq!(find("tofu/team/b/c"), Some(basic("team", "two")));
        assert_eq!(find("tofu/teamster/b"), Some(basic("site", "one")));
        assert_eq!(
            entry_in(text.as_bytes(), file, "none.example", "a").unwrap(),
            None
        );
    }

    #[test]
    fn unusable_entries_are_named() {
        let file = Path::new("auth.json");
        for (entry, says) in [
            (serde_json::json!({ "auth": "%%%" }), "not base64"),
            (
                serde_json::json!({ "identitytoken": "t" }),
                "identity token",
            ),
            (serde_json::json!({}), "neither auth"),
        ] {
            let text = serde_json::json!({ "auths": { "reg.example": entry } }).to_string();
            let e = entry_in(text.as_bytes(), file, "reg.example", "a").unwrap_err();
            assert!(format!("{e:#}").contains(says), "{e:#}");
            assert!(format!("{e:#}").contains("auths.\"reg.example\""), "{e:#}");
        }
        assert!(entry_in(b"{\"auths\": ", file, "reg.example", "a").is_err());
    }

    #[test]
    fn files_are_read_in_order_and_missing_ones_skipped() {
        let dir = tempfile::tempdir().unwrap();
        let first = dir.path().join("first.json");
        let second = dir.path().join("second.json");
        std::fs::write(
            &second,
            r#"{"auths":{"reg.example":{"username":"u","password":"p"}}}"#,
        )
        .unwrap();
        let found = from_auth_files(&[first, second.clone()], "reg.example", "a/b").unwrap();
        assert_eq!(found, Some((basic("u", "p"), second)));
        assert!(format!("{:?}", basic("u", "secret"))
            .find("secret")
            .is_none());
    }
}
