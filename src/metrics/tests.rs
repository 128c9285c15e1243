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
    }
    let text = m.render();
    for want in [
        "tfmirror_http_requests_total{endpoint=\"index\",status=\"200\"} 1",
        "tfmirror_cache_lookups_total{kind=\"archive\",outcome=\"miss\"} 1",
        "tfmirror_upstream_requests_total{host=\"registry.example\",outcome=\"ok\"} 1",
        "tfmirror_cache_size_bytes 1234",
        "tfmirror_downloads_in_flight 0",
        "# EOF",
    ] {
        assert!(text.contains(want), "{want} missing from\n{text}");
    }
    assert_eq!(m.hit_rate(), (1, 2));
}
