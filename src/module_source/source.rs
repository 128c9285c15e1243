//! Module source locations as a registry's download answer gives them,
//! read the way Terraform and OpenTofu read them: a forced getter
//! (`git::`), the GitHub and Bitbucket shorthands, `//subdir`, `?ref=` and
//! `?depth=` for git, `?archive=` and file extensions for archives.
//!
//! The mirror fetches git over HTTP(S) and HTTP(S) archives; every other
//! kind of source is named in an [`Unsupported`] error.

use url::Url;

/// A source the mirror can fetch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A git repository over HTTP(S).
    Git {
        /// The repository URL, without `ref` and `depth`.
        url: Url,
        /// The tag, branch or commit to fetch; the default branch when
        /// absent.
        reference: Option<String>,
        /// `?depth=`: how much history the client would have fetched.
        depth: Option<u32>,
    },
    /// An archive over HTTP(S).
    Archive {
        /// The archive's URL, without `archive`.
        url: Url,
        /// How it is packed.
        format: ArchiveFormat,
    },
}

impl Source {
    /// The kind of source, for metrics and logs: `git` or `archive`.
    pub fn kind(&self) -> &'static str {
        match self {
            Source::Git { .. } => "git",
            Source::Archive { .. } => "archive",
        }
    }

    /// The URL fetched.
    pub fn url(&self) -> &Url {
        match self {
            Source::Git { url, .. } | Source::Archive { url, .. } => url,
        }
    }
}

/// How an archive source is packed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveFormat {
    /// `.tar.gz`, `.tgz`.
    TarGz,
    /// `.tar.xz`, `.txz`.
    TarXz,
    /// `.tar.bz2`, `.tbz2`.
    TarBz2,
    /// `.tar`.
    Tar,
    /// `.zip`.
    Zip,
}

impl ArchiveFormat {
    /// The format an `?archive=` value or a file name suffix names.
    fn named(name: &str) -> Option<ArchiveFormat> {
        Some(match name {
            "tar.gz" | "tgz" => ArchiveFormat::TarGz,
            "tar.xz" | "txz" => ArchiveFormat::TarXz,
            "tar.bz2" | "tbz2" => ArchiveFormat::TarBz2,
            "tar" => ArchiveFormat::Tar,
            "zip" => ArchiveFormat::Zip,
            _ => return None,
        })
    }

    /// The format a URL path's file name suffix names.
    fn of_path(path: &str) -> Option<ArchiveFormat> {
        [
            "tar.gz", "tgz", "tar.xz", "txz", "tar.bz2", "tbz2", "tar", "zip",
        ]
        .into_iter()
        .find(|ext| {
            path.len() > ext.len() + 1
                && path.ends_with(ext)
                && path.as_bytes()[path.len() - ext.len() - 1] == b'.'
        })
        .and_then(Self::named)
    }
}

/// A source location split into what is fetched and the subdirectory of
/// it that holds the module.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    /// What is fetched.
    pub source: Source,
    /// `//subdir`, kept apart: the mirror packages the whole tree and hands
    /// the subdirectory on to clients, which apply it themselves.
    pub subdir: Option<String>,
}

/// A source the mirror does not fetch, with what kind it is.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("module source {location:?} is {kind}, which tfmirror does not fetch (it fetches git over HTTPS and HTTPS archives)")]
pub struct Unsupported {
    /// The location as given.
    pub location: String,
    /// What kind of source it is.
    pub kind: UnsupportedKind,
}

/// The kinds of source the mirror does not fetch, named as messages say
/// them.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UnsupportedKind {
    /// `./x` or `../x` that does not resolve against the answer's URL.
    #[error("a relative URL that does not resolve")]
    UnresolvableRelative,
    /// `git@host:…`, `ssh://`, or a git URL with `sshkey`.
    #[error("git over SSH")]
    GitOverSsh,
    /// A forced getter other than git and http(s): `s3::`, `gcs::`, `hg::`.
    #[error("a {0}:: source")]
    Getter(String),
    /// A `//subdir` with `..` in it.
    #[error("a subdirectory that climbs out of the source")]
    ClimbingSubdirectory,
    /// Something with `://` that is no URL.
    #[error("a URL that does not parse")]
    UnparsableUrl,
    /// A path, or an address of no known kind.
    #[error("a local path or an unknown kind of address")]
    LocalPath,
    /// `file://`.
    #[error("a local file")]
    LocalFile,
    /// Another scheme.
    #[error("a {0}:// URL")]
    Scheme(String),
    /// `https://user:secret@…`.
    #[error("a URL with credentials in it")]
    Credentials,
    /// A git `depth` that is not a number.
    #[error("a git source with depth {0:?}")]
    Depth(String),
    /// A git `ref` that could be taken for an option or a range.
    #[error("a git source with the unusable ref {0:?}")]
    Ref(String),
    /// `?archive=false`.
    #[error("an HTTP URL that says it is no archive")]
    NotAnArchive,
    /// `?archive=` with a format the mirror does not unpack.
    #[error("an archive of the unknown format {0:?}")]
    ArchiveFormat(String),
    /// An HTTP URL without `?archive=` or an archive's file suffix.
    #[error("an HTTP URL that names no archive (only archives and git are fetched)")]
    NoArchive,
}

/// Reads a download location. A relative location (starting with `/`,
/// `./` or `../`) is resolved against `download_url`, the URL that gave it.
pub fn parse(location: &str, download_url: &Url) -> Result<Location, Unsupported> {
    let unsupported = |kind: UnsupportedKind| Unsupported {
        location: location.to_owned(),
        kind,
    };
    let trimmed = location.trim();
    if trimmed.starts_with('/') || trimmed.starts_with("./") || trimmed.starts_with("../") {
        let resolved = download_url
            .join(trimmed)
            .map_err(|_| unsupported(UnsupportedKind::UnresolvableRelative))?;
        return parse(resolved.as_str(), download_url);
    }
    let (forced, rest) = match trimmed.split_once("::") {
        Some((getter, rest))
            if !getter.is_empty() && getter.bytes().all(|b| b.is_ascii_alphanumeric()) =>
        {
            (Some(getter.to_ascii_lowercase()), rest)
        }
        _ => (None, trimmed),
    };
    let detected = match forced.as_deref() {
        Some("git") => rest.to_owned(),
        Some("http" | "https") | None => match shorthand(rest) {
            Some(git) => git,
            None if forced.is_none() && is_scp_like(rest) => {
                return Err(unsupported(UnsupportedKind::GitOverSsh))
            }
            None => rest.to_owned(),
        },
        Some(other) => return Err(unsupported(UnsupportedKind::Getter(other.to_owned()))),
    };
    let is_git = forced.as_deref() == Some("git") || detected.starts_with("git::");
    let detected = detected.trim_start_matches("git::");
    if is_git && is_scp_like(detected) {
        return Err(unsupported(UnsupportedKind::GitOverSsh));
    }
    let (fetched, subdir) = split_subdir(detected);
    if subdir
        .as_deref()
        .is_some_and(|d| d.split(['/', '\\']).any(|part| part == ".."))
    {
        // Clients apply the subdirectory to the package themselves; one
        // that climbs out of it is never handed on.
        return Err(unsupported(UnsupportedKind::ClimbingSubdirectory));
    }
    let url = Url::parse(&fetched).map_err(|_| {
        unsupported(if fetched.contains("://") {
            UnsupportedKind::UnparsableUrl
        } else {
            UnsupportedKind::LocalPath
        })
    })?;
    match url.scheme() {
        "https" | "http" => {}
        "ssh" | "git+ssh" if is_git => return Err(unsupported(UnsupportedKind::GitOverSsh)),
        "file" => return Err(unsupported(UnsupportedKind::LocalFile)),
        other => return Err(unsupported(UnsupportedKind::Scheme(other.to_owned()))),
    }
    if url.username() != "" || url.password().is_some() {
        return Err(unsupported(UnsupportedKind::Credentials));
    }
    let source = if is_git {
        git_source(url).map_err(unsupported)?
    } else {
        archive_source(url).map_err(unsupported)?
    };
    Ok(Location { source, subdir })
}

/// The GitHub and Bitbucket shorthands the clients detect, as forced git
/// sources: `github.com/org/repo[/sub]` is
/// `git::https://github.com/org/repo.git[//sub]`.
fn shorthand(given: &str) -> Option<String> {
    let (host, path) = given.split_once('/')?;
    if host != "github.com" && host != "bitbucket.org" {
        return None;
    }
    let (path, query) = match path.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (path, None),
    };
    let parts: Vec<&str> = path.split('/').collect();
    if parts.len() < 2 || parts[0].is_empty() || parts[1].is_empty() {
        return None;
    }
    let repo = parts[1].trim_end_matches(".git");
    let mut out = format!("git::https://{host}/{}/{repo}.git", parts[0]);
    let rest = parts[2..].join("/");
    if !rest.is_empty() {
        out.push_str("//");
        out.push_str(rest.trim_start_matches('/'));
    }
    if let Some(q) = query {
        out.push('?');
        out.push_str(q);
    }
    Some(out)
}

/// `user@host:path`, the form git uses for SSH.
fn is_scp_like(given: &str) -> bool {
    if given.contains("://") {
        return false;
    }
    let Some((user_host, _)) = given.split_once(':') else {
        return false;
    };
    user_host.contains('@') && !user_host.contains('/')
}

/// Splits `source//subdir?query` into `source?query` and `subdir`, as the
/// clients do: the first `//` after the scheme's own.
fn split_subdir(given: &str) -> (String, Option<String>) {
    let after_scheme = given.find("://").map_or(0, |i| i + 3);
    let Some(at) = given[after_scheme..].find("//").map(|i| i + after_scheme) else {
        return (given.to_owned(), None);
    };
    let (source, subdir) = (&given[..at], &given[at + 2..]);
    let (subdir, query) = match subdir.split_once('?') {
        Some((s, q)) => (s, Some(q)),
        None => (subdir, None),
    };
    let mut source = source.to_owned();
    if let Some(q) = query {
        source.push('?');
        source.push_str(q);
    }
    let subdir = subdir.trim_matches('/');
    (source, (!subdir.is_empty()).then(|| subdir.to_owned()))
}

/// Takes `ref` and `depth` out of a git URL's query.
fn git_source(mut url: Url) -> Result<Source, UnsupportedKind> {
    let mut reference = None;
    let mut depth = None;
    let mut kept = Vec::new();
    for (k, v) in url.query_pairs() {
        match k.as_ref() {
            "ref" if !v.is_empty() => reference = Some(v.into_owned()),
            "depth" => {
                depth = Some(
                    v.parse::<u32>()
                        .map_err(|_| UnsupportedKind::Depth(v.clone().into_owned()))?,
                );
            }
            "sshkey" => return Err(UnsupportedKind::GitOverSsh),
            _ => kept.push((k.into_owned(), v.into_owned())),
        }
    }
    if let Some(r) = &reference {
        if r.starts_with('-') || r.contains("..") || r.chars().any(char::is_control) {
            return Err(UnsupportedKind::Ref(r.clone()));
        }
    }
    set_query(&mut url, &kept);
    Ok(Source::Git {
        url,
        reference,
        depth,
    })
}

/// An archive URL: `?archive=` or the file name's suffix says how it is
/// packed.
fn archive_source(mut url: Url) -> Result<Source, UnsupportedKind> {
    let mut named = None;
    let mut kept = Vec::new();
    for (k, v) in url.query_pairs() {
        if k == "archive" {
            named = Some(v.into_owned());
        } else {
            kept.push((k.into_owned(), v.into_owned()));
        }
    }
    let format = match named.as_deref() {
        Some("false") => return Err(UnsupportedKind::NotAnArchive),
        Some(name) => ArchiveFormat::named(name)
            .ok_or_else(|| UnsupportedKind::ArchiveFormat(name.to_owned()))?,
        None => ArchiveFormat::of_path(url.path()).ok_or(UnsupportedKind::NoArchive)?,
    };
    set_query(&mut url, &kept);
    Ok(Source::Archive { url, format })
}

fn set_query(url: &mut Url, pairs: &[(String, String)]) {
    if pairs.is_empty() {
        url.set_query(None);
    } else {
        url.query_pairs_mut().clear().extend_pairs(pairs);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at() -> Url {
        Url::parse("https://registry.example/v1/modules/ns/name/aws/1.0.0/download").unwrap()
    }

    fn git(url: &str, reference: Option<&str>, depth: Option<u32>) -> Source {
        Source::Git {
            url: Url::parse(url).unwrap(),
            reference: reference.map(str::to_owned),
            depth,
        }
    }

    #[test]
    fn git_sources() {
        let l = parse("git::https://example.com/org/repo.git?ref=v1.2.0", &at()).unwrap();
        assert_eq!(
            l.source,
            git("https://example.com/org/repo.git", Some("v1.2.0"), None)
        );
        assert_eq!(l.subdir, None);
        let l = parse(
            "git::https://example.com/org/repo.git//modules/net?ref=main&depth=3",
            &at(),
        )
        .unwrap();
        assert_eq!(
            l.source,
            git("https://example.com/org/repo.git", Some("main"), Some(3))
        );
        assert_eq!(l.subdir.as_deref(), Some("modules/net"));
        let l = parse("github.com/org/repo//sub?ref=v2", &at()).unwrap();
        assert_eq!(
            l.source,
            git("https://github.com/org/repo.git", Some("v2"), None)
        );
        assert_eq!(l.subdir.as_deref(), Some("sub"));
        let l = parse("bitbucket.org/org/repo", &at()).unwrap();
        assert_eq!(
            l.source,
            git("https://bitbucket.org/org/repo.git", None, None)
        );
    }

    #[test]
    fn archive_sources() {
        let l = parse(
            "https://api.example/repos/o/r/tarball/v0.0.1//*?archive=tar.gz",
            &at(),
        )
        .unwrap();
        assert_eq!(
            l.source,
            Source::Archive {
                url: Url::parse("https://api.example/repos/o/r/tarball/v0.0.1").unwrap(),
                format: ArchiveFormat::TarGz
            }
        );
        assert_eq!(l.subdir.as_deref(), Some("*"));
        let l = parse("../../../files/net.zip?token=x", &at()).unwrap();
        assert_eq!(
            l.source,
            Source::Archive {
                url: Url::parse("https://registry.example/v1/modules/ns/files/net.zip?token=x")
                    .unwrap(),
                format: ArchiveFormat::Zip
            }
        );
        for (name, format) in [
            ("m.tgz", ArchiveFormat::TarGz),
            ("m.tar.xz", ArchiveFormat::TarXz),
            ("m.tar.bz2", ArchiveFormat::TarBz2),
            ("m.tar", ArchiveFormat::Tar),
        ] {
            let l = parse(&format!("https://h.example/{name}"), &at()).unwrap();
            assert!(matches!(l.source, Source::Archive { format: f, .. } if f == format));
        }
    }

    #[test]
    fn other_sources_are_named() {
        for (given, kind) in [
            ("s3::https://s3.amazonaws.com/b/m.zip", "s3::"),
            (
                "gcs::https://www.googleapis.com/storage/v1/b/m.zip",
                "gcs::",
            ),
            ("hg::https://example.com/repo", "hg::"),
            ("git::ssh://git@example.com/org/repo.git", "SSH"),
            ("git@github.com:org/repo.git", "SSH"),
            ("git::git@example.com:org/repo.git", "SSH"),
            ("https://example.com/module", "names no archive"),
            ("https://example.com/m.zip?archive=rar", "unknown format"),
            ("./modules/local", "names no archive"),
            ("file:///etc/passwd", "local file"),
            ("C:/modules", "c://"),
            ("modules/local", "local path"),
            (
                "git::https://example.com/r.git?ref=--upload-pack=x",
                "unusable ref",
            ),
            ("https://user:pw@example.com/m.zip", "credentials"),
            (
                "git::https://example.com/r.git//../../etc?ref=v1",
                "climbs out",
            ),
            ("https://example.com/m.zip//a/..\\..", "climbs out"),
        ] {
            let e = parse(given, &at()).unwrap_err();
            assert!(e.to_string().contains(kind), "{given}: {e}");
        }
    }
}
