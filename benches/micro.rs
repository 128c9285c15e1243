//! Micro-benchmarks of tfmirror's hot paths: request path parsing, `h1:`
//! hashing of a 50 MiB archive beside plain SHA-256 of the same bytes
//! (tfmirror's, and the portable `sha2` crate's for comparison),
//! rendering `index.json` and `:version.json`, SHA256SUMS parsing and
//! signature verification, one eviction from a cache index of 1,000,
//! 10,000, 100,000 and 1,000,000 archives, the line logged for each request,
//! and reading the Go build information of a provider archive whose
//! executable is SeaweedFS's `weed` (`WEED_BIN`) beside verifying it.
//! `cargo bench --bench micro`; figures in BENCHMARKS.md.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::io::{Cursor, Write};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sha2::{Digest, Sha256};
use tfmirror::address::{ArchiveKey, Platform, Provider, Version};
use tfmirror::http::routes;
use tfmirror::metrics::Metrics;
use tfmirror::mirror::residency::Archives;
use tfmirror::mirror::Residency;
use tfmirror::protocol::{IndexDocument, VersionDocument};
use tfmirror::store::CachedArchive;
use tfmirror::store::{IndexRecord, PackageRecord, SignedSums, VersionRecord};
use tfmirror::verify::{h1_of_zip, Keyring, Sha256Sums};

const PLATFORMS: [&str; 6] = [
    "darwin_amd64",
    "darwin_arm64",
    "linux_amd64",
    "linux_arm64",
    "windows_386",
    "windows_amd64",
];

/// A zip of one stored (uncompressed) file of `size` pseudo-random bytes:
/// a provider archive's shape, and as large as some.
fn archive(size: usize) -> Vec<u8> {
    let mut data = vec![0u8; size];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    for chunk in data.chunks_mut(8) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    let mut zip = zip::ZipWriter::new(Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .large_file(false);
    zip.start_file("terraform-provider-bench_v1.0.0", options)
        .unwrap();
    zip.write_all(&data).unwrap();
    zip.finish().unwrap().into_inner()
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(format!(
        "{}/tests/fixtures/gnupg/{name}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap()
}

fn version_record() -> VersionRecord {
    let provider = Provider::from_source("registry.terraform.io/hashicorp/aws").unwrap();
    let version = Version::parse("5.31.0").unwrap();
    let packages = PLATFORMS
        .iter()
        .map(|p| {
            let platform = Platform::parse(p).unwrap();
            let filename = provider.archive_name(&version, &platform);
            let sha256 = tfmirror::verify::hex(&Sha256::digest(filename.as_bytes()));
            let record = PackageRecord {
                download_url: format!("https://releases.example/{filename}")
                    .parse()
                    .unwrap(),
                filename,
                sha256,
                sums: 0,
                protocols: Vec::new(),
                size: None,
                reported_h1: None,
            };
            (platform, record)
        })
        .collect();
    VersionRecord {
        provider,
        version,
        packages,
        sums: vec![SignedSums {
            url: "https://releases.example/SHA256SUMS".parse().unwrap(),
            document: String::new(),
            signature: String::new(),
            signed_by: String::new(),
            verification: tfmirror::verify::Verification::Signed,
            keys: Vec::new(),
            key_details: Vec::new(),
        }],
        unsigned_import: false,
        evicted_ms: BTreeMap::new(),
        verified_at_ms: 0,
    }
}

fn paths(c: &mut Criterion) {
    c.bench_function("parse version path", |b| {
        b.iter(|| {
            routes::parse(black_box(
                "/registry.terraform.io/hashicorp/aws/5.31.0.json",
            ))
        });
    });
    c.bench_function("parse archive path", |b| {
        b.iter(|| {
            routes::parse(black_box(
                "/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.31.0_linux_amd64.zip",
            ))
        });
    });
}

fn hashing(c: &mut Criterion) {
    let zip = archive(50 * 1024 * 1024);
    let mut group = c.benchmark_group("50 MiB archive");
    group.sample_size(10);
    group.throughput(Throughput::Bytes(zip.len() as u64));
    group.bench_function("h1", |b| {
        b.iter(|| h1_of_zip(Cursor::new(black_box(&zip[..]))).unwrap());
    });
    group.bench_function("sha256", |b| {
        b.iter(|| tfmirror::verify::Sha256::digest(black_box(&zip[..])));
    });
    // The portable implementation, for comparison on CPUs without SHA
    // extensions.
    group.bench_function("sha256 (sha2 crate)", |b| {
        b.iter(|| Sha256::digest(black_box(&zip[..])));
    });
    group.finish();
}

fn rendering(c: &mut Criterion) {
    let index = IndexRecord {
        fetched_at_ms: 0,
        protocols: std::collections::BTreeMap::new(),
        versions: (0..200)
            .map(|i| {
                let v = Version::parse(&format!("{}.{}.0", i / 20, i % 20)).unwrap();
                let platforms = PLATFORMS
                    .iter()
                    .map(|p| Platform::parse(p).unwrap())
                    .collect();
                (v, platforms)
            })
            .collect(),
        first_seen_ms: std::collections::BTreeMap::new(),
    };
    c.bench_function("render index.json (200 versions)", |b| {
        b.iter(|| serde_json::to_vec(&IndexDocument::from_record(black_box(&index))).unwrap());
    });
    let record = version_record();
    let h1: BTreeMap<Platform, String> = record
        .packages
        .keys()
        .map(|p| (p.clone(), format!("h1:{}=", "A".repeat(43))))
        .collect();
    c.bench_function("render :version.json (6 platforms)", |b| {
        b.iter(|| {
            serde_json::to_vec(&VersionDocument::from_record(
                black_box(&record),
                &h1,
                |_| None,
            ))
            .unwrap()
        });
    });
}

fn verification(c: &mut Criterion) {
    let sums: String = PLATFORMS
        .iter()
        .map(|p| {
            format!(
                "{}  terraform-provider-aws_5.31.0_{p}.zip\n",
                "ab".repeat(32)
            )
        })
        .collect::<Vec<_>>()
        .concat();
    c.bench_function("parse SHA256SUMS (6 lines)", |b| {
        b.iter(|| Sha256Sums::parse(black_box(sums.as_bytes())).unwrap());
    });
    let key = String::from_utf8(fixture("signer.asc")).unwrap();
    let ring = Keyring::from_armored([key.as_str()]).unwrap();
    let (document, signature) = (fixture("SHA256SUMS"), fixture("SHA256SUMS.sig"));
    c.bench_function("verify SHA256SUMS signature (RSA 2048, GnuPG)", |b| {
        b.iter(|| {
            ring.verify(black_box(&document), &signature, "keys")
                .unwrap()
        });
    });
}

/// Storing one archive into a full cache evicts the least recently used
/// one: its cost should not grow with the number of archives held.
fn eviction(c: &mut Criterion) {
    let provider = Provider::from_source("registry.scale.test/acme/p").unwrap();
    let platform = Platform::parse("linux_amd64").unwrap();
    let mut group = c.benchmark_group("evict one archive");
    for held in [1_000u64, 10_000, 100_000, 1_000_000] {
        let mut archives = Archives::default();
        for i in 0..held {
            archives.push(&CachedArchive {
                provider: provider.clone(),
                version: Version::parse(&format!("1.0.{i}")).unwrap(),
                platform: platform.clone(),
                size: 10,
                last_used: i,
                path: std::path::PathBuf::new(),
            });
        }
        let residency = Residency::new(
            archives,
            Vec::new(),
            Vec::new(),
            Some(bytesize::ByteSize(held * 10)),
            std::sync::Arc::new(Metrics::new()),
        );
        // New keys made beforehand, so that only the eviction is timed.
        let fresh: Vec<ArchiveKey> = (0..200_000u64)
            .map(|i| {
                ArchiveKey::new(
                    &provider,
                    &Version::parse(&format!("2.0.{i}")).unwrap(),
                    &platform,
                )
            })
            .collect();
        let mut next = fresh.iter().cycle();
        group.bench_function(format!("{held} held"), |b| {
            b.iter(|| {
                let key = next.next().unwrap();
                black_box(residency.stored(key, 10))
            });
        });
    }
    group.finish();
}

/// How long the pages hold the residency index's lock at a million
/// archives (20,000 providers of 10 versions and 5 platforms, as the scale
/// benchmark generates them), against what a protocol answer holds it
/// for: each call below does its work under the lock, so its time bounds
/// the hold (the search takes the names and reads them after the lock).
fn page_locks(c: &mut Criterion) {
    let platforms: Vec<Platform> = [
        "darwin_amd64",
        "darwin_arm64",
        "linux_amd64",
        "linux_arm64",
        "windows_amd64",
    ]
    .iter()
    .map(|p| Platform::parse(p).unwrap())
    .collect();
    let mut archives = Archives::default();
    let mut turn = 0;
    for p in 0..20_000 {
        let provider = Provider::from_source(&format!("registry.scale.test/acme/p{p:06}")).unwrap();
        for v in 0..10 {
            let version = Version::parse(&format!("1.{v}.0")).unwrap();
            for platform in &platforms {
                turn += 1;
                archives.push(&CachedArchive {
                    provider: provider.clone(),
                    version: version.clone(),
                    platform: platform.clone(),
                    size: 10,
                    last_used: turn,
                    path: std::path::PathBuf::new(),
                });
            }
        }
    }
    let residency = Residency::new(
        archives,
        Vec::new(),
        Vec::new(),
        None,
        std::sync::Arc::new(Metrics::new()),
    );
    let served = ArchiveKey::new(
        &Provider::from_source("registry.scale.test/acme/p001234").unwrap(),
        &Version::parse("1.9.0").unwrap(),
        &platforms[2],
    );
    let mut group = c.benchmark_group("index lock at a million archives");
    group.bench_function("an archive served (protocol)", |b| {
        b.iter(|| black_box(residency.used(&served, 10)));
    });
    group.bench_function("home page counts", |b| {
        b.iter(|| black_box(residency.held_counts()));
    });
    // Every provider's rows made once, as a crawler of every page would.
    for page in 1..=200 {
        black_box(residency.held_page(page, 100));
    }
    group.bench_function("operator's view, first page of 100: lock held", |b| {
        b.iter(|| black_box(residency.held_page_taken(1, 100)));
    });
    group.bench_function("operator's view, last page of 100: lock held", |b| {
        b.iter(|| black_box(residency.held_page_taken(200, 100)));
    });
    group.bench_function("operator's view, last page of 100: made after", |b| {
        b.iter(|| black_box(residency.held_page(200, 100)));
    });
    // A provider arrives and leaves before each view: the view makes the
    // kept order again, and the rows of the provider that changed.
    let arriving = ArchiveKey::new(
        &Provider::from_source("registry.scale.test/acme/p099999").unwrap(),
        &Version::parse("1.0.0").unwrap(),
        &platforms[2],
    );
    group.bench_function("operator's view after a provider arrives: lock held", |b| {
        b.iter(|| {
            residency.stored(&arriving, 10);
            residency.forget(&arriving);
            black_box(residency.held_page_taken(200, 100))
        });
    });
    group.bench_function("a provider arrives and leaves (no view)", |b| {
        b.iter(|| {
            residency.stored(&arriving, 10);
            residency.forget(&arriving);
        });
    });
    group.bench_function("search: the names taken", |b| {
        b.iter(|| black_box(residency.provider_names()));
    });
    let names = residency.provider_names();
    group.bench_function("search anywhere (no lock): cme/p", |b| {
        b.iter(|| black_box(names.find("cme/p", 100)));
    });
    group.bench_function("search a start (no lock): p0012", |b| {
        b.iter(|| black_box(names.find("p0012", 100)));
    });
    group.bench_function(
        "search a start after a provider arrives (names packed again)",
        |b| {
            b.iter(|| {
                residency.stored(&arriving, 10);
                residency.forget(&arriving);
                black_box(residency.provider_names().find("p0012", 100))
            });
        },
    );
    group.finish();
}

/// The logging work of one request at the default level, written to a
/// sink: the request's span, the request line, and formatting both with
/// tracing's text format. Compared: the request's fields recorded on its
/// span (as tfmirror logged them before), and on the line itself with only
/// the ID and cache outcome on the span (as it logs them now).
fn request_line(c: &mut Criterion) {
    use tfmirror::http::dispatch::ACCESS_LOG;
    use tracing::field::Empty;
    let subscriber = || {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("info"))
            .with_writer(std::io::sink)
            .with_ansi(false)
            .finish()
    };
    let (id, client, method) = ("18ea91c6f0a90df1", "192.0.2.7", "GET");
    let path = "/registry.terraform.io/hashicorp/aws/index.json";
    let mut group = c.benchmark_group("log one request");
    group.bench_function("fields on the span", |b| {
        tracing::subscriber::with_default(subscriber(), || {
            b.iter(|| {
                let span = tracing::info_span!("request", id = %id, client = %client,
                    method = %method, path = %path, status = Empty, ms = Empty, cache = Empty);
                span.in_scope(|| {
                    let current = tracing::Span::current();
                    current.record("cache", "hit");
                    current.record("status", 200u16);
                    current.record("ms", 0u64);
                    tracing::info!(target: ACCESS_LOG, "answered");
                });
            });
        });
    });
    group.bench_function("fields on the line", |b| {
        tracing::subscriber::with_default(subscriber(), || {
            b.iter(|| {
                let span = tracing::info_span!("request", id = %id, cache = Empty);
                span.in_scope(|| {
                    tracing::Span::current().record("cache", "hit");
                    tracing::info!(target: ACCESS_LOG, client = %client, method = %method,
                        path = %path, status = 200u16, ms = 0u64, "answered");
                });
            });
        });
    });
    group.finish();
}

/// A provider archive whose executable is a real Go program (SeaweedFS's
/// `weed`, about 150 MiB, deflated as releases are): its Go build
/// information read (the executable unpacked to a temporary file, then
/// read) beside what verifying the same archive costs (SHA-256 and `h1:`).
fn build_information(c: &mut Criterion) {
    let Some(weed) = std::env::var_os("WEED_BIN") else {
        eprintln!("build information: WEED_BIN is not set (scripts/install-seaweedfs); left out");
        return;
    };
    let exe = std::fs::read(weed).unwrap();
    let mut zip = Cursor::new(Vec::new());
    {
        let mut w = zip::ZipWriter::new(&mut zip);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        w.start_file("terraform-provider-weed_v4.48.0", opts)
            .unwrap();
        w.write_all(&exe).unwrap();
        w.finish().unwrap();
    }
    let zip = zip.into_inner();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("archive.zip");
    std::fs::write(&path, &zip).unwrap();
    let mut group = c.benchmark_group(format!(
        "provider archive of weed ({} MiB deflated)",
        zip.len() >> 20
    ));
    group.sample_size(10);
    group.throughput(Throughput::Bytes(zip.len() as u64));
    group.bench_function("sha256", |b| {
        b.iter(|| tfmirror::verify::Sha256::digest(black_box(&zip[..])));
    });
    group.bench_function("h1", |b| {
        b.iter(|| h1_of_zip(Cursor::new(black_box(&zip[..]))).unwrap());
    });
    group.bench_function("build information", |b| {
        b.iter(|| {
            let file = std::fs::File::open(&path).unwrap();
            tfmirror::gobuild::executables_in(
                file,
                tfmirror::gobuild::ExecutableKind::Provider,
                dir.path(),
                tfmirror::gobuild::MAX_EXECUTABLE_SIZE,
                &tfmirror::gobuild::Wanted::default(),
            )
            .unwrap()
        });
    });
    group.finish();
}

criterion_group!(
    benches,
    paths,
    hashing,
    build_information,
    rendering,
    verification,
    eviction,
    page_locks,
    request_line
);
criterion_main!(benches);
