//! The OSV reader and the matching never panic, whatever the entries say,
//! and OSV ranges are evaluated as the OSV schema defines them: checked
//! against a second, differently written reading of the schema's rule
//! over random events and versions.

use std::path::Path;

use proptest::prelude::*;
use tfmirror::advisories::database::{Advisory, Source, Stored, Taken, DATABASE_FORMAT};
use tfmirror::advisories::osv::Entry;
use tfmirror::advisories::range::{contains, readable, Event};
use tfmirror::advisories::version::GoVersion;
use tfmirror::advisories::{findings, Database, Subject};
use tfmirror::gobuild::{BuildInfo, Module};

/// The real entries the tests pin.
fn real_entries() -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories/go-vulndb/ID");
    let mut out: Vec<Vec<u8>> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| std::fs::read(e.unwrap().path()).unwrap())
        .collect();
    out.sort();
    out
}

/// A build that names every module the pinned entries speak of.
fn build() -> BuildInfo {
    let module = |path: &str, version: &str| Module {
        path: path.into(),
        version: version.into(),
        sum: String::new(),
        replace: None,
    };
    BuildInfo {
        go_version: "go1.16.4".into(),
        path: "github.com/hashicorp/terraform-provider-vault".into(),
        main: Some(module(
            "github.com/hashicorp/terraform-provider-vault",
            "(devel)",
        )),
        deps: vec![
            module("golang.org/x/net", "v0.0.0-20210226172049-e18ecbb05110"),
            module("google.golang.org/grpc", "v1.27.1"),
            module("example.com/m", "v1.0.0"),
        ],
        settings: Vec::new(),
    }
}

/// Reads, keeps and matches whatever `bytes` say; never panics.
fn read_and_match(bytes: &[u8]) {
    let Ok(entry) = Entry::from_json(bytes) else {
        return;
    };
    let Taken::Kept(advisory, _) = Advisory::from_osv(entry) else {
        return;
    };
    let db = Database::new(Stored {
        format: DATABASE_FORMAT,
        source: Source {
            entries: 1,
            ..Source::default()
        },
        advisories: vec![*advisory],
    });
    let build = build();
    let packages = vec!["net/http".to_string()];
    for release in [Some("5.4.0"), Some("not a version"), None] {
        let _ = findings(
            &db,
            &Subject {
                build: &build,
                release_version: release,
                packages: Some(&packages),
                symbols: None,
                goos: "linux",
                goarch: "amd64",
            },
        );
    }
}

/// JSON values of any shape, a few levels deep.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        "[a-zA-Z0-9 .:+_-]{0,12}".prop_map(serde_json::Value::from),
        prop_oneof![
            Just("0"),
            Just("1.2.3"),
            Just("v1.0.0-rc.1"),
            Just("1.21.0-0"),
            Just("Go"),
            Just("stdlib")
        ]
        .prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map(
                prop_oneof![
                    Just("id".to_string()),
                    Just("affected".to_string()),
                    Just("package".to_string()),
                    Just("name".to_string()),
                    Just("ecosystem".to_string()),
                    Just("ranges".to_string()),
                    Just("type".to_string()),
                    Just("events".to_string()),
                    Just("introduced".to_string()),
                    Just("fixed".to_string()),
                    Just("last_affected".to_string()),
                    Just("limit".to_string()),
                    Just("versions".to_string()),
                    Just("ecosystem_specific".to_string()),
                    Just("imports".to_string()),
                    Just("custom_ranges".to_string()),
                    Just("database_specific".to_string()),
                    Just("severity".to_string()),
                    Just("aliases".to_string()),
                    "[a-z_]{1,8}",
                ],
                inner,
                0..5,
            )
            .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// The OSV schema's rule, written as "the last event at or below the
/// version that applies decides": an `introduced` at or below it opens,
/// a `fixed` at or below it closes, a `last_affected` below it closes;
/// at one version, an opening comes before a closing. Limits bound the
/// range: at or past every limit, nothing is affected.
fn oracle(events: &[(u8, u8)], version: u8) -> bool {
    let limits: Vec<u8> = events
        .iter()
        .filter(|(k, _)| *k == 3)
        .map(|(_, v)| *v)
        .collect();
    if !limits.is_empty() && limits.iter().all(|l| version >= *l) {
        return false;
    }
    events
        .iter()
        .filter(|(kind, at)| match kind {
            0 | 1 => *at <= version,
            2 => *at < version,
            _ => false,
        })
        .max_by_key(|(kind, at)| (*at, u8::from(*kind != 0)))
        .is_some_and(|(kind, _)| *kind == 0)
}

/// The version a small number stands for: 0 is OSV's "0", the rest a
/// ladder of releases with pre-releases between.
fn version_of(n: u8) -> String {
    match n {
        0 => "0".into(),
        n if n % 2 == 1 => format!("1.{}.0-rc.1", n / 2),
        n => format!("1.{}.0", n / 2 - 1),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_change_to_a_real_entry_is_read_or_refused(
        which in 0usize..18,
        changes in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..10),
    ) {
        let entries = real_entries();
        let mut bytes = entries[which % entries.len()].clone();
        for (at, byte, how) in changes {
            let i = at.index(bytes.len().max(1));
            match how {
                0 if !bytes.is_empty() => bytes[i] = byte,
                1 => bytes.insert(i.min(bytes.len()), byte),
                _ if !bytes.is_empty() => {
                    bytes.remove(i);
                }
                _ => {}
            }
        }
        read_and_match(&bytes);
    }

    #[test]
    fn entries_of_any_shape_are_read_or_refused(value in any_json()) {
        read_and_match(&serde_json::to_vec(&value).unwrap());
    }

    #[test]
    fn ranges_are_evaluated_as_the_schema_defines_them(
        events in prop::collection::vec((0u8..4, 0u8..12), 1..6),
        version in 1u8..14,
    ) {
        let osv: Vec<Event> = events
            .iter()
            .map(|(kind, at)| {
                let v = version_of(*at);
                match kind {
                    0 => Event::Introduced(v),
                    1 => Event::Fixed(v),
                    2 => Event::LastAffected(v),
                    _ => Event::Limit(v),
                }
            })
            .collect();
        let read = readable(&osv).expect("every version reads");
        let v = GoVersion::parse(&version_of(version)).unwrap();
        prop_assert_eq!(contains(&read, &v), oracle(&events, version), "{:?} at {}", osv, version_of(version));
    }
}
