//! Tests of `residency`.

use super::*;
use crate::address::{Platform, Provider, Version};

fn key(n: usize) -> ArchiveKey {
    let provider = Provider::from_source("r.example/ns/t").unwrap();
    let version = Version::parse(&format!("1.0.{n}")).unwrap();
    ArchiveKey::new(
        &provider,
        &version,
        &Platform::parse("linux_amd64").unwrap(),
    )
}

fn old(n: usize) -> Evicted {
    Evicted::Archive(key(n))
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
        held(2, 10),
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
        vec![Evicted::Module(module(0).0, module(0).1), old(1)]
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
        held,
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
    assert!(r.used(&key(1), 10));
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
fn holdings_are_grouped_again_only_when_archives_come_or_go() {
    let r = archives_only(held(3, 10), None);
    let first = r.holdings();
    assert_eq!(first["r.example/ns/t"].len(), 3);
    r.used(&key(1), 10);
    assert!(Arc::ptr_eq(&first, &r.holdings()), "a use changes nothing");
    r.stored(&key(7), 10);
    let second = r.holdings();
    assert_eq!(second["r.example/ns/t"].len(), 4);
    r.forget(&key(7));
    assert_eq!(r.holdings()["r.example/ns/t"].len(), 3);
}

#[test]
fn use_is_written_to_the_store_at_most_hourly() {
    let r = archives_only(Vec::new(), None);
    assert!(r.used(&key(1), 5), "first use is written");
    assert!(!r.used(&key(1), 5), "a second use within the hour is not");
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
        held(1, 10),
        Vec::new(),
        vec![(file(0), 10, 0)],
        Some(bytesize::ByteSize(25)),
        Arc::new(Metrics::new()),
    );
    assert_eq!(r.usage().0, 20);
    // Archive 0 was just used: the old release file goes; the new one is
    // never picked.
    r.used(&key(0), 10);
    assert_eq!(
        r.stored_release(&file(1), 10),
        vec![Evicted::Release(file(0))]
    );
    assert_eq!(r.usage().0, 20);
    // Using a file makes it the most recent.
    r.release_used(&file(1), 10);
    assert_eq!(r.stored_release(&file(2), 10), vec![old(0)]);
}

#[test]
fn the_compact_form_gives_back_the_key_and_its_parts() {
    for (source, version, platform) in [
        (
            "registry.terraform.io/hashicorp/aws",
            "5.1.0",
            "linux_amd64",
        ),
        (
            "mirror.example:8443/acme/x",
            "2.0.0-beta.1+build.7",
            "darwin_arm64",
        ),
    ] {
        let key = ArchiveKey::new(
            &Provider::from_source(source).unwrap(),
            &Version::parse(version).unwrap(),
            &Platform::parse(platform).unwrap(),
        );
        let c = compact(&key);
        assert_eq!(expand(&c), Some(key));
        assert_eq!(parts(&c), (source, version, platform));
    }
}

#[test]
fn archives_being_read_are_named_by_their_compact_form_and_never_evicted() {
    let r = archives_only(held(2, 10), Some(20));
    r.reading(&key(0));
    // Archive 0 is the oldest but is being read: archive 1 goes instead.
    assert_eq!(r.stored(&key(2), 10), vec![old(1)]);
    r.done_reading(&key(0));
    assert_eq!(r.stored(&key(3), 10), vec![old(0)]);
    let holdings = r.holdings();
    let versions: Vec<String> = holdings["r.example/ns/t"]
        .keys()
        .map(ToString::to_string)
        .collect();
    assert_eq!(versions, ["1.0.2", "1.0.3"]);
}
