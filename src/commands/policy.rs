//! `tfmirror approve`, `tfmirror deny` and `tfmirror policy ls`: an
//! operator's decisions on single versions, kept in the store beside what
//! the cache holds (so every instance sharing it, and a running daemon
//! within seconds, takes them up), and the policy as it stands.

use clap::Subcommand;

use super::store::CommandStore;
use crate::address::{Module, Provider, Version};
use crate::clock::{Clock, SystemClock};
use crate::config::Config;
use crate::policy::Subject;
use crate::store::PolicyDecision;

/// `tfmirror policy …`.
#[derive(Debug, Subcommand)]
pub enum PolicyCommand {
    /// List the rules, the cooldown and the versions decided by name.
    Ls {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<std::path::PathBuf>,
    },
}

/// A provider or module named on the command line.
enum Named {
    Provider(Provider),
    Module(Module),
}

impl Named {
    /// A module when it has four segments, else a provider.
    fn parse(source: &str) -> anyhow::Result<Named> {
        if source.split('/').count() == 4 {
            let (module, subdir) = Module::from_source(source)
                .map_err(|e| anyhow::anyhow!("{source:?} is not a module address: {e}"))?;
            if subdir.is_some() {
                anyhow::bail!("{source:?}: name the module without a subdirectory");
            }
            return Ok(Named::Module(module));
        }
        Provider::from_source(source)
            .map(Named::Provider)
            .map_err(|e| anyhow::anyhow!("{source:?} is not a provider address: {e}"))
    }

    fn subject(&self) -> Subject<'_> {
        match self {
            Named::Provider(p) => Subject::Provider(p),
            Named::Module(m) => Subject::Module(m),
        }
    }
}

/// What an operator decided on one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// `tfmirror approve`.
    Approve,
    /// `tfmirror approve --repin`: approved, and a keyless version may be
    /// pinned anew.
    Repin,
    /// `tfmirror deny`.
    Deny,
}

/// `tfmirror approve` and `tfmirror deny`.
pub fn decide(
    config: &Config,
    source: &str,
    version: &str,
    decision: Decision,
    reason: &str,
) -> anyhow::Result<()> {
    let named = Named::parse(source)?;
    let version = Version::parse(version)?;
    let approved = decision != Decision::Deny;
    if decision != Decision::Approve && reason.trim().is_empty() {
        anyhow::bail!("give the reason (--reason); it is kept with the decision");
    }
    let store = CommandStore::open(config)?;
    let location = store.location();
    if decision == Decision::Repin {
        let Named::Provider(provider) = &named else {
            anyhow::bail!("--repin is for keyless provider versions; modules are pinned by tfmirror's own packaging");
        };
        let mut pin = store
            .wait(crate::store::pins::read(store.store(), provider, &version))
            .map_err(|e| anyhow::anyhow!("reading the keyless pin in {location}: {e}"))?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "{provider} {version} has no keyless pin in {location}: only a version published without a signing key, and pinned on first sight, can be re-pinned"
                )
            })?;
        pin.repin = Some(crate::mirror::keyless::repin_now(
            reason.trim(),
            SystemClock.unix_ms(),
        ));
        store
            .wait(crate::store::pins::write(store.store(), &pin))
            .map_err(|e| anyhow::anyhow!("storing the keyless pin in {location}: {e}"))?;
    }
    let mut decisions = store
        .wait(store.store().read_decisions())
        .map_err(|e| anyhow::anyhow!("reading the policy decisions in {location}: {e}"))?
        .unwrap_or_default();
    let subject = named.subject().to_string();
    decisions.set(PolicyDecision {
        subject: subject.clone(),
        version: version.clone(),
        approved,
        reason: reason.trim().to_owned(),
        at_ms: SystemClock.unix_ms(),
        repin: decision == Decision::Repin,
        by: command_line_user(),
    });
    store
        .wait(store.store().write_decisions(&decisions))
        .map_err(|e| anyhow::anyhow!("storing the policy decisions in {location}: {e}"))?;
    let what = match decision {
        Decision::Approve => "approved",
        Decision::Repin => "approved for a re-pin (the next differing answer replaces the pin)",
        Decision::Deny => "denied",
    };
    println!(
        "{what} {subject} {version} (in {location}); running instances take it up within seconds"
    );
    Ok(())
}

/// A rule's `advisories` table in words, for `policy ls`.
fn advisory_condition(a: &crate::policy::AdvisoryRuleConfig) -> String {
    let mut parts = Vec::new();
    match a.severity {
        Some(floor) => {
            let unrated = match a.unrated {
                crate::policy::Unrated::Counts => "unrated counts",
                crate::policy::Unrated::Ignored => "unrated ignored",
            };
            parts.push(format!("severity >= {}, {unrated}", floor.as_str()));
        }
        None => parts.push("any severity".to_owned()),
    }
    if !a.ids.is_empty() {
        parts.push(format!("ids {}", a.ids.join(" ")));
    }
    if a.present_only {
        parts.push("present only".to_owned());
    }
    format!(" with advisories ({})", parts.join("; "))
}

/// Who decides from the command line, as decisions keep it.
fn command_line_user() -> String {
    format!(
        "command line ({})",
        std::env::var("SUDO_USER")
            .or_else(|_| std::env::var("USER"))
            .unwrap_or_else(|_| "unknown user".into())
    )
}

/// `tfmirror accept`: keeps the acceptance of `advisory` against `source`
/// (and `version`, when given) until `expires` (a duration from now, or
/// an RFC 3339 time), and puts it on the audit trail.
pub fn accept(
    config: &Config,
    advisory: &str,
    (source, version): (&str, Option<&str>),
    reason: &str,
    expires: &str,
) -> anyhow::Result<()> {
    let Named::Provider(provider) = Named::parse(source)? else {
        anyhow::bail!(
            "{source:?}: advisories are accepted for providers; modules have no binaries to match"
        );
    };
    let version = version.map(Version::parse).transpose()?;
    let advisory = advisory.trim();
    if advisory.is_empty() || advisory.chars().any(char::is_whitespace) {
        anyhow::bail!("{advisory:?} is not an advisory ID (GO-2023-2102, GHSA-4374-p667-p6c8, CVE-2023-44487)");
    }
    if reason.trim().is_empty() {
        anyhow::bail!("give the reason (--reason); it is kept with the acceptance");
    }
    let now_ms = SystemClock.unix_ms();
    let expires_ms = expiry(expires, now_ms)?;
    let store = CommandStore::open(config)?;
    let location = store.location();
    let mut decisions = store
        .wait(store.store().read_decisions())
        .map_err(|e| anyhow::anyhow!("reading the policy decisions in {location}: {e}"))?
        .unwrap_or_default();
    let acceptance = crate::store::Acceptance {
        advisory: advisory.to_owned(),
        subject: provider.to_string(),
        version,
        reason: reason.trim().to_owned(),
        by: command_line_user(),
        at_ms: now_ms,
        expires_ms,
    };
    decisions.accept(acceptance.clone());
    store
        .wait(store.store().write_decisions(&decisions))
        .map_err(|e| anyhow::anyhow!("storing the policy decisions in {location}: {e}"))?;
    crate::policy::audit_accepted(&acceptance);
    println!(
        "accepted {advisory} for {}{} until {} (in {location}); running instances take it up within seconds",
        acceptance.subject,
        acceptance.version.map(|v| format!(" {v}")).unwrap_or_default(),
        humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(expires_ms))
    );
    Ok(())
}

/// When an acceptance given `expires` (`30d`, or an RFC 3339 time) at
/// `now_ms` stops counting; a time not in the future is refused.
pub fn expiry(expires: &str, now_ms: u64) -> anyhow::Result<u64> {
    let expires = expires.trim();
    let at_ms = match humantime::parse_duration(expires) {
        Ok(d) => now_ms.saturating_add(u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
        Err(_) => humantime::parse_rfc3339_weak(expires)
            .map(crate::clock::unix_ms_of)
            .map_err(|_| {
                anyhow::anyhow!(
                    "--expires {expires:?}: give a duration (30d, 12h) or a time (2027-01-31T00:00:00Z)"
                )
            })?,
    };
    if at_ms <= now_ms {
        anyhow::bail!("--expires {expires:?} is not in the future");
    }
    Ok(at_ms)
}

/// `tfmirror policy ls`.
pub fn list(config: &Config) -> anyhow::Result<()> {
    let store = CommandStore::open(config)?;
    let gate = super::store::gate(config, &store)?;
    let policy = &config.policy;
    let default = match policy.default {
        crate::policy::Action::Allow => "allow",
        crate::policy::Action::Deny => "deny",
    };
    println!("default: {default}");
    match policy.min_age {
        Some(age) => println!("min_age: {}", humantime::format_duration(age)),
        None => println!("min_age: none"),
    }
    for (i, rule) in policy.rules.iter().enumerate() {
        let action = match rule.action {
            crate::policy::Action::Allow => "allow",
            crate::policy::Action::Deny => "deny",
        };
        println!(
            "policy.rule[{i}]: {action} {}{}{}{}",
            rule.source,
            rule.versions
                .as_deref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            rule.advisories
                .as_ref()
                .map(advisory_condition)
                .unwrap_or_default(),
            if rule.reason.is_empty() {
                String::new()
            } else {
                format!(" ({})", rule.reason)
            }
        );
    }
    for d in &gate.decisions.decisions {
        let at = humantime::format_rfc3339_seconds(
            std::time::UNIX_EPOCH + std::time::Duration::from_millis(d.at_ms),
        );
        let action = if d.approved { "approved" } else { "denied" };
        let reason = if d.reason.is_empty() {
            String::new()
        } else {
            format!(": {}", d.reason)
        };
        let by = if d.by.is_empty() {
            String::new()
        } else {
            format!(" by {}", d.by)
        };
        println!("{action} {} {} at {at}{by}{reason}", d.subject, d.version);
    }
    let now_ms = SystemClock.unix_ms();
    for a in &gate.decisions.acceptances {
        let until = humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(a.expires_ms));
        let state = if a.expired(now_ms) {
            "expired"
        } else {
            "until"
        };
        println!(
            "accepted {} for {}{} {state} {until} by {}: {}",
            a.advisory,
            a.subject,
            a.version
                .as_ref()
                .map(|v| format!(" {v}"))
                .unwrap_or_default(),
            a.by,
            a.reason
        );
    }
    Ok(())
}
