//! Tests of the journal: a writer's sessions as a reader sees them.

use std::sync::Arc;

use super::follow::{prune, Follower};
use super::*;
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::store::{DiskStore, Store};

fn archive(n: usize) -> Item {
    Item::Archive(ArchiveKey::new(
        &Provider::from_source("r.example/ns/t").unwrap(),
        &Version::parse(&format!("1.0.{n}")).unwrap(),
        &Platform::parse("linux_amd64").unwrap(),
    ))
}

fn store(dir: &std::path::Path) -> DiskStore {
    DiskStore::open(dir).unwrap()
}

/// Waits, with a deadline, until `follower` has read `want` items.
async fn read_until(follower: &mut Follower, store: &DiskStore, want: usize) -> Vec<Item> {
    let mut items = Vec::new();
    tokio::time::timeout(std::time::Duration::from_secs(10), async {
        while items.len() < want {
            let news = follower.look(store, now_ms(), now_ms()).await.unwrap();
            items.extend(news.items);
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    })
    .await
    .expect("the items were written within 10 s");
    items
}

#[tokio::test]
async fn a_reader_learns_each_change_once_and_a_command_notes_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let disk = store(dir.path());
    let journal = Journal::start(Box::new(disk.place()), "sync", true);
    let mut reader = Follower::new(None);
    assert!(reader
        .look(&disk, now_ms(), now_ms())
        .await
        .unwrap()
        .items
        .is_empty());
    assert_eq!(crate::store::changes::last(&disk).await.unwrap(), None);
    for n in 0..3 {
        drop(journal.changing(archive(n)).await.unwrap());
    }
    // The change note was written before the first change.
    assert!(crate::store::changes::last(&disk).await.unwrap().is_some());
    let items = read_until(&mut reader, &disk, 3).await;
    assert_eq!(items, vec![archive(0), archive(1), archive(2)]);
    // Read again: nothing new.
    let again = reader.look(&disk, now_ms(), now_ms()).await.unwrap();
    assert!(again.items.is_empty(), "{again:?}");
    // A closed session is not taken for a dead one, however long after.
    journal.close().await;
    let late = now_ms() + 3_600_000;
    let news = reader.look(&disk, now_ms(), late).await.unwrap();
    assert!(news.lost.is_empty(), "{news:?}");
}

#[tokio::test]
async fn a_session_left_open_and_silent_is_taken_for_a_dead_writer() {
    let dir = tempfile::tempdir().unwrap();
    let disk = store(dir.path());
    let journal = Journal::start(Box::new(disk.place()), "import", true);
    let mut reader = Follower::new(None);
    // A change under way: the session is open and the change not noted.
    let change = journal.changing(archive(1)).await.unwrap();
    let news = reader.look(&disk, now_ms(), now_ms()).await.unwrap();
    assert!(news.items.is_empty() && news.lost.is_empty());
    // The writer dies: its task stops, nothing more is written.
    std::mem::forget(change);
    let writer = journal.writer().to_owned();
    drop(journal);
    let stale = u64::try_from(STALE.as_millis()).unwrap();
    let soon = reader
        .look(&disk, now_ms(), now_ms() + stale / 2)
        .await
        .unwrap();
    assert!(soon.lost.is_empty(), "silent for less than STALE: alive");
    let later = reader
        .look(&disk, now_ms(), now_ms() + stale + 1000)
        .await
        .unwrap();
    assert_eq!(later.lost, vec![(writer, "import".to_owned())]);
    // Said once.
    let after = reader
        .look(&disk, now_ms(), now_ms() + 2 * stale)
        .await
        .unwrap();
    assert!(after.lost.is_empty());
}

#[tokio::test]
async fn a_reader_passes_over_its_own_entries_and_what_it_cannot_read() {
    let dir = tempfile::tempdir().unwrap();
    let disk = store(dir.path());
    let own = Journal::start(Box::new(disk.place()), "serve", false);
    let other = Journal::start(Box::new(disk.place()), "gc", true);
    let mut reader = Follower::new(Some(own.writer().to_owned()));
    drop(own.changing(archive(1)).await.unwrap());
    drop(other.changing(archive(2)).await.unwrap());
    own.close().await;
    other.close().await;
    assert!(
        crate::store::changes::last(&disk).await.unwrap().is_some(),
        "gc noted the store"
    );
    let name = entry_name(now_ms(), "junk", 1);
    disk.write_document(&[DIR[0], DIR[1], &name], b"{not json".to_vec())
        .await
        .unwrap();
    let news = reader.look(&disk, now_ms(), now_ms()).await.unwrap();
    assert_eq!(news.items, vec![archive(2)]);
    assert_eq!(news.unreadable, 1);
}

#[tokio::test]
async fn old_entries_are_removed_and_new_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let disk = Arc::new(store(dir.path()));
    let keep = u64::try_from(KEEP.as_millis()).unwrap();
    let now = now_ms();
    for (at, n) in [(now - keep - 10, 1), (now - keep + 60_000, 2), (now, 3)] {
        let entry = Entry {
            writer: "w".into(),
            role: "sync".into(),
            kind: Kind::Changes,
            items: vec![archive(n)],
        };
        let name = entry_name(at, "w", n as u64);
        let bytes = serde_json::to_vec(&entry).unwrap();
        disk.write_document(&[DIR[0], DIR[1], &name], bytes)
            .await
            .unwrap();
    }
    assert_eq!(prune(disk.as_ref(), now).await.unwrap(), 1);
    assert_eq!(disk.list_documents_after(&DIR, "").await.unwrap().len(), 2);
}

#[test]
fn entry_names_sort_by_time_then_writer_then_count() {
    let a = entry_name(5, "9-aa", 10);
    let b = entry_name(5, "9-aa", 11);
    let c = entry_name(40, "1-bb", 1);
    assert!(a < b && b < c);
    assert_eq!(written_at(&c), Some(40));
    assert_eq!(written_at("x"), None);
}

/// A place that refuses writes while `refusing` is set.
struct Flaky {
    disk: DiskPlace,
    refusing: std::sync::atomic::AtomicBool,
}

#[async_trait::async_trait]
impl Place for Arc<Flaky> {
    async fn put(&self, path: &[&str], bytes: Vec<u8>) -> Result<(), StoreError> {
        if self.refusing.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(StoreError::Unavailable(std::io::Error::other("refused")));
        }
        self.disk.put(path, bytes).await
    }
}

#[tokio::test]
async fn a_store_that_refuses_the_journal_refuses_the_change_and_leaves_the_session_open() {
    let dir = tempfile::tempdir().unwrap();
    let disk = store(dir.path());
    let flaky = Arc::new(Flaky {
        disk: disk.place(),
        refusing: std::sync::atomic::AtomicBool::new(true),
    });
    let journal = Journal::start(Box::new(flaky.clone()), "import", true);
    // Nothing can be noted: the change is refused before it happens.
    assert!(journal.changing(archive(1)).await.is_err());
    // Noted, then the store refuses the rest: close gives up, and the
    // session stays open for a reader to take as dead.
    flaky
        .refusing
        .store(false, std::sync::atomic::Ordering::SeqCst);
    let change = journal.changing(archive(2)).await.unwrap();
    flaky
        .refusing
        .store(true, std::sync::atomic::Ordering::SeqCst);
    drop(change);
    journal.close().await;
    let mut reader = Follower::new(None);
    let stale = u64::try_from(STALE.as_millis()).unwrap();
    let first = reader.look(&disk, now_ms(), now_ms()).await.unwrap();
    assert!(
        first.items.is_empty(),
        "the change itself was never written"
    );
    let later = reader
        .look(&disk, now_ms(), now_ms() + stale + 1000)
        .await
        .unwrap();
    assert_eq!(later.lost.len(), 1, "{later:?}");
}
