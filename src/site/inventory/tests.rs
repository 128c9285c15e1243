use super::*;

fn key(source: &str, version: &str, platform: &str) -> ArchiveKey {
    ArchiveKey::new(
        &Provider::from_source(source).unwrap(),
        &Version::parse(version).unwrap(),
        &Platform::parse(platform).unwrap(),
    )
}

#[test]
fn an_inventory_reads_back_as_written_and_compares_by_hash() {
    let mut inv = SiteInventory::default();
    let k = key("registry.example/acme/widget", "1.0.0", "linux_amd64");
    inv.add_archive(&k, vec!["zh:aa".into(), "h1:xyz=".into()]);
    let (module, _) = Module::from_source("registry.example/acme/net/aws").unwrap();
    let pin_h1 = "h1:tree=".to_string();
    inv.add_module(
        &module,
        &Version::parse("1.0.0").unwrap(),
        HeldModule {
            h1: pin_h1.clone(),
            commit: Some("abc".into()),
        },
    );
    let json = inv.to_json();
    let text = String::from_utf8(json.clone()).unwrap();
    assert!(text.contains("\"registry.example/acme/widget\""), "{text}");
    assert!(
        text.contains("\"h1:xyz=\",\n          \"zh:aa\""),
        "hashes sorted: {text}"
    );
    let back = SiteInventory::from_json(&json, "site.json").unwrap();
    assert_eq!(back, inv);
    assert_eq!(back.to_json(), json, "stable: the same bytes again");
    assert_eq!(back.counts(), (1, 1));
    assert_eq!(back.release_files(), 0);
    assert!(!text.contains("releases"), "no releases, no key: {text}");

    assert_eq!(inv.archive(&k, "aa"), AtSite::Holds);
    assert_eq!(inv.archive(&k, "bb"), AtSite::Differs("zh:aa".into()));
    let other = key("registry.example/acme/widget", "1.0.0", "darwin_arm64");
    assert_eq!(inv.archive(&other, "aa"), AtSite::Lacks);
    // Hashes not known: presence alone counts.
    let mut presence = SiteInventory::default();
    presence.add_archive(&k, Vec::new());
    assert_eq!(presence.archive(&k, "bb"), AtSite::Holds);
    // Merging keeps known hashes over unknown ones.
    presence.merge(&inv);
    assert_eq!(presence.archive(&k, "bb"), AtSite::Differs("zh:aa".into()));
}

#[test]
fn release_files_read_back_and_compare_by_sha256() {
    let v = Version::parse("1.0.3").unwrap();
    let zip = ArtifactName::parse("terraform_1.0.3_linux_amd64.zip").unwrap();
    let mut inv = SiteInventory::default();
    inv.add_release_file(Product::Terraform, &v, zip.clone(), "aa".into());
    let text = String::from_utf8(inv.to_json()).unwrap();
    assert!(
        text.contains("\"terraform\": {\n      \"1.0.3\": {\n        \"terraform_1.0.3_linux_amd64.zip\": \"aa\""),
        "{text}"
    );
    let back = SiteInventory::from_json(text.as_bytes(), "site.json").unwrap();
    assert_eq!(back, inv);
    assert_eq!(back.release_files(), 1);
    assert_eq!(
        back.release_file(Product::Terraform, &v, &zip, "aa"),
        AtSite::Holds
    );
    assert_eq!(
        back.release_file(Product::Terraform, &v, &zip, "bb"),
        AtSite::Differs("aa".into())
    );
    assert_eq!(
        back.release_file(Product::Tofu, &v, &zip, "aa"),
        AtSite::Lacks
    );
    let mut merged = SiteInventory::default();
    merged.merge(&back);
    assert_eq!(merged.release_files(), 1);
    let bad = "{\"tfmirror_inventory\": 1, \"releases\": {\"packer\": {}}}";
    assert!(SiteInventory::from_json(bad.as_bytes(), "site.json").is_err());
}

#[test]
fn a_bad_inventory_is_named() {
    for (text, says) in [
        ("{}", "missing field `tfmirror_inventory`"),
        (
            "{\"tfmirror_inventory\": 4, \"archives_by_digest\": {}}",
            "site.json is in inventory format 4; this tfmirror",
        ),
        ("{\"tfmirror_inventory\": 0}", "no tfmirror writes"),
        (
            "{\"tfmirror_inventory\": 1, \"providers\": {\"acme/widget\": {}}}",
            "not a full provider address",
        ),
        (
            "{\"tfmirror_inventory\": 1, \"providers\": {\"a/b/c/d\": {}}}",
            "providers.\"a/b/c/d\"",
        ),
        (
            "{\"tfmirror_inventory\": 1, \"providers\": {\"h.example/a/b\": {\"1.0\": {}}}}",
            "not a valid tfmirror inventory",
        ),
        ("{\"tfmirror_inventory\": 1, \"extra\": 1}", "unknown field"),
        (
            "{\"tfmirror_inventory\": 3, \"docs\": {\"acme/null\": [\"1.0.0\"]}}",
            "docs.\"acme/null\" is not a full provider address",
        ),
        (
            "{\"tfmirror_inventory\": 3, \"doc_pages\": [\"../../etc\"]}",
            "doc_pages: \"../../etc\" is not a SHA-256",
        ),
        (
            "{\"tfmirror_inventory\": 3, \"doc_pages\": [\"ABCDEF\"]}",
            "doc_pages: \"ABCDEF\"",
        ),
    ] {
        let err = format!(
            "{:#}",
            SiteInventory::from_json(text.as_bytes(), "site.json").unwrap_err()
        );
        assert!(err.contains(says), "{text}: {err}");
    }
}

#[test]
fn inventories_of_both_formats_are_read_and_the_current_one_is_written() {
    let one = "{\"tfmirror_inventory\": 1, \"providers\": {\"registry.terraform.io/acme/widget\": {\"1.0.0\": {\"linux_amd64\": []}}}}";
    let read = SiteInventory::from_json(one.as_bytes(), "old.json").unwrap();
    assert_eq!(read.counts().0, 1);
    let written: serde_json::Value = serde_json::from_slice(&read.to_json()).unwrap();
    // Without documentation, the format builds before it read.
    assert_eq!(written["tfmirror_inventory"], 2);
    // With it, format 3, read back as written.
    let mut with_docs = read.clone();
    let sha = "a".repeat(64);
    let null = Provider::from_source("registry.terraform.io/hashicorp/null").unwrap();
    with_docs
        .docs
        .add((&null, &Version::parse("3.2.4").unwrap()), [sha.as_str()]);
    let json = with_docs.to_json();
    let written: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(written["tfmirror_inventory"], 3);
    assert_eq!(
        written["docs"]["registry.terraform.io/hashicorp/null"][0],
        "3.2.4"
    );
    assert_eq!(written["doc_pages"][0], sha.as_str());
    let back = SiteInventory::from_json(&json, "new.json").unwrap();
    assert_eq!(back, with_docs);
    assert!(back.docs.keeps(&null, &Version::parse("3.2.4").unwrap()));
    assert!(back.docs.has_page(&sha));
}
