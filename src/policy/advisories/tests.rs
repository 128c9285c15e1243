use super::AdvisoryRule;
use crate::address::{Provider, Version};
use crate::advisories::database::Review;
use crate::advisories::{Finding, PlatformFinding, Presence, Severity, Summary};
use crate::policy::{Facts, Policy, PolicyConfig, Subject};
use crate::store::{Acceptance, PolicyDecision, PolicyDecisions};

const NOW: u64 = 1_800_000_000_000;

fn finding(id: &str, aliases: &[&str], severity: Option<Severity>, presence: Presence) -> Finding {
    Finding {
        id: id.into(),
        aliases: aliases.iter().map(|a| (*a).to_string()).collect(),
        summary: format!("{id} in brief"),
        module: "golang.org/x/net".into(),
        found: "v0.0.1".into(),
        fixed: None,
        severity,
        review: Review::Unknown,
        presence,
        matched_by: "module version".into(),
        url: String::new(),
    }
}

/// An unrated entry whose code is present, one rated high (known also by
/// its GHSA ID) whose code is not, and a moderate one naming no packages.
fn summary() -> Summary {
    let present = Presence::Present {
        packages: vec!["net/http".into()],
        symbols: vec![],
        symbols_not_told: vec![],
    };
    let found = [
        finding("GO-2021-0001", &[], None, present),
        finding(
            "GO-2023-2102",
            &["CVE-2023-44487", "GHSA-4374-p667-p6c8"],
            Some(Severity::High),
            Presence::NotFound { packages: vec![] },
        ),
        finding(
            "GO-2022-0003",
            &[],
            Some(Severity::Moderate),
            Presence::NotNamed,
        ),
        // The same advisory found in the standard library too, unrated
        // there (its GHSA alias rates only the x/net half).
        Finding {
            module: "stdlib".into(),
            ..finding("GO-2023-2102", &["CVE-2023-44487"], None, Presence::NotRead)
        },
    ];
    Summary {
        known: true,
        unknown: std::collections::BTreeMap::new(),
        count: found.len(),
        worst: Some(Severity::High),
        advisories: found
            .into_iter()
            .map(|finding| PlatformFinding {
                presence_by_platform: [("linux_amd64".into(), finding.presence.clone())].into(),
                finding,
                platforms: vec!["linux_amd64".into()],
            })
            .collect(),
        not_read: Vec::new(),
    }
}

fn policy(toml: &str) -> Policy {
    Policy::new(&toml::from_str::<PolicyConfig>(toml).unwrap()).unwrap()
}

fn widget() -> Provider {
    Provider::from_source("registry.origin.test/acme/widget").unwrap()
}

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

/// What `p` decides of widget `version` with `summary` known (or not),
/// under `decisions`, at `now`.
fn decide(
    p: &Policy,
    decisions: &PolicyDecisions,
    version: &str,
    summary: Option<&Summary>,
    now: u64,
) -> crate::policy::Verdict {
    let facts = Facts {
        advisories: summary,
        now_ms: now,
        ..Facts::default()
    };
    p.decide_with(decisions, Subject::Provider(&widget()), &v(version), &facts)
}

const RULE: &str =
    "[[rule]]\nsource = \"*/acme/*\"\naction = \"deny\"\nreason = \"fix it first\"\n";

#[test]
fn any_finding_denies_and_the_refusal_names_each_advisory() {
    let p = policy(&format!("{RULE}[rule.advisories]\n"));
    assert!(p.has_advisory_rules());
    let none = PolicyDecisions::default();
    let denied = decide(&p, &none, "1.0.0", Some(&summary()), NOW)
        .outcome
        .unwrap_err();
    assert_eq!(denied.rule, "policy.rule[0]");
    assert_eq!(
        denied.to_string(),
        "registry.origin.test/acme/widget 1.0.0 is denied by this mirror's policy (policy.rule[0]): advisories GO-2021-0001 (unrated), GO-2023-2102 (high; also CVE-2023-44487, GHSA-4374-p667-p6c8), GO-2022-0003 (moderate): fix it first"
    );
    // No finding, or no binary read yet: the rule does not match.
    let clean = Summary::default();
    assert!(decide(&p, &none, "1.0.0", Some(&clean), NOW)
        .outcome
        .is_ok());
    let unread = decide(&p, &none, "1.0.0", None, NOW);
    assert!(unread.outcome.is_ok());
    assert_eq!(unread.rule, "policy.default");
}

#[test]
fn a_severity_floor_counts_unrated_entries_unless_told_not_to() {
    let none = PolicyDecisions::default();
    let named = |toml: &str| -> Vec<String> {
        let p = policy(&format!("{RULE}[rule.advisories]\n{toml}"));
        match decide(&p, &none, "1.0.0", Some(&summary()), NOW).outcome {
            Ok(()) => Vec::new(),
            Err(denied) => denied
                .advisories()
                .iter()
                .map(|a| a.split(' ').next().unwrap().to_owned())
                .collect(),
        }
    };
    assert_eq!(
        named("severity = \"high\"\n"),
        ["GO-2021-0001", "GO-2023-2102"]
    );
    assert_eq!(
        named("severity = \"high\"\nunrated = \"ignored\"\n"),
        ["GO-2023-2102"]
    );
    assert_eq!(
        named("severity = \"medium\"\nunrated = \"ignored\"\n"),
        ["GO-2023-2102", "GO-2022-0003"]
    );
    assert!(named("severity = \"critical\"\nunrated = \"ignored\"\n").is_empty());
    // Named by an alias, in any case.
    assert_eq!(named("ids = [\"ghsa-4374-p667-p6c8\"]\n"), ["GO-2023-2102"]);
    assert!(named("ids = [\"GO-2099-9999\"]\n").is_empty());
    // Code shown absent does not count; unknown presence does (the
    // standard library's half of GO-2023-2102 was not read).
    assert_eq!(
        named("present_only = true\n"),
        ["GO-2021-0001", "GO-2023-2102", "GO-2022-0003"]
    );
    assert!(named("present_only = true\nseverity = \"high\"\nunrated = \"ignored\"\n").is_empty());
    // Named by the alias only its x/net half carries, the advisory counts
    // through its standard library half too (present_only leaves x/net out).
    assert_eq!(
        named("ids = [\"GHSA-4374-p667-p6c8\"]\npresent_only = true\n"),
        ["GO-2023-2102"]
    );
}

fn acceptance(advisory: &str, version: Option<&str>, expires_ms: u64) -> Acceptance {
    Acceptance {
        advisory: advisory.into(),
        subject: widget().to_string(),
        version: version.map(v),
        reason: "not reachable from the provider's code".into(),
        by: "person github alice".into(),
        at_ms: NOW - 1,
        expires_ms,
    }
}

#[test]
fn an_acceptance_takes_its_advisory_off_until_it_expires() {
    let p = policy(&format!(
        "{RULE}[rule.advisories]\nseverity = \"high\"\nunrated = \"ignored\"\n"
    ));
    let mut decisions = PolicyDecisions::default();
    // Accepted by its GHSA ID, for this version only, for a minute.
    decisions.accept(acceptance(
        "GHSA-4374-p667-p6c8",
        Some("1.0.0"),
        NOW + 60_000,
    ));
    let verdict = decide(&p, &decisions, "1.0.0", Some(&summary()), NOW);
    assert!(verdict.outcome.is_ok(), "{:?}", verdict.outcome);
    assert_eq!(verdict.rule, "policy.default");
    assert_eq!(verdict.accepted.len(), 1);
    assert!(
        verdict.accepted[0].starts_with("GO-2023-2102 accepted until ")
            && verdict.accepted[0]
                .ends_with("by person github alice: not reachable from the provider's code"),
        "{:?}",
        verdict.accepted
    );
    // Another version is not covered.
    assert!(decide(&p, &decisions, "1.1.0", Some(&summary()), NOW)
        .outcome
        .is_err());
    // Expired: refused again.
    assert!(
        decide(&p, &decisions, "1.0.0", Some(&summary()), NOW + 60_000)
            .outcome
            .is_err()
    );
    // For every version, by its GO ID; a later acceptance of the same
    // advisory, subject and version replaces the earlier one.
    decisions.accept(acceptance("GO-2023-2102", None, NOW + 60_000));
    decisions.accept(acceptance("go-2023-2102", None, NOW + 120_000));
    assert_eq!(decisions.acceptances.len(), 2);
    assert!(
        decide(&p, &decisions, "1.1.0", Some(&summary()), NOW + 90_000)
            .outcome
            .is_ok()
    );
    // An acceptance for another provider covers nothing here.
    let mut elsewhere = PolicyDecisions::default();
    let mut other = acceptance("GO-2023-2102", None, NOW + 60_000);
    other.subject = "registry.origin.test/acme/gadget".into();
    elsewhere.accept(other);
    assert!(decide(&p, &elsewhere, "1.0.0", Some(&summary()), NOW)
        .outcome
        .is_err());
}

#[test]
fn an_approval_by_name_comes_before_rules_by_advisory() {
    let p = policy(&format!("{RULE}[rule.advisories]\n"));
    let mut decisions = PolicyDecisions::default();
    decisions.set(PolicyDecision {
        subject: widget().to_string(),
        version: v("1.0.0"),
        approved: true,
        reason: "reviewed".into(),
        at_ms: NOW,
        repin: false,
        by: String::new(),
    });
    let verdict = decide(&p, &decisions, "1.0.0", Some(&summary()), NOW);
    assert!(verdict.outcome.is_ok());
    assert_eq!(verdict.rule, crate::policy::APPROVED);
}

#[test]
fn rules_by_advisory_deny_and_apply_to_providers() {
    let refused = |toml: &str| {
        let config = toml::from_str::<PolicyConfig>(toml).unwrap();
        format!("{:#}", Policy::new(&config).unwrap_err())
    };
    let allow = refused("[[rule]]\nsource = \"*/acme/*\"\naction = \"allow\"\n[rule.advisories]\n");
    assert!(allow.contains("a rule by advisories denies"), "{allow}");
    let module =
        refused("[[rule]]\nsource = \"*/acme/*/*\"\naction = \"deny\"\n[rule.advisories]\n");
    assert!(module.contains("advisories apply to providers"), "{module}");
    let empty = refused(
        "[[rule]]\nsource = \"*/acme/*\"\naction = \"deny\"\n[rule.advisories]\nids = [\" \"]\n",
    );
    assert!(empty.contains("an empty ID"), "{empty}");
    let unknown = toml::from_str::<PolicyConfig>(
        "[[rule]]\nsource = \"a/b\"\naction = \"deny\"\n[rule.advisories]\nseverity = \"severe\"\n",
    )
    .unwrap_err();
    assert!(unknown.to_string().contains("unknown variant"), "{unknown}");
}

#[test]
fn a_finding_not_found_counts_under_present_only_while_a_platform_is_not_read() {
    let rule = AdvisoryRule::new(
        &toml::from_str::<crate::config::policy::AdvisoryRuleConfig>("present_only = true\n")
            .unwrap(),
    )
    .unwrap();
    let version = Version::parse("1.0.0").unwrap();
    let mut read = summary();
    read.advisories
        .retain(|a| a.finding.presence.is_not_found());
    assert!(!read.advisories.is_empty());
    let subject = ("registry.example/acme/widget", &version);
    assert!(rule.weigh(&read, &[], subject, 0).counted.is_empty());
    // The same findings, with another platform's record not read: what is
    // not found on one platform may be present on the other.
    read.not_read = vec!["darwin_arm64".into()];
    read.known = false;
    assert_eq!(
        rule.weigh(&read, &[], subject, 0).counted.len(),
        read.advisories.len()
    );
}

/// A version one of whose binaries is a shell script and the other a Go
/// program with no finding.
fn not_known() -> Summary {
    use crate::advisories::{Reading, Unknown};
    Summary::of(
        &[
            ("linux_amd64".to_owned(), Reading::default()),
            (
                "darwin_arm64".to_owned(),
                Reading {
                    findings: Vec::new(),
                    unknown: vec![Unknown::NoGoBuild {
                        executable: "terraform-provider-widget".into(),
                        detail: "not an ELF, Mach-O or PE executable".into(),
                    }],
                },
            ),
        ]
        .into(),
        Vec::new(),
    )
}

#[test]
fn a_version_whose_binaries_are_not_understood_is_denied_unless_the_rule_allows_it() {
    let none = PolicyDecisions::default();
    let by_default = policy(&format!("{RULE}[rule.advisories]\nseverity = \"high\"\n"));
    let denied = decide(&by_default, &none, "1.0.0", Some(&not_known()), NOW)
        .outcome
        .unwrap_err();
    assert_eq!(
        denied.to_string(),
        "registry.origin.test/acme/widget 1.0.0 is denied by this mirror's policy (policy.rule[0]); what it falls under is not known, because darwin_arm64: terraform-provider-widget has no Go build information (not an ELF, Mach-O or PE executable): fix it first"
    );
    assert!(denied.advisories().is_empty());
    let told = policy(&format!("{RULE}[rule.advisories]\nunknown = \"deny\"\n"));
    assert!(decide(&told, &none, "1.0.0", Some(&not_known()), NOW)
        .outcome
        .is_err());
    let allowed = policy(&format!("{RULE}[rule.advisories]\nunknown = \"allow\"\n"));
    let verdict = decide(&allowed, &none, "1.0.0", Some(&not_known()), NOW);
    assert!(verdict.outcome.is_ok(), "{verdict:?}");
    assert_eq!(verdict.rule, "policy.default");
    // Its findings still decide under "allow".
    let mut found = not_known();
    found.advisories = summary().advisories;
    found.count = summary().count;
    assert!(decide(&allowed, &none, "1.0.0", Some(&found), NOW)
        .outcome
        .is_err());
    // Read and understood with nothing found: the rule does not match.
    let linux_clean = |not_read: Vec<String>| {
        let read = [(
            "linux_amd64".to_owned(),
            crate::advisories::Reading::default(),
        )];
        Summary::of(&read.into(), not_read)
    };
    let clean = linux_clean(Vec::new());
    assert!(decide(&by_default, &none, "1.0.0", Some(&clean), NOW)
        .outcome
        .is_ok());
    // A record that could not be read is not known either.
    let unread = linux_clean(vec!["darwin_arm64".into()]);
    let denied = decide(&by_default, &none, "1.0.0", Some(&unread), NOW)
        .outcome
        .unwrap_err();
    assert!(
        denied
            .to_string()
            .contains("darwin_arm64: its build record could not be read or made"),
        "{denied}"
    );
    let wrong =
        toml::from_str::<PolicyConfig>(&format!("{RULE}[rule.advisories]\nunknown = \"maybe\"\n"))
            .unwrap_err();
    assert!(
        wrong.to_string().contains("unknown variant `maybe`"),
        "{wrong}"
    );
}
