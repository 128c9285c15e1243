use super::*;
use crate::policy::Denied;

fn v(s: &str) -> Version {
    Version::parse(s).unwrap()
}

#[test]
fn versions_are_chosen_as_the_clients_choose_them() {
    // In any order, as a module registry may list them.
    let listed = [v("1.1.0"), v("1.0.0"), v("2.0.0"), v("1.2.0")];
    let visible = [v("1.0.0"), v("1.1.0"), v("2.0.0")];
    let below_2 = |x: &Version| x.semver().major < 2;
    // The newest the policy shows that meets the constraints.
    assert_eq!(chosen(&listed, &visible, &[], below_2, true), [&v("1.1.0")]);
    // A manifest's entry: every such version.
    assert_eq!(
        chosen(&listed, &visible, &[], below_2, false),
        [&v("1.0.0"), &v("1.1.0")]
    );
    // A lock file's pins, whatever the list says.
    assert_eq!(
        chosen(&listed, &visible, &[v("1.2.0")], below_2, true),
        [&v("1.2.0")]
    );
    assert!(chosen(
        &listed,
        &visible,
        &[],
        |x: &Version| x.semver().major > 2,
        true
    )
    .is_empty());
}

#[test]
fn findings_read_as_lines_and_as_json() {
    let needed = Needed {
        kind: "provider",
        source: "registry.example/acme/widget".into(),
        version: Some(v("1.1.0")),
        platform: Some(Platform::parse("linux_amd64").unwrap()),
        required_by: Vec::new(),
    };
    let item = Item {
        needed: needed.clone(),
        finding: Finding::Missing {
            why: Why::Evicted { at_ms: Some(0) },
        },
    };
    assert_eq!(
        item.to_string(),
        "MISSING  provider registry.example/acme/widget 1.1.0 linux_amd64: evicted 1970-01-01T00:00:00Z"
    );
    let json = serde_json::to_value(&item).unwrap();
    assert_eq!(
        json,
        serde_json::json!({"kind": "provider", "source": "registry.example/acme/widget", "version": "1.1.0", "platform": "linux_amd64", "status": "missing", "why": "evicted", "at_ms": 0})
    );
    let cooldown: Why = Denied {
        subject: "x".into(),
        version: "1.1.0".into(),
        rule: crate::policy::COOLDOWN.into(),
        reason: "first seen …".into(),
        counted: Vec::new(),
    }
    .into();
    assert!(matches!(cooldown, Why::Cooldown { .. }));
    let mut report = Report::default();
    report.add(needed.clone(), Finding::Held);
    assert!(report.ready());
    report.add(needed.clone(), Finding::Held);
    assert_eq!(report.items.len(), 1, "the same finding twice is one item");
    report.add(needed, missing(Why::NeverFetched));
    assert!(!report.ready());
    assert_eq!(serde_json::to_value(&report).unwrap()["ready"], false);
    assert_eq!(report.counts(), (1, 1, 0));
}

#[test]
fn a_provider_a_module_requires_names_the_module() {
    let item = Item {
        needed: Needed {
            kind: "provider",
            source: "registry.example/acme/widget".into(),
            version: None,
            platform: None,
            required_by: vec!["module registry.example/acme/net/aws 1.0.0".into()],
        },
        finding: missing(Why::NotListed),
    };
    assert_eq!(
        item.to_string(),
        "MISSING  provider registry.example/acme/widget (required by module registry.example/acme/net/aws 1.0.0): never listed by this mirror"
    );
    let json = serde_json::to_value(&item).unwrap();
    assert_eq!(
        json["required_by"],
        serde_json::json!(["module registry.example/acme/net/aws 1.0.0"])
    );
}
