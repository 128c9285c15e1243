//! Rules by advisory (`[policy.rule.advisories]`): which findings against a
//! version make a rule match it, once the site's acceptances are taken
//! off.
//!
//! A finding counts when every condition the rule gives holds of it: one
//! of its IDs is named (`ids`), its severity is at or above the floor
//! (`severity`; a finding no source rates counts unless `unrated =
//! "ignored"`), and its affected packages are in the binary
//! (`present_only`; a finding whose advisory names no packages, or whose
//! binary's packages were not read, still counts: absence is not shown;
//! so does one not found while another platform's record is not read, or
//! was read and is not understood).
//! An advisory known under several IDs (a GO entry and its GHSA alias) is
//! one finding, named and accepted by any of them.
//!
//! A version some of whose binaries were read and are not understood, or
//! whose build records could not be read, is not known: the rule matches
//! it unless it says `unknown = "allow"`, and its refusal says why.

use crate::address::Version;
use crate::advisories::{Finding, Severity, Summary};
use crate::config::policy::{AdvisoryRuleConfig, NotKnown, Unrated};
use crate::store::Acceptance;

/// A compiled `[policy.rule.advisories]`.
#[derive(Debug, Clone)]
pub(super) struct AdvisoryRule {
    severity: Option<Severity>,
    unrated: Unrated,
    ids: Vec<String>,
    present_only: bool,
    unknown: NotKnown,
}

/// What a version's findings come to under one rule.
#[derive(Debug, Default)]
pub(super) struct Weighed {
    /// The findings that count, described.
    pub counted: Vec<String>,
    /// The findings that would count but the site accepts, described.
    pub accepted: Vec<String>,
    /// Why the version's advisories are not known, where the rule denies
    /// what it cannot tell.
    pub not_known: Vec<String>,
}

impl AdvisoryRule {
    /// Compiles the rule's table; an empty ID is refused.
    pub(super) fn new(config: &AdvisoryRuleConfig) -> anyhow::Result<AdvisoryRule> {
        if config.ids.iter().any(|id| id.trim().is_empty()) {
            anyhow::bail!("advisories.ids: an empty ID");
        }
        Ok(AdvisoryRule {
            severity: config.severity,
            unrated: config.unrated,
            ids: config.ids.iter().map(|id| id.trim().to_owned()).collect(),
            present_only: config.present_only,
            unknown: config.unknown,
        })
    }

    /// Whether one finding of the advisory known by `ids` counts under the
    /// rule, acceptances aside.
    fn counts(&self, finding: &Finding, ids: &[&str], not_wholly_known: bool) -> bool {
        let named = self.ids.is_empty()
            || ids
                .iter()
                .any(|id| self.ids.iter().any(|want| want.eq_ignore_ascii_case(id)));
        let severe = match (self.severity, finding.severity) {
            (None, _) => true,
            (Some(floor), Some(rated)) => rated >= floor,
            (Some(_), None) => self.unrated == Unrated::Counts,
        };
        // Not found on the platforms read says nothing of one not read.
        let present = !self.present_only || !finding.presence.is_not_found() || not_wholly_known;
        named && severe && present
    }

    /// The findings of `summary` (a version's, over its platforms held)
    /// that count under the rule, and those the site's `acceptances`
    /// take off at `now_ms`.
    pub(super) fn weigh(
        &self,
        summary: &Summary,
        acceptances: &[Acceptance],
        (subject, version): (&str, &Version),
        now_ms: u64,
    ) -> Weighed {
        let mut weighed = Weighed::default();
        if !summary.known && self.unknown == NotKnown::Deny {
            weighed.not_known = summary.not_known_reasons();
        }
        let mut seen: Vec<&str> = Vec::new();
        for found in &summary.advisories {
            let id = found.finding.id.as_str();
            if seen.contains(&id) {
                continue;
            }
            seen.push(id);
            // One advisory, however many modules it was found in (the
            // standard library and x/net, say), known by every ID any of
            // its findings gives: it counts when any of its findings does,
            // named by the most severe of them.
            let findings = || {
                summary
                    .advisories
                    .iter()
                    .map(|a| &a.finding)
                    .filter(|f| f.id == id)
            };
            let mut ids: Vec<&str> = findings().flat_map(ids_of).collect();
            ids.sort_unstable();
            ids.dedup();
            let Some(finding) = findings()
                .filter(|f| self.counts(f, &ids, !summary.known))
                .max_by_key(|f| f.severity)
            else {
                continue;
            };
            let accepted = acceptances
                .iter()
                .find(|a| a.covers(subject, version, ids.iter().copied(), now_ms));
            match accepted {
                Some(a) => weighed.accepted.push(format!(
                    "{} accepted until {} by {}: {}",
                    finding.id,
                    humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(a.expires_ms)),
                    a.by,
                    a.reason
                )),
                None => weighed.counted.push(describe(finding)),
            }
        }
        weighed
    }
}

/// Every ID a finding is known by: its own, then its aliases.
pub fn ids_of(finding: &Finding) -> impl Iterator<Item = &str> {
    std::iter::once(finding.id.as_str()).chain(finding.aliases.iter().map(String::as_str))
}

/// A finding as a refusal names it: `GO-2023-2102 (high; also
/// GHSA-4374-p667-p6c8)`.
fn describe(finding: &Finding) -> String {
    let rated = finding.severity.map_or("unrated", Severity::as_str);
    if finding.aliases.is_empty() {
        format!("{} ({rated})", finding.id)
    } else {
        format!(
            "{} ({rated}; also {})",
            finding.id,
            finding.aliases.join(", ")
        )
    }
}

/// Puts an acceptance on the audit trail (`accepted`), naming who made
/// it, as `tfmirror accept` and the pages record one.
pub fn audit_accepted(a: &Acceptance) {
    tracing::info!(
        target: crate::log_context::AUDIT_TARGET,
        by = %a.by,
        advisory = %a.advisory,
        source = %a.subject,
        version = %a.version.as_ref().map_or("*".to_owned(), ToString::to_string),
        expires = %humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(a.expires_ms)),
        reason = %a.reason,
        "accepted"
    );
}

#[cfg(test)]
mod tests;
