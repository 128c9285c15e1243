//! Tests of `logging`: the filter chosen for a spec decides as the full
//! filter does.

use std::sync::{Arc, Mutex};

use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt as _};
use tracing_subscriber::Registry;

use super::*;

/// Every event that reached the layer: its target and level.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<String>>>);

impl<S: Subscriber> Layer<S> for Seen {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let meta = event.metadata();
        self.0
            .lock()
            .unwrap()
            .push(format!("{} {}", meta.target(), meta.level()));
    }
}

/// Events at every level on targets a log filter names, each inside a
/// request span that records its cache outcome.
fn emit() {
    macro_rules! on {
        ($target:literal) => {{
            let span = tracing::info_span!(
                target: $target,
                "request",
                id = 7,
                cache = tracing::field::Empty
            );
            let _entered = span.enter();
            span.record("cache", "hit");
            tracing::trace!(target: $target, "t");
            tracing::debug!(target: $target, "d");
            tracing::info!(target: $target, "i");
            tracing::warn!(target: $target, "w");
            tracing::error!(target: $target, "e");
        }};
    }
    on!("tfmirror");
    on!("tfmirror::access");
    on!("tfmirror::audit");
    on!("tfmirrors");
    on!("hyper::proto::h1");
    on!("other");
}

fn seen_with(
    filter: impl tracing_subscriber::layer::Filter<Registry> + Send + Sync + 'static,
) -> Vec<String> {
    let seen = Seen::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone().with_filter(filter));
    tracing::subscriber::with_default(subscriber, emit);
    let lines = seen.0.lock().unwrap().clone();
    lines
}

#[test]
fn the_chosen_filter_decides_as_the_full_filter() {
    for spec in [
        "info",
        "warn",
        "off",
        "trace",
        "info,tfmirror::access=off",
        "tfmirror=debug",
        "debug,hyper=warn",
        "tfmirror::audit=error,info",
        "info,tfmirror",
        "INFO,tfmirror=Debug",
        "info,,",
        "[request]=debug",
        "warn,[request{cache=\"hit\"}]=trace",
    ] {
        let full = seen_with(EnvFilter::try_new(spec).unwrap());
        let chosen = seen_with(line_filter(spec).unwrap());
        assert_eq!(chosen, full, "spec {spec:?}");
    }
}

#[test]
fn targets_and_levels_are_followed() {
    let seen = seen_with(line_filter("info,tfmirror::access=off,hyper=warn").unwrap());
    assert!(seen.contains(&"tfmirror INFO".to_owned()), "{seen:?}");
    assert!(!seen.contains(&"tfmirror DEBUG".to_owned()), "{seen:?}");
    assert!(
        !seen.iter().any(|l| l.starts_with("tfmirror::access ")),
        "{seen:?}"
    );
    assert!(
        seen.contains(&"hyper::proto::h1 WARN".to_owned()),
        "{seen:?}"
    );
    assert!(
        !seen.contains(&"hyper::proto::h1 INFO".to_owned()),
        "{seen:?}"
    );
    // A span directive: events within the request span at any level.
    let seen = seen_with(line_filter("warn,[request]=trace").unwrap());
    assert!(seen.contains(&"other TRACE".to_owned()), "{seen:?}");
}

#[test]
fn a_spec_that_does_not_parse_is_refused() {
    for spec in ["info,tfmirror=loud", "a=b=c", "[request=info"] {
        assert!(line_filter(spec).is_err(), "{spec:?}");
    }
}

#[test]
fn requests_get_a_context_only_where_plain_lines_alone_read_them() {
    let plain = Config::default();
    assert_eq!(plain.log.format, LogFormat::Pretty);
    assert!(contexts_in_lines(&plain, false, "info"));
    assert!(contexts_in_lines(
        &plain,
        false,
        "info,tfmirror::access=off"
    ));
    // Coloured lines are tracing-subscriber's, which show spans only.
    assert!(!contexts_in_lines(&plain, true, "info"));
    // A span directive needs the request's span.
    assert!(!contexts_in_lines(&plain, false, "warn,[request]=info"));
    let mut json = Config::default();
    json.log.format = LogFormat::Json;
    assert!(!contexts_in_lines(&json, false, "info"));
    // The audit file's JSON names the request's span.
    let mut audited = Config::default();
    audited.log.audit_file = Some("/var/log/tfmirror/audit.json".into());
    assert!(!contexts_in_lines(&audited, false, "info"));
}

#[test]
fn a_request_is_named_in_lines_where_the_filter_enables_its_span() {
    let shown = |spec: &str| {
        line_filter(spec)
            .unwrap()
            .callsite_enabled(crate::log_context::request_span())
            .is_always()
    };
    assert!(shown("info"));
    assert!(shown("debug"));
    assert!(shown("info,tfmirror::access=off"));
    assert!(shown("warn,tfmirror::http=info"));
    assert!(!shown("warn"));
    assert!(!shown("warn,tfmirror::access=info"));
    assert!(!shown("info,tfmirror::http::dispatch=warn"));
}
