//! Progress of a long command: a bar on a terminal, plain lines otherwise.

use std::io::IsTerminal;
use std::sync::OnceLock;

use indicatif::{ProgressBar, ProgressStyle};

/// Progress on a terminal (a bar), or one plain line per event otherwise.
pub struct Progress {
    bar: OnceLock<ProgressBar>,
}

impl Progress {
    /// No bar yet.
    pub fn new() -> Progress {
        Progress {
            bar: OnceLock::new(),
        }
    }

    /// Shows a bar for `total` items (named `unit`) when standard error is
    /// a terminal.
    pub fn start(&self, total: u64, unit: &str) {
        if std::io::stderr().is_terminal() {
            let bar = ProgressBar::new(total);
            bar.set_style(
                ProgressStyle::with_template(&format!(
                    "{{bar:40}} {{pos}}/{{len}} {unit} {{elapsed}}"
                ))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
            );
            let _ = self.bar.set(bar);
        }
    }

    /// Prints a line (above the bar, when there is one).
    pub fn line(&self, text: &str) {
        match self.bar.get() {
            Some(bar) => bar.println(text),
            None => eprintln!("{text}"),
        }
    }

    /// Prints a line and moves the bar one item on.
    pub fn advance(&self, text: &str) {
        self.line(text);
        self.tick();
    }

    /// Moves the bar one item on, printing nothing.
    pub fn tick(&self) {
        if let Some(bar) = self.bar.get() {
            bar.inc(1);
        }
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(bar) = self.bar.get() {
            bar.finish_and_clear();
        }
    }
}

/// A fill (`sync`, `watch --once`, `check --fetch`) counts archives on the
/// bar.
impl crate::site::fill::Observer for Progress {
    fn line(&self, text: &str) {
        Progress::line(self, text);
    }

    fn start(&self, total: u64) {
        Progress::start(self, total, "archives");
    }

    fn advance(&self, text: &str) {
        Progress::advance(self, text);
    }

    fn finish(&self) {
        Progress::finish(self);
    }
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}
