//! The text log line, written without colours: the same line, byte for
//! byte, as `tracing-subscriber`'s default ("full") format with ANSI
//! escapes off, made with less work, since the daemon writes one for every
//! request.
//!
//! `TIMESTAMP LEVEL span{fields}:span{fields}: target: message key=value…`
//!
//! The timestamp is RFC 3339 in UTC with microseconds; the part up to the
//! seconds is formatted once per second on each thread and reused. Levels
//! are five characters wide, right-aligned. Span and event fields are
//! formatted by the layer's field formatter, [`PlainFields`] (written the
//! default way, without its styling). A terminal still gets the coloured
//! default format (see [`super::logging`]). A request's context
//! ([`crate::log_context`]) is written as its span would be.

use std::cell::RefCell;
use std::fmt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tracing::{Event, Level, Subscriber};
use tracing_log::NormalizeEvent as _;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::time::FormatTime as _;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, FormattedFields};
use tracing_subscriber::registry::LookupSpan;

use crate::log_context::{AccessLine, RequestContext, ACCESS_TARGET};

mod fields;
pub(super) use fields::PlainFields;

/// The plain text line; see the module's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct PlainLine;

impl<S, N> FormatEvent<S, N> for PlainLine
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        // Events forwarded from the `log` crate name their own target.
        let normalized = event.normalized_metadata();
        let meta = normalized.as_ref().unwrap_or_else(|| event.metadata());
        write_timestamp(&mut writer, SystemTime::now())?;
        writer.write_char(' ')?;
        writer.write_str(level_word(*meta.level()))?;
        writer.write_char(' ')?;
        // The request's context, where the request has one instead of a
        // span: written as its span would be, first.
        let mut any = crate::log_context::with_current(|context| match context {
            Some(context) => context.write_prefix(&mut writer).map(|()| true),
            None => Ok(false),
        })?;
        if let Some(scope) = ctx.event_scope() {
            for span in scope.from_root() {
                any = true;
                writer.write_str(span.metadata().name())?;
                let ext = span.extensions();
                if let Some(fields) = ext.get::<FormattedFields<N>>() {
                    if !fields.is_empty() {
                        writer.write_char('{')?;
                        writer.write_str(fields)?;
                        writer.write_char('}')?;
                    }
                }
                writer.write_char(':')?;
            }
        }
        if any {
            writer.write_char(' ')?;
        }
        writer.write_str(meta.target())?;
        writer.write_str(": ")?;
        ctx.format_fields(writer.by_ref(), event)?;
        writer.write_char('\n')
    }
}

/// A request's line ([`AccessLine`]), written straight into `out` as
/// [`PlainLine`] and [`PlainFields`] write its event where no span is
/// current: the same bytes, within `context` where the request has one.
pub(super) fn write_access_line(
    out: &mut String,
    line: &AccessLine<'_>,
    context: Option<&RequestContext>,
) -> fmt::Result {
    write_timestamp(&mut Writer::new(out), SystemTime::now())?;
    // Appended to the line's own buffer, without a writer between.
    out.push(' ');
    out.push_str(level_word(Level::INFO));
    out.push(' ');
    if let Some(context) = context {
        context.write_prefix(out)?;
        out.push(' ');
    }
    // The message first, then the fields as the event names them; their
    // values are written as they are (only a message is escaped).
    for part in [
        ACCESS_TARGET,
        ": answered client=",
        line.client,
        " method=",
        line.method,
        " path=",
        line.path,
        " status=",
        itoa::Buffer::new().format(line.status),
        " ms=",
        itoa::Buffer::new().format(line.ms),
        "\n",
    ] {
        out.push_str(part);
    }
    Ok(())
}

/// A level as the default format writes it: five characters, right-aligned.
fn level_word(level: Level) -> &'static str {
    match level {
        Level::TRACE => "TRACE",
        Level::DEBUG => "DEBUG",
        Level::INFO => " INFO",
        Level::WARN => " WARN",
        Level::ERROR => "ERROR",
    }
}

/// The last second formatted on this thread: its seconds since the epoch
/// and `YYYY-MM-DDTHH:MM:SS.`.
struct SecondPrefix {
    secs: u64,
    text: String,
}

thread_local! {
    static PREFIX: RefCell<Option<SecondPrefix>> = const { RefCell::new(None) };
}

/// The last second humantime formats (the end of year 9999).
const LAST_FORMATTED_SECOND: u64 = 253_402_300_799;

/// Writes `now` as `YYYY-MM-DDTHH:MM:SS.ffffffZ`. A clock set before the
/// epoch or past year 9999 gets `tracing-subscriber`'s own timestamp, which
/// reads the clock again: the line still starts with the time.
fn write_timestamp(writer: &mut Writer<'_>, now: SystemTime) -> fmt::Result {
    let since = match now.duration_since(UNIX_EPOCH) {
        Ok(since) if since.as_secs() <= LAST_FORMATTED_SECOND => since,
        _ => return tracing_subscriber::fmt::time::SystemTime.format_time(writer),
    };
    let secs = since.as_secs();
    PREFIX.with(|cell| {
        let mut cell = cell.borrow_mut();
        let prefix = match cell.as_mut() {
            Some(p) if p.secs == secs => p,
            _ => cell.insert(SecondPrefix {
                secs,
                text: second_prefix(secs),
            }),
        };
        writer.write_str(&prefix.text)
    })?;
    let digits = micros(since.subsec_micros());
    writer.write_str(std::str::from_utf8(&digits).map_err(|_| fmt::Error)?)?;
    writer.write_char('Z')
}

/// `YYYY-MM-DDTHH:MM:SS.` of a second since the epoch (at most
/// [`LAST_FORMATTED_SECOND`]).
fn second_prefix(secs: u64) -> String {
    let whole = humantime::format_rfc3339_seconds(UNIX_EPOCH + Duration::from_secs(secs));
    let mut text = whole.to_string();
    // "…:SSZ" → "…:SS."
    text.pop();
    text.push('.');
    text
}

/// Microseconds as six ASCII digits.
fn micros(value: u32) -> [u8; 6] {
    let mut digits = [b'0'; 6];
    let mut rest = value.min(999_999);
    for slot in digits.iter_mut().rev() {
        *slot = b"0123456789"[(rest % 10) as usize];
        rest /= 10;
    }
    digits
}

#[cfg(test)]
mod tests;
