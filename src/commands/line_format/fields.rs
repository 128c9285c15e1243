//! The fields of a text log line, of its event and of its spans, written as
//! `tracing-subscriber`'s default field formatter writes them without
//! colours: `message` first as its text, then `name=value` (a value's
//! `Debug` form) separated by spaces; a message has the characters that
//! drive a terminal escaped (`\x1b`, `\u{9b}`); fields of a forwarded `log`
//! record's metadata (`log.target`, …) are left out, its line names them
//! already; an error is followed by the list of its sources.
//!
//! Numbers, booleans and plain strings (a request line's status and
//! duration, a span's cache outcome) are written without the formatting
//! machinery: the same text, with a fraction of the work.

use std::error::Error;
use std::fmt::{self, Write as _};

use tracing::field::{Field, Visit};
use tracing_subscriber::field::RecordFields;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::FormatFields;

/// The field formatter; see the module's documentation.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::commands) struct PlainFields;

impl<'w> FormatFields<'w> for PlainFields {
    fn format_fields<R: RecordFields>(&self, writer: Writer<'w>, fields: R) -> fmt::Result {
        let mut visitor = Visitor {
            writer,
            first: true,
            result: Ok(()),
        };
        fields.record(&mut visitor);
        visitor.result
    }
}

struct Visitor<'w> {
    writer: Writer<'w>,
    first: bool,
    result: fmt::Result,
}

impl Visitor<'_> {
    fn write(&mut self, name: &str, value: &dyn fmt::Debug) -> fmt::Result {
        if name == "message" {
            self.separate()?;
            return write!(Escaping(&mut self.writer), "{value:?}");
        }
        self.name(name)?;
        write!(self.writer, "{value:?}")
    }

    /// The space before every field but the first.
    fn separate(&mut self) -> fmt::Result {
        if !self.first {
            self.writer.write_char(' ')?;
        }
        self.first = false;
        Ok(())
    }

    /// The space before a field other than the message, and `name=`.
    fn name(&mut self, name: &str) -> fmt::Result {
        self.separate()?;
        self.writer
            .write_str(name.strip_prefix("r#").unwrap_or(name))?;
        self.writer.write_char('=')
    }

    /// Whether `field` is written as text of its own: a field other than
    /// the message and the `log` crate's metadata, while nothing failed.
    fn plain_field(&self, field: &Field) -> bool {
        self.result.is_ok() && field.name() != "message" && !field.name().starts_with("log.")
    }

    /// Writes `name=` and `text`, a value's `Debug` form.
    fn write_text(&mut self, name: &str, text: &str) {
        self.result = self.name(name).and_then(|()| self.writer.write_str(text));
    }
}

/// Whether a string's `Debug` form is the string in quotes: no quote,
/// backslash or character outside printable ASCII to escape.
fn quotes_alone(value: &str) -> bool {
    value
        .bytes()
        .all(|b| (b' '..=b'~').contains(&b) && b != b'"' && b != b'\\')
}

impl Visit for Visitor<'_> {
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        if self.result.is_err() || field.name().starts_with("log.") {
            return;
        }
        self.result = self.write(field.name(), value);
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        // A message is its text; any other string is quoted.
        if field.name() == "message" {
            self.record_debug(field, &format_args!("{value}"));
        } else if self.plain_field(field) && quotes_alone(value) {
            self.result = self.name(field.name()).and_then(|()| {
                self.writer.write_char('"')?;
                self.writer.write_str(value)?;
                self.writer.write_char('"')
            });
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_u64(&mut self, field: &Field, value: u64) {
        if self.plain_field(field) {
            self.write_text(field.name(), itoa::Buffer::new().format(value));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_i64(&mut self, field: &Field, value: i64) {
        if self.plain_field(field) {
            self.write_text(field.name(), itoa::Buffer::new().format(value));
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_bool(&mut self, field: &Field, value: bool) {
        if self.plain_field(field) {
            self.write_text(field.name(), if value { "true" } else { "false" });
        } else {
            self.record_debug(field, &value);
        }
    }

    fn record_error(&mut self, field: &Field, value: &(dyn Error + 'static)) {
        match value.source() {
            Some(source) => self.record_debug(
                field,
                &format_args!(
                    "{} {}.sources={}",
                    Escaped(value),
                    field.name(),
                    Sources(source)
                ),
            ),
            None => self.record_debug(field, &format_args!("{}", Escaped(value))),
        }
    }
}

/// A `fmt::Write` that escapes the characters that drive a terminal.
struct Escaping<'a, W: ?Sized>(&'a mut W);

impl<W: fmt::Write + ?Sized> fmt::Write for Escaping<'_, W> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        // Most text has none of them: written whole. (0xC2 leads every
        // character from U+0080 to U+00BF in UTF-8.)
        if !s
            .bytes()
            .any(|b| matches!(b, 0x07 | 0x08 | 0x0c | 0x1b | 0x7f | 0xc2))
        {
            return self.0.write_str(s);
        }
        for ch in s.chars() {
            match ch {
                '\x1b' => self.0.write_str("\\x1b")?,
                '\x07' => self.0.write_str("\\x07")?,
                '\x08' => self.0.write_str("\\x08")?,
                '\x0c' => self.0.write_str("\\x0c")?,
                '\x7f' => self.0.write_str("\\x7f")?,
                '\u{80}'..='\u{9f}' => write!(self.0, "\\u{{{:x}}}", u32::from(ch))?,
                _ => self.0.write_char(ch)?,
            }
        }
        Ok(())
    }
}

/// A value's `Display` form, escaped (the same for `Debug`, as a list entry).
struct Escaped<T>(T);

impl<T: fmt::Display> fmt::Display for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(Escaping(f), "{}", self.0)
    }
}

impl<T: fmt::Display> fmt::Debug for Escaped<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// An error and its sources: `[first, second, …]`.
struct Sources<'a>(&'a (dyn Error + 'static));

impl fmt::Display for Sources<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut list = f.debug_list();
        let mut next = Some(self.0);
        while let Some(error) = next {
            list.entry(&Escaped(error));
            next = error.source();
        }
        list.finish()
    }
}
