//! The `Date` of answers made now: formatted once a second on each thread
//! and shared by the answers of that second, so that an answer copies a
//! pointer instead of formatting or copying the text.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use http::HeaderValue;

thread_local! {
    /// The second last formatted on this thread, and its value.
    static LAST: RefCell<Option<(u64, HeaderValue)>> = const { RefCell::new(None) };
}

/// `Date` for an answer made now.
pub fn now() -> HeaderValue {
    at(SystemTime::now())
}

/// `Date` for an answer made at `time` (to the second, as HTTP dates are).
fn at(time: SystemTime) -> HeaderValue {
    let secs = time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    LAST.with_borrow_mut(|last| match last {
        Some((second, value)) if *second == secs => value.clone(),
        _ => {
            let text = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(secs));
            let value = HeaderValue::from_maybe_shared(bytes::Bytes::from(text))
                .expect("an HTTP date is a header value");
            *last = Some((secs, value.clone()));
            value
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_value_a_second_and_a_new_one_the_next() {
        let start = UNIX_EPOCH + Duration::from_secs(1_795_874_638);
        let first = at(start);
        assert_eq!(first, "Sat, 28 Nov 2026 14:03:58 GMT");
        let same = at(start + Duration::from_millis(999));
        assert_eq!(same, first);
        assert_eq!(
            same.as_bytes().as_ptr(),
            first.as_bytes().as_ptr(),
            "shared, not copied"
        );
        assert_eq!(
            at(start + Duration::from_secs(1)),
            "Sat, 28 Nov 2026 14:03:59 GMT"
        );
        // The clock going back is answered too.
        assert_eq!(at(start), "Sat, 28 Nov 2026 14:03:58 GMT");
    }
}
