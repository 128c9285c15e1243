//! Policy: which provider and module versions the mirror may answer for
//! and move. `[[policy.rule]]` entries are tried in order, the first whose
//! `source` pattern and `versions` constraint match a version decides
//! (`allow` or `deny`, with a reason shown to users), and `[policy]
//! default` decides the rest.
//!
//! A `source` pattern is an address with a glob in any segment (`*` any
//! run of characters, `?` one character, `[…]` a class): two or three
//! segments name providers (`hashicorp/*` is `registry.terraform.io/hashicorp/*`,
//! `*/acme/*` every host's `acme` namespace), four segments name modules
//! (`*/acme/*/*`). Names are matched without regard to case, as
//! registries treat them.

use anyhow::Context as _;

use crate::address::{Module, Provider, Version};
use crate::advisories::Summary;
use crate::constraints::Constraints;
use crate::store::PolicyDecisions;
use crate::verify::Verification;

mod advisories;
mod denied;
mod gate;

pub use crate::config::policy::{
    Action, AdvisoryRuleConfig, NotKnown, PolicyConfig, RuleConfig, Unrated,
};
use advisories::AdvisoryRule;
pub use advisories::{audit_accepted, ids_of};
pub use denied::{Counted, Denied};
pub use gate::Gate;

/// The name a cooldown's refusal gives as its rule.
pub const COOLDOWN: &str = "policy.min_age";
/// What decided a version `tfmirror approve` approved.
pub const APPROVED: &str = "tfmirror approve";
/// What decided a version `tfmirror deny` denied.
pub const DENIED: &str = "tfmirror deny";

/// How the policy decided one version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What decided: an operator's decision, a rule, or the default.
    pub rule: String,
    /// Whether an operator decided on this very version (a cooldown does
    /// not hold back a version approved by name).
    pub explicit: bool,
    /// Allowed, or denied and why.
    pub outcome: Result<(), Denied>,
    /// Advisories a rule would have counted but the site accepts, each
    /// with until when, who and why.
    pub accepted: Vec<String>,
}

/// What is known of a provider version beyond its address, for the rules
/// that read it. A rule that needs a fact not known is passed over.
#[derive(Debug, Clone, Copy, Default)]
pub struct Facts<'a> {
    /// How it was verified; `None` until its record is fetched.
    pub verification: Option<Verification>,
    /// The advisories against it over the platforms held; `None` while no
    /// database is imported or none of its binaries is read.
    pub advisories: Option<&'a Summary>,
    /// Now, in milliseconds since the Unix epoch: acceptances expire.
    pub now_ms: u64,
}

/// What a pattern names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Provider,
    Module,
}

/// A compiled rule.
#[derive(Debug, Clone)]
struct Rule {
    /// `policy.rule[N]`, for messages and metrics.
    name: String,
    kind: Kind,
    segments: Vec<glob::Pattern>,
    versions: Option<Constraints>,
    verification: Option<Verification>,
    advisories: Option<AdvisoryRule>,
    action: Action,
    reason: String,
}

/// A provider or module, as a rule sees it.
#[derive(Debug, Clone, Copy)]
pub enum Subject<'a> {
    /// A provider.
    Provider(&'a Provider),
    /// A module.
    Module(&'a Module),
}

impl std::fmt::Display for Subject<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Provider(p) => write!(f, "{p}"),
            Subject::Module(m) => write!(f, "module {m}"),
        }
    }
}

/// The compiled policy.
#[derive(Debug, Clone, Default)]
pub struct Policy {
    default: Action,
    rules: Vec<Rule>,
    min_age_ms: Option<u64>,
}

impl Policy {
    /// Compiles `[policy]`; a pattern or constraint that does not parse is
    /// refused, naming its rule.
    pub fn new(config: &PolicyConfig) -> anyhow::Result<Policy> {
        let mut rules = Vec::with_capacity(config.rules.len());
        for (i, rule) in config.rules.iter().enumerate() {
            let name = format!("policy.rule[{i}]");
            let (kind, segments) = pattern(&rule.source)
                .with_context(|| format!("{name}: source {:?}", rule.source))?;
            let versions = rule
                .versions
                .as_deref()
                .map(Constraints::parse)
                .transpose()
                .with_context(|| format!("{name}: versions"))?;
            if rule.verification.is_some() && kind == Kind::Module {
                anyhow::bail!(
                    "{name}: verification applies to providers; module {:?} is pinned by tfmirror itself",
                    rule.source
                );
            }
            let advisories = match &rule.advisories {
                None => None,
                Some(_) if kind == Kind::Module => anyhow::bail!(
                    "{name}: advisories apply to providers' binaries; module {:?} has none",
                    rule.source
                ),
                Some(_) if rule.action == Action::Allow => anyhow::bail!(
                    "{name}: a rule by advisories denies; to let a version through despite an advisory, accept the advisory (tfmirror accept) or approve the version (tfmirror approve)"
                ),
                Some(config) => Some(AdvisoryRule::new(config).with_context(|| name.clone())?),
            };
            rules.push(Rule {
                advisories,
                verification: rule.verification,
                name,
                kind,
                segments,
                versions,
                action: rule.action,
                reason: rule.reason.clone(),
            });
        }
        Ok(Policy {
            default: config.default,
            rules,
            min_age_ms: config
                .min_age
                .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        })
    }

    /// The names of what can decide: each rule (`policy.rule[N]`),
    /// `policy.default`, and `policy.min_age` when there is a cooldown;
    /// none when the policy allows everything.
    pub fn deciders(&self) -> Vec<String> {
        if self.allows_everything() {
            return Vec::new();
        }
        let mut out: Vec<String> = self.rules.iter().map(|r| r.name.clone()).collect();
        out.push("policy.default".to_owned());
        if self.has_cooldown() {
            out.push(COOLDOWN.to_owned());
        }
        out
    }

    /// Whether the policy allows everything (no rule, default `allow`, no
    /// cooldown).
    pub fn allows_everything(&self) -> bool {
        self.rules.is_empty() && self.default == Action::Allow && self.min_age_ms.is_none()
    }

    /// Whether any rule matches by how a version was verified.
    pub fn has_verification_rules(&self) -> bool {
        self.rules.iter().any(|r| r.verification.is_some())
    }

    /// Whether any rule matches by the advisories against a version.
    pub fn has_advisory_rules(&self) -> bool {
        self.rules.iter().any(|r| r.advisories.is_some())
    }

    /// Whether a cooldown is set.
    pub fn has_cooldown(&self) -> bool {
        self.min_age_ms.is_some()
    }

    /// Holds back a version the mirror first saw at `first_seen_ms` (`None`:
    /// there at the first listing, so old) while it is younger than
    /// `min_age` at `now_ms`.
    pub fn cooldown(
        &self,
        subject: Subject<'_>,
        version: &Version,
        first_seen_ms: Option<u64>,
        now_ms: u64,
    ) -> Result<(), Denied> {
        let (Some(min_age), Some(seen)) = (self.min_age_ms, first_seen_ms) else {
            return Ok(());
        };
        let visible_at = seen.saturating_add(min_age);
        if now_ms >= visible_at {
            return Ok(());
        }
        let at = |ms: u64| {
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms),
            )
        };
        Err(Denied {
            subject: subject.to_string(),
            version: version.to_string(),
            rule: COOLDOWN.into(),
            reason: format!(
                "first seen {}, held back until {}",
                at(seen),
                at(visible_at)
            ),
            counted: Vec::new(),
        })
    }

    /// Decides one version: `Err` with the deciding rule and its reason
    /// when it is denied. An operator's decision on the version
    /// (`decisions`) comes first, then the rules.
    pub fn check(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
    ) -> Result<(), Denied> {
        self.decide(decisions, subject, version).outcome
    }

    /// Decides one version, naming what decided whichever way it went: an
    /// operator's decision (`tfmirror approve`, `tfmirror deny`), else the
    /// first matching rule (`policy.rule[N]`), else `policy.default`.
    pub fn decide(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
    ) -> Verdict {
        self.decide_verified(decisions, subject, version, None)
    }

    /// Decides one version as [`Policy::decide`] does, once it is known how
    /// the version was verified (`None`: not yet, and rules that name a
    /// `verification` are passed over).
    pub fn decide_verified(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
        verification: Option<Verification>,
    ) -> Verdict {
        let facts = Facts {
            verification,
            ..Facts::default()
        };
        self.decide_with(decisions, subject, version, &facts)
    }

    /// Decides one version as [`Policy::decide`] does, by what is known of
    /// it (`facts`): a rule that needs a fact not known is passed over.
    pub fn decide_with(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
        facts: &Facts<'_>,
    ) -> Verdict {
        if let Some(decided) = decisions.get(&subject.to_string(), version) {
            let rule = if decided.approved { APPROVED } else { DENIED };
            return Verdict {
                rule: rule.to_owned(),
                explicit: true,
                outcome: if decided.approved {
                    Ok(())
                } else {
                    Err(Denied {
                        subject: subject.to_string(),
                        version: version.to_string(),
                        rule: rule.to_owned(),
                        reason: decided.reason.clone(),
                        counted: Vec::new(),
                    })
                },
                accepted: Vec::new(),
            };
        }
        self.by_rules(decisions, subject, version, facts)
    }

    /// What the configured rules, else the default, decide.
    fn by_rules(
        &self,
        decisions: &PolicyDecisions,
        subject: Subject<'_>,
        version: &Version,
        facts: &Facts<'_>,
    ) -> Verdict {
        let (kind, names): (Kind, Vec<&str>) = match subject {
            Subject::Provider(p) => (
                Kind::Provider,
                vec![p.hostname.as_str(), p.namespace.as_str(), p.kind.as_str()],
            ),
            Subject::Module(m) => (
                Kind::Module,
                vec![
                    m.hostname.as_str(),
                    m.namespace.as_str(),
                    m.name.as_str(),
                    m.system.as_str(),
                ],
            ),
        };
        let address = subject.to_string();
        let mut accepted = Vec::new();
        let mut decided = None;
        for rule in &self.rules {
            let applies = rule.kind == kind
                && rule
                    .segments
                    .iter()
                    .zip(&names)
                    .all(|(glob, name)| glob.matches(&name.to_ascii_lowercase()))
                && rule
                    .versions
                    .as_ref()
                    .is_none_or(|c| c.includes(version.semver()))
                && rule
                    .verification
                    .is_none_or(|v| facts.verification == Some(v));
            if !applies {
                continue;
            }
            let mut counted = Vec::new();
            let mut not_known = Vec::new();
            if let Some(by_advisory) = &rule.advisories {
                let Some(summary) = facts.advisories else {
                    continue;
                };
                let weighed = by_advisory.weigh(
                    summary,
                    &decisions.acceptances,
                    (&address, version),
                    facts.now_ms,
                );
                accepted.extend(weighed.accepted);
                if weighed.counted.is_empty() && weighed.not_known.is_empty() {
                    continue;
                }
                counted = weighed.counted;
                not_known = weighed.not_known;
            }
            decided = Some((rule, counted, not_known));
            break;
        }
        let (action, rule, reason, advisories, not_known) = match decided {
            Some((rule, counted, not_known)) => (
                rule.action,
                rule.name.as_str(),
                rule.reason.as_str(),
                counted,
                not_known,
            ),
            None => (self.default, "policy.default", "", Vec::new(), Vec::new()),
        };
        let outcome = match action {
            Action::Allow => Ok(()),
            Action::Deny => Err(Denied {
                subject: address,
                version: version.to_string(),
                rule: rule.to_owned(),
                reason: reason.to_owned(),
                counted: (advisories.into_iter().map(Counted::Advisory))
                    .chain(not_known.into_iter().map(Counted::NotKnown))
                    .collect(),
            }),
        };
        accepted.dedup();
        Verdict {
            rule: rule.to_owned(),
            explicit: false,
            outcome,
            accepted,
        }
    }
}

/// Reads a `source` pattern: its kind and one glob per segment (a
/// two-segment provider pattern gets the public registry's host).
fn pattern(source: &str) -> anyhow::Result<(Kind, Vec<glob::Pattern>)> {
    let lowered = source.trim().to_ascii_lowercase();
    let mut parts: Vec<&str> = lowered.split('/').collect();
    let kind = match parts.len() {
        2 => {
            parts.insert(0, "registry.terraform.io");
            Kind::Provider
        }
        3 => Kind::Provider,
        4 => Kind::Module,
        n => anyhow::bail!(
            "{n} segments; a provider is [host/]namespace/type and a module host/namespace/name/system"
        ),
    };
    let segments = parts
        .iter()
        .map(|part| {
            if part.is_empty() {
                anyhow::bail!("an empty segment");
            }
            glob::Pattern::new(part).with_context(|| format!("{part:?} is not a valid glob"))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok((kind, segments))
}

#[cfg(test)]
mod tests;
