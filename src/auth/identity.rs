//! Who a request comes from, as access control and the audit trail see it.

use std::collections::BTreeMap;
use std::sync::Arc;

use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::config::Grant;

/// How a caller proved who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum WhoKind {
    /// A configured token (`auth.tokens`, `auth.token_file`).
    Token,
    /// A workload's OpenID Connect token (a CI job, a pod).
    Oidc,
    /// A person signed in to the pages through an issuer.
    Person,
}

impl WhoKind {
    /// The kind as the audit trail writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            WhoKind::Token => "token",
            WhoKind::Oidc => "oidc",
            WhoKind::Person => "person",
        }
    }
}

/// A caller as the audit trail names them: a token by its fingerprint,
/// an OpenID Connect identity by issuer, subject and the claims the rule
/// that let it in read (repository and workflow, namespace and service
/// account, groups).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Who {
    /// How they proved it.
    pub kind: WhoKind,
    /// The issuer's configured name (`auth.oidc.name`); empty for a token.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub issuer: String,
    /// The token's `sub`, or a configured token's fingerprint
    /// (`sha256:` and 12 hex digits).
    pub subject: String,
    /// The claims the deciding rule named, with the token's values.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub claims: BTreeMap<String, String>,
}

/// The most bytes a link's encoded caller may take.
const MAX_ENCODED: usize = 2048;

impl Who {
    /// The claims as one field of the trail: `name=value`, space-separated.
    pub fn claims_text(&self) -> String {
        let mut out = String::new();
        for (name, value) in &self.claims {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(name);
            out.push('=');
            out.push_str(value);
        }
        out
    }

    /// The caller as a link carries it (base64url of its JSON), so that
    /// the trail names who asked for a link when it is followed without
    /// credentials.
    pub fn encode(&self) -> String {
        let json = serde_json::to_vec(self).expect("a caller serialises");
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(json)
    }

    /// A caller [`Who::encode`] wrote; `None` for anything else.
    pub fn decode(text: &str) -> Option<Who> {
        if text.len() > MAX_ENCODED {
            return None;
        }
        let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .ok()?;
        serde_json::from_slice(&json).ok()
    }
}

/// What access control decided about a request's credentials.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// Who it is; `None` when access control is off (anyone may read).
    pub who: Option<Arc<Who>>,
    /// What they may do.
    pub grant: Grant,
}

impl Identity {
    /// Anyone, with access control off: they may read and see the
    /// operator's views, and may decide nothing (nobody would be named).
    pub fn anyone() -> Identity {
        Identity {
            who: None,
            grant: Grant::Read,
        }
    }

    /// Whether the identity may do what `grant` allows.
    pub fn may(&self, grant: Grant) -> bool {
        match &self.who {
            None => grant != Grant::Approve,
            Some(_) => self.grant >= grant,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_survives_a_link_and_nothing_else_decodes() {
        let who = Who {
            kind: WhoKind::Oidc,
            issuer: "github".into(),
            subject: "repo:acme/app:ref:refs/heads/main".into(),
            claims: BTreeMap::from([("repository".into(), "acme/app".into())]),
        };
        let text = who.encode();
        assert!(text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
        assert_eq!(Who::decode(&text), Some(who.clone()));
        assert_eq!(who.claims_text(), "repository=acme/app");
        assert_eq!(Who::decode("!!"), None);
        assert_eq!(Who::decode(&"A".repeat(MAX_ENCODED + 1)), None);
        let person = Identity {
            who: Some(Arc::new(who)),
            grant: Grant::Approve,
        };
        assert!(person.may(Grant::Read) && person.may(Grant::Approve));
        assert!(!person.may(Grant::Admin));
        let anyone = Identity::anyone();
        assert!(anyone.may(Grant::Read) && anyone.may(Grant::Admin));
        assert!(!anyone.may(Grant::Approve), "nobody to name");
    }
}
