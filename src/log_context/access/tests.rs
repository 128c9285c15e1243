//! Where a request's line goes: to the installed writer where no span is
//! current, through tracing where one is.

use std::sync::{Arc, Mutex};

use tracing_subscriber::layer::SubscriberExt as _;

use super::{write_directly, AccessLine};
use crate::log_context::memory_log::Lines;

fn line(path: &str) -> AccessLine<'_> {
    AccessLine {
        client: "192.0.2.1",
        method: "GET",
        path,
        status: 200,
        ms: 1,
    }
}

// The only test in this binary that installs a writer (it is installed
// once per process); lines other tests log afterwards go to it too, so
// this one looks for its own paths alone.
#[test]
fn a_line_goes_to_the_installed_writer_unless_a_span_is_current() {
    let direct = Arc::new(Mutex::new(Vec::<String>::new()));
    let through_tracing = Lines::default();
    let subscriber = tracing_subscriber::registry().with(
        tracing_subscriber::fmt::layer()
            .with_ansi(false)
            .with_writer(through_tracing.clone()),
    );
    tracing::subscriber::with_default(subscriber, || {
        // Nothing installed yet: through tracing.
        line("/before/installed").log();
        let to = direct.clone();
        assert!(write_directly(Box::new(move |line, context| {
            assert!(context.is_none(), "no request context here");
            to.lock().unwrap().push(line.path.to_owned());
        })));
        assert!(!write_directly(Box::new(|_, _| {})), "installed once");
        line("/no/span").log();
        let span = tracing::info_span!("around");
        span.in_scope(|| line("/within/a/span").log());
        line("/after/the/span").log();
    });
    let direct = direct.lock().unwrap().clone();
    let mine: Vec<&str> = direct
        .iter()
        .map(String::as_str)
        .filter(|p| {
            ["/before", "/no", "/within", "/after"]
                .iter()
                .any(|s| p.starts_with(s))
        })
        .collect();
    assert_eq!(mine, ["/no/span", "/after/the/span"]);
    let text = through_tracing.text();
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("tfmirror::access: answered client=192.0.2.1 method=GET path=/before/installed status=200 ms=1"), "{text}");
    assert!(
        text.contains(
            "around: tfmirror::access: answered client=192.0.2.1 method=GET path=/within/a/span"
        ),
        "{text}"
    );
}
