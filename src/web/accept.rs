//! Accepting an advisory from the decision page of a provider version: a
//! person whose grant is `approve` or more sees the advisories against
//! the version (over the platforms held), and accepts one for the version
//! or for every version of the provider, with a reason and an expiry. The
//! acceptance is kept in the store exactly as `tfmirror accept` keeps it
//! (so every instance sharing the store takes it up), names who made it,
//! and goes on the audit trail (`accepted`).

use serde::Serialize;

use super::form::Form;
use super::Site;
use crate::address::{Provider, Version};
use crate::error::RequestError;
use crate::policy::ids_of;
use crate::store::{Acceptance, PolicyDecisions};

/// The longest an acceptance from the pages may hold, in days.
pub const MAX_DAYS: u64 = 365;

/// The most characters a reason may have.
const MAX_REASON: usize = 1000;

/// One advisory against the version, as the page lists it.
#[derive(Debug, Serialize)]
pub struct AdvisoryRow {
    /// Its ID (the Go database's where it has one).
    pub id: String,
    /// Its other IDs.
    pub aliases: String,
    /// Its severity, or `unrated`.
    pub severity: &'static str,
    /// One line.
    pub summary: String,
    /// Its page on this mirror.
    pub path: String,
    /// The acceptance that holds for it now, in words, if one does.
    pub accepted: Option<String>,
}

/// The advisories against `version` of `provider`, each with the
/// acceptance that holds now.
pub async fn rows(
    site: Site<'_>,
    provider: &Provider,
    version: &Version,
    decisions: &PolicyDecisions,
) -> Vec<AdvisoryRow> {
    let Some(summary) = site.mirror.held_advisories(provider, version, None).await else {
        return Vec::new();
    };
    let now_ms = site.mirror.clock().unix_ms();
    let subject = provider.to_string();
    summary
        .advisories
        .iter()
        .map(|found| {
            let f = &found.finding;
            let accepted = decisions
                .acceptances
                .iter()
                .find(|a| a.covers(&subject, version, ids_of(f), now_ms))
                .map(|a| {
                    format!(
                        "accepted {} until {} by {}: {}",
                        a.version
                            .as_ref()
                            .map_or("for every version".to_owned(), |v| format!("for {v}")),
                        humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(a.expires_ms)),
                        a.by,
                        a.reason
                    )
                });
            AdvisoryRow {
                id: f.id.clone(),
                aliases: f.aliases.join(", "),
                severity: f.severity.map_or("unrated", |s| s.as_str()),
                summary: f.summary.clone(),
                path: super::routes::advisory_path(&f.id),
                accepted,
            }
        })
        .collect()
}

/// The acceptance a sent form asks for, by `by`: one of the version's
/// advisories (`advisory`), for the version or the provider (`scope`),
/// for `days` days, with a `reason`.
pub async fn from_form(
    site: Site<'_>,
    form: &Form,
    (provider, version): (&Provider, &Version),
    by: String,
) -> Result<Acceptance, RequestError> {
    let bad = |what: &str| RequestError::InvalidRequest(what.to_owned());
    let advisory = form.text("advisory").unwrap_or_default();
    let against = site
        .mirror
        .held_advisories(provider, version, None)
        .await
        .ok_or_else(|| bad("no advisory is known against this version"))?;
    let known = against
        .advisories
        .iter()
        .any(|found| ids_of(&found.finding).any(|id| id == advisory));
    if !known {
        return Err(bad(
            "advisory must be one of the advisories against this version",
        ));
    }
    let version = match form.text("scope").as_deref() {
        Some("version") => Some(version.clone()),
        Some("provider") => None,
        _ => return Err(bad("scope must be version or provider")),
    };
    let days = form
        .text("days")
        .and_then(|d| d.parse::<u64>().ok())
        .filter(|d| (1..=MAX_DAYS).contains(d))
        .ok_or_else(|| bad(&format!("days must be a whole number from 1 to {MAX_DAYS}")))?;
    let reason = form.text("reason").unwrap_or_default().trim().to_owned();
    if reason.is_empty() || reason.chars().count() > MAX_REASON {
        return Err(bad(&format!(
            "give the reason (1 to {MAX_REASON} characters); it is kept with the acceptance"
        )));
    }
    let at_ms = site.mirror.clock().unix_ms();
    Ok(Acceptance {
        advisory,
        subject: provider.to_string(),
        version,
        reason,
        by,
        at_ms,
        expires_ms: at_ms.saturating_add(days * 86_400_000),
    })
}
