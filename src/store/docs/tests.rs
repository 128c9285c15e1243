use super::*;
use crate::store::DiskStore;

fn provider() -> Provider {
    Provider::from_source("registry.example/hashicorp/null").unwrap()
}

fn entry(name: &str, sha256: String, size: usize) -> PageEntry {
    PageEntry {
        kind: DocKind::Resource,
        name: DocName::parse(name).unwrap(),
        title: name.into(),
        subcategory: String::new(),
        description: String::new(),
        sha256,
        size: size as u64,
        truncated: false,
    }
}

fn docs(version: &str, pages: Vec<PageEntry>) -> VersionDocs {
    VersionDocs {
        format: DOCS_FORMAT,
        provider: provider(),
        version: Version::parse(version).unwrap(),
        source: "https://registry.example/v1/providers/hashicorp/null/".to_owned() + version,
        fetched_at_ms: 1_700_000_000_000,
        licenses: Vec::new(),
        pages,
        passed_over: BTreeMap::new(),
    }
}

#[tokio::test]
async fn a_page_two_versions_share_is_kept_once_under_its_hash() {
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    let shared = b"# null_resource\n\nThe same in both.\n";
    let changed = b"# null_data_source\n\nChanged in 3.2.4.\n";
    // The SHA-256 of the shared page, as `sha256sum` gives it.
    let a = keep_page(&store, shared).await.unwrap();
    assert_eq!(
        a,
        "0ebdd9e0b9becf5d1854bd52bdc734cf721dd7e0813fac15027c3a814429b268"
    );
    let b = keep_page(&store, shared).await.unwrap();
    assert_eq!(a, b);
    let c = keep_page(&store, changed).await.unwrap();
    write_version(
        &store,
        &docs("3.2.1", vec![entry("resource", a.clone(), shared.len())]),
    )
    .await
    .unwrap();
    let later = docs(
        "3.2.4",
        vec![
            entry("resource", a.clone(), shared.len()),
            entry("data_source", c.clone(), changed.len()),
        ],
    );
    write_version(&store, &later).await.unwrap();
    let pages: Vec<_> = walkdir(dir.path().join("docs/pages"));
    assert_eq!(pages.len(), 2, "{pages:?}");
    assert!(dir
        .path()
        .join(format!("docs/pages/{}/{a}.md", &a[..2]))
        .is_file());
    let read = version(&store, &provider(), &Version::parse("3.2.4").unwrap())
        .await
        .unwrap();
    assert_eq!(read, Some(later));
    assert_eq!(
        page(&store, &a).await.unwrap().as_deref(),
        Some(&shared[..])
    );
    assert_eq!(
        version(&store, &provider(), &Version::parse("3.2.2").unwrap())
            .await
            .unwrap(),
        None
    );
}

/// The files below `dir`, however deep.
fn walkdir(dir: std::path::PathBuf) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[tokio::test]
async fn a_damaged_page_or_list_is_refused_by_name() {
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    let sha = keep_page(&store, b"# kept\n").await.unwrap();
    let file = dir
        .path()
        .join(format!("docs/pages/{}/{sha}.md", &sha[..2]));
    std::fs::write(&file, b"# changed on disk\n").unwrap();
    let e = page(&store, &sha).await.unwrap_err().to_string();
    assert!(e.contains(&format!("the page kept as {sha}")), "{e}");
    for bad in ["../../etc/passwd", "AB", &"A".repeat(64)] {
        assert!(page(&store, bad).await.is_err(), "{bad}");
    }
    let v = Version::parse("3.2.4").unwrap();
    write_version(&store, &docs("3.2.4", Vec::new()))
        .await
        .unwrap();
    let list = dir
        .path()
        .join("docs/versions/registry.example/hashicorp/null/3.2.4.json");
    let mut newer: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&list).unwrap()).unwrap();
    newer["format"] = serde_json::json!(DOCS_FORMAT + 1);
    std::fs::write(&list, newer.to_string()).unwrap();
    let e = version(&store, &provider(), &v)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("is of format 2; this build reads formats up to 1"),
        "{e}"
    );
    // A list kept under another version's name is not believed.
    write_version(&store, &docs("3.2.1", Vec::new()))
        .await
        .unwrap();
    std::fs::copy(
        dir.path()
            .join("docs/versions/registry.example/hashicorp/null/3.2.1.json"),
        &list,
    )
    .unwrap();
    let e = version(&store, &provider(), &v)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("describes registry.example/hashicorp/null 3.2.1"),
        "{e}"
    );
}

#[tokio::test]
async fn a_page_past_the_bound_is_refused_and_a_list_naming_no_hash_is_not_kept() {
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    let e = keep_page(&store, &vec![b'a'; (1 << 20) + 1])
        .await
        .unwrap_err()
        .to_string();
    assert!(e.contains("more than the 1048576 kept of one"), "{e}");
    assert!(keep_page(&store, &vec![b'a'; 1 << 20]).await.is_ok());
    let bad = docs("3.2.4", vec![entry("resource", "../x".into(), 1)]);
    assert!(write_version(&store, &bad).await.is_err());
    assert!(!dir.path().join("docs/versions").exists());
}

#[tokio::test]
async fn the_lists_and_pages_kept_are_listed_as_written_and_strays_are_named_or_passed_over() {
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    let content = b"# null_resource\n";
    let sha = keep_page(&store, content).await.unwrap();
    write_version(
        &store,
        &docs("3.2.1", vec![entry("resource", sha.clone(), 16)]),
    )
    .await
    .unwrap();
    // Files no build writes, put there by hand.
    let versions = dir
        .path()
        .join("docs/versions/registry.example/hashicorp/null");
    std::fs::write(versions.join("not-a-version.json"), b"{}").unwrap();
    std::fs::create_dir_all(dir.path().join("docs/pages/zz")).unwrap();
    std::fs::write(dir.path().join("docs/pages/zz/notes.txt"), b"x").unwrap();
    let misplaced = format!("docs/pages/00/{sha}.md");
    std::fs::create_dir_all(dir.path().join("docs/pages/00")).unwrap();
    std::fs::write(dir.path().join(&misplaced), content).unwrap();

    let listed = listed_versions(&store).await.unwrap();
    let list_size = std::fs::metadata(versions.join("3.2.1.json"))
        .unwrap()
        .len();
    assert_eq!(
        listed,
        vec![
            (
                Ok((provider(), Version::parse("3.2.1").unwrap())),
                list_size
            ),
            (
                Err("docs/versions/registry.example/hashicorp/null/not-a-version.json".to_owned()),
                2
            ),
        ]
    );
    let pages = kept_pages(&store).await.unwrap();
    assert_eq!(pages.len(), 1, "{pages:?}");
    assert_eq!(
        (pages[0].sha256.as_str(), pages[0].size),
        (sha.as_str(), 16)
    );
    let age = std::time::SystemTime::now().duration_since(pages[0].written);
    assert!(age.as_ref().is_ok_and(|a| a.as_secs() < 60), "{age:?}");

    remove_version(&store, &provider(), &Version::parse("3.2.1").unwrap())
        .await
        .unwrap();
    remove_page(&store, &sha).await.unwrap();
    assert_eq!(listed_versions(&store).await.unwrap().len(), 1);
    assert!(kept_pages(&store).await.unwrap().is_empty());
    assert_eq!(page(&store, &sha).await.unwrap(), None);
    // The misplaced file was never a page, and stays.
    assert!(dir.path().join(&misplaced).is_file());
    assert!(remove_page(&store, "../x").await.is_err());
}
