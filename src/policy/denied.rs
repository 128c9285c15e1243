//! A refusal by the policy, and what it names: the rule, its reason, and
//! for a rule by advisory the advisories that counted and why a version's
//! advisories are not known.

/// A version the policy refuses, and why.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{subject} {version} is denied by this mirror's policy ({rule}){}{}{}", advisories_suffix(&self.advisories()), not_known_suffix(&self.not_known()), reason_suffix(.reason))]
pub struct Denied {
    /// The provider or module.
    pub subject: String,
    /// The version.
    pub version: String,
    /// The rule that decided (`policy.rule[N]`, or `policy.default`).
    pub rule: String,
    /// The rule's reason; may be empty.
    pub reason: String,
    /// What made a rule by advisory match; empty for other rules.
    pub counted: Vec<Counted>,
}

/// One thing that made a rule by advisory match a version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counted {
    /// An advisory that counts, described (`GO-2023-2102 (high; also
    /// GHSA-4374-p667-p6c8)`).
    Advisory(String),
    /// Why the version's advisories are not known, where the rule denies
    /// versions it cannot tell (`unknown = "deny"`): one binary not
    /// understood (`linux_amd64: …`).
    NotKnown(String),
}

impl Denied {
    /// The advisories that made a rule by advisory match, described.
    pub fn advisories(&self) -> Vec<&str> {
        (self.counted.iter())
            .filter_map(|c| match c {
                Counted::Advisory(a) => Some(a.as_str()),
                Counted::NotKnown(_) => None,
            })
            .collect()
    }

    /// Why the version's advisories are not known, where that made a rule
    /// by advisory match.
    pub fn not_known(&self) -> Vec<&str> {
        (self.counted.iter())
            .filter_map(|c| match c {
                Counted::NotKnown(why) => Some(why.as_str()),
                Counted::Advisory(_) => None,
            })
            .collect()
    }
}

/// How many advisories a refusal names before it counts the rest.
const NAMED_ADVISORIES: usize = 5;

fn advisories_suffix(advisories: &[&str]) -> String {
    match advisories {
        [] => String::new(),
        [one] => format!(": advisory {one}"),
        many if many.len() <= NAMED_ADVISORIES => format!(": advisories {}", many.join(", ")),
        many => format!(
            ": advisories {} and {} more",
            many[..NAMED_ADVISORIES].join(", "),
            many.len() - NAMED_ADVISORIES
        ),
    }
}

fn not_known_suffix(not_known: &[&str]) -> String {
    if not_known.is_empty() {
        String::new()
    } else {
        format!(
            "; what it falls under is not known, because {}",
            not_known.join("; ")
        )
    }
}

fn reason_suffix(reason: &str) -> String {
    if reason.is_empty() {
        String::new()
    } else {
        format!(": {reason}")
    }
}
