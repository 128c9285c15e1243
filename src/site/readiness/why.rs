//! Why something a configuration needs is not held, in words an operator
//! acts on.

use serde::Serialize;

use crate::policy::Denied;

/// Why something needed is not held.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "snake_case")]
pub enum Why {
    /// The mirror has never listed the provider or module.
    NotListed,
    /// The version a lock file pins is not in the mirror's list.
    NotInList,
    /// No version the mirror lists meets the constraints.
    NoVersionMeets {
        /// The constraints.
        constraints: String,
        /// How many versions the mirror lists.
        listed: usize,
    },
    /// The archive or package was never fetched into this cache.
    NeverFetched,
    /// It was evicted (to stay within `cache.max_size`).
    Evicted {
        /// When, where known (milliseconds since the Unix epoch).
        #[serde(skip_serializing_if = "Option::is_none")]
        at_ms: Option<u64>,
    },
    /// The policy denies the version.
    Denied {
        /// What decided.
        rule: String,
        /// Why.
        reason: String,
    },
    /// The cooldown (`policy.min_age`) holds the version back.
    Cooldown {
        /// Since when and until when.
        reason: String,
    },
    /// The version's verified record has no package for the platform.
    NoPackage,
    /// The version came from a static directory, unsigned, and
    /// `cache.allow_unsigned_imports` is off.
    UnsignedImport,
    /// The cache could not be read.
    Unreadable {
        /// The error.
        error: String,
    },
    /// A module source the client fetches itself (git, HTTP, S3, …),
    /// not through a mirror: offline it fails.
    NotServed {
        /// What kind of source it is.
        kind: String,
        /// Where the call is written (`file:line`).
        at: String,
    },
    /// The provider's or module's registry is not one this mirror may
    /// serve (`upstream.allowed_hosts`, `[upstream.hosts]`).
    HostNotAllowed {
        /// The hostname.
        host: String,
    },
    /// The lock file pins a version the configuration's constraints
    /// exclude: `init` refuses it until the lock file is upgraded.
    LockedOutsideConstraints {
        /// The constraints.
        constraints: String,
    },
    /// This mirror does not serve the CLI's releases (`[releases]`).
    ReleasesNotServed,
    /// The version constraints the modules requiring a provider write
    /// cannot be read together.
    Unmergeable {
        /// The error, naming the modules.
        error: String,
    },
    /// The client refuses the configuration itself (a declaration made
    /// twice): `init` fails whatever the mirror holds.
    Refused {
        /// What the client refuses.
        message: String,
        /// Where it is written (`file:line`).
        at: String,
    },
}

impl From<Denied> for Why {
    fn from(denied: Denied) -> Self {
        if denied.rule == crate::policy::COOLDOWN {
            Why::Cooldown {
                reason: denied.reason,
            }
        } else {
            let mut said = Vec::new();
            let (advisories, not_known) = (denied.advisories(), denied.not_known());
            if !advisories.is_empty() {
                said.push(format!("advisories {}", advisories.join(", ")));
            }
            if !not_known.is_empty() {
                said.push(format!(
                    "what it falls under is not known, because {}",
                    not_known.join("; ")
                ));
            }
            if !denied.reason.is_empty() {
                said.push(denied.reason);
            }
            let reason = said.join(": ");
            Why::Denied {
                rule: denied.rule,
                reason,
            }
        }
    }
}

impl std::fmt::Display for Why {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Why::NotListed => f.write_str("never listed by this mirror"),
            Why::NotInList => f.write_str("the lock file pins a version this mirror does not list"),
            Why::NoVersionMeets {
                constraints,
                listed,
            } => write!(
                f,
                "no version this mirror lists meets {constraints:?} (it lists {listed})"
            ),
            Why::NeverFetched => f.write_str("never fetched"),
            Why::Evicted { at_ms: Some(at) } => write!(
                f,
                "evicted {}",
                humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(*at))
            ),
            Why::Evicted { at_ms: None } => f.write_str("evicted (its pin stays)"),
            Why::Denied { rule, reason } if reason.is_empty() => {
                write!(f, "denied by the policy ({rule})")
            }
            Why::Denied { rule, reason } => write!(f, "denied by the policy ({rule}): {reason}"),
            Why::Cooldown { reason } => write!(f, "held back by the cooldown: {reason}"),
            Why::NoPackage => f.write_str("the version has no verified package for this platform"),
            Why::UnsignedImport => f.write_str(
                "imported unsigned from a static directory, and cache.allow_unsigned_imports is off",
            ),
            Why::Unreadable { error } => write!(f, "the cache cannot be read: {error}"),
            Why::NotServed { kind, at } => write!(
                f,
                "{kind}, which the client fetches itself, not through this mirror ({at})"
            ),
            Why::HostNotAllowed { host } => write!(
                f,
                "this mirror does not serve the registry {host} (upstream.allowed_hosts)"
            ),
            Why::LockedOutsideConstraints { constraints } => write!(
                f,
                "the lock file pins a version outside {constraints:?}: init refuses it until the lock file is upgraded"
            ),
            Why::ReleasesNotServed => f.write_str("this mirror does not serve these CLI releases ([releases])"),
            Why::Unmergeable { error } => f.write_str(error),
            Why::Refused { message, at } => {
                write!(f, "the client refuses this configuration: {message} ({at})")
            }
        }
    }
}
