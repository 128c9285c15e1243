use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use futures_util::FutureExt as _;

use super::{
    in_current_request, note_cache, recycle, spare_or_new, with_current, within, RequestContext,
    RequestId, WithRequest,
};

/// The prefix the current request's context writes, if there is one.
fn current_prefix() -> Option<String> {
    with_current(|context| {
        context.map(|c| {
            let mut text = String::new();
            c.write_prefix(&mut text).unwrap();
            text
        })
    })
}

fn context(n: u64) -> Arc<RequestContext> {
    Arc::new(RequestContext::new(RequestId::new(n)))
}

#[test]
fn a_context_is_current_only_while_its_future_is_polled() {
    assert_eq!(current_prefix(), None);
    let seen = WithRequest::new(Some(context(0xab)), async { current_prefix() })
        .now_or_never()
        .unwrap();
    assert_eq!(seen.as_deref(), Some("request{id=00000000000000ab}:"));
    assert_eq!(current_prefix(), None);
    // Without a context the future is polled as it is.
    let seen = WithRequest::new(None, async { current_prefix() })
        .now_or_never()
        .unwrap();
    assert_eq!(seen, None);
}

#[test]
fn cache_outcomes_show_in_the_order_noted_and_only_in_their_request() {
    let first = context(1);
    let second = context(2);
    WithRequest::new(Some(first.clone()), async {
        note_cache("hit");
        // A request polled within another has its own context, and the
        // outer one is current again after it.
        WithRequest::new(Some(second.clone()), async { note_cache("miss") }).await;
        note_cache("stale");
        // More outcomes than a context keeps inline.
        note_cache("miss");
    })
    .now_or_never()
    .unwrap();
    // Outside any request a note goes nowhere.
    note_cache("hit");
    let prefix = |c: &RequestContext| {
        let mut text = String::new();
        c.write_prefix(&mut text).unwrap();
        text
    };
    assert_eq!(
        prefix(&first),
        "request{id=0000000000000001 cache=\"hit\" cache=\"stale\" cache=\"miss\"}:"
    );
    assert_eq!(
        prefix(&second),
        "request{id=0000000000000002 cache=\"miss\"}:"
    );
}

/// A future that is pending once (the context leaves the thread between
/// polls) and then reads the current context.
struct Twice(bool);

impl Future for Twice {
    type Output = Option<String>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<String>> {
        if self.0 {
            return Poll::Ready(current_prefix());
        }
        self.0 = true;
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

#[test]
fn between_polls_the_thread_holds_no_context() {
    let mut future = Box::pin(WithRequest::new(Some(context(3)), Twice(false)));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(future.as_mut().poll(&mut cx).is_pending());
    assert_eq!(current_prefix(), None);
    let Poll::Ready(seen) = future.as_mut().poll(&mut cx) else {
        panic!("ready on the second poll");
    };
    assert_eq!(seen.as_deref(), Some("request{id=0000000000000003}:"));
}

#[test]
fn a_panic_while_polled_leaves_the_thread_without_the_context() {
    let outer = context(4);
    WithRequest::new(Some(outer), async {
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            WithRequest::new(Some(context(5)), async { panic!("in the request") }).now_or_never()
        }));
        assert!(panicked.is_err());
        // The outer request's context is back.
        assert_eq!(
            current_prefix().as_deref(),
            Some("request{id=0000000000000004}:")
        );
    })
    .now_or_never()
    .unwrap();
    assert_eq!(current_prefix(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn work_a_request_spawns_notes_on_that_request() {
    let request = context(6);
    WithRequest::new(Some(request.clone()), async {
        let spawned = tokio::spawn(in_current_request(async {
            note_cache("miss");
            current_prefix()
        }));
        assert_eq!(
            spawned.await.unwrap().as_deref(),
            Some("request{id=0000000000000006 cache=\"miss\"}:")
        );
    })
    .await;
    // Spawned outside any request: no context.
    let outside = tokio::spawn(in_current_request(async { current_prefix() }));
    assert_eq!(outside.await.unwrap(), None);
    let mut text = String::new();
    request.write_prefix(&mut text).unwrap();
    assert_eq!(text, "request{id=0000000000000006 cache=\"miss\"}:");
}

#[test]
fn a_finished_context_is_reused_blank_and_one_still_held_is_not() {
    let prefix = |c: &RequestContext| {
        let mut text = String::new();
        c.write_prefix(&mut text).unwrap();
        text
    };
    let mut first = Some(spare_or_new(RequestId::new(1)));
    within(&mut first, || note_cache("hit"));
    let first = first.unwrap();
    assert_eq!(
        prefix(&first),
        "request{id=0000000000000001 cache=\"hit\"}:"
    );
    let at = Arc::as_ptr(&first);
    recycle(Some(first));
    let second = spare_or_new(RequestId::new(2));
    assert_eq!(Arc::as_ptr(&second), at, "the spare was reused");
    assert_eq!(prefix(&second), "request{id=0000000000000002}:");
    // A context something else still holds (a task the request spawned)
    // is left to it.
    let held = second.clone();
    recycle(Some(second));
    let third = spare_or_new(RequestId::new(3));
    assert_ne!(Arc::as_ptr(&third), Arc::as_ptr(&held));
    assert_eq!(prefix(&held), "request{id=0000000000000002}:");
}
