//! What changed in one documentation page between two versions: its
//! lines inserted and deleted, in hunks with a few lines of context, as a
//! reader of an upgrade needs them. The difference is computed by the
//! `similar` crate (Myers' algorithm, minimal) within a deadline: two
//! crafted pages of the largest size kept cost at most [`DEADLINE`], past
//! which the difference is still correct (the lines shown are the pages'
//! lines) but may not be the smallest, and says so. At most
//! [`MAX_SHOWN`] lines are shown; the counts are always whole.

use std::time::{Duration, Instant};

use serde::Serialize;
use similar::{Algorithm, ChangeTag, TextDiff};

/// The lines of context shown around each change.
pub const CONTEXT: usize = 3;

/// The longest one difference is computed for before the smallest is
/// given up.
pub const DEADLINE: Duration = Duration::from_millis(500);

/// The most lines shown (changed and context together); past them, the
/// hunks stop and [`TextChanges::cut_short`] says so.
pub const MAX_SHOWN: usize = 20_000;

/// How the lines of two texts differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct TextChanges {
    /// Lines of the newer text not in the older.
    pub inserted: usize,
    /// Lines of the older text not in the newer.
    pub deleted: usize,
    /// The changes with their context, in order.
    pub hunks: Vec<Hunk>,
    /// Whether the hunks stop before the last change ([`MAX_SHOWN`]).
    pub cut_short: bool,
    /// Whether the deadline was reached, so that the difference may not
    /// be the smallest.
    pub approximate: bool,
}

/// A run of changes and the lines around them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hunk {
    /// The hunk's first line in the older text (from 1; the line it
    /// would follow where it holds none of it).
    pub old_start: usize,
    /// How many of the older text's lines it holds.
    pub old_lines: usize,
    /// The hunk's first line in the newer text, as `old_start`.
    pub new_start: usize,
    /// How many of the newer text's lines it holds.
    pub new_lines: usize,
    /// Its lines.
    pub lines: Vec<Line>,
}

/// What a line of a hunk is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LineTag {
    /// In both texts: context.
    Equal,
    /// Only in the older text.
    Delete,
    /// Only in the newer text.
    Insert,
}

impl LineTag {
    /// The mark a line is shown with: ` `, `-` or `+`.
    pub fn mark(self) -> &'static str {
        match self {
            LineTag::Equal => " ",
            LineTag::Delete => "-",
            LineTag::Insert => "+",
        }
    }

    /// The word for it: `same`, `deleted` or `inserted`.
    pub fn word(self) -> &'static str {
        match self {
            LineTag::Equal => "same",
            LineTag::Delete => "deleted",
            LineTag::Insert => "inserted",
        }
    }
}

/// One line of a hunk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Line {
    /// What it is.
    pub tag: LineTag,
    /// Its number in the older text (from 1), where it is in it.
    pub old: Option<usize>,
    /// Its number in the newer text (from 1), where it is in it.
    pub new: Option<usize>,
    /// Its text, without its line ending.
    pub text: String,
}

/// How `new`'s lines differ from `old`'s.
pub fn lines(old: &str, new: &str) -> TextChanges {
    let started = Instant::now();
    let diff = TextDiff::configure()
        .algorithm(Algorithm::Myers)
        .timeout(DEADLINE)
        .diff_lines(old, new);
    let approximate = started.elapsed() >= DEADLINE;
    let mut out = TextChanges {
        inserted: 0,
        deleted: 0,
        hunks: Vec::new(),
        cut_short: false,
        approximate,
    };
    let mut shown = 0usize;
    for group in diff.grouped_ops(CONTEXT) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else {
            continue;
        };
        let (old_range, new_range) = (
            first.old_range().start..last.old_range().end,
            first.new_range().start..last.new_range().end,
        );
        let mut hunk = Hunk {
            old_start: old_range.start + usize::from(!old_range.is_empty()),
            old_lines: old_range.len(),
            new_start: new_range.start + usize::from(!new_range.is_empty()),
            new_lines: new_range.len(),
            lines: Vec::new(),
        };
        for op in &group {
            for change in diff.iter_changes(op) {
                let tag = match change.tag() {
                    ChangeTag::Equal => LineTag::Equal,
                    ChangeTag::Delete => {
                        out.deleted += 1;
                        LineTag::Delete
                    }
                    ChangeTag::Insert => {
                        out.inserted += 1;
                        LineTag::Insert
                    }
                };
                if shown >= MAX_SHOWN {
                    out.cut_short = true;
                    continue;
                }
                shown += 1;
                hunk.lines.push(Line {
                    tag,
                    old: change.old_index().map(|i| i + 1),
                    new: change.new_index().map(|i| i + 1),
                    text: change.value().trim_end_matches(['\n', '\r']).to_owned(),
                });
            }
        }
        if !hunk.lines.is_empty() {
            out.hunks.push(hunk);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_changed_among_others_is_one_hunk_with_its_context() {
        let old = "a\nb\nc\nd\ne\nf\ng\nh\ni\n";
        let new = "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\n";
        let got = lines(old, new);
        assert_eq!((got.inserted, got.deleted), (2, 1));
        assert!(!got.cut_short && !got.approximate);
        assert_eq!(got.hunks.len(), 1);
        let hunk = &got.hunks[0];
        assert_eq!(
            (
                hunk.old_start,
                hunk.old_lines,
                hunk.new_start,
                hunk.new_lines
            ),
            (2, 8, 2, 9)
        );
        let shown: Vec<String> = (hunk.lines.iter())
            .map(|l| format!("{}{}", l.tag.mark(), l.text))
            .collect();
        assert_eq!(
            shown,
            [" b", " c", " d", "-e", "+E", " f", " g", " h", " i", "+j"]
        );
        assert_eq!((hunk.lines[3].old, hunk.lines[3].new), (Some(5), None));
        assert_eq!((hunk.lines[4].old, hunk.lines[4].new), (None, Some(5)));
        assert_eq!(hunk.lines[9].new, Some(10));
    }

    #[test]
    fn the_same_text_has_no_hunk_and_a_new_text_is_all_inserted() {
        assert_eq!(lines("x\ny\n", "x\ny\n").hunks, []);
        let all = lines("", "x\ny");
        assert_eq!((all.inserted, all.deleted, all.hunks.len()), (2, 0, 1));
        assert_eq!((all.hunks[0].old_start, all.hunks[0].old_lines), (0, 0));
        assert_eq!(all.hunks[0].lines[1].text, "y");
    }

    #[test]
    fn two_of_the_largest_pages_of_two_lines_shuffled_stop_at_the_deadline() {
        // Lines `x` and `y` in two unrelated orders, 1 MiB of each (the
        // largest page kept): most lines match somewhere, and the
        // smallest difference is far off.
        let page = |mut seed: u64| -> String {
            let mut out = String::new();
            while out.len() + 2 <= (1 << 20) {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                out.push_str(if seed >> 63 == 0 { "x\n" } else { "y\n" });
            }
            out
        };
        let (old, new) = (page(1), page(2));
        let got = lines(&old, &new);
        assert!(got.approximate, "the smallest difference is given up");
        assert!(got.cut_short);
        // Still a difference: what is kept of the old text, with what is
        // inserted, is the new text's lines in number.
        let (old_n, new_n) = (old.lines().count(), new.lines().count());
        assert_eq!(old_n - got.deleted + got.inserted, new_n);
    }

    #[test]
    fn past_the_lines_shown_the_counts_stay_whole() {
        let (mut old, mut new) = (String::new(), String::new());
        for i in 0..MAX_SHOWN + 10 {
            old.push_str(&i.to_string());
            old.push('\n');
            new.push_str(&i.to_string());
            new.push_str("!\n");
        }
        let got = lines(&old, &new);
        assert_eq!(
            (got.inserted, got.deleted),
            (MAX_SHOWN + 10, MAX_SHOWN + 10)
        );
        assert!(got.cut_short);
        let shown: usize = got.hunks.iter().map(|h| h.lines.len()).sum();
        assert_eq!(shown, MAX_SHOWN);
    }
}
