//! What one advisory and the whole database may weigh, whatever an entry
//! claims: the database is read by every instance and held in memory by
//! each, so an import keeps only what matching and the pages need, within
//! bounds stated here and in `docs/configuration.md`.
//!
//! - Text the pages show is cut, and the advisory says so: `details` past
//!   [`MAX_DETAILS`] bytes, `summary` past [`MAX_SUMMARY`].
//! - What matching reads is never cut (a range left out could hide a
//!   finding): an entry with more than [`MAX_LIST`] of anything (aliases,
//!   modules, ranges, events, versions, packages, symbols), or a name or
//!   version longer than [`MAX_NAME`] bytes, is refused, and named by the
//!   import.
//! - The database in total weighs at most [`MAX_DATABASE`] bytes of kept
//!   text, reckoned by [`weight`]: past it the import fails, and the
//!   database kept before stays.

use super::database::Advisory;

/// The most bytes of an advisory's `details` kept (real entries' are a
/// few kilobytes).
pub const MAX_DETAILS: usize = 32 << 10;

/// The most bytes of an advisory's `summary` kept.
pub const MAX_SUMMARY: usize = 1 << 10;

/// The longest ID, alias, module path, package path, symbol, version or
/// link an entry may give, in bytes.
pub const MAX_NAME: usize = 2 << 10;

/// The most items of any one list an entry may give.
pub const MAX_LIST: usize = 4096;

/// The most bytes of kept text a database may hold, over all its
/// advisories ([`weight`]): about twice osv.dev's whole Go database.
pub const MAX_DATABASE: u64 = 256 << 20;

/// What an advisory is reckoned to weigh kept: its text's bytes, and 16
/// for each item of its lists.
pub fn weight(a: &Advisory) -> u64 {
    let text = |s: &str| s.len() as u64 + 16;
    let texts = |list: &[String]| list.iter().map(|s| text(s)).sum::<u64>();
    let mut total = text(&a.id)
        + texts(&a.aliases)
        + text(&a.summary)
        + text(&a.details)
        + text(&a.modified)
        + text(&a.published)
        + text(&a.severity_from)
        + text(&a.url);
    for m in &a.affected {
        total += text(&m.module) + texts(&m.versions);
        for ranges in [&m.ranges, &m.custom_ranges] {
            total += ranges.iter().map(|r| 16 + 48 * r.len() as u64).sum::<u64>();
        }
        for i in &m.imports {
            total += text(&i.path) + texts(&i.symbols) + texts(&i.goos) + texts(&i.goarch);
        }
    }
    total
}

/// Holds a database that arrives whole (in a bundle, or kept by an
/// earlier build) to the bounds of an import: advisories past a list's
/// or a name's bound are left out and counted as refused, text is cut,
/// and a database heavier than [`MAX_DATABASE`] is refused.
pub fn bound_stored(stored: &mut super::database::Stored) -> Result<(), String> {
    let mut total = 0u64;
    let mut refused = Vec::new();
    stored.advisories.retain_mut(|a| match bound(a) {
        Ok(()) => {
            total = total.saturating_add(weight(a));
            true
        }
        Err(why) => {
            refused.push(format!(
                "{}: {why}",
                a.id.chars().take(64).collect::<String>()
            ));
            false
        }
    });
    if total > MAX_DATABASE {
        return Err(format!(
            "its advisories weigh {total} bytes kept, more than the {MAX_DATABASE} a database may"
        ));
    }
    let source = &mut stored.source;
    source.refused_count = source.refused_count.saturating_add(refused.len());
    for why in refused {
        if source.refused.len() < 20 {
            source.refused.push(why);
        }
    }
    source.entries = stored.advisories.len();
    Ok(())
}

/// Cuts an advisory's text to the bounds and checks its lists and names;
/// `Err` says which bound an entry passes (it is then refused).
pub fn bound(a: &mut Advisory) -> Result<(), String> {
    let list = |what: &str, n: usize| {
        if n > MAX_LIST {
            Err(format!("{what} lists {n} items, more than {MAX_LIST}"))
        } else {
            Ok(())
        }
    };
    let names = |what: &str, names: &[String]| {
        list(what, names.len())?;
        match names.iter().find(|n| n.len() > MAX_NAME) {
            Some(n) => Err(format!(
                "{what} gives a name of {} bytes, more than {MAX_NAME}",
                n.len()
            )),
            None => Ok(()),
        }
    };
    names("id", std::slice::from_ref(&a.id))?;
    names("aliases", &a.aliases)?;
    names("the link", std::slice::from_ref(&a.url))?;
    list("affected", a.affected.len())?;
    for m in &a.affected {
        names("a package's name", std::slice::from_ref(&m.module))?;
        names("versions", &m.versions)?;
        for ranges in [&m.ranges, &m.custom_ranges] {
            list("ranges", ranges.len())?;
            for r in ranges {
                list("a range's events", r.len())?;
            }
        }
        list("imports", m.imports.len())?;
        for i in &m.imports {
            names("an import's path", std::slice::from_ref(&i.path))?;
            names("symbols", &i.symbols)?;
            names("goos", &i.goos)?;
            names("goarch", &i.goarch)?;
        }
    }
    if a.details.len() > MAX_DETAILS {
        a.details_cut = a.details_cut.max(a.details.len() as u64);
        a.details
            .truncate(floor_char_boundary(&a.details, MAX_DETAILS));
        // A cut string keeps what it held until told to let it go.
        a.details.shrink_to_fit();
    }
    if a.summary.len() > MAX_SUMMARY {
        a.summary
            .truncate(floor_char_boundary(&a.summary, MAX_SUMMARY));
        a.summary.shrink_to_fit();
    }
    Ok(())
}

/// The largest char boundary of `s` at or below `at`.
fn floor_char_boundary(s: &str, at: usize) -> usize {
    (0..=at.min(s.len()))
        .rev()
        .find(|i| s.is_char_boundary(*i))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::advisories::database::{AffectedModule, Review, Source, Stored};

    fn advisory(id: &str) -> Advisory {
        Advisory {
            id: id.into(),
            aliases: Vec::new(),
            summary: "one line".into(),
            details: "some words".into(),
            details_cut: 0,
            modified: "2024-01-01T00:00:00Z".into(),
            published: String::new(),
            severity: None,
            severity_from: String::new(),
            review: Review::Unknown,
            url: String::new(),
            affected: vec![AffectedModule {
                module: "golang.org/x/net".into(),
                ranges: Vec::new(),
                versions: Vec::new(),
                custom_ranges: Vec::new(),
                imports: Vec::new(),
            }],
        }
    }

    #[test]
    fn text_the_pages_show_is_cut_and_says_so() {
        let mut a = advisory("GO-2099-0001");
        // A two-byte letter across the cut: the cut keeps whole letters.
        a.details = format!("a{}", "é".repeat(MAX_DETAILS));
        a.summary = "s".repeat(MAX_SUMMARY * 3);
        let had = a.details.len() as u64;
        bound(&mut a).unwrap();
        assert_eq!(a.details_cut, had);
        // The bounds docs/configuration.md states: 32 KiB and 1 KiB.
        assert!(a.details.len() <= 32 * 1024 && a.details.len() >= 32 * 1024 - 1);
        assert!(a.details.starts_with("aé"));
        assert_eq!(a.summary.len(), 1024);
        // Whole text stays whole, and says nothing.
        let mut whole = advisory("GO-2099-0002");
        whole.summary = "s".repeat(1024);
        bound(&mut whole).unwrap();
        assert_eq!(whole.details_cut, 0);
        assert_eq!(whole.details, "some words");
        assert_eq!(whole.summary.len(), 1024);
    }

    #[test]
    fn what_matching_reads_is_refused_past_its_bounds_never_cut() {
        let mut many = advisory("GO-2099-0003");
        many.affected[0].versions = (0..=MAX_LIST).map(|i| format!("1.0.{i}")).collect();
        let why = bound(&mut many).unwrap_err();
        assert!(why.contains("versions lists 4097 items"), "{why}");
        assert_eq!(many.affected[0].versions.len(), MAX_LIST + 1);
        let mut long = advisory("GO-2099-0004");
        long.aliases = vec!["C".repeat(MAX_NAME + 1)];
        let why = bound(&mut long).unwrap_err();
        assert!(why.contains("aliases gives a name of 2049 bytes"), "{why}");
    }

    #[test]
    fn a_database_arriving_whole_is_held_to_the_same_bounds() {
        let mut refused = advisory("GO-2099-0005");
        refused.affected[0].imports = Vec::new();
        refused.aliases = vec!["x".into(); MAX_LIST + 1];
        let mut cut = advisory("GO-2099-0006");
        cut.details = "d".repeat(MAX_DETAILS + 10);
        let mut stored = Stored {
            format: 1,
            source: Source::default(),
            advisories: vec![refused, cut, advisory("GO-2099-0007")],
        };
        bound_stored(&mut stored).unwrap();
        let ids: Vec<&str> = stored.advisories.iter().map(|a| a.id.as_str()).collect();
        assert_eq!(ids, ["GO-2099-0006", "GO-2099-0007"]);
        assert_eq!(stored.source.entries, 2);
        assert_eq!(stored.source.refused_count, 1);
        assert!(stored.source.refused[0].starts_with("GO-2099-0005: aliases lists"));
        assert_eq!(stored.advisories[0].details.len(), MAX_DETAILS);
        // Past the total: refused whole. Each advisory below weighs a
        // little over MAX_LIST names of MAX_NAME bytes: 8 MiB.
        let heavy = |i: usize| {
            let mut a = advisory(&format!("GO-2099-{i:04}"));
            a.affected[0].versions = vec!["v".repeat(MAX_NAME); MAX_LIST];
            a
        };
        let each = weight(&heavy(0));
        assert!(each > (MAX_LIST * MAX_NAME) as u64);
        let n = usize::try_from(MAX_DATABASE / each).unwrap() + 1;
        let mut over = Stored {
            format: 1,
            source: Source::default(),
            advisories: (0..n).map(heavy).collect(),
        };
        let why = bound_stored(&mut over).unwrap_err();
        assert!(
            why.contains("more than the 268435456 a database may"),
            "{why}"
        );
        over.advisories.pop();
        bound_stored(&mut over).unwrap();
    }

    #[test]
    fn an_advisory_weighs_its_text_and_16_for_each_item() {
        // Counted by hand from the fixture: each string is its bytes and
        // 16 more.
        // id 12+16, summary 8+16, details 10+16, modified 20+16, published,
        // severity_from and url 0+16 each, module 16+16.
        let mut a = advisory("GO-2099-0001");
        assert_eq!(weight(&a), 28 + 24 + 26 + 36 + 16 * 3 + 32);
        a.aliases = vec!["CVE-2099-1".into()];
        a.affected[0].versions = vec!["1.2.3".into(), "1.2.4".into()];
        assert_eq!(weight(&a), 194 + 26 + 21 * 2);
    }
}
