//! The documentation search index at scale (BENCHMARKS.md, "Documentation
//! search"): builds the index tfmirror's daemon builds
//! (`tfmirror::docs::search::DocIndex`) over a generated corpus, then
//! times name and word searches. The corpus: PROVIDERS providers (default
//! one) of PAGES pages (default 1,500) at VERSIONS versions each (default
//! fifty), two pages in a hundred changing from one version to the next
//! (`SPREAD=1`: each provider's count of pages drawn instead, see
//! `corpus::page_count`);
//! each page's text is paragraphs of the null provider's real documentation
//! (`tests/fixtures/docs/null-v3.2.4`) drawn at random, to a size drawn
//! from 1 KiB to 24 KiB. Each search reads as many hits as the daemon's
//! does ([`RAW`]). Each version's pages and list are also kept in a disk
//! store as the mirror keeps them (`tfmirror::store::docs`: each page once
//! by its SHA-256, a list per version), to measure what whole-page sharing
//! stores (`STORE=0` leaves the store out; its table is of one provider's
//! pages, without `SPREAD`). Each version is put in the index as the
//! daemon puts it: with the contents of only the pages the index lacks.
//! Prints Markdown tables.
//!
//! Usage: cargo run --release --example bench-docs-search

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

#[path = "corpus.rs"]
mod corpus;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use tfmirror::address::{Provider, Version};
use tfmirror::docs::search::DocIndex;
use tfmirror::store::docs::{keep_page, write_version};
use tfmirror::store::DiskStore;

/// The hits the daemon reads for one search: 4 for each of the 50 pages
/// a search shows (`mirror/doc_search.rs`), as a page is indexed once per
/// content and may have several across versions.
const RAW: usize = 200;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
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
    let (spread, keep) = (env("SPREAD", 0) == 1, env("STORE", 1) == 1);
    let paragraphs = corpus::paragraphs();
    let mut rng = StdRng::seed_from_u64(7);
    let dir = tempfile::tempdir().unwrap();
    let index = DocIndex::create(&dir.path().join("index")).unwrap();
    let store = DiskStore::open(&dir.path().join("store")).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let mut store_time = Duration::ZERO;
    let (mut one_version, mut distinct, mut listed) = (0usize, 0usize, 0usize);
    let began = Instant::now();
    let (mut documents, mut bytes, mut uncommitted) = (0usize, 0usize, 0usize);
    for p in 0..providers {
        let provider = Provider::from_source(&format!("registry.terraform.io/bench/p{p}")).unwrap();
        let count = corpus::page_count(&mut rng, pages, spread);
        let mut made = corpus::Pages::new(&mut rng, &paragraphs, &format!("p{p}"), count);
        for v in 0..versions {
            if v > 0 {
                made.change(&mut rng, &paragraphs);
            }
            let stored = Instant::now();
            distinct += made.keep_fresh(|content| {
                if keep {
                    runtime.block_on(keep_page(&store, content)).unwrap()
                } else {
                    hex::encode(tfmirror::verify::Sha256::digest(content))
                }
            });
            store_time += stored.elapsed();
            let docs = made.docs(&provider, &Version::parse(&format!("1.{v}.0")).unwrap());
            let contents = &made.contents;
            if keep {
                let stored = Instant::now();
                runtime.block_on(write_version(&store, &docs)).unwrap();
                store_time += stored.elapsed();
            }
            listed += count;
            one_version = contents.values().map(String::len).sum::<usize>();
            bytes += one_version;
            // As the daemon does: only the contents the index lacks.
            let lacking: HashSet<String> = (index.lacking(&docs).unwrap().into_iter())
                .map(|p| p.sha256.clone())
                .collect();
            let new = (docs.pages.iter().zip(contents.values()))
                .filter(|(p, _)| lacking.contains(&p.sha256))
                .map(|(p, c)| (p, c.as_str()));
            let added = index.add_version(&docs, new).unwrap();
            documents += added;
            // Written as often as the daemon writes it while it makes
            // the index from the store (`mirror/doc_search.rs`).
            uncommitted += added;
            if uncommitted >= 20_000 {
                index.commit().unwrap();
                uncommitted = 0;
            }
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
            rng.gen_range(0..if spread { 10 } else { pages })
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
    println!("| corpus | contents indexed, of pages listed | text of every version | index on disk | build |");
    println!("|---|---|---|---|---|");
    println!(
        "| {providers} × {} pages × {versions} versions | {documents} of {listed} | {} MiB | {} MiB | {:.1} s |",
        if spread { "spread".to_owned() } else { pages.to_string() },
        bytes >> 20,
        on_disk >> 20,
        built.as_secs_f64()
    );
    println!();
    if keep {
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
            distinct,
            list_bytes >> 10,
            page_bytes / whole,
            page_bytes % whole * 100 / whole
        );
        println!();
    }
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
