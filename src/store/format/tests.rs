use super::*;
use crate::store::DiskStore;

fn cache() -> (tempfile::TempDir, DiskStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = DiskStore::open(dir.path()).unwrap();
    (dir, store)
}

#[tokio::test]
async fn an_unmarked_cache_is_marked_with_this_builds_format() {
    let (dir, store) = cache();
    assert_eq!(open_cache(&store).await.unwrap(), CACHE_FORMAT);
    let marker: Marker =
        serde_json::from_slice(&std::fs::read(dir.path().join(MARKER)).unwrap()).unwrap();
    assert_eq!(marker.format, CACHE_FORMAT);
    assert_eq!(marker.written_by.as_deref(), Some(THIS_VERSION));
    // Opening again reads it, and leaves it as it is.
    let before = std::fs::read(dir.path().join(MARKER)).unwrap();
    assert_eq!(open_cache(&store).await.unwrap(), CACHE_FORMAT);
    assert_eq!(std::fs::read(dir.path().join(MARKER)).unwrap(), before);
}

#[tokio::test]
async fn a_newer_cache_is_refused_naming_both_versions() {
    let (dir, store) = cache();
    std::fs::write(
        dir.path().join(MARKER),
        br#"{"format": 7, "written_by": "3.1.0", "migrated_from": 6}"#,
    )
    .unwrap();
    let e = open_cache(&store).await.unwrap_err().to_string();
    assert!(
        e.contains("cache format 7, written by tfmirror 3.1.0"),
        "{e}"
    );
    assert!(
        e.contains(&format!(
            "this tfmirror ({THIS_VERSION}) reads cache format"
        )),
        "{e}"
    );
    assert!(e.contains("use tfmirror 3.1.0 or newer"), "{e}");
    assert!(e.contains(&dir.path().display().to_string()), "{e}");
}

#[tokio::test]
async fn an_unreadable_marker_is_refused_not_replaced() {
    let (dir, store) = cache();
    std::fs::write(dir.path().join(MARKER), b"{\"format\": \"two\"}").unwrap();
    let e = open_cache(&store).await.unwrap_err().to_string();
    assert!(e.contains("tfmirror-cache.json is not readable"), "{e}");
    assert_eq!(
        std::fs::read(dir.path().join(MARKER)).unwrap(),
        b"{\"format\": \"two\"}"
    );
}

#[test]
fn formats_outside_the_range_read_are_refused() {
    assert!(check_readable("x", "bundle", 1, None, 1..=2).is_ok());
    assert!(check_readable("x", "bundle", 2, None, 1..=2).is_ok());
    let newer = check_readable("bundle b.tar", "bundle", 3, None, 1..=2).unwrap_err();
    assert!(
        newer.starts_with("bundle b.tar is in bundle format 3; this tfmirror"),
        "{newer}"
    );
    assert!(
        newer.contains("reads bundle formats 1 to 2: use a newer tfmirror"),
        "{newer}"
    );
    let zero = check_readable("x", "inventory", 0, None, 1..=2).unwrap_err();
    assert!(zero.contains("no tfmirror writes"), "{zero}");
}
