//! `[policy]`: which provider and module versions the mirror may answer
//! for and move (compiled and applied by [`crate::policy`]).

use serde::{Deserialize, Serialize};

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
    /// `action`: `"allow"` or `"deny"`.
    pub action: Action,
    /// `reason`: why, shown to users whom the rule refuses.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}
