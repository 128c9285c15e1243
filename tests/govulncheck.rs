//! Presence by symbol against an independent matcher: Debian's
//! `govulncheck` (its binary mode, `govulncheck -json BINARY`) and
//! tfmirror read the same programs against the same 80 real entries of
//! the Go vulnerability database (`tests/fixtures/advisories/govulncheck`,
//! every one that names the standard library at a range holding
//! go1.19.8), and must find the same advisories present, by the same
//! symbols.
//!
//! The programs are built here by Debian's Go (1.19, the 1.18 table
//! layout), unstripped: `govulncheck` of that age reads only binaries of
//! go1.18 to 1.20 whose symbol table is kept (it finds functions inlined
//! into others through it); tfmirror reads the function table's names,
//! which list inlined functions too, and needs no symbol table. What the
//! two are known to read differently, and this test allows for:
//!
//! - `govulncheck` never reports an entry whose imports name no symbols
//!   except through a symbol of the package it sees: the same as
//!   tfmirror's presence by package, so nothing to allow for;
//! - an entry that names no packages at all is never reported by it;
//!   tfmirror says "names no packages" (not present), so nothing either;
//! - a symbol written with its package's name before it (`regexp.Compile`
//!   of `regexp`, as GO-2021-0347 writes it) matches only a method of a
//!   type of that name in `govulncheck` (`parser.parseLiteralValue` of
//!   `go/parser`, GO-2024-3105), and in tfmirror also the bare function:
//!   what tfmirror finds by such a bare name alone is set aside before
//!   the comparison ([`as_written`]), so that it cannot hide a difference.
//!
//! `go tool nm` is the oracle of the function table's packages
//! (`tests/gobuild.rs`); this one is the oracle of matching by symbol.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use common::go::go_build;
use tfmirror::advisories::{findings, import, Database, Presence, Subject};
use tfmirror::gobuild::{self, Found};

/// A program that links what provider binaries often do (an HTTP client,
/// templates, URLs, XML, zip files, regular expressions, TLS) and serves
/// nothing: the code runs only when given six arguments, but is linked in.
const PROGRAM: &str = r#"package main

import (
	"archive/zip"
	"crypto/tls"
	"encoding/xml"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"regexp"
)

func main() {
	if len(os.Args) > 6 {
		resp, err := http.Get(os.Args[1])
		fmt.Println(resp, err)
		u, err := url.Parse(os.Args[2])
		fmt.Println(u, err)
		t := template.Must(template.New("x").Parse(os.Args[3]))
		_ = t.Execute(os.Stdout, nil)
		var v struct{ A string }
		_ = xml.Unmarshal([]byte(os.Args[4]), &v)
		r, err := zip.OpenReader(os.Args[5])
		fmt.Println(r, err)
		c, err := tls.Dial("tcp", os.Args[6], &tls.Config{})
		fmt.Println(c, err)
	}
	fmt.Println(regexp.MustCompile("a+").MatchString("aa"))
}
"#;

/// The entries, as fixtures.
fn entries() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories/govulncheck")
}

/// The entries in the file layout `govulncheck` of this age reads from a
/// `file://` database: `index.json` (module path → modified time),
/// `stdlib.json` (every entry of the module, in an array) and `ID/`.
fn file_database(dir: &Path) -> PathBuf {
    let db = dir.join("vulndb");
    std::fs::create_dir_all(db.join("ID")).unwrap();
    let mut all = Vec::new();
    let mut ids = Vec::new();
    for entry in std::fs::read_dir(entries()).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        ids.push(value["id"].as_str().unwrap().to_string());
        std::fs::write(db.join("ID").join(path.file_name().unwrap()), &text).unwrap();
        all.push(value);
    }
    let write = |name: &str, value: serde_json::Value| {
        std::fs::write(db.join(name), serde_json::to_vec(&value).unwrap()).unwrap();
    };
    write("stdlib.json", serde_json::Value::Array(all));
    write(
        "index.json",
        serde_json::json!({"stdlib": "2026-08-21T00:00:00Z"}),
    );
    write("ID/index.json", serde_json::json!(ids));
    write("aliases.json", serde_json::json!({}));
    db
}

/// What `govulncheck -json` finds present in `exe`: each advisory's ID
/// with the symbols (`package.Symbol`) it reports.
fn govulncheck(exe: &Path, db: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let out = std::process::Command::new("govulncheck")
        .arg("-json")
        .arg(exe)
        .env("GOVULNDB", format!("file://{}", db.display()))
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .output()
        .expect("govulncheck (Debian's) runs; the README's test command installs it");
    let text = String::from_utf8_lossy(&out.stdout);
    // Its report is one JSON document after any warnings it prints.
    let start = text.find('{').unwrap_or_else(|| {
        panic!(
            "govulncheck printed no report: {text}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let report: serde_json::Value = serde_json::from_str(&text[start..])
        .unwrap_or_else(|e| panic!("govulncheck's report: {e}: {text}"));
    let mut found: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for vuln in report["Vulns"].as_array().into_iter().flatten() {
        let id = vuln["OSV"]["id"].as_str().unwrap().to_string();
        let symbols = found.entry(id).or_default();
        for module in vuln["Modules"].as_array().into_iter().flatten() {
            for package in module["Packages"].as_array().into_iter().flatten() {
                let path = package["Path"].as_str().unwrap();
                for stack in package["CallStacks"].as_array().into_iter().flatten() {
                    symbols.insert(format!("{path}.{}", stack["Symbol"].as_str().unwrap()));
                }
            }
        }
    }
    found
}

/// What tfmirror finds present in `exe` for `os`/`arch`, by the same
/// reading the mirror keeps in a build record: each advisory's ID with
/// the symbols found (empty where the package alone answers).
fn tfmirror(
    exe: &Path,
    db: &Database,
    (os, arch): (&str, &str),
) -> BTreeMap<String, BTreeSet<String>> {
    let file = std::fs::File::open(exe).unwrap();
    let Found::Go(build) = gobuild::read(&file).unwrap() else {
        panic!("{}: no build information", exe.display());
    };
    let table = gobuild::packages(&file, &db.wanted)
        .unwrap()
        .expect("a function table");
    assert!(
        table.symbols.inlined_listed,
        "Go 1.19's table lists inlined functions"
    );
    let packages: Vec<String> = table.packages.iter().cloned().collect();
    let found = findings(
        db,
        &Subject {
            build: &build,
            release_version: None,
            packages: Some(&packages),
            symbols: Some(&table.symbols),
            goos: os,
            goarch: arch,
        },
    );
    found
        .into_iter()
        .filter_map(|f| match f.presence {
            Presence::Present {
                symbols,
                symbols_not_told,
                ..
            } => {
                assert!(
                    symbols_not_told.is_empty(),
                    "{}: {symbols_not_told:?}",
                    f.id
                );
                Some((f.id, symbols.into_iter().collect()))
            }
            _ => None,
        })
        .collect()
}

/// `found` with only the symbols each entry writes as they were found
/// (not by the bare name of one written with its package's name before
/// it), and without the entries found by such a name alone.
fn as_written(
    db: &Database,
    found: &BTreeMap<String, BTreeSet<String>>,
) -> BTreeMap<String, BTreeSet<String>> {
    let mut out = BTreeMap::new();
    for (id, symbols) in found {
        let entry = db.stored.advisories.iter().find(|a| &a.id == id).unwrap();
        let written: BTreeSet<String> = entry
            .affected
            .iter()
            .flat_map(|m| &m.imports)
            .flat_map(|i| i.symbols.iter().map(move |s| format!("{}.{s}", i.path)))
            .collect();
        let kept: BTreeSet<String> = symbols.intersection(&written).cloned().collect();
        if symbols.is_empty() || !kept.is_empty() {
            out.insert(id.clone(), kept);
        }
    }
    out
}

#[cfg_attr(
    tfmirror_no_govulncheck,
    ignore = "needs go and govulncheck (Debian's golang-go and govulncheck); scripts/test installs them"
)]
#[test]
fn what_govulncheck_finds_present_by_symbol_tfmirror_finds_too() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(
        src.join("go.mod"),
        "module example.test/client\n\ngo 1.19\n",
    )
    .unwrap();
    std::fs::write(src.join("main.go"), PROGRAM).unwrap();
    let db = Database::new(import::read(&entries(), 1).unwrap());
    assert_eq!(db.stored.advisories.len(), 80);
    let file_db = file_database(dir.path());
    for platform in [("linux", "amd64"), ("windows", "amd64")] {
        let exe = dir
            .path()
            .join(format!("client_{}_{}", platform.0, platform.1));
        go_build(dir.path(), &src, &exe, platform, false);
        let mut theirs = govulncheck(&exe, &file_db);
        // For an entry that names no symbols, govulncheck lists every
        // symbol of the package it sees; tfmirror says it is present by
        // the package.
        for a in &db.stored.advisories {
            let by_package = a
                .affected
                .iter()
                .flat_map(|m| &m.imports)
                .all(|i| i.symbols.is_empty());
            if let Some(symbols) = theirs.get_mut(&a.id).filter(|_| by_package) {
                symbols.clear();
            }
        }
        let ours = tfmirror(&exe, &db, platform);
        assert_eq!(as_written(&db, &ours), theirs, "{platform:?}");
        // Not a vacuous agreement: some advisories by symbol, some by
        // package (GO-2023-1840 names `runtime` without symbols), and some
        // whose package is held and whose symbols are not (the program
        // serves no HTTP: GO-2023-2102).
        assert!(ours.values().any(|s| !s.is_empty()), "{ours:?}");
        assert!(ours.contains_key("GO-2023-1840"), "{ours:?}");
        assert!(!ours.contains_key("GO-2023-2102"), "{ours:?}");
        assert!(ours.len() >= 10, "{} present: {ours:?}", ours.len());
    }
}
