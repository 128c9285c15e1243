//! What the advisory database costs: importing the Go vulnerability
//! database (`VULNDB`: its bulk zip, or a directory of its entries such as
//! `data/osv` of github.com/golang/vulndb; the pinned fixtures when
//! unset), matching 10,000 held versions against it (the real build
//! information of Terraform v1.0.3, `TERRAFORM_BIN`, and SeaweedFS's
//! `weed`, `WEED_BIN`, half each, with the packages their function tables
//! hold), and reading one build record back from its JSON, which the
//! census does for every held platform.
//! `cargo bench --bench advisories`; figures in BENCHMARKS.md.

use std::hint::black_box;
use std::path::PathBuf;

use criterion::{criterion_group, criterion_main, Criterion};
use tfmirror::advisories::import;
use tfmirror::advisories::{findings, Database, Subject};
use tfmirror::gobuild::{BuildInfo, Found};

/// The database to import.
fn source() -> PathBuf {
    std::env::var_os("VULNDB").map_or_else(
        || {
            eprintln!("VULNDB is not set: the pinned fixtures stand in for the Go database");
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories/go-vulndb")
        },
        PathBuf::from,
    )
}

/// A program's build information and packages.
fn program(var: &str) -> Option<(BuildInfo, Vec<String>)> {
    let path = std::env::var_os(var)?;
    let file = std::fs::File::open(path).ok()?;
    let Ok(Found::Go(info)) = tfmirror::gobuild::read(&file) else {
        return None;
    };
    let packages = tfmirror::gobuild::packages(&file, &tfmirror::gobuild::Wanted::default())
        .ok()??
        .packages;
    Some((info, packages.into_iter().collect()))
}

fn advisories(c: &mut Criterion) {
    let from = source();
    let stored = import::read(&from, 0).unwrap();
    eprintln!(
        "{}: {} advisories kept ({} withdrawn, {} not about Go modules)",
        from.display(),
        stored.source.entries,
        stored.source.withdrawn,
        stored.source.not_go
    );
    let mut group = c.benchmark_group(format!(
        "advisory database of {} entries",
        stored.source.entries
    ));
    group.sample_size(10);
    group.bench_function("import (read, reduce, index)", |b| {
        b.iter(|| Database::new(import::read(black_box(&from), 0).unwrap()));
    });
    let db = Database::new(stored);
    let programs: Vec<(BuildInfo, Vec<String>)> = ["TERRAFORM_BIN", "WEED_BIN"]
        .iter()
        .filter_map(|v| program(v))
        .collect();
    if programs.is_empty() {
        eprintln!("TERRAFORM_BIN and WEED_BIN are not set: matching left out");
        group.finish();
        return;
    }
    group.bench_function("match 10,000 versions", |b| {
        b.iter(|| {
            let mut found = 0;
            for i in 0..10_000 {
                let (build, packages) = &programs[i % programs.len()];
                found += findings(
                    &db,
                    &Subject {
                        build,
                        release_version: Some("1.0.3"),
                        packages: Some(packages),
                        symbols: None,
                        goos: "linux",
                        goarch: "amd64",
                    },
                )
                .len();
            }
            found
        });
    });
    // The record as the store keeps it, for the program with the most
    // modules.
    let (build, packages) = programs.iter().max_by_key(|(b, _)| b.deps.len()).unwrap();
    let record = serde_json::json!({
        "format": 1,
        "provider": {"hostname": "registry.terraform.io", "namespace": "acme", "type": "weed"},
        "version": "1.0.0",
        "platform": "linux_amd64",
        "archive_sha256": "00".repeat(32),
        "read_at_ms": 0,
        "read_by": "bench",
        "executables": [{"name": "terraform-provider-weed", "size": 1, "state": "go", "build": build, "packages": packages}],
    });
    let bytes = serde_json::to_vec(&record).unwrap();
    group.bench_function(
        format!("read a build record ({} KiB)", bytes.len() >> 10),
        |b| {
            b.iter(|| {
                serde_json::from_slice::<tfmirror::store::builds::BuildRecord>(black_box(&bytes))
                    .unwrap()
            });
        },
    );
    group.finish();
}

criterion_group!(benches, advisories);
criterion_main!(benches);
