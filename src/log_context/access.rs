//! The line logged for every answered request, and the way it is written
//! without tracing's machinery where that gives the same bytes.
//!
//! The line is a tracing event (target [`ACCESS_TARGET`], `info`): a
//! filter can route it or switch it off, and JSON, colours, an audit file
//! or span directives see it as they see any event. Where the daemon's
//! lines are tfmirror's plain text and requests carry contexts instead of
//! spans (see [`super::show_in_lines`]), and the filter always enables the
//! line, the daemon installs a writer for it ([`write_directly`]) that
//! formats it straight into the log's buffer: the same bytes, without the
//! event's dispatch, its field visitor and the formatting machinery (some
//! 2,300 instructions of a warm request's 30,000 over HTTP/1.1).

use std::sync::OnceLock;

use tracing_core::field::FieldSet;
use tracing_core::metadata::Kind;
use tracing_core::{identify_callsite, Level, Metadata};

use super::{with_current, Described, RequestContext};

#[cfg(test)]
mod tests;

/// The target of the line logged for every request: a filter can route it,
/// or switch it off (`log.level = "info,tfmirror::access=off"`) and keep
/// the diagnostics.
pub const ACCESS_TARGET: &str = "tfmirror::access";

/// The target of the audit trail's events: what was served, and to whom
/// (`http::audit`), and every decision on a version made at the pages.
pub const AUDIT_TARGET: &str = "tfmirror::audit";

/// What a request's line says: who asked, what for, the answer's status
/// and how long it took (whole milliseconds).
#[derive(Debug, Clone, Copy)]
pub struct AccessLine<'a> {
    /// The client: the peer's address, or the one a trusted proxy
    /// forwarded for.
    pub client: &'a str,
    /// The request's method.
    pub method: &'a str,
    /// The request's path, as it came.
    pub path: &'a str,
    /// The answer's status code.
    pub status: u16,
    /// Milliseconds from the request's arrival to its answer.
    pub ms: u64,
}

/// Writes a request's line, with the context of the request it is written
/// within, where the daemon installed it.
pub type DirectWriter = Box<dyn Fn(&AccessLine<'_>, Option<&RequestContext>) + Send + Sync>;

static DIRECT: OnceLock<DirectWriter> = OnceLock::new();

/// Installs the writer of request lines that bypasses tracing: called once,
/// as logging starts, where the lines are tfmirror's plain text, requests
/// carry contexts instead of spans and the filter always enables
/// [`access_event`]. Returns false if one was already installed.
pub fn write_directly(writer: DirectWriter) -> bool {
    DIRECT.set(writer).is_ok()
}

impl AccessLine<'_> {
    /// Logs the line: through the installed writer, unless a span is
    /// current (the line would name it); otherwise as a tracing event.
    pub fn log(&self) {
        if let Some(direct) = DIRECT.get() {
            if tracing::dispatcher::get_default(|d| d.current_span().id().is_none()) {
                with_current(|context| direct(self, context));
                return;
            }
        }
        self.event();
    }

    /// The line as a tracing event.
    pub fn event(&self) {
        tracing::info!(
            target: ACCESS_TARGET,
            client = %self.client,
            method = %self.method,
            path = %self.path,
            status = self.status,
            ms = self.ms,
            "answered"
        );
    }
}

/// The request line's description (its target, level and fields), for
/// asking a filter whether it enables the line.
pub fn access_event() -> &'static Metadata<'static> {
    &ACCESS_EVENT
}

static ACCESS_EVENT_CALLSITE: Described = Described(&ACCESS_EVENT);

static ACCESS_EVENT: Metadata<'static> = Metadata::new(
    "access line",
    ACCESS_TARGET,
    Level::INFO,
    None,
    None,
    None,
    FieldSet::new(
        &["message", "client", "method", "path", "status", "ms"],
        identify_callsite!(&ACCESS_EVENT_CALLSITE),
    ),
    Kind::EVENT,
);
