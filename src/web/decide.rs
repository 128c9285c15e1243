//! Deciding on one version from the pages
//! (`/-/decide/providers/…/:version`, `/-/decide/modules/…/:version`): a
//! person whose grant is `approve` or more sees what the policy says of the
//! version now and approves or denies it with a reason. The decision is
//! kept in the store exactly as `tfmirror approve` and `tfmirror deny` keep
//! theirs (so every instance sharing the store takes it up), names who
//! made it, and goes on the audit trail with the same names.

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::form::Form;
use super::layout::Layout;
use super::routes::{decide_path, Decided};
use super::session::Visitor;
use super::{PageAnswer, PageRequest, Site};
use crate::address::Version;
use crate::auth::Who;
use crate::config::Grant;
use crate::error::RequestError;
use crate::log_context::AUDIT_TARGET;
use crate::policy::Subject;
use crate::store::PolicyDecision;

/// The most characters a reason may have.
const MAX_REASON: usize = 1000;

/// The decision page's data.
#[derive(Debug, Serialize)]
pub struct DecidePage {
    /// The provider's or module's address.
    pub subject: String,
    /// The version.
    pub version: String,
    /// What the policy says now: `allowed`, or why not.
    pub policy: String,
    /// Whether clients may install it now.
    pub allowed: bool,
    /// The operator's decision on it, if there is one: who, and why.
    pub decided: Option<String>,
    /// A provider version's advisories (over the platforms held), each
    /// with the acceptance that holds now; empty for modules and when no
    /// database is imported.
    pub advisories: Vec<super::accept::AdvisoryRow>,
    /// The longest an acceptance from this page may hold, in days.
    pub max_days: u64,
}

#[derive(Template)]
#[template(path = "decide.html")]
struct DecideHtml<'a> {
    layout: &'a Layout,
    page: &'a DecidePage,
    action: String,
}

/// The page, or (sent) the decision recorded and the page again.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    form: Option<&Form>,
    layout: &Layout,
    visitor: &Visitor,
    (decided, version): (&Decided, &Version),
) -> Result<PageAnswer, RequestError> {
    let who = match visitor.who() {
        Some(who) if visitor.may(Grant::Approve) => who,
        _ => {
            return Err(RequestError::NotPermitted(
                "deciding on versions needs the approve grant: sign in as someone an [[auth.oidc.rules]] entry grants approve".into(),
            ))
        }
    };
    let subject = match decided {
        Decided::Provider(p) => Subject::Provider(p),
        Decided::Module(m) => Subject::Module(m),
    };
    if let Some(form) = form {
        let approved = match (form.text("decision").as_deref(), decided) {
            (Some("approve"), _) => true,
            (Some("deny"), _) => false,
            (Some("accept"), Decided::Provider(provider)) => {
                let acceptance =
                    super::accept::from_form(site, form, (provider, version), named(who)).await?;
                site.mirror.record_acceptance(acceptance.clone()).await?;
                crate::policy::audit_accepted(&acceptance);
                return Ok(PageAnswer::see_other(decide_path(decided, version)));
            }
            _ => {
                return Err(RequestError::InvalidRequest(
                    "decision must be approve, deny, or (for a provider version) accept".into(),
                ))
            }
        };
        let reason = form.text("reason").unwrap_or_default().trim().to_owned();
        if reason.is_empty() || reason.chars().count() > MAX_REASON {
            return Err(RequestError::InvalidRequest(format!(
                "give the reason (1 to {MAX_REASON} characters); it is kept with the decision"
            )));
        }
        let by = named(who);
        site.mirror
            .record_decision(PolicyDecision {
                subject: subject.to_string(),
                version: version.clone(),
                approved,
                reason: reason.clone(),
                at_ms: site.mirror.clock().unix_ms(),
                repin: false,
                by: by.clone(),
            })
            .await?;
        tracing::info!(
            target: AUDIT_TARGET,
            identity = who.kind.as_str(),
            issuer = if who.issuer.is_empty() { "-" } else { who.issuer.as_str() },
            subject = %who.subject,
            claims = %who.claims_text(),
            decision = if approved { "approve" } else { "deny" },
            source = %subject,
            version = %version,
            reason = %reason,
            "decided"
        );
        return Ok(PageAnswer::see_other(decide_path(decided, version)));
    }
    let now = site.mirror.verdict(subject, version).await?;
    let decisions = site.mirror.decisions_held().await;
    let advisories = match decided {
        Decided::Provider(p) => super::accept::rows(site, p, version, &decisions).await,
        Decided::Module(_) => Vec::new(),
    };
    let page = DecidePage {
        advisories,
        max_days: super::accept::MAX_DAYS,
        subject: subject.to_string(),
        version: version.to_string(),
        allowed: now.is_ok(),
        policy: match &now {
            Ok(()) => "allowed".into(),
            Err(denied) => denied.to_string(),
        },
        decided: decisions.get(&subject.to_string(), version).map(|d| {
            let what = if d.approved { "approved" } else { "denied" };
            let by = if d.by.is_empty() {
                "an operator"
            } else {
                d.by.as_str()
            };
            format!("{what} by {by}: {}", d.reason)
        }),
    };
    if req.route.json {
        return Ok(PageAnswer::json(&page));
    }
    let html = DecideHtml {
        layout,
        page: &page,
        action: decide_path(decided, version),
    };
    Ok(PageAnswer::html(StatusCode::OK, &html))
}

/// Who decided, as the decision keeps it.
fn named(who: &Who) -> String {
    let mut by = match who.issuer.as_str() {
        "" => format!("{} {}", who.kind.as_str(), who.subject),
        issuer => format!("{} {issuer} {}", who.kind.as_str(), who.subject),
    };
    let claims = who.claims_text();
    if !claims.is_empty() {
        by.push_str(" (");
        by.push_str(&claims);
        by.push(')');
    }
    by
}
