use super::*;
use crate::address::DocName;
use crate::docs::wire::{opentofu_listing, License, Source};

fn page(kind: DocKind, name: &str) -> PageEntry {
    PageEntry {
        kind,
        name: DocName::parse(name).unwrap(),
        title: format!("{name} title"),
        subcategory: if kind == DocKind::Resource {
            "Storage".into()
        } else {
            String::new()
        },
        description: format!("{name} described"),
        sha256: "a".repeat(64),
        size: 1,
        truncated: false,
    }
}

fn docs(licenses: Vec<License>) -> VersionDocs {
    VersionDocs {
        format: 1,
        provider: Provider::from_source("registry.terraform.io/hashicorp/null").unwrap(),
        version: Version::parse("3.2.4").unwrap(),
        source: "https://registry.terraform.io/v1/providers/hashicorp/null/3.2.4".into(),
        fetched_at_ms: 0,
        licenses,
        pages: vec![
            page(DocKind::Guide, "upgrading"),
            page(DocKind::Resource, "resource"),
            page(DocKind::Overview, "index"),
            page(DocKind::DataSource, "data_source"),
            page(DocKind::EphemeralResource, "token"),
            page(DocKind::Function, "parse"),
            page(DocKind::Action, "invoke"),
            page(DocKind::ListResource, "things"),
        ],
        passed_over: BTreeMap::new(),
    }
}

#[test]
fn a_version_is_listed_with_the_registrys_keys_and_folders() {
    let served = version_index(&docs(vec![]));
    // The keys and the folders below them are registry-ui's (its
    // `ProviderDocs` and `DocTypes`), written here by hand.
    assert_eq!(served["id"], "v3.2.4");
    assert_eq!(served["published"], "0001-01-01T00:00:00Z");
    assert_eq!(served["docs"]["index"]["name"], "index");
    let names = |key: &str| -> Vec<String> {
        (served["docs"][key].as_array().unwrap().iter())
            .map(|i| i["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(names("resources"), ["resource"]);
    assert_eq!(names("datasources"), ["data_source"]);
    assert_eq!(names("ephemeral"), ["token"]);
    assert_eq!(names("functions"), ["parse"]);
    assert_eq!(names("guides"), ["upgrading"]);
    assert_eq!(names("actions"), ["invoke"]);
    assert_eq!(names("listresources"), ["things"]);
    let resource = &served["docs"]["resources"][0];
    assert_eq!(resource["title"], "resource title");
    assert_eq!(resource["subcategory"], "Storage");
    assert_eq!(resource["description"], "resource described");
    assert_eq!(served["incompatible_license"], false);
    assert_eq!(served["cdktf_docs"], json!({}));

    // Read back as the mirror reads the OpenTofu Registry, each document
    // at the path the registry's files have it.
    let url = url::Url::parse("https://upper.example/-/registry-docs/h/").unwrap();
    let listing = opentofu_listing(&served, &url).unwrap();
    let paths: Vec<(DocKind, &str)> = (listing.listed.iter())
        .map(|l| match &l.at {
            Source::OpenTofuPath(p) => (l.kind, p.as_str()),
            other @ Source::TerraformId(_) => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        paths,
        [
            (DocKind::Overview, "index.md"),
            (DocKind::Resource, "resources/resource.md"),
            (DocKind::DataSource, "datasources/data_source.md"),
            (DocKind::EphemeralResource, "ephemeral/token.md"),
            (DocKind::Function, "functions/parse.md"),
            (DocKind::Guide, "guides/upgrading.md"),
            (DocKind::Action, "actions/invoke.md"),
            (DocKind::ListResource, "listresources/things.md"),
        ]
    );
    assert!(listing.passed_over.is_empty());
}

#[test]
fn a_licence_that_forbids_republishing_is_said_and_none_is_not_judged() {
    let mpl = License {
        spdx: "MPL-2.0".into(),
        file: "LICENSE".into(),
        link: "https://example.test/LICENSE".into(),
        is_compatible: true,
    };
    let served = version_index(&docs(vec![mpl.clone()]));
    assert_eq!(served["incompatible_license"], false);
    assert_eq!(served["license"][0]["spdx"], "MPL-2.0");
    assert_eq!(served["license"][0]["is_compatible"], true);
    let bad = License {
        is_compatible: false,
        spdx: "BUSL-1.1".into(),
        ..mpl
    };
    let served = version_index(&docs(vec![bad]));
    assert_eq!(served["incompatible_license"], true);
}
