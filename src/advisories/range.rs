//! Whether a version lies in an OSV range: its events taken in version
//! order, as the OSV schema evaluates them. `introduced` opens a span,
//! `fixed` closes it before the version it names and `last_affected`
//! just after; `limit` bounds the whole range from above. Version lists
//! name versions one by one.

use serde::{Deserialize, Serialize};

use super::version::GoVersion;

/// One event, its version as the data wrote it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Event {
    /// Affected from this version on.
    Introduced(String),
    /// Not affected from this version on.
    Fixed(String),
    /// Affected up to and including this version.
    LastAffected(String),
    /// Nothing at or past this version is described by the range.
    Limit(String),
}

impl Event {
    /// Its version, read.
    fn version(&self) -> Option<GoVersion> {
        let (Event::Introduced(v) | Event::Fixed(v) | Event::LastAffected(v) | Event::Limit(v)) =
            self;
        GoVersion::parse(v)
    }

    /// Where it goes among events of the same version: an opening before
    /// the closings, so that a span opened and closed at one version is
    /// empty.
    fn rank(&self) -> u8 {
        match self {
            Event::Introduced(_) => 0,
            Event::Fixed(_) | Event::LastAffected(_) => 1,
            Event::Limit(_) => 2,
        }
    }
}

/// A range whose every event reads as a version; `None` when one does
/// not (the range is then not used, and the import counts it).
pub fn readable(events: &[Event]) -> Option<Vec<(GoVersion, Event)>> {
    let mut read = events
        .iter()
        .map(|e| e.version().map(|v| (v, e.clone())))
        .collect::<Option<Vec<_>>>()?;
    read.sort_by(|(va, ea), (vb, eb)| va.cmp(vb).then(ea.rank().cmp(&eb.rank())));
    Some(read)
}

/// Whether `version` lies in the range of `events` (read and sorted by
/// [`readable`]).
pub fn contains(events: &[(GoVersion, Event)], version: &GoVersion) -> bool {
    let limits: Vec<&GoVersion> = events
        .iter()
        .filter(|(_, e)| matches!(e, Event::Limit(_)))
        .map(|(v, _)| v)
        .collect();
    if !limits.is_empty() && !limits.iter().any(|limit| version < *limit) {
        return false;
    }
    let mut affected = false;
    for (at, event) in events {
        match event {
            Event::Introduced(_) if version >= at => affected = true,
            Event::Fixed(_) if version >= at => affected = false,
            Event::LastAffected(_) if version > at => affected = false,
            _ => {}
        }
    }
    affected
}

/// The least `fixed` version above `version` in the range, if any: what
/// to move to.
pub fn fixed_after(events: &[(GoVersion, Event)], version: &GoVersion) -> Option<String> {
    events
        .iter()
        .filter(|(at, e)| matches!(e, Event::Fixed(_)) && at > version)
        .map(|(at, _)| at.to_string())
        .next()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn range(events: &[(&str, &str)]) -> Vec<(GoVersion, Event)> {
        let events: Vec<Event> = events
            .iter()
            .map(|(kind, v)| match *kind {
                "introduced" => Event::Introduced((*v).into()),
                "fixed" => Event::Fixed((*v).into()),
                "last_affected" => Event::LastAffected((*v).into()),
                _ => Event::Limit((*v).into()),
            })
            .collect();
        readable(&events).expect("readable")
    }

    fn inside(events: &[(GoVersion, Event)], v: &str) -> bool {
        contains(events, &GoVersion::parse(v).expect("version"))
    }

    #[test]
    fn two_spans_as_the_go_database_writes_them() {
        // GO-2023-2102's stdlib range, events given out of order.
        let r = range(&[
            ("introduced", "1.21.0-0"),
            ("fixed", "1.20.10"),
            ("introduced", "0"),
            ("fixed", "1.21.3"),
        ]);
        assert!(inside(&r, "1.16.4"));
        assert!(inside(&r, "1.20.9"));
        assert!(!inside(&r, "1.20.10"));
        assert!(!inside(&r, "1.20.99"));
        assert!(inside(&r, "1.21.0-rc.2"));
        assert!(inside(&r, "1.21.2"));
        assert!(!inside(&r, "1.21.3"));
        assert!(!inside(&r, "1.22.0"));
        assert_eq!(
            fixed_after(&r, &GoVersion::parse("1.16.4").unwrap()).as_deref(),
            Some("v1.20.10")
        );
    }

    #[test]
    fn last_affected_includes_its_version_and_limit_bounds_the_range() {
        let r = range(&[("introduced", "1.0.0"), ("last_affected", "1.4.2")]);
        assert!(!inside(&r, "0.9.0") && inside(&r, "1.0.0") && inside(&r, "1.4.2"));
        assert!(!inside(&r, "1.4.3"));
        let r = range(&[("introduced", "0"), ("limit", "2.0.0")]);
        assert!(inside(&r, "1.9.9") && !inside(&r, "2.0.0") && !inside(&r, "3.0.0"));
        // An open range: everything from its start.
        let r = range(&[("introduced", "0")]);
        assert!(inside(&r, "0.0.0-20190101000000-aaaaaaaaaaaa") && inside(&r, "99.0.0"));
        // Opened and closed at one version: empty.
        let r = range(&[("fixed", "1.0.0"), ("introduced", "1.0.0")]);
        assert!(!inside(&r, "1.0.0"));
    }

    #[test]
    fn pseudo_versions_fall_where_their_base_puts_them() {
        // GO-2026-4737's fix is a pseudo-version.
        let r = range(&[
            ("introduced", "0"),
            ("fixed", "1.2.3-0.20260316182343-b3364f3f32e7"),
        ]);
        assert!(inside(&r, "v1.2.2"));
        assert!(inside(&r, "v1.2.3-0.20260101000000-aaaaaaaaaaaa"));
        assert!(!inside(&r, "v1.2.3-0.20260316182343-b3364f3f32e7"));
        assert!(!inside(&r, "v1.2.3"));
    }

    #[test]
    fn a_range_with_an_unreadable_version_is_not_used() {
        assert!(
            readable(&[Event::Introduced("0".into()), Event::Fixed("abc123".into())]).is_none()
        );
    }
}
