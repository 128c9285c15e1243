//! A Go toolchain's name of itself, as the build information records it,
//! read the way Go's own tools read it (`go/version`, govulncheck):
//!
//! - the first word only: `go1.19.8 X:boringcrypto` is `go1.19.8`;
//! - a development build names its base after `devel`: `devel
//!   go1.22-2b1d8f2 Tue …` is a build made on the way to go1.22;
//! - everything from the first `-` on is a vendor's or a date's suffix:
//!   `go1.21.1-bigcorp` is go1.21.1, `go1.25-20250209-RC00` is go1.25;
//! - what remains is `go` and a version: `1`, `1.N`, `1.N.P`, `1.NrcK`,
//!   `1.NbetaK`.
//!
//! Since Go 1.21 a release is always named with its patch (`go1.21.0`):
//! `go1.21` on its own is the language version, which Go orders before
//! every release candidate of 1.21. It reads as `v1.21.0-0`, below
//! `v1.21.0-rc.1`, so that the advisories of 1.21's releases apply to it
//! and the fixes of earlier lines do not. A development build reads the
//! same way. Before 1.21, `go1.16` was the release itself (`v1.16.0`).

use std::fmt;

/// How a toolchain's name was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reading {
    /// A release as Go names it (`go1.21.3`, `go1.22rc2`, `go1.16`).
    Release,
    /// A release with a vendor's or date's suffix cut off
    /// (`go1.21.1-bigcorp`).
    Suffixed,
    /// A development build, read as a pre-release of the version it names
    /// as its base (`devel go1.22-…`).
    Devel,
    /// A language version with no patch from Go 1.21 on (`go1.25` of
    /// `go1.25-20250209-RC00`), read as a pre-release of it.
    Language,
}

/// A toolchain's version, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Toolchain {
    /// As a semantic version with a `v` (`v1.21.3`, `v1.22.0-rc.2`,
    /// `v1.25.0-0`).
    pub semver: String,
    /// How it was read.
    pub reading: Reading,
}

impl Toolchain {
    /// Reads a toolchain's name of itself; `None` for one Go's tools do not
    /// read either (`devel +abc…` of old development builds, `go1.16.4b7`,
    /// anything not `go` and a version).
    pub fn parse(go_version: &str) -> Option<Toolchain> {
        let mut words = go_version.split_whitespace();
        let mut first = words.next()?;
        let devel = first == "devel";
        if devel {
            first = words.next()?;
        }
        let (base, suffix) = first.split_once('-').unwrap_or((first, ""));
        let number = base.strip_prefix("go")?;
        let (major, minor, patch, pre) = numbers(number)?;
        let language = patch.is_none() && pre.is_none() && major == 1 && minor >= 21;
        let reading = if devel {
            Reading::Devel
        } else if language {
            Reading::Language
        } else if suffix.is_empty() {
            Reading::Release
        } else {
            Reading::Suffixed
        };
        let pre = match (pre, reading) {
            (Some((kind, n)), _) => format!("-{kind}.{n}"),
            (None, Reading::Devel | Reading::Language) => "-0".to_owned(),
            (None, _) => String::new(),
        };
        Some(Toolchain {
            semver: format!("v{major}.{minor}.{}{pre}", patch.unwrap_or(0)),
            reading,
        })
    }

    /// Whether it names a release (with or without a vendor's suffix): the
    /// version of the standard library a bill of materials can give.
    pub fn is_release(&self) -> bool {
        matches!(self.reading, Reading::Release | Reading::Suffixed)
    }
}

/// A standard library version as the toolchain names its release
/// (`v1.20.10` → `go1.20.10`, `v1.22.0-rc.2` → `go1.22rc2`, `v1.16.0` →
/// `go1.16`, `v1.21.0` → `go1.21.0`): how a fix in the standard library
/// is shown beside the toolchain a binary names. `None` for a version
/// no release is named by (`v1.25.0-0`).
pub fn release_name(semver: &str) -> Option<String> {
    let bare = semver.strip_prefix('v').unwrap_or(semver);
    let (core, pre) = bare
        .split_once('-')
        .map_or((bare, None), |(c, p)| (c, Some(p)));
    let mut parts = core
        .split('.')
        .map(|n| leading(n).filter(|(_, rest)| rest.is_empty()));
    let (Some(Some((major, _))), Some(Some((minor, _))), Some(Some((patch, _))), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    match pre {
        None if patch == 0 && (major, minor) < (1, 21) => Some(format!("go{major}.{minor}")),
        None => Some(format!("go{major}.{minor}.{patch}")),
        Some(pre) => {
            let (kind, n) = pre.split_once('.')?;
            let n = leading(n).filter(|(_, rest)| rest.is_empty())?.0;
            (patch == 0 && ["rc", "beta"].contains(&kind))
                .then(|| format!("go{major}.{minor}{kind}{n}"))
        }
    }
}

impl fmt::Display for Reading {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Reading::Release => "a release",
            Reading::Suffixed => "a release with a suffix",
            Reading::Devel => "a development build of",
            Reading::Language => "a language version, before the release of",
        })
    }
}

/// A version's numbers as Go writes them: major, minor, patch where given,
/// and a pre-release's kind and number where given.
type Numbers<'a> = (u64, u64, Option<u64>, Option<(&'a str, u64)>);

/// `1`, `1.N`, `1.N.P`, `1.NrcK` or `1.NbetaK` as Go's `gover` reads them.
/// Leading zeros are refused, as Go refuses them.
fn numbers(text: &str) -> Option<Numbers<'_>> {
    let (major, rest) = leading(text)?;
    if rest.is_empty() {
        return Some((major, 0, None, None));
    }
    let (minor, rest) = leading(rest.strip_prefix('.')?)?;
    if rest.is_empty() {
        return Some((major, minor, None, None));
    }
    if let Some(patch) = rest.strip_prefix('.') {
        let (patch, rest) = leading(patch)?;
        return rest.is_empty().then_some((major, minor, Some(patch), None));
    }
    for kind in ["rc", "beta"] {
        if let Some(n) = rest.strip_prefix(kind) {
            let (n, rest) = leading(n)?;
            return (rest.is_empty() && n > 0).then_some((major, minor, None, Some((kind, n))));
        }
    }
    None
}

/// The decimal number at the start of `text`, and what follows it.
fn leading(text: &str) -> Option<(u64, &str)> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let digits = &text[..end];
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    Some((digits.parse().ok()?, &text[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(go: &str) -> Option<(String, Reading)> {
        Toolchain::parse(go).map(|t| (t.semver, t.reading))
    }

    #[test]
    fn names_read_as_gos_tools_read_them() {
        use Reading::{Devel, Language, Release, Suffixed};
        for (go, want) in [
            ("go1.21.3", Some(("v1.21.3", Release))),
            ("go1.16", Some(("v1.16.0", Release))),
            ("go1.20", Some(("v1.20.0", Release))),
            ("go1", Some(("v1.0.0", Release))),
            ("go1.22rc2", Some(("v1.22.0-rc.2", Release))),
            ("go1.21beta1", Some(("v1.21.0-beta.1", Release))),
            ("go1.20.1 X:boringcrypto", Some(("v1.20.1", Release))),
            ("go1.22.5-X:nocoverageredesign", Some(("v1.22.5", Suffixed))),
            ("go1.19.8-bigcorp", Some(("v1.19.8", Suffixed))),
            ("go1.21.1-bigcorp", Some(("v1.21.1", Suffixed))),
            (
                "go1.25-20250209-RC00 cl/725155456 +5ea0dd4 X:fieldtrack,boringcrypto",
                Some(("v1.25.0-0", Language)),
            ),
            (
                "devel go1.22-2b1d8f2 Tue Oct 3 16:50:42 2023 +0000",
                Some(("v1.22.0-0", Devel)),
            ),
            ("devel +b7a4c3e Mon Jan 1 00:00:00 2019 +0000", None),
            ("devel", None),
            ("go1.16.4b7", None),
            ("go1.2.3.4", None),
            ("go1.021", None),
            ("go1.21rc0", None),
            ("gox", None),
            ("", None),
            ("1.21.3", None),
        ] {
            let want = want.map(|(s, r)| (s.to_owned(), r));
            assert_eq!(read(go), want, "{go}");
        }
    }

    #[test]
    fn fixes_are_named_as_the_toolchain_names_its_releases() {
        for (semver, name) in [
            ("v1.20.10", Some("go1.20.10")),
            ("v1.22.0-rc.2", Some("go1.22rc2")),
            ("v1.16.0", Some("go1.16")),
            ("v1.21.0", Some("go1.21.0")),
            ("v1.25.0-0", None),
            ("v1.2", None),
        ] {
            assert_eq!(release_name(semver).as_deref(), name, "{semver}");
            // Each name reads back as the version it came from.
            if let Some(name) = name {
                assert_eq!(Toolchain::parse(name).unwrap().semver, semver);
            }
        }
    }

    #[test]
    fn only_releases_name_the_standard_librarys_version() {
        assert!(Toolchain::parse("go1.21.1-bigcorp").unwrap().is_release());
        assert!(Toolchain::parse("go1.19.8").unwrap().is_release());
        assert!(!Toolchain::parse("devel go1.22-2b1d8f2")
            .unwrap()
            .is_release());
        assert!(!Toolchain::parse("go1.25-20250209-RC00")
            .unwrap()
            .is_release());
    }
}
