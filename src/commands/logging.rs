//! The configuration loaded for a command, and logging started as it says:
//! to standard error as each line is made for commands, through a logging
//! thread for the daemon, and the audit trail to its own file when
//! `log.audit_file` names one.

use std::cell::RefCell;
use std::io::{IsTerminal, Write as _};
use std::path::Path;

use anyhow::Context;
use tracing::subscriber::Interest;
use tracing::Metadata;
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::{self, Filter, SubscriberExt as _};
use tracing_subscriber::util::SubscriberInitExt as _;
use tracing_subscriber::Layer as _;
use tracing_subscriber::Registry;

use crate::config::{Config, LogFormat};

/// Loads the configuration and starts logging as it says, to standard
/// error as each line is made (a command's lines interleave with its
/// progress output).
pub(super) fn load(file: Option<&Path>) -> anyhow::Result<Config> {
    let config = super::loaded::load_checked(file)?;
    init_logging(&config, std::io::stderr)?;
    Ok(config)
}

/// Loads the configuration for the daemon, whose log lines (one per
/// request at `info`) are gathered in a buffer that a logging thread
/// writes to standard error in batches, off the request path (see
/// [`super::log_writer`]). Nothing is dropped. The returned guard writes
/// what is left when it is dropped.
pub(super) fn load_daemon(
    file: Option<&Path>,
) -> anyhow::Result<(Config, super::log_writer::Flushed)> {
    let config = super::loaded::load_checked(file)?;
    let (writer, flushed) =
        super::log_writer::start(std::io::stderr()).context("starting the logging thread")?;
    init_logging(&config, writer)?;
    Ok((config, flushed))
}

/// The filter of the log's lines for `spec` (`log.level` or `RUST_LOG`).
/// A spec of targets and levels alone (`info,tfmirror::access=off`; span
/// and field directives are written in `[…]`) is decided by target and
/// level only; see [`ByTargetAndLevel`].
fn line_filter(spec: &str) -> anyhow::Result<Box<dyn Filter<Registry> + Send + Sync>> {
    let filter = EnvFilter::try_new(spec)?;
    if has_span_directives(spec) {
        return Ok(Box::new(filter));
    }
    Ok(Box::new(ByTargetAndLevel(filter)))
}

/// A filter without span directives, asked only what it decides: whether
/// a callsite, span or event is enabled. Its span hooks are left out:
/// they keep the state that span directives need, and take a shared lock
/// each time a span is made, entered, left, recorded or closed (several
/// times for every request) to find there is none.
struct ByTargetAndLevel(EnvFilter);

impl<S> Filter<S> for ByTargetAndLevel {
    fn enabled(&self, meta: &Metadata<'_>, cx: &layer::Context<'_, S>) -> bool {
        Filter::<S>::enabled(&self.0, meta, cx)
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        Filter::<S>::callsite_enabled(&self.0, meta)
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Filter::<S>::max_level_hint(&self.0)
    }
}

pub(super) fn init_logging<W>(config: &Config, writer: W) -> anyhow::Result<()>
where
    W: for<'w> MakeWriter<'w> + Clone + Send + Sync + 'static,
{
    let (spec, what) = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => (spec, "RUST_LOG is not a valid log filter".to_owned()),
        _ => (
            config.log.level.clone(),
            format!("log.level {:?} is not a valid log filter", config.log.level),
        ),
    };
    let filter = line_filter(&spec).context(what)?;
    let terminal = std::io::stderr().is_terminal();
    // Whether the filter enables the request's span, asked before it is
    // handed to the layer.
    let contexts = contexts_in_lines(config, terminal, &spec).then(|| {
        filter
            .callsite_enabled(crate::log_context::request_span())
            .is_always()
    });
    // Requests' lines written directly where that gives the same bytes:
    // tfmirror's plain lines, requests with contexts, and the line always
    // enabled.
    if contexts.is_some()
        && filter
            .callsite_enabled(crate::log_context::access_event())
            .is_always()
    {
        crate::log_context::write_directly(access_lines_to(writer.clone()));
    }
    let lines = match config.log.format {
        // A terminal gets colours; anything else the same line without
        // them, written by tfmirror's own formatter (one per request).
        LogFormat::Pretty if terminal => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(true)
            .boxed(),
        LogFormat::Pretty => tracing_subscriber::fmt::layer()
            .with_writer(writer)
            .with_ansi(false)
            .fmt_fields(super::line_format::PlainFields)
            .event_format(super::line_format::PlainLine)
            .boxed(),
        LogFormat::Json => tracing_subscriber::fmt::layer()
            .json()
            .with_current_span(true)
            .with_writer(writer)
            .boxed(),
    };
    // The audit trail, when it has a file of its own: JSON, whatever the
    // log's level and format.
    let audit = match &config.log.audit_file {
        Some(path) => {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| format!("log.audit_file {}", path.display()))?;
            // The audit events, and the request span that carries their
            // request ID and cache outcome.
            let only_audit = tracing_subscriber::filter::filter_fn(|meta| {
                meta.target() == crate::http::AUDIT_LOG
                    || (meta.is_span() && meta.name() == "request")
            });
            Some(
                tracing_subscriber::fmt::layer()
                    .json()
                    .with_current_span(true)
                    .with_span_list(false)
                    .with_writer(std::sync::Mutex::new(file))
                    .with_filter(only_audit),
            )
        }
        None => None,
    };
    tracing_subscriber::registry()
        .with(lines.with_filter(filter))
        .with(audit)
        .try_init()
        .map_err(|e| anyhow::anyhow!("starting logging: {e}"))?;
    if let Some(shown) = contexts {
        crate::log_context::show_in_lines(shown);
    }
    Ok(())
}

/// The writer of requests' lines that bypasses tracing (see
/// [`crate::log_context::write_directly`]): each line formatted on the
/// thread that answered, into a buffer kept there, and handed to `writer`
/// whole, as the line layer hands it an event's line.
fn access_lines_to<W>(writer: W) -> crate::log_context::DirectWriter
where
    W: for<'w> MakeWriter<'w> + Send + Sync + 'static,
{
    thread_local! {
        static LINE: RefCell<String> = const { RefCell::new(String::new()) };
    }
    Box::new(move |line, context| {
        LINE.with(|kept| {
            // Written within a line's writing (never, but if so): a new
            // buffer rather than a panic.
            let mut fresh = String::new();
            let mut borrowed = kept.try_borrow_mut();
            let out = match borrowed.as_deref_mut() {
                Ok(kept) => kept,
                Err(_) => &mut fresh,
            };
            out.clear();
            if super::line_format::write_access_line(out, line, context).is_ok() {
                let meta = crate::log_context::access_event();
                // As the line layer does: an error writing a line is not
                // the request's.
                let _ = writer.make_writer_for(meta).write_all(out.as_bytes());
            }
        });
    })
}

/// Whether requests are given a [`crate::log_context::RequestContext`]
/// instead of a span: when the lines are tfmirror's plain text (the
/// `pretty` format, not on a `terminal`) and nothing else reads spans: no
/// audit file (its JSON names the request's span) and no span directive
/// in the filter's `spec` (written in `[…]`).
fn contexts_in_lines(config: &Config, terminal: bool, spec: &str) -> bool {
    config.log.format == LogFormat::Pretty
        && !terminal
        && config.log.audit_file.is_none()
        && !has_span_directives(spec)
}

/// Whether a filter spec has span or field directives (written in `[…]`),
/// which depend on spans.
fn has_span_directives(spec: &str) -> bool {
    spec.contains('[')
}

#[cfg(test)]
mod tests;
