//! The request a log line is written within: its ID and cache outcomes,
//! shown before the line's target as `request{id=… cache="hit"}:`.
//!
//! Usually a tracing span carries them. When the log's lines are
//! tfmirror's own plain text and nothing else reads spans (no JSON, no
//! colours, no audit file, no span directive in the filter; see
//! `commands::logging`), the daemon says so with [`show_in_lines`], and
//! each request is given a [`RequestContext`] instead: set on the thread
//! while it is answered ([`within`]) and while its future is polled
//! ([`WithRequest`]), noted by the mirror
//! ([`note_cache`]) and written by the line formatter ([`with_current`]),
//! the same text as the span's. A span is made, entered, recorded, left
//! and closed on every request, and its fields formatted as they come:
//! some 5,000 instructions, an eighth of a warm request's work.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};

use bytes::BytesMut;
use http::HeaderValue;
use smallvec::SmallVec;
use tracing_core::callsite::Callsite;
use tracing_core::field::FieldSet;
use tracing_core::metadata::Kind;
use tracing_core::{identify_callsite, Interest, Level, Metadata};

mod access;
#[cfg(test)]
pub(crate) mod memory_log;
#[cfg(test)]
mod tests;
pub use access::{
    access_event, write_directly, AccessLine, DirectWriter, ACCESS_TARGET, AUDIT_TARGET,
};

/// The target of a request's span: the module that answers requests.
pub const REQUEST_TARGET: &str = "tfmirror::http::dispatch";

/// Requests are given a span ([`MODE`]).
const SPANS: u8 = 0;
/// Requests are given a context, which lines show.
const SHOWN: u8 = 1;
/// Requests are given neither: the filter leaves their span out.
const HIDDEN: u8 = 2;

/// How requests are named in the log's lines: [`SPANS`], [`SHOWN`] or
/// [`HIDDEN`].
static MODE: AtomicU8 = AtomicU8::new(SPANS);

/// Says that the log's lines show requests' contexts instead of spans:
/// from now on each request is given a [`RequestContext`] where `shown`
/// (the filter enables the request's span, [`request_span`]), and nothing
/// where not. Called once, as logging starts, before any request.
pub fn show_in_lines(shown: bool) {
    MODE.store(if shown { SHOWN } else { HIDDEN }, Ordering::Relaxed);
}

/// Whether requests are given contexts instead of spans (see
/// [`show_in_lines`]).
pub fn shown_in_lines() -> bool {
    MODE.load(Ordering::Relaxed) != SPANS
}

/// The context for the request `id`, where the log's lines show one: the
/// thread's spare ([`recycle`]) when it has one, else a new one.
pub fn context_for(id: RequestId) -> Option<Arc<RequestContext>> {
    (MODE.load(Ordering::Relaxed) == SHOWN).then(|| spare_or_new(id))
}

/// A context for the request `id`: the thread's spare, or a new one.
fn spare_or_new(id: RequestId) -> Arc<RequestContext> {
    if let Some(mut spare) = SPARE.take() {
        if let Some(context) = Arc::get_mut(&mut spare) {
            context.id = id;
            context
                .cache
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
            return spare;
        }
    }
    Arc::new(RequestContext::new(id))
}

/// Keeps a finished request's context as the thread's spare, for the next
/// request's [`context_for`] (when nothing else holds it): a request
/// answered at once then allocates nothing for its context.
pub fn recycle(context: Option<Arc<RequestContext>>) {
    if let Some(context) = context.filter(|c| Arc::strong_count(c) == 1 && Arc::weak_count(c) == 0)
    {
        SPARE.set(Some(context));
    }
}

/// The request span's description (its name, target, level and fields),
/// for asking a filter whether it enables the span.
pub fn request_span() -> &'static Metadata<'static> {
    &REQUEST_SPAN
}

/// The callsite of a description made only to be shown to a filter
/// ([`request_span`], [`access_event`]): never registered with a
/// subscriber.
struct Described(&'static Metadata<'static>);

impl Callsite for Described {
    fn set_interest(&self, _: Interest) {}

    fn metadata(&self) -> &Metadata<'_> {
        self.0
    }
}

static REQUEST_SPAN_CALLSITE: Described = Described(&REQUEST_SPAN);

static REQUEST_SPAN: Metadata<'static> = Metadata::new(
    "request",
    REQUEST_TARGET,
    Level::INFO,
    None,
    None,
    None,
    FieldSet::new(&["id", "cache"], identify_callsite!(&REQUEST_SPAN_CALLSITE)),
    Kind::SPAN,
);

/// A request ID: unique within this process, and unlikely to repeat across
/// restarts because the counter starts from the clock.
pub fn next_request_id() -> RequestId {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static START: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let start = *START.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
            })
    });
    RequestId::new(start.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed)))
}

/// A request's ID as it is shown: 16 lowercase hexadecimal digits, held
/// without an allocation.
#[derive(Clone, Copy)]
pub struct RequestId([u8; 16]);

impl RequestId {
    /// The ID of the number `n`.
    pub fn new(n: u64) -> RequestId {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut text = [0; 16];
        for (i, digit) in text.iter_mut().enumerate() {
            *digit = DIGITS[usize::try_from((n >> (60 - 4 * i)) & 0xf).unwrap_or(0)];
        }
        RequestId(text)
    }

    /// The ID's text.
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(&self.0).expect("hexadecimal digits are UTF-8")
    }

    /// The ID as the `X-Request-Id` header's value: never indexed by
    /// HTTP/2's header compression, as a value used once would only push
    /// reusable entries out of its table. Its bytes are cut from a buffer
    /// this thread shares among the values it makes, not allocated for
    /// each answer.
    pub fn header_value(&self) -> HeaderValue {
        let bytes = ID_VALUES.with_borrow_mut(|values| {
            if values.capacity() < self.0.len() {
                *values = BytesMut::with_capacity(ID_VALUES_BYTES);
            }
            values.extend_from_slice(&self.0);
            values.split().freeze()
        });
        let mut value =
            HeaderValue::from_maybe_shared(bytes).expect("hexadecimal digits are a header value");
        value.set_sensitive(true);
        value
    }
}

/// The size of a buffer `X-Request-Id` values are cut from: 64 values.
const ID_VALUES_BYTES: usize = 1024;

thread_local! {
    /// What is left of this thread's buffer for `X-Request-Id` values. A
    /// value cut from it holds a count on the whole buffer, which is freed
    /// when the last value (sent and dropped with its answer's head) and
    /// this remainder are gone: one allocation every 64 answers.
    static ID_VALUES: RefCell<BytesMut> = RefCell::new(BytesMut::new());
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the lines logged within one request say about it.
pub struct RequestContext {
    id: RequestId,
    /// The cache outcomes noted, in order (a span shows each value
    /// recorded on it, so two notes show twice); a request notes one or
    /// two, kept without an allocation.
    cache: Mutex<SmallVec<[&'static str; 2]>>,
}

impl RequestContext {
    /// The context of the request `id`, with no cache outcome yet.
    pub fn new(id: RequestId) -> RequestContext {
        RequestContext {
            id,
            cache: Mutex::new(SmallVec::new()),
        }
    }

    /// Writes `request{id=… cache="…"}:`, as the request's span shows in
    /// a line.
    pub fn write_prefix(&self, out: &mut dyn fmt::Write) -> fmt::Result {
        out.write_str("request{id=")?;
        out.write_str(self.id.as_str())?;
        let cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        for word in cache.iter() {
            out.write_str(" cache=\"")?;
            out.write_str(word)?;
            out.write_char('"')?;
        }
        out.write_str("}:")
    }
}

thread_local! {
    /// The context of the request whose future this thread is polling.
    static CURRENT: Cell<Option<Arc<RequestContext>>> = const { Cell::new(None) };
    /// A finished request's context, kept for the next ([`recycle`]).
    static SPARE: Cell<Option<Arc<RequestContext>>> = const { Cell::new(None) };
}

/// Notes a cache outcome (`hit`, `miss`, `stale`) on the current request's
/// context, if there is one.
pub fn note_cache(word: &'static str) {
    with_current(|context| {
        if let Some(context) = context {
            context
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(word);
        }
    });
}

/// Calls `f` with the current request's context, if there is one.
pub fn with_current<R>(f: impl FnOnce(Option<&RequestContext>) -> R) -> R {
    with_held(|held| f(held.map(|context| &**context)))
}

/// Calls `f` with the thread's slot's context, taken out for the call and
/// put back after it (even if `f` panics).
fn with_held<R>(f: impl FnOnce(Option<&Arc<RequestContext>>) -> R) -> R {
    CURRENT.with(|cell| {
        let restore = Restore {
            cell,
            held: cell.take(),
        };
        f(restore.held.as_ref())
    })
}

/// Puts a context back in the thread's slot when dropped.
struct Restore<'a> {
    cell: &'a Cell<Option<Arc<RequestContext>>>,
    held: Option<Arc<RequestContext>>,
}

impl Drop for Restore<'_> {
    fn drop(&mut self) {
        self.cell.set(self.held.take());
    }
}

pin_project_lite::pin_project! {
    /// A future polled with a request's context set on its thread (none:
    /// polled as it is).
    pub struct WithRequest<F> {
        context: Option<Arc<RequestContext>>,
        #[pin]
        inner: F,
    }
}

impl<F> WithRequest<F> {
    /// `inner`, polled within `context`.
    pub fn new(context: Option<Arc<RequestContext>>, inner: F) -> WithRequest<F> {
        WithRequest { context, inner }
    }
}

/// `future`, polled within the current request's context (for work a
/// request spawns, whose notes belong to that request).
pub fn in_current_request<F>(future: F) -> WithRequest<F> {
    let context = with_held(|held| held.map(Arc::clone));
    WithRequest::new(context, future)
}

impl<F: Future> Future for WithRequest<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        within(this.context, || this.inner.poll(cx))
    }
}

/// Calls `f` with `context` set on the thread as the current request's
/// (`None`: as the thread has it), for work a request does without a
/// future; the context is back in `context` after the call.
pub fn within<R>(context: &mut Option<Arc<RequestContext>>, f: impl FnOnce() -> R) -> R {
    let Some(taken) = context.take() else {
        return f();
    };
    CURRENT.with(|cell| {
        // The context goes into the slot for the call and comes back
        // after it, panic or not; what was there before goes back too.
        let previous = cell.replace(Some(taken));
        let back = TakeBack {
            cell,
            previous,
            into: context,
        };
        let out = f();
        drop(back);
        out
    })
}

/// Takes a request's context back out of the thread's slot, and puts the
/// slot's previous context back, when dropped.
struct TakeBack<'a> {
    cell: &'a Cell<Option<Arc<RequestContext>>>,
    previous: Option<Arc<RequestContext>>,
    into: &'a mut Option<Arc<RequestContext>>,
}

impl Drop for TakeBack<'_> {
    fn drop(&mut self) {
        *self.into = self.cell.replace(self.previous.take());
    }
}
