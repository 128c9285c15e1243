//! Sign-ins through OpenID Connect issuers: every token verified (a CI
//! job's, a pod's, a person's at the pages) and every sign-in at the pages,
//! by issuer and outcome; the fetches of issuers' keys and discovery
//! documents; the sign-ins refused for coming too often from one address.
//! No subject is ever a label.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::registry::Registry;

use super::Metrics;

/// Every outcome of `tfmirror_oidc_signins_total`: `accepted`, then why a
/// token or a sign-in was refused.
pub const SIGNIN_OUTCOMES: [&str; 29] = [
    "accepted",
    // A token's shape and header, before any key is looked at.
    "malformed",
    "oversized",
    "algorithm",
    "header_key",
    "crit",
    // Its issuer, key and signature.
    "issuer",
    "unknown_key",
    "keys_unavailable",
    "signature",
    // Its claims.
    "audience",
    "expired",
    "not_yet_valid",
    "issued_in_future",
    "lifetime",
    // The rules.
    "no_rule",
    "missing_claim",
    // A person's sign-in at the pages: the ID token's nonce, the UserInfo
    // answer, and the steps around the issuer.
    "nonce",
    "userinfo_unavailable",
    "userinfo_invalid",
    "userinfo_unsigned",
    "userinfo_subject",
    "no_signin",
    "state",
    "replayed",
    "refused_at_issuer",
    "code_exchange",
    "rate_limited",
    "issuer_unreachable",
];

/// Every outcome of `tfmirror_oidc_key_fetches_total`.
pub const KEY_FETCH_OUTCOMES: [&str; 3] = ["fetched", "failed", "backed_off"];

/// Labels of `tfmirror_oidc_signins_total` and
/// `tfmirror_oidc_key_fetches_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct IssuerLabels {
    issuer: String,
    outcome: &'static str,
}

/// The metrics of this file.
#[derive(Default)]
pub(super) struct SigninMetrics {
    signins: Family<IssuerLabels, Counter>,
    key_fetches: Family<IssuerLabels, Counter>,
}

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "oidc_signins",
        format!(
            "OpenID Connect tokens checked and people's sign-ins at the pages, by issuer (its auth.oidc name, or unknown) and outcome ({}); a token is checked once until it expires",
            SIGNIN_OUTCOMES.join(", ")
        ),
        m.signins.signins.clone(),
    );
    registry.register(
        "oidc_key_fetches",
        "Fetches of an issuer's discovery document and keys, by issuer and outcome (fetched, failed, or backed_off: asked for within keys_refetch_interval of the last, and not made)",
        m.signins.key_fetches.clone(),
    );
}

impl Metrics {
    /// Counts a token checked, or a sign-in, for `issuer` (its configured
    /// name) with `outcome`, one of [`SIGNIN_OUTCOMES`].
    pub fn oidc_signin(&self, issuer: &str, outcome: &'static str) {
        debug_assert!(SIGNIN_OUTCOMES.contains(&outcome), "{outcome}");
        self.signins
            .signins
            .get_or_create(&IssuerLabels {
                issuer: issuer.to_owned(),
                outcome,
            })
            .inc();
    }

    /// Counts a fetch of `issuer`'s keys asked for, with `outcome`, one
    /// of [`KEY_FETCH_OUTCOMES`].
    pub fn oidc_key_fetch(&self, issuer: &str, outcome: &'static str) {
        self.signins
            .key_fetches
            .get_or_create(&IssuerLabels {
                issuer: issuer.to_owned(),
                outcome,
            })
            .inc();
    }

    /// Exports at 0 every outcome of each configured issuer (and of
    /// `unknown`), so that the first refusal after a start is an increase
    /// an alert sees.
    pub fn export_issuer_series(&self, issuers: &[String]) {
        for issuer in issuers {
            for outcome in SIGNIN_OUTCOMES {
                let _ = self.signins.signins.get_or_create(&IssuerLabels {
                    issuer: issuer.clone(),
                    outcome,
                });
            }
            for outcome in KEY_FETCH_OUTCOMES {
                let _ = self.signins.key_fetches.get_or_create(&IssuerLabels {
                    issuer: issuer.clone(),
                    outcome,
                });
            }
        }
        for outcome in SIGNIN_OUTCOMES {
            let _ = self.signins.signins.get_or_create(&IssuerLabels {
                issuer: "unknown".into(),
                outcome,
            });
        }
    }
}
