//! The advisory database read from real OSV entries (a pinned subset of
//! the Go vulnerability database and one of GitHub's advisories; see
//! `tests/fixtures/advisories/SOURCE.md`), in the layouts operators have:
//! the Go database's bulk zip, an osv.dev zip and a directory. Findings
//! against the real Terraform v1.0.3 binary are checked against a reading
//! of those entries written down here by hand, not against tfmirror's own
//! output; the packages it holds against the names in its function table
//! as `strings` finds them.

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};

use tfmirror::advisories::database::{Review, Severity};
use tfmirror::advisories::import::{self, ImportError};
use tfmirror::advisories::{findings, Database, Finding, Presence, Subject};
use tfmirror::gobuild::{self, BuildInfo, Found, Module};

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories")
}

/// The pinned Go entries, by file name.
fn go_entries() -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(fixtures().join("go-vulndb/ID"))
        .unwrap()
        .map(|e| {
            let path = e.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&path).unwrap())
        })
        .collect();
    out.sort();
    out
}

fn ghsa() -> (String, Vec<u8>) {
    let name = "GHSA-4374-p667-p6c8.json".to_string();
    let bytes = std::fs::read(fixtures().join("github").join(&name)).unwrap();
    (name, bytes)
}

fn zip_of(path: &Path, members: &[(String, Vec<u8>)]) {
    let mut zip = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    let options = zip::write::SimpleFileOptions::default();
    for (name, bytes) in members {
        zip.start_file(name.as_str(), options).unwrap();
        zip.write_all(bytes).unwrap();
    }
    zip.finish().unwrap();
}

/// The Go database's bulk zip: entries under `ID/`, indexes under `index/`.
fn go_bulk_zip(dir: &Path) -> PathBuf {
    let mut members: Vec<(String, Vec<u8>)> = go_entries()
        .into_iter()
        .map(|(n, b)| (format!("ID/{n}"), b))
        .collect();
    members.push((
        "index/db.json".into(),
        br#"{"modified":"2026-08-21T00:00:00Z"}"#.to_vec(),
    ));
    members.push((
        "index/modules.json".into(),
        br#"[{"path":"stdlib","vulns":[{"id":"GO-2021-0239","modified":"2026-08-21T00:00:00Z"}]}]"#
            .to_vec(),
    ));
    let path = dir.join("vulndb.zip");
    zip_of(&path, &members);
    path
}

/// osv.dev's layout: every entry at the top, GitHub's among the Go ones.
fn osv_dev_zip(dir: &Path) -> PathBuf {
    let mut members = go_entries();
    members.push(ghsa());
    let path = dir.join("all.zip");
    zip_of(&path, &members);
    path
}

#[test]
fn the_go_databases_bulk_zip_reads_with_its_indexes_left_aside() {
    let dir = tempfile::tempdir().unwrap();
    let stored = import::read(&go_bulk_zip(dir.path()), 7).unwrap();
    let s = &stored.source;
    assert_eq!(s.kind, "go-vulndb-zip");
    // 18 files: one withdrawn (GO-2022-0617), one only about the
    // toolchain (GO-2021-0068); the two index files are no entries.
    assert_eq!(
        (s.entries, s.withdrawn, s.not_go, s.refused_count),
        (16, 1, 1, 0)
    );
    assert_eq!(s.imported_at_ms, 7);
    assert_eq!(
        s.sha256,
        tfmirror::verify::sha256_of_file(&dir.path().join("vulndb.zip")).unwrap()
    );
    let ids: BTreeSet<&str> = stored.advisories.iter().map(|a| a.id.as_str()).collect();
    assert!(!ids.contains("GO-2022-0617") && !ids.contains("GO-2021-0068"));
    assert!(ids.contains("GO-2023-2102"));
    // The repository's entries carry the zero time; the newest is it.
    assert_eq!(s.newest_modified, "0001-01-01T00:00:00Z");
    let reviewed = stored
        .advisories
        .iter()
        .find(|a| a.id == "GO-2023-2102")
        .unwrap();
    assert_eq!(reviewed.review, Review::Reviewed);
    assert_eq!(reviewed.severity, None, "the Go database rates no entry");
    let unreviewed = stored
        .advisories
        .iter()
        .find(|a| a.id == "GO-2025-4152")
        .unwrap();
    assert_eq!(unreviewed.review, Review::Unreviewed);
}

#[test]
fn a_directory_reads_as_the_zip_it_was_unpacked_from() {
    let dir = tempfile::tempdir().unwrap();
    let from_zip = import::read(&go_bulk_zip(dir.path()), 1).unwrap();
    let from_dir = import::read(&fixtures().join("go-vulndb"), 1).unwrap();
    assert_eq!(from_dir.source.kind, "directory");
    assert_eq!(from_dir.advisories, from_zip.advisories);
}

#[test]
fn githubs_entry_is_rated_from_its_own_field_and_its_range_is_read() {
    let dir = tempfile::tempdir().unwrap();
    let stored = import::read(&osv_dev_zip(dir.path()), 1).unwrap();
    assert_eq!(stored.source.kind, "osv-zip");
    assert_eq!(stored.source.entries, 17);
    let github = stored
        .advisories
        .iter()
        .find(|a| a.id == "GHSA-4374-p667-p6c8")
        .unwrap();
    assert_eq!(github.severity, Some(Severity::High));
    assert_eq!(github.severity_from, "GitHub: HIGH");
    assert_eq!(github.review, Review::Reviewed);
    assert_eq!(
        github.affected[0].ranges.len(),
        1,
        "its ECOSYSTEM range is read"
    );
    assert_eq!(stored.source.ranges_not_read, 0);
}

#[test]
fn bad_input_is_refused_by_cause_and_bad_entries_are_named() {
    let dir = tempfile::tempdir().unwrap();
    // A truncated zip.
    let whole = std::fs::read(go_bulk_zip(dir.path())).unwrap();
    let cut = dir.path().join("cut.zip");
    std::fs::write(&cut, &whole[..whole.len() / 2]).unwrap();
    assert!(matches!(
        import::read(&cut, 1),
        Err(ImportError::NotZip { .. })
    ));
    // A zip without entries.
    let empty = dir.path().join("empty.zip");
    zip_of(&empty, &[("README".into(), b"nothing".to_vec())]);
    assert!(matches!(
        import::read(&empty, 1),
        Err(ImportError::Empty { .. })
    ));
    // Bad entries beside good ones: named, the rest kept.
    let mut members = go_entries();
    members.push(("broken.json".into(), b"{\"id\": \"GO-9999-".to_vec()));
    members.push(("nameless.json".into(), br#"{"summary":"no id"}"#.to_vec()));
    members.push((
        "huge.json".into(),
        vec![b' '; usize::try_from(import::MAX_ENTRY).unwrap() + 1],
    ));
    members.push((
        "other.json".into(),
        br#"{"id":"PYSEC-1","affected":[{"package":{"ecosystem":"PyPI","name":"x"}}]}"#.to_vec(),
    ));
    members.push((
        "git.json".into(),
        br#"{"id":"GO-9999-0001","affected":[{"package":{"ecosystem":"Go","name":"example.com/m"},
            "ranges":[{"type":"GIT","repo":"https://example.com/m","events":[{"introduced":"abc"}]},
            {"type":"SEMVER","events":[{"introduced":"0"},{"fixed":"not-a-version"}]}]}]}"#
            .to_vec(),
    ));
    let mixed = dir.path().join("mixed.zip");
    zip_of(&mixed, &members);
    let stored = import::read(&mixed, 1).unwrap();
    let s = &stored.source;
    assert_eq!(s.refused_count, 3, "{:?}", s.refused);
    assert!(s.refused.iter().any(|r| r.starts_with("broken.json: ")));
    assert!(s
        .refused
        .iter()
        .any(|r| r.starts_with("nameless.json: ") && r.contains("\"id\"")));
    assert!(s
        .refused
        .iter()
        .any(|r| r.starts_with("huge.json: ") && r.contains("larger")));
    assert_eq!(s.not_go, 2, "PyPI and the toolchain");
    assert_eq!(
        s.ranges_not_read, 2,
        "the GIT range and the range with no semver"
    );
    assert_eq!(s.entries, 17);
}

/// Terraform v1.0.3's build information and packages.
fn terraform() -> (BuildInfo, Vec<String>) {
    let (info, table) = terraform_for(&gobuild::Wanted::default());
    (info, table.packages.into_iter().collect())
}

/// Terraform v1.0.3's build information and what its function table says
/// of the symbols `wanted` names.
fn terraform_for(wanted: &gobuild::Wanted) -> (BuildInfo, gobuild::Table) {
    let path = std::env::var_os("TERRAFORM_BIN")
        .map(PathBuf::from)
        .filter(|p| p.is_file())
        .expect("TERRAFORM_BIN names the Terraform v1.0.3 binary; run the README's test command");
    let file = std::fs::File::open(&path).unwrap();
    let Found::Go(info) = gobuild::read(&file).unwrap() else {
        panic!("no build information in {}", path.display());
    };
    let table = gobuild::packages(&file, wanted)
        .unwrap()
        .expect("a function table");
    (info, table)
}

fn by_key(found: &[Finding]) -> Vec<(String, String)> {
    let mut keys: Vec<_> = found
        .iter()
        .map(|f| (f.id.clone(), f.module.clone()))
        .collect();
    keys.sort();
    keys
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn terraform_1_0_3_falls_under_what_its_entries_say_by_hand() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::new(import::read(&osv_dev_zip(dir.path()), 1).unwrap());
    let (info, table) = terraform_for(&db.wanted);
    let packages: Vec<String> = table.packages.iter().cloned().collect();
    let found = findings(
        &db,
        &Subject {
            build: &info,
            release_version: Some("1.0.3"),
            packages: Some(&packages),
            symbols: Some(&table.symbols),
            goos: "linux",
            goarch: "amd64",
        },
    );
    // Read from the entries (SOURCE.md's table): go1.16.4 lies before
    // GO-2023-2102's 1.20.10, GO-2021-0239's 1.16.5, GO-2021-0263's
    // 1.16.10 and GO-2021-0347's 1.16.15, and past GO-2021-0235's 1.15.7;
    // x/net v0.0.0-20210226… before 0.17.0; grpc replaced by v1.27.1,
    // before 1.56.3 (and before 1.64.0, where GO-2024-2978 starts);
    // go-getter v1.5.2 before 1.5.11; x/text v0.3.5 before 0.3.7;
    // go-retryablehttp v0.5.2 before 0.7.7; Terraform 1.0.3 itself before
    // GO-2023-2055's 1.0.8 and past GO-2022-0839's 0.12.17. GitHub's entry
    // is GO-2023-2102 under another name, for x/net alone.
    let expected: Vec<(String, String)> = [
        ("GO-2021-0113", "golang.org/x/text"),
        ("GO-2021-0239", "stdlib"),
        ("GO-2021-0263", "stdlib"),
        ("GO-2021-0347", "stdlib"),
        ("GO-2022-0438", "github.com/hashicorp/go-getter"),
        ("GO-2023-2102", "golang.org/x/net"),
        ("GO-2023-2102", "stdlib"),
        ("GO-2023-2153", "google.golang.org/grpc"),
        ("GO-2024-2947", "github.com/hashicorp/go-retryablehttp"),
    ]
    .iter()
    .map(|(a, b)| ((*a).to_string(), (*b).to_string()))
    .collect();
    assert_eq!(by_key(&found), expected);
    let one = |id: &str, module: &str| {
        found
            .iter()
            .find(|f| f.id == id && f.module == module)
            .unwrap()
    };
    let net = one("GO-2023-2102", "golang.org/x/net");
    assert_eq!(
        net.severity,
        Some(Severity::High),
        "GitHub's rating, merged"
    );
    assert!(net.aliases.contains(&"GHSA-4374-p667-p6c8".to_string()));
    assert_eq!(net.fixed.as_deref(), Some("v0.17.0"));
    assert_eq!(net.found, "v0.0.0-20210226172049-e18ecbb05110");
    let stdlib = one("GO-2023-2102", "stdlib");
    assert_eq!(stdlib.severity, None, "GitHub's entry speaks of x/net only");
    // Named as the toolchain names its releases, beside `go1.16.4`.
    assert_eq!(stdlib.fixed.as_deref(), Some("go1.20.10"));
    assert_eq!(stdlib.found, "go1.16.4");
    let grpc = one("GO-2023-2153", "google.golang.org/grpc");
    assert_eq!(grpc.found, "v1.27.1", "the replacement's version");
    assert_eq!(grpc.matched_by, "replacement's version");
    assert_eq!(
        one("GO-2021-0239", "stdlib").fixed.as_deref(),
        Some("go1.16.5")
    );
    // Presence by symbol, against the names `strings` finds in the
    // binary (Go 1.16's table keeps every function's name, inlined ones'
    // too, each ended by a zero byte): GO-2021-0239 names methods of
    // `net`'s Resolver, GO-2021-0347 `regexp.Compile` (the package's name
    // written before the symbol, as the entry does), GO-2021-0263
    // `debug/macho`, which the binary does not hold.
    let strings: std::collections::BTreeSet<String> = names_in(
        &std::env::var_os("TERRAFORM_BIN")
            .map(PathBuf::from)
            .unwrap(),
    )
    .into_iter()
    .collect();
    let has = |name: &str| strings.contains(name);
    assert!(has("net.(*Resolver).LookupAddr") && has("regexp.Compile"));
    let by_name = [
        (
            "GO-2021-0239",
            "net",
            [
                "LookupAddr",
                "LookupCNAME",
                "LookupMX",
                "LookupNS",
                "LookupSRV",
            ]
            .iter()
            .filter(|m| has(&format!("net.(*Resolver).{m}")))
            .map(|m| format!("net.Resolver.{m}"))
            .collect::<Vec<_>>(),
        ),
        ("GO-2021-0347", "regexp", vec!["regexp.Compile".to_string()]),
    ];
    for (id, package, symbols) in by_name {
        assert!(!symbols.is_empty(), "{id}");
        assert_eq!(
            one(id, "stdlib").presence,
            Presence::Present {
                packages: vec![package.to_string()],
                symbols,
                symbols_not_told: vec![],
            },
            "{id}"
        );
    }
    assert!(!strings.iter().any(|s| s.starts_with("debug/macho.")));
    assert_eq!(
        one("GO-2021-0263", "stdlib").presence,
        Presence::NotFound { packages: vec![] }
    );
    // GO-2023-2102 names what serves HTTP and HTTP/2: present exactly
    // where `strings` finds one of those symbols in the table (Terraform's
    // CLI holds `net/http.(*Server).Serve`), else not found with the
    // package named.
    let serves = [
        "net/http.(*Server).Serve",
        "net/http.(*http2serverConn).serve",
    ];
    let stdlib = one("GO-2023-2102", "stdlib");
    if serves.iter().any(|s| has(s)) {
        assert!(
            matches!(stdlib.presence, Presence::Present { .. }),
            "{stdlib:?}"
        );
    } else {
        assert_eq!(
            stdlib.presence,
            Presence::NotFound {
                packages: vec!["net/http".into()]
            }
        );
    }
    // Without the symbols looked for, the package alone answers, and
    // says why.
    let untold = findings(
        &db,
        &Subject {
            build: &info,
            release_version: Some("1.0.3"),
            packages: Some(&packages),
            symbols: None,
            goos: "linux",
            goarch: "amd64",
        },
    );
    let regexp = untold.iter().find(|f| f.id == "GO-2021-0347").unwrap();
    assert_eq!(
        regexp.presence,
        Presence::Present {
            packages: vec!["regexp".into()],
            symbols: vec![],
            symbols_not_told: vec!["regexp".into()],
        }
    );
    // Without the package list, presence is not claimed.
    let unread = findings(
        &db,
        &Subject {
            build: &info,
            release_version: Some("1.0.3"),
            packages: None,
            symbols: None,
            goos: "linux",
            goarch: "amd64",
        },
    );
    assert!(unread.iter().all(|f| f.presence == Presence::NotRead));
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN; scripts/test installs it"
)]
#[test]
fn a_vendors_toolchain_falls_under_what_its_base_release_does() {
    // Terraform v1.0.3 was built by go1.16.4. The same build information
    // under the names vendors and experiments give a toolchain built from
    // that release must fall under the same advisories, as Go's own tools
    // read those names (the first word, cut at its first '-').
    let dir = tempfile::tempdir().unwrap();
    let db = Database::new(import::read(&osv_dev_zip(dir.path()), 1).unwrap());
    let (info, packages) = terraform();
    assert_eq!(info.go_version, "go1.16.4");
    let stdlib_of = |go_version: &str| -> Vec<(String, Option<String>)> {
        let mut build = info.clone();
        build.go_version = go_version.to_owned();
        let found = findings(
            &db,
            &Subject {
                build: &build,
                release_version: Some("1.0.3"),
                packages: Some(&packages),
                symbols: None,
                goos: "linux",
                goarch: "amd64",
            },
        );
        found
            .iter()
            .filter(|f| f.module == "stdlib")
            .map(|f| (f.id.clone(), f.fixed.clone()))
            .collect()
    };
    let plain = stdlib_of("go1.16.4");
    // The hand reading above: four entries against the standard library.
    assert_eq!(plain.len(), 4, "{plain:?}");
    for name in [
        "go1.16.4-bigcorp",
        "go1.16.4 X:boringcrypto",
        "go1.16.4-X:fieldtrack",
    ] {
        assert_eq!(stdlib_of(name), plain, "{name}");
    }
    // A name no Go tool reads matches nothing of the standard library;
    // the build record says it is not known (tests/build_records.rs).
    assert!(stdlib_of("go1.16.4b7").is_empty());
}

/// Every printable run of the file that looks like a Go function name.
fn names_in(path: &Path) -> Vec<String> {
    let out = std::process::Command::new("strings")
        .args(["-n", "4"])
        .arg(path)
        .output()
        .expect("strings (binutils) runs");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_string)
        .collect()
}

/// A provider's build information whose main module is `path`, built from
/// a checkout.
fn provider_build(path: &str) -> BuildInfo {
    BuildInfo {
        go_version: "go1.24.0".into(),
        path: path.into(),
        main: Some(Module {
            path: path.into(),
            version: "(devel)".into(),
            sum: String::new(),
            replace: None,
        }),
        deps: Vec::new(),
        settings: Vec::new(),
    }
}

fn provider_ids(db: &Database, path: &str, version: Option<&str>) -> Vec<String> {
    let build = provider_build(path);
    findings(
        db,
        &Subject {
            build: &build,
            release_version: version,
            packages: None,
            symbols: None,
            goos: "linux",
            goarch: "amd64",
        },
    )
    .into_iter()
    .filter(|f| f.module == path)
    .map(|f| f.id)
    .collect()
}

#[test]
fn a_providers_own_module_matches_by_its_registry_version() {
    let db = Database::new(import::read(&fixtures().join("go-vulndb"), 1).unwrap());
    let vault = "github.com/hashicorp/terraform-provider-vault";
    // GO-2025-4152's module range is open (introduced 0): the module path
    // carries no /v5, so module versions cannot say 5.5.0. Its custom
    // range, in release versions, can.
    assert_eq!(provider_ids(&db, vault, Some("5.4.0")), ["GO-2025-4152"]);
    assert!(provider_ids(&db, vault, Some("5.5.0")).is_empty());
    assert_eq!(provider_ids(&db, vault, Some("4.8.0")), ["GO-2025-4152"]);
    // A path per major: /v3 fixed in 3.9.0; the path without a major has
    // no fix.
    let linode = "github.com/linode/terraform-provider-linode";
    assert_eq!(
        provider_ids(&db, &format!("{linode}/v3"), Some("3.8.0")),
        ["GO-2026-4562"]
    );
    assert!(provider_ids(&db, &format!("{linode}/v3"), Some("3.9.0")).is_empty());
    assert_eq!(provider_ids(&db, linode, Some("1.30.0")), ["GO-2026-4562"]);
    // Fixed at a pseudo-version just after 1.2.3's base: 1.2.2 is
    // affected, 1.2.3 is not.
    let argocd = "github.com/argoproj-labs/terraform-provider-argocd";
    assert_eq!(provider_ids(&db, argocd, Some("1.2.2")), ["GO-2026-4737"]);
    assert!(provider_ids(&db, argocd, Some("1.2.3")).is_empty());
    let proxmox = "github.com/bpg/terraform-provider-proxmox";
    assert_eq!(provider_ids(&db, proxmox, Some("0.93.0")), ["GO-2026-4395"]);
    assert!(provider_ids(&db, proxmox, Some("0.93.1")).is_empty());
    // (devel) is never read as a version.
    assert!(provider_ids(&db, proxmox, None).is_empty());
}

#[test]
fn a_replaced_module_matches_by_its_replacement_alone() {
    let db = Database::new(import::read(&fixtures().join("go-vulndb"), 1).unwrap());
    let module = |path: &str, version: &str, replace: Option<Module>| Module {
        path: path.into(),
        version: version.into(),
        sum: String::new(),
        replace: replace.map(Box::new),
    };
    let with_dep = |dep: Module| {
        let mut b = provider_build("example.com/terraform-provider-x");
        b.go_version = "go1.99.0".into();
        b.deps.push(dep);
        b
    };
    let ids = |build: &BuildInfo| -> Vec<String> {
        findings(
            &db,
            &Subject {
                build,
                release_version: Some("1.0.0"),
                packages: None,
                symbols: None,
                goos: "linux",
                goarch: "amd64",
            },
        )
        .into_iter()
        .map(|f| f.id)
        .collect()
    };
    // go-getter v1.5.2 is affected; replaced by v1.5.11 it is not.
    let getter = "github.com/hashicorp/go-getter";
    assert_eq!(
        ids(&with_dep(module(getter, "v1.5.2", None))),
        ["GO-2022-0438"]
    );
    assert!(ids(&with_dep(module(
        getter,
        "v1.5.2",
        Some(module(getter, "v1.5.11", None))
    )))
    .is_empty());
    // And the other way round; a replacement by a directory matches nothing.
    assert_eq!(
        ids(&with_dep(module(
            getter,
            "v1.5.11",
            Some(module(getter, "v1.5.2", None))
        ))),
        ["GO-2022-0438"]
    );
    assert!(ids(&with_dep(module(
        getter,
        "v1.5.2",
        Some(module("../getter", "", None))
    )))
    .is_empty());
}
