//! Versions as the advisory data and Go's build information write them,
//! read as semantic versions: Go's module versions (`v1.2.3`, pseudo-
//! versions such as `v0.0.0-20200101120000-abcdef123456`, `v2.0.0+incompatible`),
//! OSV's (the same without the `v`, and `0` for "the very first"), and the
//! toolchain's (`go1.21.3`, `go1.22rc2`, read as `1.22.0-rc.2` as the Go
//! vulnerability database does).
//!
//! Build metadata (`+incompatible`) takes no part in the order, as Go's
//! `semver.Compare` has it; pre-releases order as semantic versioning says.

use std::cmp::Ordering;
use std::fmt;

/// A version in the order Go and OSV agree on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoVersion(semver::Version);

impl GoVersion {
    /// Reads a module version, with or without its `v`. `0` is the least
    /// version of all (OSV's "introduced from the start"): `0.0.0-0`, below
    /// the pseudo-versions of a module that never tagged a release
    /// (`v0.0.0-20210226172049-e18ecbb05110`). Go's shorthand `v1`
    /// and `v1.2` read as `v1.0.0` and `v1.2.0`. `None` for anything else,
    /// including `(devel)`.
    pub fn parse(text: &str) -> Option<GoVersion> {
        let text = text.trim();
        let bare = text.strip_prefix('v').unwrap_or(text);
        if bare == "0" {
            let mut least = semver::Version::new(0, 0, 0);
            least.pre = semver::Prerelease::new("0").ok()?;
            return Some(GoVersion(least));
        }
        // The core is up to the first '-' or '+'; Go pads a short one.
        let core_end = bare.find(['-', '+']).unwrap_or(bare.len());
        let (core, rest) = bare.split_at(core_end);
        let padded = match core.matches('.').count() {
            0 => format!("{core}.0.0{rest}"),
            1 => format!("{core}.0{rest}"),
            _ => bare.to_string(),
        };
        let mut version = semver::Version::parse(&padded).ok()?;
        version.build = semver::BuildMetadata::EMPTY;
        Some(GoVersion(version))
    }

    /// Reads a Go toolchain's name of itself as Go's tools read it
    /// (`go1.21.3`, `go1.22rc2`, `go1.21.1-bigcorp`, `devel go1.22-abc`
    /// as `1.22.0-0`: [`crate::gobuild::Toolchain`]); `None` for a name
    /// they do not read either.
    pub fn toolchain(go_version: &str) -> Option<GoVersion> {
        crate::gobuild::Toolchain::parse(go_version).and_then(|t| GoVersion::parse(&t.semver))
    }

    /// The major version.
    pub fn major(&self) -> u64 {
        self.0.major
    }
}

impl Ord for GoVersion {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.cmp_precedence(&other.0)
    }
}

impl PartialOrd for GoVersion {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for GoVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "v{}", self.0)
    }
}

/// The major version a module path carries (`/v2`, `/v3`, … at its end;
/// `gopkg.in/x.v2` style too); `None` for a path without one (major 0 or 1).
pub fn path_major(path: &str) -> Option<u64> {
    let last = path.rsplit('/').next()?;
    let digits = last
        .strip_prefix('v')
        .filter(|_| path.contains('/'))
        .or_else(|| {
            path.starts_with("gopkg.in/")
                .then(|| last.rsplit_once(".v").map(|(_, d)| d))
                .flatten()
        })?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) || digits.starts_with('0') {
        return None;
    }
    digits.parse().ok().filter(|major| *major >= 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(text: &str) -> GoVersion {
        GoVersion::parse(text).unwrap_or_else(|| panic!("{text} should read"))
    }

    #[test]
    fn go_and_osv_spellings_read_alike() {
        assert_eq!(v("v1.2.3"), v("1.2.3"));
        assert_eq!(v("v1.2"), v("1.2.0"));
        assert_eq!(v("v1"), v("1.0.0"));
        assert!(v("0") < v("0.0.0"));
        assert!(v("0") < v("v0.0.0-20210226172049-e18ecbb05110"));
        assert!(GoVersion::parse("(devel)").is_none());
        assert!(GoVersion::parse("").is_none());
        assert!(GoVersion::parse("latest").is_none());
    }

    #[test]
    fn pseudo_versions_and_incompatible_order_as_go_orders_them() {
        // A pseudo-version based on v1.2.3 lies after it and before v1.2.4.
        let pseudo = v("v1.2.4-0.20191109021931-daa7c04131f5");
        assert!(v("v1.2.3") < pseudo && pseudo < v("v1.2.4"));
        assert!(v("v0.0.0-20200101000000-aaaaaaaaaaaa") < v("v0.0.1"));
        assert!(v("v0.0.0-20190101000000-aaaaaaaaaaaa") < v("v0.0.0-20200101000000-aaaaaaaaaaaa"));
        // Build metadata takes no part in the order.
        assert_eq!(v("v5.5.0+incompatible").cmp(&v("5.5.0")), Ordering::Equal);
        assert!(v("v1.21.0-0") < v("1.21.0-rc.1") && v("1.21.0-rc.1") < v("1.21.0"));
    }

    #[test]
    fn toolchains_read_as_the_go_database_writes_them() {
        assert_eq!(GoVersion::toolchain("go1.21.3"), Some(v("1.21.3")));
        assert_eq!(GoVersion::toolchain("go1.22rc2"), Some(v("1.22.0-rc.2")));
        assert_eq!(GoVersion::toolchain("go1.16"), Some(v("1.16.0")));
        assert!(GoVersion::toolchain("go1.22rc2") < GoVersion::toolchain("go1.22.0"));
        assert_eq!(
            GoVersion::toolchain("devel go1.23-abcdef"),
            Some(v("1.23.0-0"))
        );
        assert_eq!(GoVersion::toolchain("go1.19.8-bigcorp"), Some(v("1.19.8")));
        assert!(GoVersion::toolchain("devel go1.23-abcdef") < GoVersion::toolchain("go1.23rc1"));
        assert!(GoVersion::toolchain("devel go1.23-abcdef") > GoVersion::toolchain("go1.22.9"));
        assert_eq!(GoVersion::toolchain("devel +abcdef"), None);
    }

    #[test]
    fn the_major_a_path_carries() {
        assert_eq!(
            path_major("github.com/linode/terraform-provider-linode/v3"),
            Some(3)
        );
        assert_eq!(
            path_major("github.com/hashicorp/terraform-provider-vault"),
            None
        );
        assert_eq!(path_major("github.com/foo/v1"), None);
        assert_eq!(path_major("github.com/foo/v02"), None);
        assert_eq!(path_major("gopkg.in/yaml.v3"), Some(3));
        assert_eq!(path_major("v2"), None);
    }
}
