//! A bounded load test on loopback: 20,000 requests from 64 connections at
//! once against the `tfmirror` daemon (a separate process, so its memory can
//! be watched), mixing requests for cached content, hostile requests and
//! requests that reach a misbehaving origin. Valid cached requests never get
//! a 5xx, every archive arrives intact, nothing answers 500, and the
//! daemon's resident memory stays under a ceiling and stops growing.

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::daemon::*;
use common::*;
use http::{Method, StatusCode};

const REQUESTS: usize = 20_000;
const CONNECTIONS: usize = 64;
/// Resident memory the daemon (a debug build) must stay under.
const RSS_CEILING_KIB: u64 = 128 * 1024;
/// How much resident memory may still grow between the end of the first
/// quarter of the run and its end.
const RSS_LATE_GROWTH_KIB: u64 = 32 * 1024;

fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
}

/// What one request expects.
#[derive(Clone)]
enum Expect {
    /// Cached content: 200, and for an archive exactly these bytes.
    Cached(Option<Arc<Vec<u8>>>),
    /// A hostile request: some 4xx.
    Refused,
    /// The origin misbehaves: a 502 or 504 gateway error, never 500.
    Gateway,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_thousand_mixed_requests_at_64_connections() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["linux_amd64", "darwin_arm64"];
    let mut archives = BTreeMap::new();
    for kind in ["alpha", "beta", "gamma", "delta"] {
        for v in ["1.0.0", "2.0.0"] {
            let built = origin.publish("acme", kind, v, &platforms, &signer, &[&signer]);
            for (p, bytes) in built {
                archives.insert((kind, v, p), Arc::new(bytes));
            }
        }
    }
    origin.publish("acme", "broken", "1.0.0", &platforms, &signer, &[&signer]);
    origin.set_fault(
        "/v1/providers/acme/broken/versions",
        Some(Fault::Status(StatusCode::INTERNAL_SERVER_ERROR)),
    );
    origin.publish(
        "acme",
        "flaky",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    origin.set_fault(
        "/files/terraform-provider-flaky_1.0.0_linux_amd64.zip",
        Some(Fault::Truncate),
    );
    let config = config_file(&setup, &origin, "[log]\nlevel = \"warn\"\n");
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"]).arg(&config);
    let d = Daemon::start(cmd);
    let pid = d.child.id();
    let base = format!("{}registry.origin.test/acme", d.url);
    let ca = setup.dir.path().join("data/tls/ca.pem");

    // Warm the cache.
    let warm = Client::trusting(&ca);
    let mut mix: Vec<(Method, String, Expect)> = Vec::new();
    for ((kind, v, p), bytes) in &archives {
        let zip = format!("{base}/{kind}/terraform-provider-{kind}_{v}_{p}.zip");
        assert_eq!(warm.get(&zip).await.status, StatusCode::OK);
        mix.push((Method::GET, zip, Expect::Cached(Some(bytes.clone()))));
        mix.push((
            Method::GET,
            format!("{base}/{kind}/{v}.json"),
            Expect::Cached(None),
        ));
        mix.push((
            Method::GET,
            format!("{base}/{kind}/index.json"),
            Expect::Cached(None),
        ));
        mix.push((
            Method::HEAD,
            format!("{base}/{kind}/index.json"),
            Expect::Cached(None),
        ));
    }
    let valid = mix.len();
    for hostile in [
        format!("{}../../etc/passwd", d.url),
        format!("{base}/%2e%2e/widget/index.json"),
        format!("{base}/al%2Fpha/index.json"),
        format!("{base}/alpha/1.0.0%00.json"),
        format!("{base}/alpha/not-a-version.json"),
        format!("{base}/alpha/terraform-provider-beta_1.0.0_linux_amd64.zip"),
        format!("{}evil.example/acme/alpha/index.json", d.url),
        format!("{base}/{}/index.json", "x".repeat(3000)),
    ] {
        mix.push((Method::GET, hostile, Expect::Refused));
    }
    mix.push((
        Method::POST,
        format!("{base}/alpha/index.json"),
        Expect::Refused,
    ));
    mix.push((
        Method::GET,
        format!("{base}/broken/index.json"),
        Expect::Gateway,
    ));
    mix.push((
        Method::GET,
        format!("{base}/flaky/terraform-provider-flaky_1.0.0_linux_amd64.zip"),
        Expect::Gateway,
    ));
    // Weighted: about three in four requests are for cached content.
    let weighted: Vec<usize> = (0..mix.len())
        .flat_map(|i| std::iter::repeat_n(i, if i < valid { 8 } else { 3 }))
        .collect();
    let (mix, weighted) = (Arc::new(mix), Arc::new(weighted));

    let next = Arc::new(AtomicUsize::new(0));
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let counts = Arc::new(Mutex::new([0usize; 3]));
    let rss = Arc::new(Mutex::new(Vec::<(usize, u64)>::new()));
    let rss_task = {
        let (rss, next) = (rss.clone(), next.clone());
        tokio::spawn(async move {
            loop {
                if let Some(kib) = rss_kib(pid) {
                    rss.lock().unwrap().push((next.load(Ordering::SeqCst), kib));
                }
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        })
    };
    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|_| {
            let (mix, weighted, next) = (mix.clone(), weighted.clone(), next.clone());
            let (failures, counts) = (failures.clone(), counts.clone());
            // One client each: one connection each.
            let client = Client::trusting(&ca);
            tokio::spawn(async move {
                loop {
                    let n = next.fetch_add(1, Ordering::SeqCst);
                    if n >= REQUESTS {
                        break;
                    }
                    let (method, url, expect) = &mix[weighted[(n * 7919) % weighted.len()]];
                    let a = client.request(method.clone(), url).await;
                    let problem = match expect {
                        Expect::Cached(bytes) => {
                            counts.lock().unwrap()[0] += 1;
                            if a.status != StatusCode::OK {
                                Some(format!("{} answered {}", url, a.status))
                            } else if bytes.as_ref().is_some_and(|b| a.body[..] != b[..]) {
                                Some(format!("{url}: corrupt archive"))
                            } else {
                                None
                            }
                        }
                        Expect::Refused => {
                            counts.lock().unwrap()[1] += 1;
                            (!a.status.is_client_error())
                                .then(|| format!("{url} answered {}", a.status))
                        }
                        Expect::Gateway => {
                            counts.lock().unwrap()[2] += 1;
                            (a.status != StatusCode::BAD_GATEWAY
                                && a.status != StatusCode::GATEWAY_TIMEOUT)
                                .then(|| format!("{url} answered {}", a.status))
                        }
                    };
                    if let Some(p) = problem {
                        failures.lock().unwrap().push(p);
                    }
                }
            })
        })
        .collect();
    for w in workers {
        w.await.unwrap();
    }
    rss_task.abort();

    let failures = failures.lock().unwrap().clone();
    assert!(
        failures.is_empty(),
        "{} failures, e.g. {:?}",
        failures.len(),
        &failures[..failures.len().min(5)]
    );
    let counts = *counts.lock().unwrap();
    assert_eq!(counts.iter().sum::<usize>(), REQUESTS);
    let samples = rss.lock().unwrap().clone();
    assert!(samples.len() > 4, "too few memory samples");
    let peak = samples.iter().map(|(_, k)| *k).max().unwrap();
    let early = samples
        .iter()
        .filter(|(n, _)| *n <= REQUESTS / 4)
        .map(|(_, k)| *k)
        .max()
        .unwrap_or(0);
    eprintln!(
        "{REQUESTS} requests (cached {}, hostile {}, faulty origin {}); daemon RSS peak {peak} KiB, {early} KiB after the first quarter",
        counts[0], counts[1], counts[2]
    );
    assert!(peak < RSS_CEILING_KIB, "RSS peaked at {peak} KiB");
    assert!(
        peak <= early + RSS_LATE_GROWTH_KIB,
        "RSS kept growing: {early} KiB early, {peak} KiB peak"
    );

    // The daemon is still healthy and stops cleanly.
    let after = warm.get(&format!("{}healthz", d.url)).await;
    assert_eq!(after.status, StatusCode::OK);
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
}
