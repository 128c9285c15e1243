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
        by: format!(
            "command line ({})",
            std::env::var("SUDO_USER")
                .or_else(|_| std::env::var("USER"))
                .unwrap_or_else(|_| "unknown user".into())
        ),
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
        let by = if d.by.is_empty() {
            String::new()
        } else {
            format!(" by {}", d.by)
        };
        println!("{action} {} {} at {at}{by}{reason}", d.subject, d.version);
    }
    Ok(())
}
