//! The index over the null provider's real v3.2.4 documentation tree
//! (`tests/fixtures/docs/null-v3.2.4`), against an oracle that reads the
//! tree's files itself: which pages hold a word, found by splitting
//! their text on what is not a letter or digit.

use std::collections::BTreeSet;
use std::path::Path;

use super::{DocHit, DocIndex, MAX_QUERY};
use crate::address::{DocName, Provider, Version};
use crate::docs::DocKind;
use crate::store::docs::{PageEntry, VersionDocs, DOCS_FORMAT};

/// The tree's pages: (kind, name, content).
fn tree() -> Vec<(DocKind, String, String)> {
    let docs = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs/null-v3.2.4/docs");
    let mut out = vec![(
        DocKind::Overview,
        "index".to_owned(),
        std::fs::read_to_string(docs.join("index.md")).unwrap(),
    )];
    for (folder, kind) in [
        ("resources", DocKind::Resource),
        ("data-sources", DocKind::DataSource),
        ("guides", DocKind::Guide),
    ] {
        for entry in std::fs::read_dir(docs.join(folder)).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_stem().unwrap().to_string_lossy().into_owned();
            out.push((kind, name, std::fs::read_to_string(&path).unwrap()));
        }
    }
    out
}

fn version_docs(version: &str, pages: &[(DocKind, String, String)]) -> VersionDocs {
    VersionDocs {
        format: DOCS_FORMAT,
        provider: Provider::from_source("registry.terraform.io/hashicorp/null").unwrap(),
        version: Version::parse(version).unwrap(),
        source: "https://registry.terraform.io/v1/providers/hashicorp/null/3.2.4".into(),
        fetched_at_ms: 0,
        licenses: Vec::new(),
        pages: (pages.iter())
            .map(|(kind, name, content)| PageEntry {
                kind: *kind,
                name: DocName::parse(name).unwrap(),
                title: content
                    .lines()
                    .find_map(|l| l.strip_prefix("# "))
                    .unwrap_or(name)
                    .to_owned(),
                subcategory: String::new(),
                description: String::new(),
                sha256: hex::encode(crate::verify::Sha256::digest(content.as_bytes())),
                size: content.len() as u64,
                truncated: false,
            })
            .collect(),
        passed_over: std::collections::BTreeMap::new(),
    }
}

/// Adds `version` with `pages` to `index`, each page's content given;
/// how many contents were new.
fn add(index: &DocIndex, version: &str, pages: &[(DocKind, String, String)]) -> usize {
    let docs = version_docs(version, pages);
    let contents = pages.iter().map(|(_, _, c)| c.clone());
    index
        .add_version(&docs, docs.pages.iter().zip(contents))
        .unwrap()
}

fn indexed(versions: &[&str]) -> (tempfile::TempDir, DocIndex) {
    let dir = tempfile::tempdir().unwrap();
    let index = DocIndex::create(&dir.path().join("index")).unwrap();
    let pages = tree();
    for version in versions {
        add(&index, version, &pages);
    }
    index.commit().unwrap();
    (dir, index)
}

/// Each hit once per version that lists it: (version, kind, name),
/// versions in order within a hit.
fn names(hits: &[DocHit]) -> Vec<(String, DocKind, String)> {
    let mut out = Vec::new();
    for hit in hits {
        let mut versions = hit.versions.clone();
        versions.sort();
        for version in versions {
            out.push((version, hit.kind, hit.name.clone()));
        }
    }
    out
}

/// The pages of the tree whose text holds `word` as a word, by the
/// test's own reading.
fn holding(word: &str) -> BTreeSet<(DocKind, String)> {
    (tree().into_iter())
        .filter(|(_, _, text)| {
            text.split(|c: char| !c.is_alphanumeric())
                .any(|w| w.eq_ignore_ascii_case(word))
        })
        .map(|(k, n, _)| (k, n))
        .collect()
}

#[test]
fn a_page_is_found_by_its_name_with_or_without_the_provider_s_type() {
    let (_dir, index) = indexed(&["3.2.4"]);
    for query in ["null_data_source", "data_source", "NULL_DATA_SOURCE"] {
        let hits = index.search(query, 10).unwrap();
        assert_eq!(
            names(&hits)[0],
            ("3.2.4".into(), DocKind::DataSource, "data_source".into()),
            "{query}: {hits:?}"
        );
    }
    let hits = index.search("null_resource", 10).unwrap();
    assert_eq!(
        names(&hits)[0],
        ("3.2.4".into(), DocKind::Resource, "resource".into()),
        "{hits:?}"
    );
}

#[test]
fn words_find_every_page_that_holds_them_and_no_other() {
    let (_dir, index) = indexed(&["3.2.4"]);
    for word in ["triggers", "inputs", "lifecycle", "Migration"] {
        let want = holding(word);
        assert!(!want.is_empty(), "{word}");
        let got: BTreeSet<(DocKind, String)> = (index.search(word, 100).unwrap().into_iter())
            .map(|h| (h.kind, h.name))
            .collect();
        assert_eq!(got, want, "{word}");
    }
    // Every word must be in the page.
    let both: BTreeSet<_> = holding("triggers")
        .intersection(&holding("replace"))
        .cloned()
        .collect();
    let got: BTreeSet<_> = (index.search("triggers replace", 100).unwrap().into_iter())
        .map(|h| (h.kind, h.name))
        .collect();
    assert_eq!(got, both);
    // Words joined by what is not a letter or digit are words all the
    // same, each anywhere in the page (not side by side, as the index
    // holds them apart): as the documented rule reads them.
    for joined in ["triggers_replace", "replace.triggers", "TRIGGERS-replace"] {
        let got: BTreeSet<_> = (index.search(joined, 100).unwrap().into_iter())
            .map(|h| (h.kind, h.name))
            .collect();
        assert_eq!(got, both, "{joined}");
    }
    assert!(index.search("zzyzx", 10).unwrap().is_empty());
}

#[test]
fn a_version_added_again_replaces_its_pages_and_each_version_is_found() {
    let (kept, index) = indexed(&["3.2.4", "3.2.1", "3.2.4"]);
    let hits = index.search("data_source", 10).unwrap();
    let found: Vec<_> = names(&hits)
        .into_iter()
        .filter(|(_, k, n)| *k == DocKind::DataSource && n == "data_source")
        .map(|(v, _, _)| v)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(found, ["3.2.1", "3.2.4"]);
    assert_eq!(
        names(&hits)
            .iter()
            .filter(|(v, _, n)| v == "3.2.4" && n == "data_source")
            .count(),
        1,
        "{hits:?}"
    );
    // A fresh index in the same directory holds nothing of the old one.
    let dir = kept.path().join("index");
    drop(index);
    let again = DocIndex::create(&dir).unwrap();
    assert!(again.search("data_source", 10).unwrap().is_empty());
}

#[test]
fn any_query_is_read_without_failing() {
    let (_dir, index) = indexed(&["3.2.4"]);
    let long = "triggers ".repeat(2_000);
    let wide = "é".repeat(MAX_QUERY);
    for query in [
        "",
        "   ",
        "(((",
        "\"unclosed",
        "title:",
        "*",
        "a AND OR NOT",
        "name:[a TO",
        "~2",
        "\0",
        long.as_str(),
        wide.as_str(),
        "title:\"Migration Guide\"",
        "-triggers +lifecycle",
    ] {
        let hits = index.search(query, 10);
        assert!(hits.is_ok(), "{query:?}: {hits:?}");
    }
    assert!(
        !index.search(&long, 10).unwrap().is_empty(),
        "a long query is cut, not refused"
    );
    assert!(index.search("triggers", 0).unwrap().is_empty());
    // Past the bound, words are left out: one no page holds, past it,
    // changes nothing; nor does one the bound cuts, which is left out
    // whole rather than read as its start.
    let filler = "triggers ".repeat(MAX_QUERY / 9);
    let beyond = format!("{filler}{}zzyzx", " ".repeat(10));
    let straddling = format!("{filler}triggerszzyzx");
    for query in [beyond, straddling] {
        assert!(filler.len() < MAX_QUERY && query.len() > MAX_QUERY);
        assert!(!index.search(&query, 10).unwrap().is_empty(), "{query}");
    }
}

#[test]
fn the_index_says_which_versions_it_holds_once_committed() {
    let (_dir, index) = indexed(&["3.2.4"]);
    let null = Provider::from_source("registry.terraform.io/hashicorp/null").unwrap();
    let v = |s: &str| Version::parse(s).unwrap();
    assert!(index.holds(&null, &v("3.2.4")).unwrap());
    assert!(!index.holds(&null, &v("3.2.1")).unwrap());
    let other = Provider::from_source("registry.terraform.io/hashicorp/nulls").unwrap();
    assert!(!index.holds(&other, &v("3.2.4")).unwrap());
    let docs = version_docs("3.2.1", &tree());
    index
        .add_version(
            &docs,
            docs.pages.iter().zip(tree().into_iter().map(|t| t.2)),
        )
        .unwrap();
    assert!(!index.holds(&null, &v("3.2.1")).unwrap());
    index.commit().unwrap();
    assert!(index.holds(&null, &v("3.2.1")).unwrap());
}

#[test]
fn a_content_many_versions_share_is_indexed_once_and_found_with_each() {
    let dir = tempfile::tempdir().unwrap();
    let index = DocIndex::create(&dir.path().join("index")).unwrap();
    let pages = tree();
    assert_eq!(add(&index, "3.2.1", &pages), pages.len());
    // Added since the last commit, and after it: known either way.
    assert_eq!(add(&index, "3.2.2", &pages), 0);
    index.commit().unwrap();
    assert_eq!(add(&index, "3.2.3", &pages), 0);
    // One page changes in 3.2.4: only its new content is lacking.
    let mut changed = pages.clone();
    let at = changed
        .iter()
        .position(|(k, n, _)| *k == DocKind::Resource && n == "resource")
        .unwrap();
    changed[at].2.push_str("\nA new paragraph about zyxwvu.\n");
    let docs = version_docs("3.2.4", &changed);
    let lacking: Vec<_> = (index.lacking(&docs).unwrap().into_iter())
        .map(|p| p.name.to_string())
        .collect();
    assert_eq!(lacking, ["resource"]);
    assert_eq!(add(&index, "3.2.4", &changed), 1);
    index.commit().unwrap();
    let resource = |hits: &[DocHit]| -> Vec<Vec<String>> {
        (hits.iter())
            .filter(|h| h.kind == DocKind::Resource && h.name == "resource")
            .map(|h| {
                let mut v = h.versions.clone();
                v.sort();
                v
            })
            .collect()
    };
    // The old content is listed by three versions, the new by one; a
    // word of both finds both, a word of the new one only it.
    let mut both = resource(&index.search("null_resource", 10).unwrap());
    both.sort();
    assert_eq!(both, [vec!["3.2.1", "3.2.2", "3.2.3"], vec!["3.2.4"]]);
    assert_eq!(
        resource(&index.search("zyxwvu", 10).unwrap()),
        [vec!["3.2.4"]]
    );
    // A page no version changed is one hit with every version.
    let data: Vec<_> = (index.search("null_data_source", 10).unwrap().into_iter())
        .filter(|h| h.name == "data_source")
        .collect();
    assert_eq!(data.len(), 1, "{data:?}");
    assert_eq!(data[0].versions.len(), 4);
    // A version added again lists what it lists now: 3.2.1 without the
    // resource page is no longer found with it.
    let without: Vec<_> = pages
        .iter()
        .filter(|(_, n, _)| n != "resource")
        .cloned()
        .collect();
    add(&index, "3.2.1", &without);
    index.commit().unwrap();
    let mut after = resource(&index.search("null_resource", 10).unwrap());
    after.sort();
    assert_eq!(after, [vec!["3.2.2", "3.2.3"], vec!["3.2.4"]]);
}
