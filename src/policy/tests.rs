use super::*;
use crate::store::PolicyDecisions;

fn policy(default: Action, rules: &[(&str, Option<&str>, Action, &str)]) -> Policy {
    Policy::new(&PolicyConfig {
        default,
        min_age: None,
        rules: rules
            .iter()
            .map(|(source, versions, action, reason)| RuleConfig {
                verification: None,
                advisories: None,
                source: (*source).into(),
                versions: versions.map(Into::into),
                action: *action,
                reason: (*reason).into(),
            })
            .collect(),
    })
    .unwrap()
}

fn provider(source: &str) -> Provider {
    Provider::from_source(source).unwrap()
}

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

#[test]
fn the_first_matching_rule_decides_and_the_default_the_rest() {
    let p = policy(
        Action::Deny,
        &[
            (
                "hashicorp/aws",
                Some("= 5.1.0"),
                Action::Deny,
                "yanked upstream",
            ),
            ("registry.terraform.io/hashicorp/*", None, Action::Allow, ""),
            ("*/acme/*", Some(">= 2.0"), Action::Allow, ""),
        ],
    );
    let aws = provider("hashicorp/aws");
    let denied = p
        .check(
            &PolicyDecisions::default(),
            Subject::Provider(&aws),
            &v("5.1.0"),
        )
        .unwrap_err();
    assert_eq!(denied.rule, "policy.rule[0]");
    assert_eq!(
        denied.to_string(),
        "registry.terraform.io/hashicorp/aws 5.1.0 is denied by this mirror's policy (policy.rule[0]): yanked upstream"
    );
    assert!(p
        .check(
            &PolicyDecisions::default(),
            Subject::Provider(&aws),
            &v("5.2.0")
        )
        .is_ok());
    // Glob per segment, any host, and the constraint (a pre-release of a
    // covered version is covered).
    let widget = provider("registry.example/ACME/widget");
    assert!(p
        .check(
            &PolicyDecisions::default(),
            Subject::Provider(&widget),
            &v("2.1.0-beta1")
        )
        .is_ok());
    let old = p
        .check(
            &PolicyDecisions::default(),
            Subject::Provider(&widget),
            &v("1.9.0"),
        )
        .unwrap_err();
    assert_eq!(old.rule, "policy.default");
    // Provider rules do not match modules, nor module rules providers.
    let (module, _) = Module::from_source("registry.terraform.io/hashicorp/consul/aws").unwrap();
    assert!(p
        .check(
            &PolicyDecisions::default(),
            Subject::Module(&module),
            &v("1.0.0")
        )
        .is_err());
    let modules = policy(
        Action::Allow,
        &[("*/hashicorp/*/*", None, Action::Deny, "")],
    );
    assert!(modules
        .check(
            &PolicyDecisions::default(),
            Subject::Module(&module),
            &v("1.0.0")
        )
        .is_err());
    assert!(modules
        .check(
            &PolicyDecisions::default(),
            Subject::Provider(&aws),
            &v("1.0.0")
        )
        .is_ok());
    assert!(!modules.allows_everything());
    assert!(Policy::default().allows_everything());
}

#[test]
fn a_bad_rule_is_refused_naming_it() {
    let bad = |source: &str, versions: Option<&str>| {
        Policy::new(&PolicyConfig {
            default: Action::Allow,
            min_age: None,
            rules: vec![
                RuleConfig {
                    verification: None,
                    advisories: None,
                    source: "hashicorp/*".into(),
                    versions: None,
                    action: Action::Allow,
                    reason: String::new(),
                },
                RuleConfig {
                    verification: None,
                    advisories: None,
                    source: source.into(),
                    versions: versions.map(Into::into),
                    action: Action::Deny,
                    reason: String::new(),
                },
            ],
        })
        .map(|_| ())
        .unwrap_err()
    };
    let e = format!("{:#}", bad("acme", None));
    assert!(e.starts_with("policy.rule[1]: source \"acme\""), "{e}");
    let e = format!("{:#}", bad("a/b/c/d/e", None));
    assert!(e.contains("5 segments"), "{e}");
    let e = format!("{:#}", bad("*/[acme/*", None));
    assert!(e.contains("not a valid glob"), "{e}");
    let e = format!("{:#}", bad("*/acme/*", Some("~> banana")));
    assert!(e.starts_with("policy.rule[1]: versions"), "{e}");
    let e = format!("{:#}", bad("acme//x", None));
    assert!(e.contains("empty segment"), "{e}");
}

#[test]
fn a_cooldown_holds_back_only_versions_seen_after_the_first_listing() {
    let p = Policy::new(&PolicyConfig {
        min_age: Some(std::time::Duration::from_secs(3 * 86_400)),
        ..PolicyConfig::default()
    })
    .unwrap();
    assert!(!p.allows_everything());
    let aws = provider("hashicorp/aws");
    let day = 86_400_000;
    let seen = 1_700_000_000_000;
    // There at the first listing: old.
    assert!(p
        .cooldown(Subject::Provider(&aws), &v("5.0.0"), None, seen)
        .is_ok());
    let held = p
        .cooldown(
            Subject::Provider(&aws),
            &v("5.1.0"),
            Some(seen),
            seen + 2 * day,
        )
        .unwrap_err();
    assert_eq!(held.rule, "policy.min_age");
    assert!(
        held.reason
            .contains("first seen 2023-11-14T22:13:20Z, held back until 2023-11-17T22:13:20Z"),
        "{held}"
    );
    assert!(p
        .cooldown(
            Subject::Provider(&aws),
            &v("5.1.0"),
            Some(seen),
            seen + 3 * day
        )
        .is_ok());
}

#[test]
fn an_operators_decision_on_one_version_comes_first() {
    let p = policy(
        Action::Allow,
        &[("hashicorp/*", Some(">= 5.0"), Action::Deny, "not yet")],
    );
    let aws = provider("hashicorp/aws");
    let mut decisions = PolicyDecisions::default();
    let decide = |approved: bool, version: &str| crate::store::PolicyDecision {
        repin: false,
        subject: aws.to_string(),
        version: v(version),
        approved,
        reason: "reviewed".into(),
        at_ms: 1,
        by: String::new(),
    };
    decisions.set(decide(true, "5.1.0"));
    decisions.set(decide(false, "4.9.0"));
    let verdict = p.decide(&decisions, Subject::Provider(&aws), &v("5.1.0"));
    assert_eq!((verdict.rule.as_str(), verdict.explicit), (APPROVED, true));
    assert!(verdict.outcome.is_ok());
    let denied = p
        .check(&decisions, Subject::Provider(&aws), &v("4.9.0"))
        .unwrap_err();
    assert_eq!(
        (denied.rule.as_str(), denied.reason.as_str()),
        (DENIED, "reviewed")
    );
    // Still the rules for the rest; a later decision replaces an earlier.
    assert!(p
        .check(&decisions, Subject::Provider(&aws), &v("5.2.0"))
        .is_err());
    decisions.set(decide(false, "5.1.0"));
    assert_eq!(decisions.decisions.len(), 2);
    assert!(p
        .check(&decisions, Subject::Provider(&aws), &v("5.1.0"))
        .is_err());
}

#[test]
fn rules_naming_a_verification_decide_once_it_is_known() {
    let config: PolicyConfig = toml::from_str(
        r#"
        [[rule]]
        source = "registry.opentofu.org/netbirdio/*"
        verification = "keyless"
        action = "allow"
        [[rule]]
        source = "registry.opentofu.org/*/*"
        verification = "keyless"
        action = "deny"
        reason = "keyless providers only from vetted namespaces"
        "#,
    )
    .unwrap();
    let p = Policy::new(&config).unwrap();
    assert!(p.has_verification_rules());
    let none = PolicyDecisions::default();
    let netbird = provider("registry.opentofu.org/netbirdio/netbird");
    let other = provider("registry.opentofu.org/acme/widget");
    let decide = |who: &Provider, how: Option<Verification>| {
        p.decide_verified(&none, Subject::Provider(who), &v("1.0.0"), how)
            .outcome
    };
    // Passed over while the verification is unknown (version lists).
    assert!(decide(&other, None).is_ok());
    assert!(decide(&other, Some(Verification::Signed)).is_ok());
    assert!(decide(&netbird, Some(Verification::Keyless)).is_ok());
    let denied = decide(&other, Some(Verification::Keyless)).unwrap_err();
    assert_eq!(denied.rule, "policy.rule[1]");
    assert!(denied.to_string().contains("vetted namespaces"));
    // Modules are pinned by the mirror itself: no verification rule.
    let err = Policy::new(
        &toml::from_str::<PolicyConfig>(
            "[[rule]]\nsource = \"*/acme/*/*\"\nverification = \"keyless\"\naction = \"deny\"\n",
        )
        .unwrap(),
    )
    .unwrap_err();
    assert!(format!("{err:#}").contains("verification applies to providers"));
    let err = toml::from_str::<PolicyConfig>(
        "[[rule]]\nsource = \"a/b\"\nverification = \"unsigned\"\naction = \"deny\"\n",
    )
    .unwrap_err();
    assert!(err.to_string().contains("unknown variant"), "{err}");
}
