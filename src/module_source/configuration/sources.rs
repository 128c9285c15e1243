//! How the clients classify a `module` block's `source`: a local path, a
//! module registry address, a remote source they fetch themselves, or
//! nothing they recognise (which they refuse).

use crate::address::{Module, Product};

/// How a `module` block's `source` is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory beside the caller's (`./net`, `../shared`).
    Local(String),
    /// A module registry address, with its `//subdirectory`.
    Registry(Module, Option<String>),
    /// Anything else the clients recognise: fetched by the client itself
    /// (git, HTTP, S3, …).
    Remote(&'static str),
    /// Neither a local path, a registry address nor a remote source the
    /// clients recognise (`modules/net` without `./`): they refuse it.
    Invalid,
}

/// Classifies a module source as the clients do: a local path by its
/// prefix; a registry address when it reads as one (three or four parts,
/// a hostname with a dot and not `github.com` or `bitbucket.org`, no
/// subdirectory leading out); anything else is fetched directly.
pub fn classify(source: &str, client: Product) -> Source {
    if ["./", "../", ".\\", "..\\"]
        .iter()
        .any(|p| source.starts_with(p))
    {
        return Source::Local(source.replace('\\', "/"));
    }
    let host = source.split('/').next().unwrap_or_default();
    let four_parts = source
        .split("//")
        .next()
        .unwrap_or_default()
        .split('/')
        .count()
        == 4;
    let host_ok = !four_parts
        || (host.contains('.')
            && !host.eq_ignore_ascii_case("github.com")
            && !host.eq_ignore_ascii_case("bitbucket.org"));
    if host_ok && !source.contains("://") && !source.contains("::") {
        if let Ok((module, subdir)) = Module::from_source_on(source, client.default_registry()) {
            if !subdir.as_deref().is_some_and(|s| s.starts_with("../")) {
                return Source::Registry(module, subdir);
            }
        }
    }
    remote_kind(source).map_or(Source::Invalid, Source::Remote)
}

/// What kind of remote source the clients take `source` for (neither
/// local nor a registry address), for people; `None` when they recognise
/// none: a URL with a scheme, with or without a forced getter (`git::`),
/// or one of the shorthands they detect (`github.com/…`,
/// `bitbucket.org/…`, `git@…`, a GCS or S3 URL without a scheme, an
/// absolute path). Anything else is taken for a relative path written
/// without `./`, which they refuse.
fn remote_kind(source: &str) -> Option<&'static str> {
    let lower = source.to_ascii_lowercase();
    let (forced, unforced) = match lower.split_once("::") {
        Some((forced, rest)) => (Some(forced), rest),
        None => (None, lower.as_str()),
    };
    let scheme = unforced.split_once(':').is_some_and(|(scheme, _)| {
        scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
            && (scheme.chars()).all(|c| c.is_ascii_alphanumeric() || "+.-".contains(c))
    });
    let shorthand = unforced.starts_with("github.com/")
        || unforced.starts_with("bitbucket.org/")
        || unforced.starts_with("git@")
        || unforced.contains("googleapis.com/")
        || (unforced.contains("amazonaws.com/") && unforced.contains("s3"))
        || unforced.starts_with('/');
    if !scheme && !shorthand {
        return None;
    }
    Some(match forced {
        Some("git") => "a git repository",
        Some("hg") => "a Mercurial repository",
        Some("s3") => "an S3 bucket",
        Some("gcs") => "a Google Cloud Storage bucket",
        Some(_) => "a source of its own kind",
        None if lower.starts_with("github.com/") || lower.starts_with("bitbucket.org/") => {
            "a git repository"
        }
        None if lower.starts_with("oci://") => "an OCI registry",
        None if lower.starts_with("git@") || lower.contains(".git") => "a git repository",
        None if lower.starts_with("https://") || lower.starts_with("http://") => "an HTTP URL",
        None if lower.contains(".s3") && lower.contains("amazonaws.com") => "an S3 bucket",
        None if lower.starts_with('/') => "an absolute path",
        None => "a source the client fetches itself",
    })
}
