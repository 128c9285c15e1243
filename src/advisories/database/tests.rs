use super::*;

fn fixture(path: &str) -> Vec<u8> {
    std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/advisories")
            .join(path),
    )
    .unwrap()
}

fn kept(bytes: &[u8]) -> Advisory {
    match Advisory::from_osv(osv::Entry::from_json(bytes).unwrap()) {
        Taken::Kept(advisory, _) => *advisory,
        other => panic!("not kept: {other:?}"),
    }
}

/// A GitHub advisory names no `database_specific.url`: its link is its
/// first reference of type `ADVISORY` (read here from the real entry).
#[test]
fn an_entry_without_its_own_url_links_to_its_first_advisory_reference() {
    let bytes = fixture("github/GHSA-4374-p667-p6c8.json");
    let raw: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    assert!(raw["database_specific"]["url"].is_null());
    let references = raw["references"].as_array().unwrap();
    let first = (references.iter())
        .find(|r| r["type"] == "ADVISORY")
        .unwrap();
    assert_ne!(references[1]["type"], "ADVISORY");
    assert_eq!(kept(&bytes).url, first["url"].as_str().unwrap());
}

/// Details cut at import say by how much, and the count survives the
/// database document; where nothing was cut the field is left out, so the
/// document reads as it did before the field was added.
#[test]
fn how_much_of_the_details_was_cut_is_kept_and_left_out_where_nothing_was() {
    let mut advisory = kept(&fixture("github/GHSA-4374-p667-p6c8.json"));
    let whole = serde_json::to_value(&advisory).unwrap();
    assert!(whole.get("details_cut").is_none(), "{whole:#}");
    advisory.details_cut = 40_000;
    let cut = serde_json::to_value(&advisory).unwrap();
    assert_eq!(cut["details_cut"], 40_000);
    let back: Advisory = serde_json::from_value(cut).unwrap();
    assert_eq!(back.details_cut, 40_000);
}
