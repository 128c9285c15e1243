//! The documentation search index at scale (BENCHMARKS.md, "Documentation
//! search"): builds the index tfmirror's daemon builds
//! (`tfmirror::docs::search::DocIndex`) over a generated corpus, then
//! times name and word searches. The corpus: PROVIDERS providers (default
//! one) of PAGES pages (default 1,500) at VERSIONS versions each (default
//! fifty), two pages in a hundred changing from one version to the next;
//! each page's text is paragraphs of the null provider's real documentation
//! (`tests/fixtures/docs/null-v3.2.4`) drawn at random, to a size drawn
//! from 1 KiB to 24 KiB. Each search reads as many hits as the daemon's
//! does ([`RAW`]). Each version's pages and list are also kept in a disk
//! store as the mirror keeps them (`tfmirror::store::docs`: each page once
//! by its SHA-256, a list per version), to measure what whole-page sharing
//! stores. Prints Markdown tables.
//!
//! Usage: cargo run --release --example bench-docs-search

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tfmirror::address::{DocName, Provider, Version};
use tfmirror::docs::search::DocIndex;
use tfmirror::docs::DocKind;
use tfmirror::store::docs::{keep_page, write_version, PageEntry, VersionDocs, DOCS_FORMAT};
use tfmirror::store::DiskStore;

/// The hits the daemon reads for one search: 20 for each of the 50 pages
/// a search shows (`mirror/doc_search.rs`), as a page is indexed once per
/// version.
const RAW: usize = 1_000;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The paragraphs of the real tree the pages are made of.
fn paragraphs() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/docs/null-v3.2.4/docs");
    let mut out = Vec::new();
    let mut stack = vec![root];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "md") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.extend(
                    text.split("\n\n")
                        .map(str::to_owned)
                        .filter(|p| p.len() > 40),
                );
            }
        }
    }
    out
}

fn page(rng: &mut StdRng, paragraphs: &[String], name: &str) -> String {
    let size = rng.gen_range(1_024..24_576);
    let mut text = format!("# {name}\n\nThe `{name}` resource.\n\n");
    while text.len() < size {
        text.push_str(&paragraphs[rng.gen_range(0..paragraphs.len())]);
        text.push_str("\n\n");
    }
    text
}

/// The bytes of the files below `dir`.
fn disk(dir: &Path) -> u64 {
    (std::fs::read_dir(dir).unwrap())
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            if meta.is_dir() {
                disk(&e.path())
            } else {
                meta.len()
            }
        })
        .sum()
}

/// The `percent`th percentile of `times` (nearest rank, rounded down).
fn percentile(times: &mut [Duration], percent: usize) -> Duration {
    times.sort();
    times[(times.len() - 1) * percent / 100]
}

fn main() {
    let (providers, pages, versions) = (
        env("PROVIDERS", 1),
        env("PAGES", 1_500),
        env("VERSIONS", 50),
    );
    let queries = env("QUERIES", 200);
    let paragraphs = paragraphs();
    let mut rng = StdRng::seed_from_u64(7);
    let dir = tempfile::tempdir().unwrap();
    let index = DocIndex::create(&dir.path().join("index")).unwrap();
    let store = DiskStore::open(&dir.path().join("store")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    // Pages already kept, by content: kept once, as a capture that wrote
    // them again would leave them.
    let mut kept: BTreeMap<String, String> = BTreeMap::new();
    let mut store_time = Duration::ZERO;
    let mut one_version = 0usize;
    let began = Instant::now();
    let (mut documents, mut bytes) = (0usize, 0usize);
    for p in 0..providers {
        let provider = Provider::from_source(&format!("registry.terraform.io/bench/p{p}")).unwrap();
        let mut contents: BTreeMap<usize, String> = (0..pages)
            .map(|i| (i, page(&mut rng, &paragraphs, &format!("p{p}_res_{i}"))))
            .collect();
        for v in 0..versions {
            if v > 0 {
                for _ in 0..pages / 50 {
                    let i = rng.gen_range(0..pages);
                    contents.insert(i, page(&mut rng, &paragraphs, &format!("p{p}_res_{i}")));
                }
            }
            let stored = Instant::now();
            let shas: Vec<String> = (contents.values())
                .map(|c| {
                    kept.entry(c.clone())
                        .or_insert_with(|| {
                            runtime.block_on(keep_page(&store, c.as_bytes())).unwrap()
                        })
                        .clone()
                })
                .collect();
            store_time += stored.elapsed();
            let entries: Vec<PageEntry> = (0..pages)
                .map(|i| PageEntry {
                    kind: DocKind::Resource,
                    name: DocName::parse(&format!("res_{i}")).unwrap(),
                    title: format!("p{p}_res_{i}"),
                    subcategory: String::new(),
                    description: String::new(),
                    sha256: shas[i].clone(),
                    size: contents[&i].len() as u64,
                    truncated: false,
                })
                .collect();
            let docs = VersionDocs {
                format: DOCS_FORMAT,
                provider: provider.clone(),
                version: Version::parse(&format!("1.{v}.0")).unwrap(),
                source: String::new(),
                fetched_at_ms: 0,
                licenses: Vec::new(),
                pages: entries,
                passed_over: BTreeMap::new(),
            };
            let stored = Instant::now();
            runtime.block_on(write_version(&store, &docs)).unwrap();
            store_time += stored.elapsed();
            documents += pages;
            one_version = contents.values().map(String::len).sum::<usize>();
            bytes += one_version;
            index
                .add_version(&docs, docs.pages.iter().zip(contents.values().cloned()))
                .unwrap();
        }
    }
    index.commit().unwrap();
    let built = began.elapsed().saturating_sub(store_time);
    let on_disk = disk(&dir.path().join("index"));
    let words: Vec<&str> = [
        "triggers",
        "lifecycle",
        "resource",
        "replace",
        "inputs",
        "terraform_data",
        "provisioner",
        "values",
    ]
    .to_vec();
    let mut timed = |make: &mut dyn FnMut(&mut StdRng) -> String| {
        let mut times = Vec::with_capacity(queries);
        let mut found = 0usize;
        for _ in 0..queries {
            let q = make(&mut rng);
            let t = Instant::now();
            found += index.search(&q, RAW).unwrap().len();
            times.push(t.elapsed());
        }
        (
            percentile(&mut times, 50),
            percentile(&mut times, 99),
            found / queries,
        )
    };
    let name = timed(&mut |rng| {
        format!(
            "p{}_res_{}",
            rng.gen_range(0..providers),
            rng.gen_range(0..pages)
        )
    });
    let word = timed(&mut |rng| words[rng.gen_range(0..words.len())].to_owned());
    let two = timed(&mut |rng| {
        format!(
            "{} {}",
            words[rng.gen_range(0..words.len())],
            words[rng.gen_range(0..words.len())]
        )
    });
    println!("| corpus | documents | text | index on disk | build |");
    println!("|---|---|---|---|---|");
    println!(
        "| {providers} × {pages} pages × {versions} versions | {documents} | {} MiB | {} MiB | {:.1} s |",
        bytes >> 20,
        on_disk >> 20,
        built.as_secs_f64()
    );
    println!();
    let (page_bytes, list_bytes) = (
        disk(&dir.path().join("store/docs/pages")),
        disk(&dir.path().join("store/docs/versions")),
    );
    println!("| kept in the store | last version's pages | pages kept (distinct) | lists | pages kept ÷ one version |");
    println!("|---|---|---|---|---|");
    let whole = one_version as u64 * providers as u64;
    println!(
        "| {providers} × {pages} pages × {versions} versions | {} KiB | {} KiB ({}) | {} KiB | {}.{:02} |",
        one_version >> 10,
        page_bytes >> 10,
        kept.len(),
        list_bytes >> 10,
        page_bytes / whole,
        page_bytes % whole * 100 / whole
    );
    println!();
    println!("| search ({queries} each, up to {RAW} hits read) | median | p99 | hits on average |");
    println!("|---|---|---|---|");
    for (what, (median, p99, found)) in [
        ("a name (`p0_res_123`)", name),
        ("one word", word),
        ("two words", two),
    ] {
        println!(
            "| {what} | {:.2} ms | {:.2} ms | {found} |",
            median.as_secs_f64() * 1e3,
            p99.as_secs_f64() * 1e3
        );
    }
    // Each word alone: what the tail of "one word" is made of (every
    // generated page says "resource" in its first lines, so that word is
    // in every document, and scoring reads them all).
    println!();
    println!("| word ({} searches each) | median |", (queries / 8).max(1));
    println!("|---|---|");
    for word in &words {
        let mut alone = Vec::new();
        for _ in 0..(queries / 8).max(1) {
            let t = Instant::now();
            index.search(word, RAW).unwrap();
            alone.push(t.elapsed());
        }
        println!(
            "| `{word}` | {:.2} ms |",
            percentile(&mut alone, 50).as_secs_f64() * 1e3
        );
    }
}
