//! The kept counts of the residency index against a recount: whatever
//! sequence of arrivals, uses, evictions, reconciliations and journal
//! entries the index goes through, the providers and versions it keeps
//! count of (and the providers' order on the pages) are what a walk of
//! every entry finds.

use std::sync::Arc;

use proptest::prelude::*;

use super::{snapshot, HeldVersion, Residency};
use crate::address::{ArchiveKey, Platform, Provider, Version};
use crate::metrics::Metrics;
use crate::store::{CachedArchive, HeldItem};

/// An archive of the test's small world: 3 providers (two of one
/// namespace, to share a name's start), 3 versions, 2 platforms.
fn key(n: u8) -> ArchiveKey {
    let provider = [
        "r.example/acme/net",
        "r.example/acme/netbox",
        "r.example/zed/dns",
    ];
    let version = ["1.0.0", "1.1.0", "2.0.0"];
    let platform = ["linux_amd64", "darwin_arm64"];
    let n = usize::from(n) % 18;
    ArchiveKey::new(
        &Provider::from_source(provider[n / 6]).unwrap(),
        &Version::parse(version[n / 2 % 3]).unwrap(),
        &Platform::parse(platform[n % 2]).unwrap(),
    )
}

fn listed(n: u8, size: u64) -> CachedArchive {
    let k = key(n);
    CachedArchive {
        provider: k.provider,
        version: k.version,
        platform: k.platform,
        size,
        last_used: u64::from(n),
        path: std::path::PathBuf::new(),
    }
}

/// What happens to the index.
#[derive(Debug, Clone)]
enum Step {
    /// An archive stored here (evicting what is over).
    Stored(u8, u64),
    /// An archive served (indexed if it was not).
    Used(u8, u64),
    /// An archive gone from the store.
    Forgotten(u8),
    /// What is over the limit evicted.
    Over,
    /// A reconciliation begins (from an empty index or not).
    Begins(bool),
    /// The walk finds these archives.
    Found(Vec<(u8, u64)>),
    /// The reconciliation ends.
    Reconciled,
    /// The journal says what the store holds of an archive.
    Journal(u8, Option<u64>),
    /// The daemon stops and starts again from its snapshot.
    Restarted,
}

fn step() -> impl Strategy<Value = Step> {
    let size = 1..40u64;
    prop_oneof![
        4 => (any::<u8>(), size.clone()).prop_map(|(k, s)| Step::Stored(k, s)),
        2 => (any::<u8>(), size.clone()).prop_map(|(k, s)| Step::Used(k, s)),
        2 => any::<u8>().prop_map(Step::Forgotten),
        1 => Just(Step::Over),
        1 => any::<bool>().prop_map(Step::Begins),
        2 => proptest::collection::vec((any::<u8>(), size.clone()), 0..8).prop_map(Step::Found),
        1 => Just(Step::Reconciled),
        2 => (any::<u8>(), proptest::option::of(size)).prop_map(|(k, s)| Step::Journal(k, s)),
        1 => Just(Step::Restarted),
    ]
}

/// What the kept counts, order and rows give: providers and versions
/// held, and the page's rows.
type Counted = (usize, usize, Vec<(String, Vec<HeldVersion>)>);

/// The kept counts, and the providers in page order with their rows.
fn kept(r: &Residency) -> Counted {
    let page = r.held_page(1, usize::MAX);
    let names: Vec<String> = page.rows.iter().map(|(name, _)| name.clone()).collect();
    // The names searched by are the held providers', and only theirs.
    let mut found: Vec<String> = (r.provider_names().find("", usize::MAX).shown.into_iter())
        .map(|(_, name)| name.to_string())
        .collect();
    found.sort();
    assert_eq!(found, names, "the names searched by");
    assert_eq!(
        r.held_counts(),
        (page.providers, page.versions),
        "the counts alone"
    );
    for (name, rows) in &page.rows {
        let provider = Provider::from_source(name).unwrap();
        assert_eq!(
            &r.held_versions(&provider)[..],
            &rows[..],
            "one provider's rows"
        );
    }
    (page.providers, page.versions, page.rows)
}

/// The same, from a walk of every entry.
fn recounted(r: &Residency) -> Counted {
    let (providers, versions, archives) = r.lock().archives.recount();
    assert_eq!(archives, r.usage().1, "archives");
    let versions = usize::try_from(versions).unwrap();
    (providers.len(), versions, providers.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(600))]

    #[test]
    fn kept_counts_are_what_a_recount_finds(
        start in proptest::collection::vec((any::<u8>(), 1..40u64), 0..12),
        limit in proptest::option::of(40..200u64),
        steps in proptest::collection::vec(step(), 0..40),
    ) {
        let start: Vec<CachedArchive> = start.iter().map(|(k, s)| listed(*k, *s)).collect();
        let limit = limit.map(bytesize::ByteSize);
        let new = |archives| Residency::new(archives, Vec::new(), Vec::new(), limit, Arc::new(Metrics::new()));
        let mut r = new(start.into());
        let dir = tempfile::tempdir().unwrap();
        let seal = snapshot::Seal { location: "disk:/c".into(), changed: None };
        prop_assert_eq!(kept(&r), recounted(&r));
        for step in steps {
            match &step {
                Step::Stored(k, s) => drop(r.stored(&key(*k), *s)),
                Step::Used(k, s) => drop(r.used(&key(*k), *s)),
                Step::Forgotten(k) => r.forget(&key(*k)),
                Step::Over => drop(r.over(None)),
                Step::Begins(empty) => r.reconcile_begins(*empty),
                Step::Found(found) => {
                    let found: Vec<CachedArchive> =
                        found.iter().map(|(k, s)| listed(*k, *s)).collect();
                    r.found(&found);
                }
                Step::Reconciled => drop(r.reconciled()),
                Step::Journal(k, s) => {
                    let held = s.map(|size| HeldItem { size, last_used: 7 });
                    r.archive_is(&key(*k), held);
                }
                Step::Restarted => {
                    snapshot::write(dir.path(), dir.path(), &r.snapshot(&seal, true)).unwrap();
                    let (read, _) = snapshot::take(dir.path(), &seal).unwrap();
                    r = new(read);
                }
            }
            prop_assert_eq!(kept(&r), recounted(&r), "after {:?}", step);
        }
    }
}
