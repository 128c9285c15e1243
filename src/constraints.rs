//! Version constraints as Terraform writes them in `required_providers`
//! and lock files: comma-separated terms, each an operator (`=`, `!=`, `>`,
//! `>=`, `<`, `<=`, `~>`, or none for `=`) and a version of one to three
//! numbers, missing numbers being zero. `~> X.Y.Z` allows `>= X.Y.Z` below
//! the next minor version, `~> X.Y` and `~> X` allow `>= X.Y.0` below the
//! next major version. A version is selected when it meets every term.
//! Pre-releases are selected only when a `=` term names them exactly.

use std::fmt;

use semver::{Prerelease, Version};

/// Why a constraint string was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid version constraint {given:?}: {reason}")]
pub struct InvalidConstraint {
    given: String,
    reason: TermError,
}

/// What is wrong with one term of a constraint.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TermError {
    /// Nothing between two commas.
    #[error("an empty term")]
    Empty,
    /// `v1.2.3`.
    #[error(r#"a "v" prefix is not used before versions"#)]
    VPrefix,
    /// `1.2.3.4`.
    #[error("at most three numbers (major.minor.patch)")]
    TooManyNumbers,
    /// Not numbers separated by dots.
    #[error("{0:?} is not a version")]
    NotAVersion(String),
    /// A number that does not fit in 64 bits.
    #[error("{0:?} is too large")]
    TooLarge(String),
    /// An operator that does not exist, with the one likely meant.
    #[error("unknown operator {given:?}{}", hint.map(|h| format!("; did you mean {h:?}?")).unwrap_or_default())]
    UnknownOperator {
        /// The operator as written.
        given: String,
        /// The operator likely meant.
        hint: Option<&'static str>,
    },
    /// A pre-release label that is not valid.
    #[error("pre-release {given:?}: {reason}")]
    Prerelease {
        /// The label as written.
        given: String,
        /// Why it was refused.
        reason: String,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    /// `~>` with three numbers: the patch may grow.
    PatchOnly,
    /// `~>` with one or two numbers: the minor may grow.
    MinorOnly,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Term {
    op: Op,
    version: Version,
}

/// A parsed set of constraints; empty means any released version.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Constraints {
    terms: Vec<Term>,
    text: String,
}

impl Constraints {
    /// Parses comma-separated constraint terms. Blank text constrains
    /// nothing.
    pub fn parse(given: &str) -> Result<Constraints, InvalidConstraint> {
        let err = |reason: TermError| InvalidConstraint {
            given: given.to_string(),
            reason,
        };
        let mut terms = Vec::new();
        if !given.trim().is_empty() {
            for raw in given.split(',') {
                terms.push(parse_term(raw.trim()).map_err(err)?);
            }
        }
        Ok(Constraints {
            terms,
            text: given.trim().to_string(),
        })
    }

    /// Whether `v` meets every term, without the pre-release rule.
    fn meets(&self, v: &Version) -> bool {
        self.terms.iter().all(|t| t.meets(v))
    }

    /// Whether `v` meets every term, pre-release or not: whether a rule
    /// written with these constraints covers it (`>= 2.0` covers
    /// `2.1.0-beta1`).
    pub fn includes(&self, v: &Version) -> bool {
        self.meets(v)
    }

    /// Whether `v` is selected: it meets every term and is a release, or
    /// it is a pre-release that an `=` term names exactly.
    pub fn allows(&self, v: &Version) -> bool {
        if !self.meets(v) {
            return false;
        }
        v.pre.is_empty() || self.terms.iter().any(|t| t.op == Op::Eq && t.version == *v)
    }

    /// The constraints as given.
    pub fn as_str(&self) -> &str {
        &self.text
    }
}

impl fmt::Display for Constraints {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl Term {
    fn meets(&self, v: &Version) -> bool {
        let b = &self.version;
        // Build metadata never decides an order.
        let cmp = v.cmp_precedence(b);
        match self.op {
            Op::Eq => cmp.is_eq(),
            Op::Ne => !cmp.is_eq(),
            Op::Gt => cmp.is_gt(),
            Op::Ge => cmp.is_ge(),
            Op::Lt => cmp.is_lt(),
            Op::Le => cmp.is_le(),
            Op::PatchOnly => {
                cmp.is_ge()
                    && v.cmp_precedence(&Version::new(b.major, b.minor + 1, 0))
                        .is_lt()
            }
            Op::MinorOnly => {
                cmp.is_ge() && v.cmp_precedence(&Version::new(b.major + 1, 0, 0)).is_lt()
            }
        }
    }
}

fn parse_term(raw: &str) -> Result<Term, TermError> {
    if raw.is_empty() {
        return Err(TermError::Empty);
    }
    let split = raw
        .find(|c: char| c.is_ascii_digit() || c.is_whitespace() || c.is_alphabetic())
        .unwrap_or(raw.len());
    let (op_text, rest) = raw.split_at(split);
    let rest = rest.trim_start();
    if rest.starts_with('v') {
        return Err(TermError::VPrefix);
    }
    let (numbers, pre) = match rest.split_once('-') {
        Some((n, p)) => (n, Some(p)),
        None => (rest, None),
    };
    let (numbers, pre) = match (numbers.split_once('+'), pre) {
        (Some((n, _meta)), None) => (n, None),
        (_, Some(p)) => (numbers, Some(p.split('+').next().unwrap_or(p))),
        (None, None) => (numbers, None),
    };
    let parts: Vec<&str> = numbers.split('.').collect();
    if parts.len() > 3 {
        return Err(TermError::TooManyNumbers);
    }
    let mut nums = [0u64; 3];
    for (i, p) in parts.iter().enumerate() {
        if p.is_empty()
            || !p.bytes().all(|b| b.is_ascii_digit())
            || (p.len() > 1 && p.starts_with('0'))
        {
            return Err(TermError::NotAVersion(rest.to_string()));
        }
        nums[i] = p
            .parse()
            .map_err(|_| TermError::TooLarge((*p).to_string()))?;
    }
    let op = match op_text.trim() {
        "" | "=" => Op::Eq,
        "!=" => Op::Ne,
        ">" => Op::Gt,
        ">=" => Op::Ge,
        "<" => Op::Lt,
        "<=" => Op::Le,
        "~>" if parts.len() == 3 => Op::PatchOnly,
        "~>" => Op::MinorOnly,
        other => {
            let hint = match other {
                "=>" => Some(">="),
                "=<" => Some("<="),
                _ => None,
            };
            return Err(TermError::UnknownOperator {
                given: other.to_string(),
                hint,
            });
        }
    };
    let mut version = Version::new(nums[0], nums[1], nums[2]);
    if let Some(pre) = pre {
        version.pre = Prerelease::new(pre).map_err(|e| TermError::Prerelease {
            given: pre.to_string(),
            reason: e.to_string(),
        })?;
    }
    Ok(Term { op, version })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn allows(constraints: &str, version: &str) -> bool {
        Constraints::parse(constraints)
            .unwrap()
            .allows(&Version::parse(version).unwrap())
    }

    /// Each operator, partial versions and the pre-release rule, as
    /// Terraform selects provider versions.
    #[test]
    fn operators_and_prereleases() {
        let table: &[(&str, &[&str], &[&str])] = &[
            // (constraints, selected, not selected)
            ("", &["0.0.1", "1.0.0", "9.9.9"], &["1.0.0-beta1"]),
            ("1.2.3", &["1.2.3"], &["1.2.4", "1.2.3-rc1"]),
            ("= 1.2.3", &["1.2.3"], &["1.2.2"]),
            ("=1.2", &["1.2.0"], &["1.2.1"]),
            ("!= 1.2.3", &["1.2.2", "1.2.4"], &["1.2.3", "1.2.4-beta"]),
            (
                "> 1.2.3",
                &["1.2.4", "2.0.0"],
                &["1.2.3", "1.2.2", "1.3.0-alpha"],
            ),
            (">= 1.2.3", &["1.2.3", "3.0.0"], &["1.2.2"]),
            ("< 1.2.3", &["1.2.2", "0.1.0"], &["1.2.3", "1.2.3-beta"]),
            ("<= 1.2.3", &["1.2.3", "1.0.0"], &["1.2.4"]),
            (
                "~> 1.2.3",
                &["1.2.3", "1.2.99"],
                &["1.3.0", "1.2.2", "2.0.0"],
            ),
            ("~> 1.2", &["1.2.0", "1.9.0"], &["2.0.0", "1.1.9"]),
            ("~> 1", &["1.0.0", "1.9.9"], &["2.0.0", "0.9.0"]),
            ("~> 0.1", &["0.1.0", "0.9.0"], &["1.0.0"]),
            ("~> 5.0", &["5.0.0", "5.99.1"], &["6.0.0", "4.9.9"]),
            (">= 3.5, < 4.0", &["3.5.0", "3.99.0"], &["4.0.0", "3.4.9"]),
            (">=1.0,!=1.5.0,<2", &["1.4.0", "1.6.0"], &["1.5.0", "2.0.0"]),
            // Pre-releases: only by an exact term that names them.
            ("= 2.0.0-beta1", &["2.0.0-beta1"], &["2.0.0", "2.0.0-beta2"]),
            ("2.0.0-beta1", &["2.0.0-beta1"], &[]),
            (
                ">= 2.0.0-beta1",
                &["2.0.0"],
                &["2.0.0-beta1", "2.0.0-beta2"],
            ),
            ("~> 2.0.0-beta1", &["2.0.1"], &["2.0.0-beta2"]),
            ("= 2.0.0-beta1, >= 1.0", &["2.0.0-beta1"], &["2.0.0"]),
            ("= 2.0.0-beta1, < 2.0.0-alpha", &[], &["2.0.0-beta1"]),
        ];
        for (constraints, yes, no) in table {
            for v in *yes {
                assert!(allows(constraints, v), "{constraints:?} should select {v}");
            }
            for v in *no {
                assert!(
                    !allows(constraints, v),
                    "{constraints:?} should not select {v}"
                );
            }
        }
    }

    #[test]
    fn malformed_constraints_are_refused_with_the_reason() {
        for (bad, says) in [
            ("=> 1.0", "did you mean \">=\""),
            ("=< 1.0", "did you mean \"<=\""),
            ("~ 1.0", "unknown operator"),
            ("^1.0", "unknown operator"),
            (">= v1.0", "\"v\" prefix"),
            ("1.2.3.4", "at most three numbers"),
            (">= 1.x", "is not a version"),
            (">= 01.0", "is not a version"),
            (">= 1.0,", "an empty term"),
            (">= 1.0 < 2.0", "is not a version"),
        ] {
            let err = Constraints::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad:?}: {err}");
        }
    }
}
