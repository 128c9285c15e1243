//! What changed in a provider's documentation between two held versions,
//! from what the mirror kept of each: acme/widget 1.0.0's origin serves
//! the null provider's real v3.2.1 tree and 1.2.0's its v3.2.4 tree (with
//! a page per hostile README), in registry.terraform.io's shape
//! (`common::pages`). The oracles are the trees themselves: which files
//! differ byte for byte, and for one page GNU diff's count of lines
//! inserted and deleted (`diff -d`, a minimal difference, as the mirror's
//! is) and each line's text at its number in the files.

mod common;

use std::collections::BTreeSet;

use common::docs::TreeDoc;
use common::pages::world;
use http::StatusCode;
use serde_json::Value;

const API: &str = "/-/api/providers/registry.origin.test/acme/widget";

/// A tree's documents by (kind, name) as the mirror's paths name kinds.
fn by_key(docs: &[TreeDoc]) -> std::collections::BTreeMap<(String, String), &TreeDoc> {
    docs.iter()
        .map(|d| {
            let kind = match d.category {
                "overview" => "overview",
                "resources" => "resource",
                "data-sources" => "data-source",
                "guides" => "guide",
                other => panic!("no kind for {other}"),
            };
            ((kind.to_owned(), d.name.clone()), d)
        })
        .collect()
}

/// The (kind, name) of each page a changes list names under `field`,
/// with the kind read from the page's path.
fn named(changes: &Value, field: &str) -> BTreeSet<(String, String)> {
    (changes[field].as_array().unwrap().iter())
        .map(|p| {
            let path = p["path"].as_str().unwrap();
            let path = path.split('?').next().unwrap();
            let mut parts = path.rsplit('/');
            let name = parts.next().unwrap().to_owned();
            (parts.next().unwrap().to_owned(), name)
        })
        .collect()
}

/// GNU diff's count of lines inserted and deleted from `old` to `new`.
fn gnu_diff_counts(old: &[u8], new: &[u8]) -> (usize, usize) {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("old"), dir.path().join("new"));
    std::fs::write(&a, old).unwrap();
    std::fs::write(&b, new).unwrap();
    let out = std::process::Command::new("diff")
        .args(["-d", "--unchanged-line-format=", "--old-line-format=-\n"])
        .arg("--new-line-format=+\n")
        .args([&a, &b])
        .output()
        .expect("GNU diff (Debian's diffutils) runs");
    assert!(out.status.code().is_some_and(|c| c <= 1), "{out:?}");
    let said = String::from_utf8(out.stdout).unwrap();
    (
        said.lines().filter(|l| *l == "+").count(),
        said.lines().filter(|l| *l == "-").count(),
    )
}

/// The lines of a text as the page shows them: without their endings.
fn lines_of(text: &[u8]) -> Vec<String> {
    String::from_utf8_lossy(text)
        .lines()
        .map(|l| l.trim_end_matches('\r').to_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pages_changed_between_two_versions_are_the_trees_difference() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    let (old, new) = (by_key(&w.older_docs), by_key(&w.docs));
    let got = c
        .get(&m.url(&format!("{API}/1.2.0/docs/changes?from=1.0.0")))
        .await;
    assert_eq!(got.status, StatusCode::OK);
    let got = got.json();
    assert_eq!(got["from"], "1.0.0");
    assert_eq!(got["none"], Value::Null);
    let changes = &got["changes"];
    let want_added: BTreeSet<_> = new
        .keys()
        .filter(|k| !old.contains_key(k))
        .cloned()
        .collect();
    let want_changed: BTreeSet<_> = (new.iter())
        .filter(|(k, d)| old.get(*k).is_some_and(|o| o.content != d.content))
        .map(|(k, _)| k.clone())
        .collect();
    let same = new.len() - want_added.len() - want_changed.len();
    assert!(want_added
        .iter()
        .any(|(k, n)| k == "guide" && n == "terraform-migration"));
    assert_eq!(
        want_changed,
        BTreeSet::from([
            ("data-source".to_owned(), "data_source".to_owned()),
            ("resource".to_owned(), "resource".to_owned())
        ])
    );
    assert_eq!(named(changes, "added"), want_added);
    assert_eq!(named(changes, "changed"), want_changed);
    assert_eq!(named(changes, "removed"), BTreeSet::new());
    assert_eq!(changes["unchanged"], same);
    // A changed page links to its changes; an added one to its page.
    assert!((changes["changed"][0]["path"].as_str().unwrap()).contains("/1.2.0/docs/changes/"));
    // The other way round, what 1.2.0 added 1.0.0 does not have.
    let back = c
        .get(&m.url(&format!("{API}/1.0.0/docs/changes?from=1.2.0")))
        .await
        .json();
    assert_eq!(named(&back["changes"], "removed"), want_added);
    assert_eq!(named(&back["changes"], "added"), BTreeSet::new());
    let removed = back["changes"]["removed"][0]["path"].as_str().unwrap();
    assert!(removed.contains("/1.2.0/docs/"), "{removed}");
    // Without `from`, the next older version held: 1.1.0, whose
    // documentation is not kept, which is said; 1.0.0 has none older.
    let default = c
        .get(&m.url(&format!("{API}/1.2.0/docs/changes")))
        .await
        .json();
    assert_eq!(default["from"], "1.1.0");
    assert_eq!(default["changes"], Value::Null);
    let none = default["none"].as_str().unwrap();
    assert!(
        none.contains("no documentation of registry.origin.test/acme/widget 1.1.0 is kept"),
        "{none}"
    );
    assert_eq!(default["choices"], serde_json::json!(["1.1.0", "1.0.0"]));
    let oldest = c
        .get(&m.url(&format!("{API}/1.0.0/docs/changes")))
        .await
        .json();
    assert_eq!(oldest["from"], Value::Null);
    assert!(oldest["none"]
        .as_str()
        .unwrap()
        .contains("older than 1.0.0"));
    // The page lists them for people, and the docs page offers the
    // comparison with the next older version.
    let html = c
        .get(&m.url(&format!(
            "{}/1.2.0/docs/changes?from=1.0.0",
            API.replace("/api", "")
        )))
        .await;
    let html = String::from_utf8_lossy(&html.body);
    assert!(
        html.contains(&format!(
            "{} added, 0 removed, 2 changed, {same} the same.",
            want_added.len()
        )),
        "{html}"
    );
    let docs = c.get(&m.url(&format!("{API}/1.2.0/docs"))).await.json();
    assert_eq!(docs["older"], "1.1.0");
    assert_eq!(docs["compare_with"], serde_json::json!(["1.1.0", "1.0.0"]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_s_lines_changed_are_gnu_diff_s_count_each_at_its_number() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    let (old, new) = (by_key(&w.older_docs), by_key(&w.docs));
    let mut compared = 0;
    for ((kind, name), doc) in &new {
        let before: &[u8] = old
            .get(&(kind.clone(), name.clone()))
            .map_or(&[], |o| &o.content);
        let path = format!("{API}/1.2.0/docs/changes/{kind}/{name}?from=1.0.0");
        let got = c.get(&m.url(&path)).await;
        assert_eq!(got.status, StatusCode::OK, "{path}");
        let got = got.json();
        let changes = &got["changes"];
        let text = &changes["text"];
        let (inserted, deleted) = gnu_diff_counts(before, &doc.content);
        assert_eq!(
            (text["inserted"].as_u64(), text["deleted"].as_u64()),
            (Some(inserted as u64), Some(deleted as u64)),
            "{path}"
        );
        assert_eq!(text["approximate"], false, "{path}");
        assert_eq!(changes["old"].is_null(), before.is_empty(), "{path}");
        let (old_lines, new_lines) = (lines_of(before), lines_of(&doc.content));
        let mut shown = (0, 0);
        for hunk in text["hunks"].as_array().unwrap() {
            for line in hunk["lines"].as_array().unwrap() {
                let said = line["text"].as_str().unwrap();
                if let Some(n) = line["old"].as_u64() {
                    assert_eq!(
                        old_lines[usize::try_from(n).unwrap() - 1],
                        said,
                        "{path}: old line {n}"
                    );
                }
                if let Some(n) = line["new"].as_u64() {
                    assert_eq!(
                        new_lines[usize::try_from(n).unwrap() - 1],
                        said,
                        "{path}: new line {n}"
                    );
                }
                match line["tag"].as_str().unwrap() {
                    "insert" => shown.0 += 1,
                    "delete" => shown.1 += 1,
                    _ => assert!(line["old"].is_u64() && line["new"].is_u64()),
                }
            }
        }
        assert_eq!(shown, (inserted, deleted), "{path}: every change is shown");
        compared += 1;
    }
    assert_eq!(compared, new.len());
    // resource.md's changes, for people: a table per hunk, each line
    // marked, its text escaped.
    let page = c
        .get(&m.url("/-/providers/registry.origin.test/acme/widget/1.2.0/docs/changes/resource/resource?from=1.0.0"))
        .await;
    assert_eq!(page.status, StatusCode::OK);
    let html = String::from_utf8_lossy(&page.body);
    let (inserted, deleted) = gnu_diff_counts(
        &old[&("resource".into(), "resource".into())].content,
        &new[&("resource".into(), "resource".into())].content,
    );
    assert!(
        html.contains(&format!("{inserted} lines inserted, {deleted} deleted.")),
        "{html}"
    );
    assert!(html.contains("<tr class=\"inserted\">") && html.contains("<tr class=\"deleted\">"));
    assert!(
        html.contains("count         = 3"),
        "a changed line of the tree's"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_comparison_of_what_cannot_be_compared_gets_a_clear_answer() {
    let w = world(&[]).await;
    let (m, c) = (&w.mirror, &w.http);
    for (path, status, words) in [
        (
            "1.2.0/docs/changes?from=x.y",
            StatusCode::BAD_REQUEST,
            "from: ",
        ),
        (
            "1.2.0/docs/changes?from=1.2.0",
            StatusCode::BAD_REQUEST,
            "name another held version",
        ),
        (
            "1.2.0/docs/changes?from=9.9.9",
            StatusCode::NOT_FOUND,
            "holds no archive of registry.origin.test/acme/widget 9.9.9",
        ),
        (
            "9.9.9/docs/changes?from=1.0.0",
            StatusCode::NOT_FOUND,
            "holds no archive",
        ),
        (
            "1.2.0/docs/changes/resource/nothing?from=1.0.0",
            StatusCode::NOT_FOUND,
            "nor 1.2.0 keeps a resource page nothing",
        ),
        (
            "1.2.0/docs/changes/resources/resource?from=1.0.0",
            StatusCode::BAD_REQUEST,
            "no documentation kind",
        ),
        (
            "1.2.0/docs/changes/resource/%2E%2E?from=1.0.0",
            StatusCode::BAD_REQUEST,
            "",
        ),
    ] {
        let got = c.get(&m.url(&format!("{API}/{path}"))).await;
        assert_eq!(got.status, status, "{path}");
        let text = got.error_text();
        assert!(text.contains(words), "{path}: {text}");
    }
}
