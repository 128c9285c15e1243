//! Tests of `address`.

use super::*;

#[test]
fn module_addresses_are_checked() {
    let (m, sub) = Module::from_source("terraform-aws-modules/vpc/aws").unwrap();
    assert_eq!(
        m.to_string(),
        "registry.terraform.io/terraform-aws-modules/vpc/aws"
    );
    assert_eq!(sub, None);
    let (m, sub) = Module::from_source("Example.COM:443/Acme/my_net/aws//modules/x").unwrap();
    assert_eq!(m.to_string(), "example.com/Acme/my_net/aws");
    assert_eq!(sub.as_deref(), Some("modules/x"));
    for bad in [
        "a/b",
        "a/b/c/d/e",
        "ns/-x/aws",
        "ns/x_/aws",
        "ns/x/AWS",
        "ns/x/a-b",
        "n s/x/aws",
        "ns/ünï/aws",
        "git::https://example.com/x.git",
    ] {
        assert!(Module::from_source(bad).is_err(), "{bad}");
    }
    assert!(ModuleName::parse(&"n".repeat(65)).is_err());
    assert!(ModuleName::parse(&"n".repeat(64)).is_ok());
}

#[test]
fn hostnames_are_normalized_like_terraform() {
    let h = |s| Hostname::parse(s).map(|h| h.to_string());
    assert_eq!(h("Registry.Terraform.IO").unwrap(), "registry.terraform.io");
    assert_eq!(h("example.com:443").unwrap(), "example.com");
    assert_eq!(h("example.com:8443").unwrap(), "example.com:8443");
    assert_eq!(h("bücher.example").unwrap(), "xn--bcher-kva.example");
    assert_eq!(h("XN--BCHER-KVA.example").unwrap(), "xn--bcher-kva.example");
    assert_eq!(h("localhost:1234").unwrap(), "localhost:1234");
    for bad in [
        "",
        "example.com:",
        "example.com:0",
        "example.com:65536",
        "example.com:x",
        "exa mple.com",
        "a/b",
        "..",
        ".example.com",
        "user@example.com",
        "exa\0mple",
        "-bad-.example",
    ] {
        assert!(Hostname::parse(bad).is_err(), "{bad:?} was accepted");
    }
}

#[test]
fn parts_fold_case_and_reject_odd_shapes() {
    assert_eq!(Namespace::parse("HashiCorp").unwrap().as_str(), "hashicorp");
    assert_eq!(ProviderType::parse("aws-x").unwrap().as_str(), "aws-x");
    assert_eq!(Namespace::parse("Ünicode").unwrap().as_str(), "ünicode");
    for bad in [
        "", "a.b", "a--b", "-a", "a-", "..", "a/b", "a\0", "xn--abc", "a_-", "-_a",
    ] {
        assert!(Namespace::parse(bad).is_err(), "{bad:?} was accepted");
    }
    assert!(ProviderType::parse(&"a".repeat(65)).is_err());
}

#[test]
fn a_namespace_may_hold_underscores_and_a_type_may_not() {
    // As Terraform 1.16 reads them (terraform-registry-address#144's
    // cases): an HCP Terraform organisation's namespace, case-folded, its
    // underscores kept; no provider type with one.
    for (given, read) in [
        ("openai_inc", "openai_inc"),
        ("OpenAI_Inc", "openai_inc"),
        ("example_corp", "example_corp"),
        ("a__b", "a__b"),
        ("_lead", "_lead"),
        ("Ü_x", "ü_x"),
    ] {
        assert_eq!(Namespace::parse(given).unwrap().as_str(), read, "{given}");
    }
    for bad in ["google_beta", "_a", "a_"] {
        let refused = ProviderType::parse(bad).unwrap_err().to_string();
        assert!(
            refused.contains("letters, digits and dashes"),
            "{bad}: {refused}"
        );
    }
    let provider = Provider::from_source("app.terraform.io/openai_inc/kube").unwrap();
    assert_eq!(provider.namespace.as_str(), "openai_inc");
    assert!(Provider::from_source("registry.terraform.io/hashicorp/google_beta").is_err());
}

#[test]
fn versions_are_strict_semver() {
    assert_eq!(Version::parse("1.2.3").unwrap().as_str(), "1.2.3");
    assert_eq!(
        Version::parse("1.0.0-beta.1+b7").unwrap().as_str(),
        "1.0.0-beta.1+b7"
    );
    for bad in [
        "1", "1.2", "v1.2.3", "01.2.3", "1.2.3.4", "", "../1.2.3", "1.2.3/x",
    ] {
        assert!(Version::parse(bad).is_err(), "{bad:?} was accepted");
    }
    let mut vs: Vec<Version> = ["1.10.0", "1.2.0", "1.2.0-rc1"]
        .iter()
        .map(|s| Version::parse(s).unwrap())
        .collect();
    vs.sort();
    let order: Vec<&str> = vs.iter().map(Version::as_str).collect();
    assert_eq!(order, ["1.2.0-rc1", "1.2.0", "1.10.0"]);
}

#[test]
fn platforms_and_archive_names_round_trip() {
    let p = Platform::parse("linux_amd64").unwrap();
    assert_eq!((p.os(), p.arch()), ("linux", "amd64"));
    for bad in [
        "linux",
        "linux_",
        "_amd64",
        "Linux_amd64",
        "linux_amd64_x",
        "li-nux_amd64",
    ] {
        assert!(Platform::parse(bad).is_err(), "{bad:?} was accepted");
    }
    let prov = Provider {
        hostname: Hostname::parse("example.com").unwrap(),
        namespace: Namespace::parse("ns").unwrap(),
        kind: ProviderType::parse("my-widget").unwrap(),
    };
    let v = Version::parse("1.0.0-rc.1+build.5").unwrap();
    let name = prov.archive_name(&v, &p);
    assert_eq!(
        name,
        "terraform-provider-my-widget_1.0.0-rc.1+build.5_linux_amd64.zip"
    );
    assert_eq!(prov.parse_archive_name(&name), Some((v, p)));
    assert_eq!(
        prov.parse_archive_name("terraform-provider-other_1.0.0_linux_amd64.zip"),
        None
    );
    assert_eq!(
        prov.parse_archive_name("terraform-provider-my-widget_1.0.0_linux.zip"),
        None
    );
}

/// Names that are already normalized skip the IDNA machinery; for each, the
/// machinery would have given the same name.
mod plain_names {
    use super::super::part::{map_part, Underscores};
    use super::super::{plain, MAX_PART_LEN};
    use proptest::prelude::*;

    fn agrees(s: &str) -> Result<(), TestCaseError> {
        if plain::normalized_hostname(s) {
            let ascii = idna::domain_to_ascii_strict(s).ok();
            prop_assert_eq!(ascii.as_deref(), Some(s));
        }
        if plain::normalized_part(s, MAX_PART_LEN) {
            for underscores in [Underscores::Allowed, Underscores::Refused] {
                let mapped = map_part("part", s, underscores).ok();
                prop_assert_eq!(mapped.as_deref(), Some(s));
            }
        }
        Ok(())
    }

    #[test]
    fn the_edges_of_plain_names() {
        let long_label = "a".repeat(63);
        let name_253 = [
            &"a".repeat(63)[..],
            &"b".repeat(63),
            &"c".repeat(63),
            &"d".repeat(61),
        ]
        .join(".");
        assert_eq!(name_253.len(), 253);
        for (name, host, part) in [
            ("registry.terraform.io", true, false),
            ("example-1.com", true, false),
            ("a", true, true),
            ("hashicorp", true, true),
            ("my-provider", true, true),
            ("1.2.3.4", true, false),
            (&long_label, true, true),
            (&name_253, true, false),
            ("xn--bcher-kva.example", false, false),
            ("xn--bcher-kva", false, false),
            ("ab--cd", false, false),
            ("-a", false, false),
            ("a-", false, false),
            ("a..b", false, false),
            (".a", false, false),
            ("a.", false, false),
            ("", false, false),
            ("Example.com", false, false),
            ("bücher", false, false),
            ("a_b", false, false),
        ] {
            assert_eq!(
                plain::normalized_hostname(name),
                host,
                "{name:?} as a hostname"
            );
            assert_eq!(
                plain::normalized_part(name, MAX_PART_LEN),
                part,
                "{name:?} as a part"
            );
            agrees(name).unwrap();
        }
        assert!(!plain::normalized_hostname(&format!("{long_label}a.com")));
        assert!(!plain::normalized_hostname(&format!("{name_253}d")));
        assert!(!plain::normalized_part(&"a".repeat(65), MAX_PART_LEN));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(4000))]

        #[test]
        fn plain_names_are_what_idna_makes_of_them(s in "[a-z0-9.-]{0,12}|[a-zA-Z0-9.ßü_-]{0,12}|(xn--)?[a-z0-9-]{1,8}(\\.[a-z0-9-]{1,8}){0,3}") {
            agrees(&s)?;
        }
    }
}
