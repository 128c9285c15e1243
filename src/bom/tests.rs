use super::*;
use crate::address::{Hostname, Namespace, ProviderType};
use crate::gobuild::Setting;
use crate::store::builds::ExecutableBuild;

fn module(path: &str, version: &str, sum: &str) -> Module {
    Module {
        path: path.into(),
        version: version.into(),
        sum: sum.into(),
        replace: None,
    }
}

fn record(build: BuildState) -> BuildRecord {
    BuildRecord {
        format: 1,
        provider: provider(),
        version: Version::parse("5.1.0").unwrap(),
        platform: Platform::parse("linux_amd64").unwrap(),
        archive_sha256: "ab".repeat(32),
        read_at_ms: 1_700_000_000_000,
        read_by: "0.1.0".into(),
        executables: vec![ExecutableBuild {
            name: "terraform-provider-aws_v5.1.0_x5".into(),
            size: 1234,
            build,
            packages: None,
            packages_error: None,
            symbols: None,
        }],
        packages_reader: 1,
    }
}

fn provider() -> Provider {
    Provider {
        hostname: Hostname::parse("registry.terraform.io").unwrap(),
        namespace: Namespace::parse("hashicorp").unwrap(),
        kind: ProviderType::parse("aws").unwrap(),
    }
}

fn document(build: &BuildRecord) -> Value {
    let sha = "ab".repeat(32);
    cyclonedx(&PackageFacts {
        provider: &build.provider,
        version: &build.version,
        platform: &build.platform,
        filename: "terraform-provider-aws_5.1.0_linux_amd64.zip",
        sha256: &sha,
        h1: Some("h1:abc="),
        signed_by: "34365D9472D7468F",
        verification: "signed",
        build,
    })
}

fn go_build() -> BuildInfo {
    let mut forked = module("github.com/hashicorp/go-plugin", "v1.6.0", "");
    forked.replace = Some(Box::new(module(
        "github.com/Fork/go-plugin",
        "v1.6.1-0.20240101000000-abcdefabcdef",
        "h1:fork=",
    )));
    BuildInfo {
        go_version: "go1.21.3".into(),
        path: "github.com/hashicorp/terraform-provider-aws".into(),
        main: Some(module(
            "github.com/hashicorp/terraform-provider-aws",
            "(devel)",
            "",
        )),
        deps: vec![
            module(
                "github.com/Azure/azure-sdk-for-go",
                "v52.5.0+incompatible",
                "h1:az=",
            ),
            module("golang.org/x/net", "v0.17.0", "h1:net="),
            forked,
        ],
        settings: vec![Setting {
            key: "GOOS".into(),
            value: "linux".into(),
        }],
    }
}

fn property_of<'a>(v: &'a Value, name: &str) -> Vec<&'a str> {
    v["properties"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|p| p["name"] == name)
        .map(|p| p["value"].as_str().unwrap())
        .collect()
}

#[test]
fn a_package_names_its_provider_its_hashes_its_key_and_every_module() {
    let build = record(BuildState::Go { build: go_build() });
    let doc = document(&build);
    assert_eq!(doc["bomFormat"], "CycloneDX");
    assert_eq!(doc["specVersion"], "1.5");
    let main = &doc["metadata"]["component"];
    assert_eq!(main["name"], "registry.terraform.io/hashicorp/aws");
    assert_eq!(main["version"], "5.1.0");
    assert_eq!(main["hashes"][0]["alg"], "SHA-256");
    assert_eq!(main["hashes"][0]["content"], "ab".repeat(32));
    assert_eq!(
        property_of(main, "tfmirror:signing_key"),
        ["34365D9472D7468F"]
    );
    assert_eq!(property_of(main, "tfmirror:h1"), ["h1:abc="]);
    assert_eq!(
        property_of(main, "tfmirror:zh"),
        [format!("zh:{}", "ab".repeat(32))]
    );
    assert_eq!(property_of(main, "tfmirror:go_version"), ["go1.21.3"]);
    let purls: Vec<&str> = doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["purl"].as_str().unwrap())
        .collect();
    assert_eq!(
        purls,
        [
            "pkg:golang/stdlib@v1.21.3",
            "pkg:golang/github.com/azure/azure-sdk-for-go@v52.5.0%2Bincompatible",
            "pkg:golang/golang.org/x/net@v0.17.0",
            // The module the build used: the replacement.
            "pkg:golang/github.com/fork/go-plugin@v1.6.1-0.20240101000000-abcdefabcdef",
        ]
    );
    let fork = &doc["components"][3];
    assert_eq!(fork["name"], "github.com/Fork/go-plugin");
    assert_eq!(
        property_of(fork, "tfmirror:replaces"),
        ["github.com/hashicorp/go-plugin@v1.6.0"]
    );
    assert_eq!(property_of(fork, "tfmirror:go_sum"), ["h1:fork="]);
    assert_eq!(
        doc["dependencies"][0]["dependsOn"]
            .as_array()
            .unwrap()
            .len(),
        4
    );
}

#[test]
fn the_same_records_give_the_same_document_with_a_uuid_serial() {
    let build = record(BuildState::Go { build: go_build() });
    let (a, b) = (document(&build), document(&build));
    assert_eq!(a, b);
    let serial = a["serialNumber"].as_str().unwrap();
    let uuid = serial.strip_prefix("urn:uuid:").unwrap();
    let groups: Vec<usize> = uuid.split('-').map(str::len).collect();
    assert_eq!(groups, [8, 4, 4, 4, 12], "{uuid}");
    assert_eq!(&uuid[14..15], "4", "{uuid}");
    assert!(matches!(&uuid[19..20], "8" | "9" | "a" | "b"), "{uuid}");
    let mut later = build.clone();
    later.read_at_ms += 1;
    assert_ne!(document(&later)["serialNumber"], a["serialNumber"]);
    assert_eq!(a["metadata"]["timestamp"], "2023-11-14T22:13:20Z");
}

#[test]
fn an_executable_without_build_information_says_so_and_lists_nothing() {
    for state in [
        BuildState::Nothing {
            reason: "no Go build information".into(),
        },
        BuildState::Unreadable {
            error: "the Go build information is damaged: x".into(),
        },
    ] {
        let doc = document(&record(state));
        assert_eq!(doc["components"].as_array().unwrap().len(), 0);
        let said = property_of(&doc["metadata"]["component"], "tfmirror:build_information");
        assert_eq!(said.len(), 1, "{doc}");
    }
}

#[test]
fn toolchain_versions_read_as_semantic_versions() {
    for (go, semver) in [
        ("go1.21.3", Some("v1.21.3")),
        ("go1.16", Some("v1.16.0")),
        ("go1.22rc2", Some("v1.22.0-rc.2")),
        ("go1.21beta1", Some("v1.21.0-beta.1")),
        ("go1.20.1 X:boringcrypto", Some("v1.20.1")),
        ("go1.22.5-X:nocoverageredesign", Some("v1.22.5")),
        ("go1.21.1-bigcorp", Some("v1.21.1")),
        ("devel go1.23-abcdef", None),
        ("go1.25-20250209-RC00 cl/725155456", None),
        ("go1.2.3.4", None),
        ("gox", None),
    ] {
        assert_eq!(crate::gobuild::go_semver(go).as_deref(), semver, "{go}");
    }
}
