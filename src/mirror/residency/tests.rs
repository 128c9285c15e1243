//! Tests of `residency`.

use super::*;
use crate::address::{Platform, Provider, Version};
use crate::mirror::residency::snapshot;
use crate::store::HeldItem;

fn key(n: usize) -> ArchiveKey {
    let provider = Provider::from_source("r.example/ns/t").unwrap();
    let version = Version::parse(&format!("1.0.{n}")).unwrap();
    ArchiveKey::new(
        &provider,
        &version,
        &Platform::parse("linux_amd64").unwrap(),
    )
}

fn old(n: usize) -> Item {
    Item::Archive(key(n))
}

fn module(n: usize) -> ModuleKey {
    (
        Module::from_source("r.example/ns/net/aws").unwrap().0,
        Version::parse(&format!("2.0.{n}")).unwrap(),
    )
}

#[test]
fn module_packages_take_their_turn_with_archives() {
    let r = Residency::new(
        held(2, 10).into(),
        vec![(module(0), 5, 0)],
        Vec::new(),
        Some(bytesize::ByteSize(25)),
        Arc::new(Metrics::new()),
    );
    assert_eq!(r.usage(), (25, 2));
    // 35 bytes with the new package: the oldest archive goes.
    let (m, v) = module(1);
    assert_eq!(r.stored_module(&m, &v, 10), vec![old(0)]);
    assert_eq!(r.usage(), (25, 1));
    // Then the old package (used at 0), then archive 1 (used at 1).
    assert_eq!(
        r.stored(&key(5), 10),
        vec![Item::Module(module(0).0, module(0).1), old(1)]
    );
    // A use makes the new package more recent than archive 5.
    r.module_used(&m, &v, 10);
    assert_eq!(r.stored(&key(6), 10), vec![old(5)]);
    r.forget_module(&m, &v);
    assert_eq!(r.usage(), (10, 1));
}

/// A residency of archives alone, kept under `max` bytes.
fn archives_only(held: Vec<CachedArchive>, max: Option<u64>) -> Residency {
    Residency::new(
        held.into(),
        Vec::new(),
        Vec::new(),
        max.map(bytesize::ByteSize),
        Arc::new(Metrics::new()),
    )
}

fn held(n: usize, size: u64) -> Vec<CachedArchive> {
    (0..n)
        .map(|i| {
            let k = key(i);
            CachedArchive {
                provider: k.provider,
                version: k.version,
                platform: k.platform,
                size,
                last_used: i as u64,
                path: std::path::PathBuf::new(),
            }
        })
        .collect()
}

#[test]
fn evicts_the_least_recently_used_that_no_one_reads() {
    let r = archives_only(held(5, 10), Some(50));
    assert_eq!(r.usage(), (50, 5));
    r.reading(&key(0));
    // Archive 1 is used now: it becomes the most recent.
    assert!(r.used(&key(1), 10).touch);
    let new = key(99);
    let evicted = r.stored(&new, 25);
    // 75 bytes held, 50 allowed: 0 is being read and 1 was just used,
    // so 2, 3 and 4 go (the third because 25 > 20).
    assert_eq!(evicted, vec![old(2), old(3), old(4)]);
    assert_eq!(r.usage(), (45, 3));
    r.done_reading(&key(0));
    let evicted = r.stored(&key(100), 10);
    assert_eq!(evicted, vec![old(0)]);
}

#[test]
fn uses_in_the_same_second_evict_in_the_order_they_happened() {
    let r = archives_only(Vec::new(), Some(20));
    // Archive 2 is used before archive 1 (which sorts first by name).
    r.used(&key(2), 10);
    r.used(&key(1), 10);
    assert_eq!(r.stored(&key(3), 10), vec![old(2)]);
}

#[test]
fn a_page_shows_its_providers_newest_version_first() {
    let r = archives_only(held(3, 10), None);
    let other = ArchiveKey::new(
        &Provider::from_source("a.example/ns/t").unwrap(),
        &Version::parse("1.10.0").unwrap(),
        &Platform::parse("darwin_arm64").unwrap(),
    );
    r.stored(&other, 10);
    let mut darwin = key(2);
    darwin.platform = Platform::parse("darwin_amd64").unwrap();
    r.stored(&darwin, 10);
    let first = r.held_page(1, 1);
    assert_eq!((first.providers, first.versions, first.pages), (2, 4, 2));
    assert_eq!(first.rows.len(), 1);
    assert_eq!(first.rows[0].0, "a.example/ns/t");
    let second = r.held_page(9, 1);
    assert_eq!(second.page, 2, "past the end means the last page");
    let (provider, versions) = &second.rows[0];
    assert_eq!(provider, "r.example/ns/t");
    let shown: Vec<(String, Vec<String>)> = versions
        .iter()
        .map(|(v, p)| (v.to_string(), p.clone()))
        .collect();
    assert_eq!(
        shown,
        [
            (
                "1.0.2".to_owned(),
                vec!["darwin_amd64".to_owned(), "linux_amd64".to_owned()]
            ),
            ("1.0.1".to_owned(), vec!["linux_amd64".to_owned()]),
            ("1.0.0".to_owned(), vec!["linux_amd64".to_owned()]),
        ]
    );
    r.forget(&other);
    assert_eq!(
        r.held_page(1, 1).providers,
        1,
        "a provider with nothing held is not shown"
    );
}

#[test]
fn use_is_written_to_the_store_at_most_hourly() {
    let r = archives_only(Vec::new(), None);
    assert!(r.used(&key(1), 5).touch, "first use is written");
    assert!(
        !r.used(&key(1), 5).touch,
        "a second use within the hour is not"
    );
    assert_eq!(r.usage(), (5, 1), "an unknown archive joins the index");
    assert!(r.stored(&key(2), 5).is_empty(), "no limit, no eviction");
}

#[test]
fn release_files_take_their_turn_and_a_new_one_stays() {
    let file = |n: u32| crate::address::ReleaseFile {
        product: crate::address::Product::Terraform,
        version: crate::address::Version::parse(&format!("1.{n}.0")).unwrap(),
        name: crate::address::ArtifactName::parse(&format!("terraform_1.{n}.0_linux_amd64.zip"))
            .unwrap(),
    };
    let r = Residency::new(
        held(1, 10).into(),
        Vec::new(),
        vec![(file(0), 10, 0)],
        Some(bytesize::ByteSize(25)),
        Arc::new(Metrics::new()),
    );
    assert_eq!(r.usage().0, 20);
    // Archive 0 was just used: the old release file goes; the new one is
    // never picked.
    r.used(&key(0), 10);
    assert_eq!(r.stored_release(&file(1), 10), vec![Item::Release(file(0))]);
    assert_eq!(r.usage().0, 20);
    // Using a file makes it the most recent.
    r.release_used(&file(1), 10);
    assert_eq!(r.stored_release(&file(2), 10), vec![old(0)]);
}

#[test]
fn archives_being_read_are_never_evicted() {
    let r = archives_only(held(2, 10), Some(20));
    r.reading(&key(0));
    // Archive 0 is the oldest but is being read: archive 1 goes instead.
    assert_eq!(r.stored(&key(2), 10), vec![old(1)]);
    r.done_reading(&key(0));
    assert_eq!(r.stored(&key(3), 10), vec![old(0)]);
    let page = r.held_page(1, 10);
    let versions: Vec<String> = page.rows[0].1.iter().map(|(v, _)| v.to_string()).collect();
    assert_eq!(versions, ["1.0.3", "1.0.2"]);
}

#[test]
fn eviction_keeps_the_order_of_use_across_many_passes() {
    // More archives than one pass queues: each store evicts exactly the
    // least recently used one, through several refills, and uses made
    // after a pass move archives to the back.
    let n = order::BATCH * 2 + 100;
    let r = archives_only(held(n, 1), Some(n as u64));
    for i in 0..100 {
        r.used(&key(i), 1);
    }
    let mut evicted = Vec::new();
    for i in 0..n {
        evicted.extend(r.stored(&key(1_000_000 + i), 1));
    }
    let expected: Vec<Item> = (100..n).chain(0..100).map(old).collect();
    assert_eq!(evicted, expected);
    assert_eq!(r.usage(), (n as u64, n as u64));
}

#[test]
fn an_archive_found_with_an_old_use_goes_first_even_with_a_pass_queued() {
    let r = archives_only(held(10, 1), Some(10));
    assert_eq!(r.stored(&key(100), 1), vec![old(0)]);
    // The journal reports archive 0 back in the store, last used at the
    // epoch: older than every queued candidate.
    let back = HeldItem {
        size: 1,
        last_used: 0,
    };
    assert!(r.archive_is(&key(0), Some(back)), "it joins the index");
    assert_eq!(r.stored(&key(101), 1), vec![old(0), old(1)]);
}

#[test]
fn an_archive_found_on_use_joins_and_what_no_longer_fits_goes() {
    let r = archives_only(held(3, 10), Some(30));
    // Archive 9 is in the store but not in the index: its use brings it
    // in, and the least recently used archive makes room for it.
    let used = r.used(&key(9), 10);
    assert_eq!(used.evicted, vec![old(0)]);
    assert_eq!(r.usage(), (30, 3));
    // A use of an indexed archive evicts nothing.
    assert_eq!(r.used(&key(9), 10).evicted, vec![]);
}

#[test]
fn an_indexed_archive_still_takes_24_bytes() {
    assert_eq!(std::mem::size_of::<table::Held>(), 24);
}

#[test]
fn a_snapshot_gives_back_the_archives_their_order_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let r = archives_only(held(50, 3), Some(150));
    r.used(&key(7), 3);
    let seal = snapshot::Seal {
        location: "disk:/c".into(),
        changed: Some(5),
    };
    snapshot::write(dir.path(), &tmp, &r.snapshot(&seal, true)).unwrap();
    let (read, confirmed) = snapshot::take(dir.path(), &seal).unwrap();
    assert!(confirmed);
    assert!(!snapshot::path(dir.path()).exists(), "taking it removes it");
    let again = Residency::new(
        read,
        Vec::new(),
        Vec::new(),
        Some(bytesize::ByteSize(150)),
        Arc::new(Metrics::new()),
    );
    drop(r);
    assert_eq!(again.usage(), (150, 50));
    assert_eq!(
        again.held_page(1, 10),
        archives_only(held(50, 3), None).held_page(1, 10)
    );
    // The same order of use: 0 first, and 7 (used last) after 49.
    assert_eq!(again.stored(&key(100), 3), vec![old(0)]);
    let mut rest = Vec::new();
    for i in 0..49 {
        rest.extend(again.stored(&key(200 + i), 3));
    }
    let expected: Vec<Item> = (1..50).filter(|i| *i != 7).chain([7]).map(old).collect();
    assert_eq!(rest, expected);
}

#[test]
fn a_snapshot_for_another_store_or_an_older_state_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let r = archives_only(held(3, 1), None);
    let seal = snapshot::Seal {
        location: "disk:/c".into(),
        changed: None,
    };
    let write = || snapshot::write(dir.path(), &tmp, &r.snapshot(&seal, true)).unwrap();
    write();
    let changed = snapshot::Seal {
        changed: Some(1),
        ..seal.clone()
    };
    assert!(matches!(
        snapshot::take(dir.path(), &changed),
        Err(snapshot::Unused::Stale(..))
    ));
    assert!(
        matches!(
            snapshot::take(dir.path(), &seal),
            Err(snapshot::Unused::Missing)
        ),
        "a stale snapshot is removed too"
    );
    write();
    let elsewhere = snapshot::Seal {
        location: "s3://b/p".into(),
        ..seal.clone()
    };
    assert!(matches!(
        snapshot::take(dir.path(), &elsewhere),
        Err(snapshot::Unused::Stale(..))
    ));
    // Cut short anywhere, with bytes after its end, or with one bit
    // flipped anywhere (its checksum or what it covers): unreadable.
    let bytes = r.snapshot(&seal, true);
    let mut broken: Vec<Vec<u8>> = vec![
        bytes[..bytes.len() - 3].to_vec(),
        bytes[..bytes.len() / 2].to_vec(),
        bytes[..5].to_vec(),
        [bytes.as_slice(), b"x"].concat(),
    ];
    for at in [1, bytes.len() / 2, bytes.len() - 40, bytes.len() - 1] {
        let mut flipped = bytes.clone();
        flipped[at] ^= 0x10;
        broken.push(flipped);
    }
    for broken in &broken {
        snapshot::write(dir.path(), &tmp, broken).unwrap();
        let taken = snapshot::take(dir.path(), &seal);
        assert!(
            matches!(taken, Err(snapshot::Unused::Unreadable(..))),
            "{taken:?}"
        );
    }
}

#[test]
fn a_snapshot_of_another_format_says_so_and_an_unconfirmed_one_says_it() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let seal = snapshot::Seal {
        location: "disk:/c".into(),
        changed: None,
    };
    // Format 1, as the build before this one wrote it: its header starts
    // with the format number, and it has no checksum.
    let mut old_format = postcard::to_stdvec(&1u32).unwrap();
    old_format.extend_from_slice(&[0; 40]);
    snapshot::write(dir.path(), &tmp, &old_format).unwrap();
    let taken = snapshot::take(dir.path(), &seal);
    assert!(
        matches!(&taken, Err(snapshot::Unused::Stale(_, why)) if why.contains("another format")),
        "{taken:?}"
    );
    let r = archives_only(held(2, 1), None);
    snapshot::write(dir.path(), &tmp, &r.snapshot(&seal, false)).unwrap();
    let (archives, confirmed) = snapshot::take(dir.path(), &seal).unwrap();
    assert_eq!(archives.len(), 2);
    assert!(!confirmed, "a snapshot no reconciliation confirmed says so");
}

#[test]
fn a_reconciliation_drops_what_left_adds_what_came_and_only_then_evicts() {
    // The index (from a snapshot) holds archives 0 to 4, used in that
    // order, in room for three after one more arrives; the store lost 3
    // and 4 (the most recently used) and gained 7.
    let r = archives_only(held(5, 10), Some(40));
    r.reconcile_begins(false);
    assert_eq!(r.reconciling(), Some(false));
    assert!(!r.walking());
    // An arrival meanwhile evicts nothing: the index is not yet known to
    // be the store.
    assert_eq!(r.stored(&key(9), 10), vec![]);
    let mut store = held(3, 10);
    let mut seven = held(8, 10).remove(7);
    seven.size = 12;
    store.push(seven);
    // Archive 1 is in the store at another size.
    store[1].size = 11;
    r.found(&store);
    let corrected = r.reconciled();
    assert_eq!(
        corrected,
        Corrections {
            added: 1,
            dropped: 2,
            resized: 1
        }
    );
    assert_eq!(r.reconciling(), None);
    // 0, 1, 2, 7 and 9: 10 + 11 + 10 + 12 + 10 bytes.
    assert_eq!(r.usage(), (53, 5));
    // Now the oldest real archives go, and only as many as the limit asks:
    // 0 (second 0) and 1 (second 1).
    assert_eq!(r.over(None), vec![old(0), old(1)]);
    assert_eq!(r.usage(), (32, 3));
}

#[test]
fn a_walk_while_serving_keeps_newer_uses_skips_what_left_and_evicts_at_its_end() {
    let r = archives_only(Vec::new(), Some(40));
    r.reconcile_begins(true);
    assert!(r.walking());
    // While the store is walked: archive 0 is served, archive 1 leaves
    // the store, and archive 9 is stored, over the size: nothing is
    // evicted from an index that does not know all it holds.
    r.used(&key(0), 10);
    r.forget(&key(1));
    assert_eq!(r.stored(&key(9), 10), vec![]);
    // The walk reports archives 0 to 4, last used at seconds 0 to 4.
    let walked = held(5, 10);
    r.found(&walked[..2]);
    r.found(&walked[2..]);
    // 0 is not counted twice and 1 is not brought back: 0, 2, 3, 4, 9.
    assert_eq!(r.usage(), (50, 5));
    assert!(r.walking());
    // At its end, the least recently used go: 2, by its recorded use.
    assert!(r.reconciled().dropped == 0);
    assert_eq!(r.over(None), vec![old(2)]);
    assert!(!r.walking());
    // A late report changes nothing.
    r.found(&held(8, 10));
    assert_eq!(r.usage(), (40, 4));
    // Archive 0 kept the use it had while the walk ran (now), not the
    // record's (second 0): it goes after 3 and 4, before 9.
    assert_eq!(r.stored(&key(10), 30), vec![old(3), old(4), old(0)]);
}

#[test]
fn an_archive_stored_again_while_the_walk_runs_is_not_passed_over() {
    let r = archives_only(Vec::new(), None);
    r.reconcile_begins(true);
    r.forget(&key(1));
    r.stored(&key(1), 10);
    r.forget(&key(2));
    r.found(&held(3, 10));
    // 1 came back before the walk reported it; 2 stayed gone.
    assert_eq!(r.usage(), (20, 2));
    assert!(r.reconciled().none());
    assert_eq!(r.over(None), vec![]);
}

#[test]
fn documentation_counts_toward_the_bound_and_is_never_picked() {
    // Three archives of 10 bytes under 35: room for 5 bytes of
    // documentation.
    let r = archives_only(held(3, 10), Some(35));
    assert_eq!(r.docs_counted(5), Vec::<Item>::new());
    // Two bytes more, kept by a capture: the oldest archive goes.
    assert_eq!(r.docs_added(2), vec![old(0)]);
    assert_eq!(r.docs_bytes(), 7);
    // A sweep counts less: nothing goes, and the room is used again.
    assert_eq!(r.docs_counted(1), Vec::<Item>::new());
    assert_eq!(r.stored(&key(7), 10), Vec::<Item>::new());
    assert_eq!(r.stored(&key(8), 10), vec![old(1)]);
    // Documentation beyond the bound takes every archive, and still
    // stays: it goes with its versions, not by eviction.
    assert_eq!(r.docs_counted(40), vec![old(2), old(7), old(8)]);
    assert_eq!(r.usage(), (0, 0));
    assert_eq!(r.docs_bytes(), 40);
}
