use super::*;

/// A fixture of `tests/fixtures/docs/answers/`, in the registries' shapes
/// (`tests/fixtures/docs/SOURCE.md`), with the quirks they carry: `null`
/// and absent fields, fields added later, other languages, unknown
/// categories, names no path may hold.
fn answer(name: &str) -> Value {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/docs/answers")
        .join(name);
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn url() -> Url {
    Url::parse("https://registry.example/v1/providers/hashicorp/null/3.2.4").unwrap()
}

/// What each listed document is, in the order listed: its kind, its name
/// and where its page is read from.
fn tuples(listing: &Listing) -> Vec<(DocKind, &str, &Source)> {
    listing
        .listed
        .iter()
        .map(|l| (l.kind, l.name.as_str(), &l.at))
        .collect()
}

#[test]
fn terraform_lists_hcl_documents_by_category_and_passes_over_the_rest() {
    let listing = terraform_listing(&answer("terraform-v1-null-3.2.4.json"), &url()).unwrap();
    let got = tuples(&listing);
    assert_eq!(
        got,
        [
            (
                DocKind::Overview,
                "index",
                &Source::TerraformId("8814901".into())
            ),
            (
                DocKind::Resource,
                "resource",
                &Source::TerraformId("8814902".into())
            ),
            (
                DocKind::DataSource,
                "data_source",
                &Source::TerraformId("8814903".into())
            ),
            (
                DocKind::Guide,
                "terraform-migration",
                &Source::TerraformId("8814904".into())
            ),
        ]
    );
    // A `null` subcategory and an absent one are empty.
    assert_eq!(listing.listed[0].subcategory, "");
    assert_eq!(listing.listed[3].subcategory, "");
    assert_eq!(listing.listed[1].title, "null_resource");
    let passed: Vec<(&str, usize)> = listing
        .passed_over
        .iter()
        .map(|(why, n)| (why.as_str(), *n))
        .collect();
    assert_eq!(
        passed,
        [
            ("a name no page may have", 1),
            ("an ID that is not a number", 1),
            ("category \"widgets\", which this build does not know", 1),
            ("language \"python\"", 1),
        ]
    );
}

#[test]
fn a_field_of_the_wrong_type_is_refused_with_the_field_and_the_url() {
    let mut doc = answer("terraform-v1-null-3.2.4.json");
    doc["docs"][2]["title"] = serde_json::json!(7);
    let e = terraform_listing(&doc, &url()).unwrap_err().to_string();
    assert!(e.contains("docs[2].title"), "{e}");
    assert!(
        e.contains("registry.example/v1/providers/hashicorp/null/3.2.4"),
        "{e}"
    );
    doc["docs"] = serde_json::json!({"not": "a list"});
    let e = terraform_listing(&doc, &url()).unwrap_err().to_string();
    assert!(e.contains("`docs`: expected a list"), "{e}");
    // `null` where the list stands is the empty list, as Go reads it.
    doc["docs"] = Value::Null;
    assert_eq!(terraform_listing(&doc, &url()).unwrap(), Listing::default());
}

#[test]
fn terraform_content_is_the_markdown_and_whether_it_was_cut() {
    let doc = answer("terraform-v2-doc-8814902.json");
    let (content, truncated) = terraform_content(&doc, &url()).unwrap();
    let tree = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/docs/null-v3.2.4/docs/resources/resource.md"),
    )
    .unwrap();
    assert_eq!(content, tree);
    assert!(!truncated);
    let mut cut = doc.clone();
    cut["data"]["attributes"]["truncated"] = Value::Bool(true);
    assert!(terraform_content(&cut, &url()).unwrap().1);
    cut["data"]["attributes"]["truncated"] = serde_json::json!("yes");
    let e = terraform_content(&cut, &url()).unwrap_err().to_string();
    assert!(e.contains("data.attributes.truncated"), "{e}");
}

#[test]
fn opentofu_lists_the_overview_then_each_kind_at_its_static_path() {
    let listing = opentofu_listing(&answer("opentofu-null-v3.2.4-index.json"), &url()).unwrap();
    let got = tuples(&listing);
    assert_eq!(
        got,
        [
            (
                DocKind::Overview,
                "index",
                &Source::OpenTofuPath("index.md".into())
            ),
            (
                DocKind::Resource,
                "resource",
                &Source::OpenTofuPath("resources/resource.md".into())
            ),
            (
                DocKind::DataSource,
                "data_source",
                &Source::OpenTofuPath("datasources/data_source.md".into())
            ),
            (
                DocKind::EphemeralResource,
                "e",
                &Source::OpenTofuPath("ephemeral/e.md".into())
            ),
            (
                DocKind::Guide,
                "terraform-migration",
                &Source::OpenTofuPath("guides/terraform-migration.md".into())
            ),
            (
                DocKind::Action,
                "a",
                &Source::OpenTofuPath("actions/a.md".into())
            ),
        ]
    );
    assert!(listing.passed_over.is_empty(), "{:?}", listing.passed_over);
    assert!(listing.listed[1]
        .description
        .starts_with("The null_resource resource"));
    assert_eq!(listing.listed[2].subcategory, "", "a null subcategory");
    assert_eq!(
        listing.licenses,
        [License {
            spdx: "MPL-2.0".into(),
            file: "LICENSE".into(),
            link: "https://github.com/opentofu/terraform-provider-null/blob/v3.2.4/LICENSE".into(),
            is_compatible: true,
        }]
    );
    assert!(!listing.incompatible_license);
}

#[test]
fn an_opentofu_name_no_path_may_hold_is_passed_over() {
    let mut doc = answer("opentofu-null-v3.2.4-index.json");
    doc["docs"]["resources"][0]["name"] = serde_json::json!("../../../etc/passwd");
    doc["docs"]["guides"][0]["name"] = serde_json::json!("");
    let listing = opentofu_listing(&doc, &url()).unwrap();
    assert_eq!(listing.listed.len(), 4, "{:?}", listing.listed);
    assert_eq!(listing.passed_over["a name no page may have"], 2);
}

#[test]
fn a_list_longer_than_the_bound_is_cut_and_says_so() {
    let item = |i: usize| serde_json::json!({"id": i.to_string(), "slug": format!("r{i}"), "category": "resources", "language": "hcl"});
    let doc = serde_json::json!({"docs": (0..MAX_LISTED + 3).map(item).collect::<Vec<_>>()});
    let listing = terraform_listing(&doc, &url()).unwrap();
    assert_eq!(listing.listed.len(), 10_000);
    assert_eq!(listing.passed_over["more than 10000 documents"], 3);
}
