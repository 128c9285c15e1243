//! `[[auth.oidc.rules]]`: what a verified token's claims let it do. The
//! first rule whose every claim matches decides; no match, no access.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::config::{Grant, OidcRuleConfig};

/// The most characters of a claim value the trail keeps.
const MAX_SHOWN: usize = 256;

/// What the deciding rule gave, and the claims it read with their values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matched {
    /// The rule's grant.
    pub grant: Grant,
    /// The claims the rule named, as the token carried them.
    pub claims: BTreeMap<String, String>,
}

/// The first rule of `rules` that `claims` match.
pub fn decide(rules: &[OidcRuleConfig], claims: &Map<String, Value>) -> Option<Matched> {
    rules.iter().find_map(|rule| {
        let mut used = BTreeMap::new();
        for (name, pattern) in &rule.claims {
            let shown = matching_value(claims.get(name)?, pattern)?;
            used.insert(name.clone(), shown);
        }
        Some(Matched {
            grant: rule.grant,
            claims: used,
        })
    })
}

/// Every claim `rules` read, each named once, in order.
pub fn named(rules: &[OidcRuleConfig]) -> Vec<String> {
    missing(rules, &Map::new())
}

/// The claims `rules` read that `claims` lacks (absent, or `null`), each
/// named once, in order.
pub fn missing(rules: &[OidcRuleConfig], claims: &Map<String, Value>) -> Vec<String> {
    let mut out: Vec<String> = (rules.iter())
        .flat_map(|rule| rule.claims.keys())
        .filter(|name| matches!(claims.get(name.as_str()), None | Some(Value::Null)))
        .cloned()
        .collect();
    out.sort();
    out.dedup();
    out
}

/// The claim's value as the trail shows it, when it matches `pattern`: a
/// string whole, a list by any item (shown alone), a boolean or number by
/// its JSON text.
fn matching_value(value: &Value, pattern: &str) -> Option<String> {
    let text = |s: &str| glob(pattern, s).then(|| s.chars().take(MAX_SHOWN).collect());
    match value {
        Value::String(s) => text(s),
        Value::Bool(_) | Value::Number(_) => text(&value.to_string()),
        Value::Array(items) => items.iter().find_map(|item| match item {
            Value::String(s) => text(s),
            Value::Bool(_) | Value::Number(_) => text(&item.to_string()),
            _ => None,
        }),
        Value::Null | Value::Object(_) => None,
    }
}

/// Whether `text` matches `pattern` whole, `*` standing for any run of
/// characters (`/` included) and every other character for itself.
pub fn glob(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    // The classic two-pointer match with one backtrack point.
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if pi < p.len() && p[pi] == t[ti] {
            pi += 1;
            ti += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rule(claims: &[(&str, &str)], grant: Grant) -> OidcRuleConfig {
        OidcRuleConfig {
            claims: claims
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            grant,
        }
    }

    #[test]
    fn globs_match_whole_values() {
        assert!(glob("acme", "acme"));
        assert!(!glob("acme", "acme-evil"));
        assert!(!glob("acme", "evil-acme"));
        assert!(glob(
            "repo:acme/*:ref:refs/heads/main",
            "repo:acme/app:ref:refs/heads/main"
        ));
        assert!(!glob(
            "repo:acme/*:ref:refs/heads/main",
            "repo:acme/app:ref:refs/heads/mainx"
        ));
        assert!(glob("*", ""));
        assert!(glob("a*b*c", "aXbYbZc"));
        assert!(!glob("a*b*c", "aXbYbZ"));
        assert!(!glob("", "x"));
    }

    #[test]
    fn the_first_matching_rule_decides_and_names_its_claims() {
        let rules = vec![
            rule(
                &[("repository_owner", "acme"), ("ref", "refs/heads/main")],
                Grant::Approve,
            ),
            rule(&[("repository_owner", "acme")], Grant::Read),
            rule(&[("groups", "platform-*")], Grant::Admin),
            rule(
                &[("ref_protected", "true"), ("project_path", "acme/*")],
                Grant::Read,
            ),
        ];
        let main = json!({"repository_owner": "acme", "ref": "refs/heads/main", "sub": "x"});
        let m = decide(&rules, main.as_object().unwrap()).unwrap();
        assert_eq!(m.grant, Grant::Approve);
        assert_eq!(m.claims.len(), 2);
        assert_eq!(m.claims["ref"], "refs/heads/main");
        let branch = json!({"repository_owner": "acme", "ref": "refs/heads/dev"});
        assert_eq!(
            decide(&rules, branch.as_object().unwrap()).unwrap().grant,
            Grant::Read
        );
        // A list matches by any item, and the item is what is shown.
        let person = json!({"groups": ["dev", "platform-oncall"]});
        let m = decide(&rules, person.as_object().unwrap()).unwrap();
        assert_eq!(
            (m.grant, m.claims["groups"].as_str()),
            (Grant::Admin, "platform-oncall")
        );
        // Booleans match their JSON text; GitLab sends "true" as a string.
        for protected in [json!(true), json!("true")] {
            let gitlab = json!({"ref_protected": protected, "project_path": "acme/infra"});
            assert!(decide(&rules, gitlab.as_object().unwrap()).is_some());
        }
        // Missing claims, other owners, nulls and objects match nothing.
        for none in [
            json!({}),
            json!({"repository_owner": "acme-evil"}),
            json!({"repository_owner": null}),
            json!({"repository_owner": {"name": "acme"}}),
            json!({"groups": []}),
            json!({"ref_protected": false, "project_path": "acme/infra"}),
        ] {
            assert_eq!(decide(&rules, none.as_object().unwrap()), None, "{none}");
        }
    }
}
