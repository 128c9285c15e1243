//! Sign-ins through OpenID Connect issuers: every token verified (a CI
//! job's, a pod's, a person's at the pages), by issuer and outcome. No
//! subject is ever a label.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::registry::Registry;

use super::Metrics;

/// Labels of `tfmirror_oidc_signins_total`.
#[derive(Debug, Clone, Hash, PartialEq, Eq, EncodeLabelSet)]
pub(super) struct SigninLabels {
    issuer: String,
    outcome: &'static str,
}

/// Registers the metrics of this file.
pub(super) fn register(registry: &mut Registry, m: &Metrics) {
    registry.register(
        "oidc_signins",
        "OpenID Connect tokens checked, by issuer (its auth.oidc name, or unknown) and outcome (accepted, or why it was refused: malformed, oversized, algorithm, header_key, issuer, audience, expired, not_yet_valid, issued_in_future, lifetime, unknown_key, keys_unavailable, signature, nonce, no_rule); a token is checked once until it expires",
        m.signins.clone(),
    );
}

impl Metrics {
    /// Counts a token checked for `issuer` (its configured name) with
    /// `outcome`.
    pub fn oidc_signin(&self, issuer: &str, outcome: &'static str) {
        self.signins
            .get_or_create(&SigninLabels {
                issuer: issuer.to_owned(),
                outcome,
            })
            .inc();
    }
}
