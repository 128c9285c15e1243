//! Tests of `metrics`.

use super::*;

#[test]
fn renders_prometheus_text() {
    let m = Metrics::new();
    m.request(Endpoint::Index, 200, Duration::from_millis(3));
    m.cache(CacheKind::Archive, CacheOutcome::Miss);
    m.cache(CacheKind::Archive, CacheOutcome::Hit);
    m.upstream(
        "registry.example",
        UpstreamOutcome::Ok,
        Duration::from_millis(20),
    );
    m.set_cache_size(1234, 2);
    {
        let _g = m.download_started();
        assert!(m.render().contains("tfmirror_downloads_in_flight 1"));
        let _w = (m.archive_wait(), m.archive_wait());
        assert!(m.render().contains("tfmirror_archive_requests_waiting 2\n"));
    }
    let text = m.render();
    for want in [
        "tfmirror_http_requests_total{endpoint=\"index\",status=\"200\"} 1",
        "tfmirror_cache_lookups_total{kind=\"archive\",outcome=\"miss\"} 1",
        "tfmirror_upstream_requests_total{host=\"registry.example\",outcome=\"ok\"} 1",
        "tfmirror_cache_size_bytes 1234",
        "tfmirror_downloads_in_flight 0",
        "tfmirror_archive_requests_waiting 0\n",
        "# EOF",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    assert_eq!(m.hit_rate(), (1, 2));
}

#[test]
fn kept_series_are_the_familys_series() {
    let m = Metrics::new();
    for _ in 0..3 {
        m.request(Endpoint::Version, 200, Duration::from_millis(2));
    }
    // A status that is not kept is counted through the family.
    m.request(Endpoint::Version, 502, Duration::from_millis(40));
    m.request(Endpoint::Oci, 404, Duration::from_millis(1));
    for _ in 0..2 {
        m.cache(CacheKind::ReleaseFile, CacheOutcome::Stale);
    }
    let text = m.render();
    for want in [
        "tfmirror_http_requests_total{endpoint=\"version\",status=\"200\"} 3",
        "tfmirror_http_requests_total{endpoint=\"version\",status=\"502\"} 1",
        "tfmirror_http_requests_total{endpoint=\"oci\",status=\"404\"} 1",
        "tfmirror_http_request_duration_seconds_count{endpoint=\"version\"} 4",
        "tfmirror_http_request_duration_seconds_count{endpoint=\"oci\"} 1",
        "tfmirror_cache_lookups_total{kind=\"release_file\",outcome=\"stale\"} 2",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    // Request series are created by their first count, not before; cache
    // lookups, whose labels are all known, are there from the start.
    assert!(!text.contains("endpoint=\"index\""), "{text}");
    assert!(
        text.contains("tfmirror_cache_lookups_total{kind=\"index\",outcome=\"miss\"} 0"),
        "{text}"
    );
}

#[test]
fn series_the_alerts_read_are_exported_at_zero_from_the_start() {
    let m = Metrics::new();
    let text = m.render();
    for want in [
        "tfmirror_signature_verifications_total{outcome=\"invalid\"} 0",
        "tfmirror_evictions_total{kind=\"archive\"} 0",
        "tfmirror_watch_runs_total{outcome=\"failed\"} 0",
        "tfmirror_watch_fetched_total{kind=\"module\"} 0",
        "tfmirror_cache_lookups_total{kind=\"index\",outcome=\"stale\"} 0",
        "tfmirror_module_fetches_total{source=\"git\",outcome=\"failed\"} 0",
        "tfmirror_download_claims_total{outcome=\"waited\"} 0",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    // What the configuration decides: none before it is known.
    assert!(
        !text.contains("tfmirror_upstream_requests_total{"),
        "{text}"
    );
    assert!(!text.contains("tfmirror_policy_decisions_total{"), "{text}");
    m.export_configured_series(
        &["registry.terraform.io".to_owned()],
        &["policy.rule[0]".to_owned(), "policy.default".to_owned()],
    );
    let text = m.render();
    for want in [
        "tfmirror_upstream_requests_total{host=\"registry.terraform.io\",outcome=\"unreachable\"} 0",
        "tfmirror_policy_decisions_total{action=\"deny\",rule=\"policy.rule[0]\"} 0",
        "tfmirror_policy_decisions_total{action=\"allow\",rule=\"policy.default\"} 0",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    // A count lands on the series exported at 0.
    m.verification(VerifyOutcome::Invalid);
    assert!(m
        .render()
        .contains("tfmirror_signature_verifications_total{outcome=\"invalid\"} 1"));
}

#[test]
fn every_label_value_has_a_slot_of_its_own() {
    use std::collections::HashSet;
    // Exhaustive: a new variant fails to compile here until it is listed.
    let endpoint = |e: Endpoint| match e {
        Endpoint::Index
        | Endpoint::Version
        | Endpoint::Archive
        | Endpoint::Lock
        | Endpoint::Registry
        | Endpoint::Module
        | Endpoint::Release
        | Endpoint::Oci
        | Endpoint::Home
        | Endpoint::Operations
        | Endpoint::Invalid => e,
    };
    let endpoints = [
        Endpoint::Index,
        Endpoint::Version,
        Endpoint::Archive,
        Endpoint::Lock,
        Endpoint::Registry,
        Endpoint::Module,
        Endpoint::Release,
        Endpoint::Oci,
        Endpoint::Home,
        Endpoint::Operations,
        Endpoint::Invalid,
    ]
    .map(endpoint);
    assert_eq!(endpoints.len(), Endpoint::COUNT);
    let mut slots = HashSet::new();
    for e in endpoints {
        assert!((e as usize) < Endpoint::COUNT);
        for status in [200, 304, 307, 404] {
            let slot = kept::status_slot(e, status).expect("kept status");
            assert!(slot < kept::STATUS_SLOTS && slots.insert(slot));
        }
        assert_eq!(kept::status_slot(e, 500), None);
    }
    let kind = |k: CacheKind| match k {
        CacheKind::Index
        | CacheKind::Version
        | CacheKind::Archive
        | CacheKind::ModuleIndex
        | CacheKind::ModulePackage
        | CacheKind::ReleaseList
        | CacheKind::ReleaseRecord
        | CacheKind::ReleaseFile => k,
    };
    let outcome = |o: CacheOutcome| match o {
        CacheOutcome::Hit | CacheOutcome::Miss | CacheOutcome::Stale => o,
    };
    let kinds = [
        CacheKind::Index,
        CacheKind::Version,
        CacheKind::Archive,
        CacheKind::ModuleIndex,
        CacheKind::ModulePackage,
        CacheKind::ReleaseList,
        CacheKind::ReleaseRecord,
        CacheKind::ReleaseFile,
    ]
    .map(kind);
    let outcomes = [CacheOutcome::Hit, CacheOutcome::Miss, CacheOutcome::Stale].map(outcome);
    assert_eq!(kinds.len() * outcomes.len(), kept::CACHE_SLOTS);
    let mut slots = HashSet::new();
    for k in kinds {
        for o in outcomes {
            let slot = kept::cache_slot(k, o);
            assert!(slot < kept::CACHE_SLOTS && slots.insert(slot));
        }
    }
}
