//! The scale benchmark's synthetic cache: `N` archives written straight
//! into a cache directory in tfmirror's layout, as if fetched and verified,
//! each version with its version list entry, its record and a SHA256SUMS
//! signed at generation time (so `tfmirror verify` has real work to do).
//!
//! Usage: `bench-scale-cache CACHE_DIR ARCHIVES [JOBS]`
//!
//! The archives spread over providers of 10 versions with 5 platforms
//! each (ARCHIVES / 50 providers), under `registry.scale.test/acme/`,
//! written by JOBS threads (default 8) that share the providers out: each
//! archive is flushed to disk as it is kept, and the threads overlap those
//! waits.
//!
//! With `DOCS_EVERY=N`, every Nth provider (p000000, then every N) keeps
//! documentation for each of its versions, as the mirror keeps it (each
//! page once by its SHA-256, a list per version): generated pages
//! (`benches/docs/corpus.rs`), two in a hundred changing from one version
//! to the next; p000000 has 1,500 pages, the others a count drawn from
//! the registries' spread.

#[path = "../../tests/common/mod.rs"]
mod common;
#[path = "../docs/corpus.rs"]
mod corpus;

use std::collections::BTreeMap;
use std::io::Write as _;

use base64::Engine;
use common::{build_archive, sha256_hex, sums_document, Signer};
use rand::rngs::StdRng;
use rand::SeedableRng;
use tfmirror::address::{Platform, Provider, Version};
use tfmirror::store::docs::{keep_page, write_version};
use tfmirror::store::{DiskStore, IndexRecord, PackageRecord, SignedSums, VersionRecord};
use tfmirror::verify::TrustPolicy;

const PLATFORMS: [&str; 5] = [
    "darwin_amd64",
    "darwin_arm64",
    "linux_amd64",
    "linux_arm64",
    "windows_amd64",
];
const VERSIONS: usize = 10;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(dir), Some(count)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: bench-scale-cache CACHE_DIR ARCHIVES [JOBS]");
        std::process::exit(2);
    };
    let count: usize = count.parse().expect("ARCHIVES is a number");
    let jobs: usize = args
        .get(3)
        .map_or(8, |j| j.parse().expect("JOBS is a number"));
    let providers = (count / (VERSIONS * PLATFORMS.len())).max(1);
    let docs_every: usize = std::env::var("DOCS_EVERY")
        .ok()
        .map_or(0, |n| n.parse().expect("DOCS_EVERY is a number"));
    let paragraphs = corpus::paragraphs();
    let store = DiskStore::open(std::path::Path::new(dir)).expect("opening CACHE_DIR");
    std::thread::scope(|scope| {
        for job in 0..jobs {
            let (store, paragraphs) = (&store, &paragraphs);
            scope.spawn(move || {
                for i in (job..providers).step_by(jobs) {
                    write_provider(store, i);
                    if docs_every > 0 && i % docs_every == 0 {
                        write_docs(store, i, paragraphs);
                    }
                }
            });
        }
    });
    println!(
        "{providers} providers, {} versions, {} archives in {dir}",
        providers * VERSIONS,
        providers * VERSIONS * PLATFORMS.len()
    );
}

/// Writes provider number `i`: its versions' archives, records and list.
fn write_provider(store: &DiskStore, i: usize) {
    let signer = Signer::new("scale");
    let keys = vec![signer.public_armored()];
    let trust = TrustPolicy::new(&[], false).expect("the default trust policy");
    let platforms: Vec<Platform> = PLATFORMS
        .iter()
        .map(|p| Platform::parse(p).unwrap())
        .collect();
    let kind = format!("p{i:06}");
    let provider = Provider::from_source(&format!("registry.scale.test/acme/{kind}")).unwrap();
    let mut index = IndexRecord {
        fetched_at_ms: 0,
        versions: BTreeMap::new(),
        protocols: BTreeMap::new(),
        first_seen_ms: std::collections::BTreeMap::new(),
    };
    for minor in 0..VERSIONS {
        let v = format!("1.{minor}.0");
        let version = Version::parse(&v).unwrap();
        let archives: BTreeMap<String, Vec<u8>> = PLATFORMS
            .iter()
            .map(|p| ((*p).to_string(), build_archive(&kind, &v, p)))
            .collect();
        let sums = sums_document(&kind, &v, &archives);
        let signature = signer.sign_binary(&sums);
        let vouched = trust
            .check(&provider, &sums, &signature, &keys)
            .expect("the generated signature verifies");
        let mut record = VersionRecord {
            provider: provider.clone(),
            version: version.clone(),
            packages: BTreeMap::new(),
            sums: vec![SignedSums {
                url: format!("https://registry.scale.test/files/{kind}_{v}_SHA256SUMS")
                    .parse()
                    .unwrap(),
                document: String::from_utf8(sums).unwrap(),
                signature: base64::engine::general_purpose::STANDARD.encode(&signature),
                signed_by: vouched.key_id,
                verification: vouched.verification,
                keys: keys.clone(),
                key_details: Vec::new(),
            }],
            unsigned_import: false,
            evicted_ms: BTreeMap::new(),
            verified_at_ms: tfmirror::clock::system().unix_ms(),
        };
        for platform in &platforms {
            let bytes = &archives[platform.as_str()];
            let filename = provider.archive_name(&version, platform);
            let mut temp = tempfile::NamedTempFile::new_in(store.tmp_dir()).unwrap();
            temp.write_all(bytes).unwrap();
            store
                .keep_archive(temp.into_temp_path(), &provider, &version, platform)
                .expect("keeping an archive");
            record.packages.insert(
                platform.clone(),
                PackageRecord {
                    download_url: format!("https://registry.scale.test/files/{filename}")
                        .parse()
                        .unwrap(),
                    filename,
                    sha256: sha256_hex(bytes),
                    sums: 0,
                    protocols: vec!["5.0".into()],
                    size: None,
                    reported_h1: None,
                },
            );
        }
        store
            .write_json(&store.version_path(&provider, &version), &record)
            .unwrap();
        index.versions.insert(version, platforms.clone());
    }
    store
        .write_json(&store.index_path(&provider), &index)
        .unwrap();
}

/// Writes the documentation of provider number `i`'s versions.
fn write_docs(store: &DiskStore, i: usize, paragraphs: &[String]) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut rng = StdRng::seed_from_u64(i as u64);
    let count = if i == 0 {
        1_500
    } else {
        corpus::page_count(&mut rng, 0, true)
    };
    let kind = format!("p{i:06}");
    let provider = Provider::from_source(&format!("registry.scale.test/acme/{kind}")).unwrap();
    let mut pages = corpus::Pages::new(&mut rng, paragraphs, &kind, count);
    for minor in 0..VERSIONS {
        if minor > 0 {
            pages.change(&mut rng, paragraphs);
        }
        pages.keep_fresh(|content| runtime.block_on(keep_page(store, content)).unwrap());
        let version = Version::parse(&format!("1.{minor}.0")).unwrap();
        let docs = pages.docs(&provider, &version);
        runtime.block_on(write_version(store, &docs)).unwrap();
    }
}
