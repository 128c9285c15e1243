//! `[policy]`: which provider and module versions the mirror may answer
//! for and move (compiled and applied by [`crate::policy`]).

use serde::{Deserialize, Serialize};

use crate::advisories::Severity;
use crate::verify::Verification;

/// What a rule, or the default, does with a version.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// The version is answered and moved as usual.
    #[default]
    Allow,
    /// The version is left out of version lists and refused when asked for.
    Deny,
}

/// `[policy]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicyConfig {
    /// `default`: what happens to a version no rule matches, `"allow"`
    /// (the default) or `"deny"`.
    #[serde(default)]
    pub default: Action,
    /// `min_age`: a cooldown for new releases, e.g. `"3d"`. A version that
    /// appears in an origin's list after the mirror first listed that
    /// provider or module is hidden until this long after the mirror first
    /// saw it (versions there at the first listing count as old). Default:
    /// none.
    #[serde(
        default,
        with = "humantime_serde",
        skip_serializing_if = "Option::is_none"
    )]
    pub min_age: Option<std::time::Duration>,
    /// `[[policy.rule]]`: the rules, tried in order; the first that matches
    /// decides.
    #[serde(default, rename = "rule", skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<RuleConfig>,
}

/// One `[[policy.rule]]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// `source`: a provider address (two or three segments) or a module
    /// address (four segments), each segment a glob, e.g.
    /// `"registry.terraform.io/hashicorp/*"` or `"*/acme/*/*"`.
    pub source: String,
    /// `versions`: a version constraint in Terraform's syntax (`">= 2.0,
    /// < 2.3"`, `"= 1.4.2"`); every version when absent. Pre-releases
    /// count as the versions they precede would.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub versions: Option<String>,
    /// `verification`: match only provider versions verified this way:
    /// `"keyless"` (published without a signing key), `"pinned-key"` or
    /// `"signed"`. A version's verification is known once its record is
    /// fetched, so such a rule is passed over when version lists are made
    /// and decides when the version is asked for by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verification: Option<Verification>,
    /// `advisories`: match only provider versions that known advisories
    /// are against, as [`AdvisoryRuleConfig`] counts them (a rule with it
    /// denies). The advisories are known once a platform's binary is read,
    /// so such a rule is passed over for versions none of whose binaries
    /// the mirror has read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub advisories: Option<AdvisoryRuleConfig>,
    /// `action`: `"allow"` or `"deny"`.
    pub action: Action,
    /// `reason`: why, shown to users whom the rule refuses.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// How an entry without a severity counts against a rule's `severity`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Unrated {
    /// It counts, as though it met the floor (the Go vulnerability
    /// database rates no entry, so its findings all count).
    #[default]
    Counts,
    /// It does not count: only rated findings decide.
    Ignored,
}

/// What a rule by advisory does with a version some of whose binaries
/// were read and are not understood: no Go build information, build
/// information that does not read, a toolchain that names itself in no
/// form Go reads. Their advisories are not known; a binary the mirror
/// cannot tell is not taken as one that falls under none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NotKnown {
    /// The rule matches it, and so denies it, naming why it is not known
    /// (the default: a rule by advisory is a site's security control, and
    /// "not read" is not "clean").
    #[default]
    Deny,
    /// Only its findings decide, as for a version wholly known (for a
    /// site that holds providers that are not Go programs).
    Allow,
}

/// `[policy.rule.advisories]`: which findings against a version make a
/// rule match it. Every condition given must hold of one finding; a
/// version matches when any finding, not accepted by the site (`tfmirror
/// accept`), does.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AdvisoryRuleConfig {
    /// `severity`: the least severity that counts: `"low"`, `"moderate"`
    /// (or `"medium"`), `"high"` or `"critical"`. Every finding counts when
    /// absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub severity: Option<Severity>,
    /// `unrated`: with `severity`, whether a finding that no source rates
    /// `"counts"` (the default) or is `"ignored"`.
    #[serde(default)]
    pub unrated: Unrated,
    /// `ids`: only these advisories, each by any of its IDs (`GO-…`,
    /// `GHSA-…`, `CVE-…`: an advisory known under several is one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// `present_only`: count only findings whose affected packages the
    /// binary holds code of (a finding whose advisory names no packages
    /// still counts).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub present_only: bool,
    /// `unknown`: what the rule does with a version some of whose binaries
    /// were read and are not understood, or whose build records could not
    /// be read: `"deny"` (the default) or `"allow"` ([`NotKnown`]).
    #[serde(default)]
    pub unknown: NotKnown,
}
