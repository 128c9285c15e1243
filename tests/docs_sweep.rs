//! Documentation goes with its versions: the daemon's sweeps, moved on by
//! the daemon's paused clock, remove the list of a version evicted under
//! `cache.max_size` and then, a day after they were last written, the
//! pages no held version lists; pages a held version shares stay. The
//! oracle reads the real null provider trees (`tests/fixtures/docs/`) and
//! the cache directory itself: which pages each version has, by the
//! SHA-256 of each file, and what the files left take.

mod common;

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use common::daemon::{config_file, run_ok};
use common::docs::{docs_from, kind_of, serve_terraform_shape, tree_docs, TreeDoc};
use common::*;
use http::StatusCode;
use sha2::{Digest, Sha256};
use tfmirror::mirror::doc_sweep::{PAGE_GRACE, SWEEP_EVERY};

const HOST: &str = "registry.origin.test";

/// The SHA-256 of each document of a tree: the names its pages are kept
/// under.
fn shas(docs: &[TreeDoc]) -> BTreeSet<String> {
    docs.iter()
        .map(|d| hex::encode(Sha256::digest(&d.content)))
        .collect()
}

/// The pages the cache directory holds, by name, with their bytes in all.
fn pages_on_disk(cache: &Path) -> (BTreeSet<String>, u64) {
    let mut names = BTreeSet::new();
    let mut bytes = 0;
    for rel in files_below(&cache.join("docs/pages")) {
        let file = cache.join("docs/pages").join(&rel);
        bytes += std::fs::metadata(&file).unwrap().len();
        let name = rel.rsplit('/').next().unwrap();
        names.insert(name.strip_suffix(".md").unwrap().to_owned());
    }
    (names, bytes)
}

/// The bytes of the version lists the cache directory holds.
fn lists_on_disk(cache: &Path) -> u64 {
    let dir = cache.join("docs/versions");
    (files_below(&dir).iter())
        .map(|rel| std::fs::metadata(dir.join(rel)).unwrap().len())
        .sum()
}

/// A metric's value, where the page has it.
async fn metric(c: &Client, m: &RunningMirror, name: &str) -> Option<u64> {
    let text = c.get(&m.url("/metrics")).await.page_text();
    (text.lines())
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|n| n.parse().ok())
}

/// Waits until the counter `name` has reached `n`: the daemon has done
/// its `n`th `what` (a sweep, a backfill).
async fn counted(c: &Client, m: &RunningMirror, what: &str, name: &str, n: u64) {
    wait_until_answered(
        &format!("{what} {n} is done"),
        Duration::from_secs(60),
        || async move { metric(c, m, name).await >= Some(n) },
    )
    .await;
}

/// Waits until the daemon has swept `n` times.
async fn swept(c: &Client, m: &RunningMirror, n: u64) {
    counted(c, m, "sweep", "tfmirror_docs_sweeps_total", n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_evicted_version_s_documentation_goes_and_pages_a_held_version_lists_stay() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let (old, new) = (tree_docs("null-v3.2.1"), tree_docs("null-v3.2.4"));
    let (old_pages, new_pages) = (shas(&old), shas(&new));
    // The trees share pages, and each has pages of its own.
    assert!(!old_pages.is_disjoint(&new_pages));
    assert!(!old_pages.is_subset(&new_pages));
    // Archives of 1 MiB, and room for one with its documentation.
    let size = 1 << 20;
    publish_big(&origin, &signer, "null", &["3.2.1", "3.2.4"], size);
    serve_terraform_shape(&origin, ("null", "3.2.1"), &old, 1_000);
    serve_terraform_shape(&origin, ("null", "3.2.4"), &new, 2_000);
    let mut config = setup.config(&origin, &[], &[HOST]);
    config.upstream.stream_above = bytesize::ByteSize::gib(1);
    config.cache.max_size = Some(bytesize::ByteSize(size as u64 + 512 * 1024));
    docs_from(&mut config, HOST, &origin);
    let mirror = RunningMirror::start(config).await;
    let c = Client::trusting(&mirror.ca_file);
    let cache = setup.cache_dir();
    let list = |v: &str| cache.join(format!("docs/versions/{HOST}/acme/null/{v}.json"));
    swept(&c, &mirror, 1).await;
    for version in ["3.2.1", "3.2.4"] {
        let url = mirror.url(&format!(
            "/{HOST}/acme/null/terraform-provider-null_{version}_linux_amd64.zip"
        ));
        assert_eq!(c.get(&url).await.status, StatusCode::OK, "{version}");
        wait_until("its documentation is kept", Duration::from_secs(60), || {
            list(version).is_file()
        })
        .await;
    }
    // 3.2.4 came in, and 3.2.1 went out to make room; its list and pages
    // are still kept.
    let archive = |v: &str| {
        cache.join(format!(
            "providers/{HOST}/acme/null/{v}/terraform-provider-null_{v}_linux_amd64.zip"
        ))
    };
    assert!(archive("3.2.4").is_file());
    assert!(!archive("3.2.1").exists());
    let both: BTreeSet<String> = old_pages.union(&new_pages).cloned().collect();
    assert_eq!(pages_on_disk(&cache).0, both);
    // Each capture counted its version's pages whole, and its list,
    // toward the bound.
    let whole: usize = old.iter().chain(&new).map(|d| d.content.len()).sum();
    assert_eq!(
        metric(&c, &mirror, "tfmirror_docs_bytes").await,
        Some(whole as u64 + lists_on_disk(&cache))
    );

    // The next sweep removes 3.2.1's list; its own pages are younger than
    // the grace, and stay.
    mirror.clock.advance(SWEEP_EVERY);
    swept(&c, &mirror, 2).await;
    assert!(!list("3.2.1").exists());
    assert!(list("3.2.4").is_file());
    assert_eq!(pages_on_disk(&cache).0, both);

    // A list this build cannot read keeps every page, however old.
    let stray = cache.join(format!("docs/versions/{HOST}/acme/null/not-a-version.json"));
    std::fs::write(&stray, b"{}").unwrap();
    mirror.clock.advance(PAGE_GRACE);
    swept(&c, &mirror, 3).await;
    assert_eq!(pages_on_disk(&cache).0, both);

    // Once it is gone, the pages only 3.2.1 listed go; the ones 3.2.4
    // lists stay, and what they take is what documentation counts.
    std::fs::remove_file(&stray).unwrap();
    mirror.clock.advance(SWEEP_EVERY);
    swept(&c, &mirror, 4).await;
    let (left, bytes) = pages_on_disk(&cache);
    assert_eq!(left, new_pages);
    assert_eq!(
        metric(&c, &mirror, "tfmirror_docs_bytes").await,
        Some(bytes + lists_on_disk(&cache))
    );
    let removed = old_pages.difference(&new_pages).count() as u64;
    assert_eq!(
        metric(&c, &mirror, "tfmirror_docs_pages_removed_total").await,
        Some(removed)
    );
    let page = format!("/-/api/providers/{HOST}/acme/null/3.2.4/docs/resource/resource");
    assert_eq!(c.get(&mirror.url(&page)).await.status, StatusCode::OK);

    // A page the store lost: the next sweep fetches the version's
    // documentation again, and the page is back.
    let gone = hex::encode(Sha256::digest(&new[0].content));
    let lost_file = cache.join(format!("docs/pages/{}/{gone}.md", &gone[..2]));
    std::fs::remove_file(&lost_file).unwrap();
    mirror.clock.advance(SWEEP_EVERY);
    swept(&c, &mirror, 5).await;
    wait_until(
        "the lost page is kept again",
        Duration::from_secs(60),
        || lost_file.is_file() && list("3.2.4").is_file(),
    )
    .await;
    assert_eq!(std::fs::read(&lost_file).unwrap(), new[0].content);
    mirror.stop().await;

    // `gc` counts the documentation too: a limit of the archive and the
    // pages keeps both; a byte less evicts the archive.
    let home = setup.dir.path();
    let config = config_file(&setup, &origin, "");
    let config = config.to_str().unwrap();
    let docs = pages_on_disk(&cache).1 + lists_on_disk(&cache);
    let held = std::fs::metadata(archive("3.2.4")).unwrap().len();
    let gc = |limit: u64| {
        let limit = format!("{limit}B");
        async move { run_ok(home, &["gc", "--config", config, "--max-size", &limit]).await }
    };
    let ran = gc(held + docs).await;
    assert!(ran.stdout.contains("evicted 0 archives"), "{}", ran.stdout);
    assert!(archive("3.2.4").is_file());
    let ran = gc(held + docs - 1).await;
    assert!(ran.stdout.contains("evicted 1 archives"), "{}", ran.stdout);
    assert!(!archive("3.2.4").exists());

    // `docs sweep` at once: 3.2.4 is no longer held, so its list goes;
    // its pages, written within the day, stay for now.
    let (pages, bytes) = pages_on_disk(&cache);
    assert_eq!(pages, new_pages);
    let ran = run_ok(home, &["docs", "sweep", "--config", config]).await;
    let said = format!(
        "documentation lists: 1, removed (version no longer held): 1, removed to be fetched again (a page missing): 0, not readable by this build: 0\n\
         pages: {n}, removed: 0, listed by no version but written within a day (left): {n}; bytes left: {bytes}\n",
        n = pages.len()
    );
    assert_eq!(ran.stdout, said);
    assert!(!list("3.2.4").exists());
    assert_eq!(pages_on_disk(&cache).0, new_pages);
}

/// What the search answers for `query`: each (version, kind, name) it
/// lists.
async fn found(c: &Client, m: &RunningMirror, query: &str) -> BTreeSet<(String, String, String)> {
    let got = c.get(&m.url(&format!("/-/api/search?q={query}"))).await;
    assert_eq!(got.status, StatusCode::OK, "{query}");
    let answer: serde_json::Value = got.json();
    let mut out = BTreeSet::new();
    for d in answer["docs"].as_array().unwrap() {
        let s = |k: &str| d[k].as_str().unwrap().to_owned();
        for v in std::iter::once(&d["version"]).chain(d["older"].as_array().unwrap()) {
            out.insert((v.as_str().unwrap().to_owned(), s("kind"), s("name")));
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn documentation_another_process_kept_is_found_after_the_next_sweep() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let docs = tree_docs("null-v3.2.4");
    origin.publish(
        "acme",
        "null",
        "3.2.4",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    serve_terraform_shape(&origin, ("null", "3.2.4"), &docs, 1_000);
    // The daemon names no source for the host: it keeps no documentation
    // itself.
    let config = setup.config(&origin, &[], &[HOST]);
    let mirror = RunningMirror::start(config).await;
    let c = Client::trusting(&mirror.ca_file);
    let url = mirror.url(&format!(
        "/{HOST}/acme/null/terraform-provider-null_3.2.4_linux_amd64.zip"
    ));
    assert_eq!(c.get(&url).await.status, StatusCode::OK);
    swept(&c, &mirror, 1).await;
    // The pages holding a word, read from the tree.
    let word = "triggers";
    let want: BTreeSet<(String, String, String)> = (docs.iter())
        .filter(|d| {
            String::from_utf8_lossy(&d.content)
                .split(|ch: char| !ch.is_alphanumeric())
                .any(|w| w.eq_ignore_ascii_case(word))
        })
        .map(|d| {
            (
                "3.2.4".to_owned(),
                kind_of(d.category).to_owned(),
                d.name.clone(),
            )
        })
        .collect();
    assert!(!want.is_empty());
    assert_eq!(found(&c, &mirror, word).await, BTreeSet::new());
    // A command beside it, which names the source, keeps them.
    let home = setup.dir.path();
    let root = origin.providers_url().replace("/v1/providers/", "/");
    let extra = format!("[docs.hosts.\"{HOST}\"]\nsource = \"terraform\"\nurl = \"{root}\"\n");
    let config = config_file(&setup, &origin, &extra);
    let ran = run_ok(
        home,
        &["docs", "backfill", "--config", config.to_str().unwrap()],
    )
    .await;
    assert!(
        ran.stdout.contains("documentation kept now: 1"),
        "{}",
        ran.stdout
    );
    assert_eq!(found(&c, &mirror, word).await, BTreeSet::new());
    // The daemon's next sweep, once its index is made, puts them in it.
    wait_until_answered("the index is made", Duration::from_secs(60), || {
        let (c, m) = (&c, &mirror);
        async move {
            let answer = c.get(&m.url("/-/api/search?q=x")).await.json();
            answer["docs_search"] == "complete"
        }
    })
    .await;
    mirror.clock.advance(SWEEP_EVERY);
    swept(&c, &mirror, 2).await;
    assert_eq!(found(&c, &mirror, word).await, want);
    mirror.stop().await;
}

/// A capture that failed is tried again by the daemon's next backfill,
/// `docs.backfill_every` later on its clock, without a restart.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_capture_is_tried_again_by_the_next_backfill() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "null",
        "3.2.4",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let mut config = setup.config(&origin, &[], &[HOST]);
    docs_from(&mut config, HOST, &origin);
    let every = config.docs.backfill_every;
    let mirror = RunningMirror::start(config).await;
    let c = Client::trusting(&mirror.ca_file);
    let list = setup
        .cache_dir()
        .join(format!("docs/versions/{HOST}/acme/null/3.2.4.json"));
    let backfills = |n| counted(&c, &mirror, "backfill", "tfmirror_docs_backfills_total", n);
    backfills(1).await;
    // The registry gives no documentation yet: the capture fails.
    let url = mirror.url(&format!(
        "/{HOST}/acme/null/terraform-provider-null_3.2.4_linux_amd64.zip"
    ));
    assert_eq!(c.get(&url).await.status, StatusCode::OK);
    wait_until_answered("the capture failed", Duration::from_secs(60), || {
        let (c, m) = (&c, &mirror);
        async move {
            let failed = "tfmirror_docs_captures_total{outcome=\"failed\"}";
            metric(c, m, failed).await >= Some(1)
        }
    })
    .await;
    serve_terraform_shape(&origin, ("null", "3.2.4"), &tree_docs("null-v3.2.4"), 1_000);
    assert!(!list.exists());
    mirror.clock.advance(every);
    backfills(2).await;
    assert!(list.is_file());
    mirror.stop().await;
}
