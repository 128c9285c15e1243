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

/// `tfmirror approve` (`approved`) and `tfmirror deny`.
pub fn decide(
    config: &Config,
    source: &str,
    version: &str,
    approved: bool,
    reason: &str,
) -> anyhow::Result<()> {
    let named = Named::parse(source)?;
    let version = Version::parse(version)?;
    if !approved && reason.trim().is_empty() {
        anyhow::bail!("give the reason users are shown (--reason)");
    }
    let store = CommandStore::open(config)?;
    let location = store.location();
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
    });
    store
        .wait(store.store().write_decisions(&decisions))
        .map_err(|e| anyhow::anyhow!("storing the policy decisions in {location}: {e}"))?;
    let what = if approved { "approved" } else { "denied" };
    println!(
        "{what} {subject} {version} (in {location}); running instances take it up within seconds"
    );
    Ok(())
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
            "policy.rule[{i}]: {action} {}{}{}",
            rule.source,
            rule.versions
                .as_deref()
                .map(|v| format!(" {v}"))
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
        println!("{action} {} {} at {at}{reason}", d.subject, d.version);
    }
    Ok(())
}
