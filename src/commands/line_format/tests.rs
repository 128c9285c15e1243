use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::layer::SubscriberExt as _;

use crate::log_context::memory_log::Lines;

use super::{
    micros, second_prefix, write_timestamp, PlainFields, PlainLine, LAST_FORMATTED_SECOND,
};

/// Logs a spread of events: every level, spans nested and empty, a field
/// recorded on a span later, display, debug, string, number and boolean
/// values (at their edges, and as the message), a value with quotes and a
/// newline, and a record from the `log` crate.
fn log_a_spread() {
    tracing::trace!(target: "tfmirror::a", "at trace");
    tracing::debug!("at debug {}", 2);
    let request = tracing::info_span!("request", id = %"7f3a", cache = tracing::field::Empty);
    let _entered = request.enter();
    tracing::info!(
        target: "tfmirror::access",
        client = %"192.0.2.1",
        method = %http::Method::GET,
        path = %"/registry.terraform.io/hashicorp/aws/index.json",
        status = 200_u16,
        ms = 3_u64,
        "answered"
    );
    request.record("cache", "hit");
    {
        let inner = tracing::warn_span!("inner");
        let _inner = inner.enter();
        tracing::warn!(reason = "said \"no\"\nthen left", ok = false, "refused");
        let fielded = tracing::error_span!("fetch", url = ?"https://example.test/x");
        let _fielded = fielded.enter();
        tracing::error!(bytes = 12_i64, "failed");
        // A message with characters that drive a terminal; a raw
        // identifier; a field from the `log` crate's namespace; errors
        // with and without sources; a string field and a debug field.
        let plain = std::io::Error::other("gone \x1b[31mred");
        let wrapped = Wrapped(std::io::Error::other("inner \u{9b}cause"));
        tracing::info!(
            r#type = "zip",
            log.extra = 1,
            error = &plain as &(dyn std::error::Error + 'static),
            chain = &wrapped as &(dyn std::error::Error + 'static),
            name = "say \x07",
            shown = ?Some("x"),
            "bell \x07 esc \x1b c1 \u{85} del \x7f {} end",
            3
        );
        tracing::info!(message = "only a message field \x08");
        tracing::info!(empty = "");
        // Numbers, booleans and strings at their edges.
        tracing::info!(
            most = u64::MAX,
            least = i64::MIN,
            zero = 0_u64,
            r#yes = true,
            plain = "it's a plain string ~",
            tab = "a\tb",
            slash = r"a\b",
            quoted = "say \"hi\"",
            unicode = "café",
            wide = 1_u128 << 100,
            half = 0.5_f64,
            "edges"
        );
        tracing::info!(message = 42_u64, after = 7_u64);
        tracing::info!(message = true);
    }
    tracing_log::format_trace(
        &log::Record::builder()
            .args(format_args!("from the log crate"))
            .target("rustls::server")
            .level(log::Level::Info)
            .module_path(Some("rustls::server"))
            .file(Some("server.rs"))
            .line(Some(12))
            .build(),
    )
    .unwrap();
}

/// An error with a source.
#[derive(Debug)]
struct Wrapped(std::io::Error);

impl std::fmt::Display for Wrapped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("wrapper")
    }
}

impl std::error::Error for Wrapped {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// The lines without their timestamps, and the timestamps.
fn split(text: &str) -> (Vec<&str>, Vec<&str>) {
    text.lines()
        .map(|line| {
            let (time, rest) = line.split_once(' ').unwrap();
            (rest, time)
        })
        .unzip()
}

/// What `log` writes through `tracing-subscriber`'s default format without
/// colours, with a subscriber of its own.
fn default_lines(log: impl FnOnce()) -> String {
    let lines = Lines::default();
    tracing::subscriber::with_default(
        tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .with_writer(lines.clone()),
        ),
        log,
    );
    lines.text()
}

/// What `log` writes through tfmirror's plain line, with a subscriber of
/// its own.
fn plain_lines(log: impl FnOnce()) -> String {
    let lines = Lines::default();
    tracing::subscriber::with_default(
        tracing_subscriber::registry().with(
            tracing_subscriber::fmt::layer()
                .with_ansi(false)
                .fmt_fields(PlainFields)
                .event_format(PlainLine)
                .with_writer(lines.clone()),
        ),
        log,
    );
    lines.text()
}

#[test]
fn the_plain_line_is_the_default_format_without_colours() {
    // One subscriber each: layers of one registry would share the spans'
    // formatted fields.
    let (default_text, plain_text) = (default_lines(log_a_spread), plain_lines(log_a_spread));
    let (expected, expected_times) = split(&default_text);
    let (got, got_times) = split(&plain_text);
    assert_eq!(got, expected);
    assert_eq!(got.len(), 12, "{plain_text}");
    assert!(
        plain_text.contains(r"bell \x07 esc \x1b c1 \u{85} del \x7f 3 end type="),
        "{plain_text}"
    );
    assert!(
        plain_text.contains(r"chain=wrapper chain.sources=[inner \u{9b}cause]"),
        "{plain_text}"
    );
    assert!(
        plain_text.contains(
            r#"edges most=18446744073709551615 least=-9223372036854775808 zero=0 yes=true plain="it's a plain string ~" tab="a\tb" slash="a\\b" quoted="say \"hi\"" unicode="café""#
        ),
        "{plain_text}"
    );
    assert!(plain_text.contains(": 42 after=7\n"), "{plain_text}");
    assert!(
        got.iter()
            .any(|l| l.ends_with("}: rustls::server: from the log crate")),
        "{plain_text}"
    );
    assert!(got.iter().any(|l| l.starts_with(
        "ERROR request{id=7f3a cache=\"hit\"}:inner:fetch{url=\"https://example.test/x\"}: tfmirror::commands::line_format::tests: failed bytes=12"
    )));
    // Same shape of timestamp, and the same instant within the test's run.
    for (ours, theirs) in got_times.iter().zip(&expected_times) {
        assert_eq!(ours.len(), theirs.len(), "{ours} vs {theirs}");
        let ours = humantime::parse_rfc3339(ours).unwrap();
        let theirs = humantime::parse_rfc3339(theirs).unwrap();
        let apart = ours
            .duration_since(theirs)
            .or_else(|_| theirs.duration_since(ours))
            .unwrap();
        assert!(apart < Duration::from_secs(60), "{apart:?}");
    }
}

fn timestamp(at: SystemTime) -> String {
    let mut text = String::new();
    write_timestamp(&mut Writer::new(&mut text), at).unwrap();
    text
}

#[test]
fn timestamps_are_utc_with_microseconds() {
    let at = UNIX_EPOCH + Duration::new(1_000_000_000, 4_005_000);
    assert_eq!(timestamp(at), "2001-09-09T01:46:40.004005Z");
    // The second's prefix is reused only within that second.
    assert_eq!(
        timestamp(at + Duration::from_micros(995_994)),
        "2001-09-09T01:46:40.999999Z"
    );
    assert_eq!(
        timestamp(at + Duration::from_micros(995_995)),
        "2001-09-09T01:46:41.000000Z"
    );
    assert_eq!(timestamp(UNIX_EPOCH), "1970-01-01T00:00:00.000000Z");
    assert_eq!(
        timestamp(UNIX_EPOCH + Duration::new(LAST_FORMATTED_SECOND, 123_000)),
        "9999-12-31T23:59:59.000123Z"
    );
    assert_eq!(second_prefix(86_400 * 365), "1971-01-01T00:00:00.");
    assert_eq!(micros(42), *b"000042");
}

#[test]
fn a_clock_out_of_range_still_gives_a_timestamp() {
    // Before the epoch or past year 9999, the line starts with the time
    // `tracing-subscriber`'s timer reads, never an error.
    for at in [
        UNIX_EPOCH - Duration::from_secs(86_400),
        UNIX_EPOCH + Duration::from_secs(LAST_FORMATTED_SECOND + 1),
    ] {
        let text = timestamp(at);
        let read = humantime::parse_rfc3339(&text).unwrap();
        let apart = SystemTime::now().duration_since(read).unwrap();
        assert!(apart < Duration::from_secs(60), "{text}");
    }
}

/// Events logged within a request and outside it, with cache outcomes
/// noted by `note` (on the request's span, or on its context).
fn within_a_request(note: &dyn Fn(&'static str)) {
    tracing::info!(
        target: "tfmirror::access",
        client = %"192.0.2.1",
        status = 200_u16,
        "answered"
    );
    note("hit");
    let inner = tracing::warn_span!("inner", step = 2_u64);
    let _inner = inner.enter();
    tracing::warn!(reason = "said \"no\"", "refused");
    note("miss");
    tracing::error!(bytes = 12_i64, "failed");
}

#[test]
fn a_request_context_is_written_as_the_request_span_is() {
    use crate::log_context::{note_cache, RequestContext, RequestId, WithRequest};
    use futures_util::FutureExt as _;

    let id = RequestId::new(0x7f3a);
    let spans_text = default_lines(|| {
        let request = tracing::info_span!("request", id = %id, cache = tracing::field::Empty);
        request.in_scope(|| {
            within_a_request(&|word| {
                request.record("cache", word);
            });
        });
        tracing::info!("after the request");
    });
    let contexts_text = plain_lines(|| {
        let context = Arc::new(RequestContext::new(id));
        WithRequest::new(Some(context), async { within_a_request(&note_cache) })
            .now_or_never()
            .unwrap();
        tracing::info!("after the request");
    });
    let (expected, _) = split(&spans_text);
    let (got, _) = split(&contexts_text);
    assert_eq!(got, expected);
    assert_eq!(got.len(), 4, "{contexts_text}");
    assert!(
        got[2].starts_with(
            "ERROR request{id=0000000000007f3a cache=\"hit\" cache=\"miss\"}:inner{step=2}: "
        ),
        "{contexts_text}"
    );
    assert!(got[3].starts_with(" INFO tfmirror::"), "{contexts_text}");
}

/// A request's line written directly has the bytes its event gets through
/// the plain line: within a context with cache outcomes noted, with none,
/// and without a context; methods, clients, paths, statuses and durations
/// at their edges.
#[test]
fn a_request_line_written_directly_is_the_line_of_its_event() {
    use futures_util::FutureExt as _;

    use crate::log_context::{note_cache, AccessLine, RequestContext, RequestId, WithRequest};

    let requests = [
        AccessLine {
            client: "192.0.2.1",
            method: "GET",
            path: "/registry.terraform.io/hashicorp/aws/index.json",
            status: 200,
            ms: 0,
        },
        AccessLine {
            client: "2001:db8::1",
            method: "HEAD",
            path: "/registry.terraform.io/hashicorp/aws/5.0.0.json",
            status: 304,
            ms: u64::MAX,
        },
        AccessLine {
            client: "203.0.113.9",
            method: "DELETE",
            path: "/a%20b/%2e%2e/\"q\"/caf\u{e9}",
            status: 405,
            ms: 12,
        },
    ];
    let notes: [Option<&[&'static str]>; 4] =
        [None, Some(&[]), Some(&["miss"]), Some(&["stale", "hit"])];
    let mut direct = String::new();
    let through_event = plain_lines(|| {
        for (n, line) in (0_u64..).zip(&requests) {
            for words in notes {
                let context =
                    words.map(|_| Arc::new(RequestContext::new(RequestId::new(n << 60 | 0xab))));
                WithRequest::new(context.clone(), async {
                    for word in words.unwrap_or_default() {
                        note_cache(word);
                    }
                    line.event();
                })
                .now_or_never()
                .unwrap();
                let mut one = String::new();
                super::write_access_line(&mut one, line, context.as_deref()).unwrap();
                direct.push_str(&one);
            }
        }
    });
    let (expected, _) = split(&through_event);
    let (got, times) = split(&direct);
    assert_eq!(got.len(), 12, "{direct}");
    assert_eq!(got, expected);
    assert_eq!(
        got[0],
        " INFO tfmirror::access: answered client=192.0.2.1 method=GET \
         path=/registry.terraform.io/hashicorp/aws/index.json status=200 ms=0"
    );
    assert!(
        got[7].starts_with(
            " INFO request{id=10000000000000ab cache=\"stale\" cache=\"hit\"}: \
             tfmirror::access: answered client=2001:db8::1 method=HEAD "
        ),
        "{direct}"
    );
    for time in times {
        assert_eq!(time.len(), "2026-11-26T23:04:08.656009Z".len(), "{time}");
        assert!(time.ends_with('Z'), "{time}");
    }
}
