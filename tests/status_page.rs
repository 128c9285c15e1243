//! The status page rendered by a real headless browser (Debian's chromium)
//! from a running mirror with a warm cache, and its pages when the cache
//! holds more providers than one page lists.

mod common;

use std::path::PathBuf;
use std::process::Command;

use common::*;
use http::StatusCode;

/// Debian's chromium (or `$CHROMIUM`); the test that calls this is
/// ignored where it is missing, outside CI (see `build.rs`).
fn chromium() -> PathBuf {
    let path = std::env::var_os("CHROMIUM")
        .map_or_else(|| PathBuf::from("/usr/bin/chromium"), PathBuf::from);
    assert!(
        path.is_file(),
        "{} not found: install Debian's chromium package (the README's test command does)",
        path.display()
    );
    path
}

/// Runs headless chromium with `args` against `url`.
async fn run_chromium(
    chromium: &PathBuf,
    profile: &std::path::Path,
    args: &[&str],
    url: &str,
) -> std::process::Output {
    let mut cmd = Command::new(chromium);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        // The page comes from the mirror's own generated authority.
        "--ignore-certificate-errors",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .arg(url);
    tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap()
}

#[cfg_attr(
    tfmirror_no_chromium,
    ignore = "needs Debian's chromium; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_status_page_renders_the_cached_providers_in_a_browser() {
    let chromium = chromium();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "1.2.0",
        &["linux_amd64", "darwin_arm64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "gadget",
        "0.9.1",
        &["windows_amd64"],
        &signer,
        &[&signer],
    );
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);
    for (kind, v, p) in [
        ("widget", "1.2.0", "linux_amd64"),
        ("widget", "1.2.0", "darwin_arm64"),
        ("gadget", "0.9.1", "windows_amd64"),
    ] {
        let url = m.url(&format!(
            "/registry.origin.test/acme/{kind}/terraform-provider-{kind}_{v}_{p}.zip"
        ));
        assert_eq!(c.get(&url).await.status, StatusCode::OK);
        // Warm hits too, so the hit rate is not zero.
        assert_eq!(c.get(&url).await.status, StatusCode::OK);
    }

    let profile = setup.dir.path().join("chromium-profile");
    let out = run_chromium(&chromium, &profile, &["--dump-dom"], &m.url("/-/status")).await;
    let dom = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for row in [
        "<tr><td><a href=\"/-/providers/registry.origin.test/acme/gadget\">registry.origin.test/acme/gadget</a></td><td>0.9.1</td><td>windows_amd64</td></tr>",
        "<tr><td><a href=\"/-/providers/registry.origin.test/acme/widget\">registry.origin.test/acme/widget</a></td><td>1.2.0</td><td>darwin_arm64, linux_amd64</td></tr>",
    ] {
        assert!(dom.contains(row), "{row} not in the rendered page:\n{dom}");
    }
    assert!(dom.contains(&format!("url = \"{}\"", m.url("/"))), "{dom}");
    assert!(dom.contains("in 3 archives"), "{dom}");
    let rate = dom.split("hit rate ").nth(1).unwrap_or_default();
    let percent: u32 = rate
        .split('%')
        .next()
        .unwrap_or_default()
        .parse()
        .unwrap_or(0);
    assert!(percent > 0 && percent < 100, "{rate}");

    // A screenshot of the same page (docs/status-page.png is one of these).
    let shot = setup.dir.path().join("status-page.png");
    let out = run_chromium(
        &chromium,
        &profile,
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1100,760",
            "--hide-scrollbars",
        ],
        &m.url("/-/status"),
    )
    .await;
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let png = std::fs::read(&shot).unwrap();
    assert!(
        png.starts_with(b"\x89PNG\r\n\x1a\n") && png.len() > 10_000,
        "{} bytes",
        png.len()
    );
    if let Some(keep) = std::env::var_os("TFMIRROR_SCREENSHOT") {
        std::fs::copy(&shot, keep).unwrap();
    }
    m.stop().await;
}

#[tokio::test]
async fn a_cache_of_many_providers_is_listed_a_page_at_a_time() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    // 250 providers already in the cache, as a sync or an earlier run left them.
    for i in 0..250 {
        let kind = format!("p{i:03}");
        let dir = setup
            .cache_dir()
            .join(format!("providers/registry.origin.test/acme/{kind}/1.0.0"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(format!("terraform-provider-{kind}_1.0.0_linux_amd64.zip")),
            build_archive(&kind, "1.0.0", "cached"),
        )
        .unwrap();
    }
    let m = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let c = Client::trusting(&m.ca_file);
    let page = |n: &str| {
        let url = m.url(&format!("/-/status{n}"));
        let c = &c;
        async move {
            let a = c.get(&url).await;
            assert_eq!(a.status, StatusCode::OK);
            String::from_utf8(a.body.to_vec()).unwrap()
        }
    };
    let row = |i: usize| {
        format!("<tr><td><a href=\"/-/providers/registry.origin.test/acme/p{i:03}\">registry.origin.test/acme/p{i:03}</a></td>")
    };
    // The table of providers, which is all a page of them changes.
    let table = |page: &str| {
        page.split("<table id=\"providers\">")
            .nth(1)
            .unwrap()
            .split("</table>")
            .next()
            .unwrap()
            .to_owned()
    };

    let first = page("").await;
    assert!(
        first.contains("250 providers, 250 versions; page 1 of 3"),
        "{first}"
    );
    assert!(first.contains(r#"<a href="?page=2" rel="next">"#));
    assert!(first.contains(&row(0)) && first.contains(&row(99)));
    assert!(!first.contains(&row(100)));
    assert_eq!(first.matches("<tr><td>").count(), 100);

    let last = page("?page=3").await;
    assert!(last.contains("page 3 of 3"), "{last}");
    assert!(last.contains(r#"<a href="?page=2" rel="prev">"#));
    assert!(!last.contains(r#"rel="next""#));
    assert!(last.contains(&row(200)) && last.contains(&row(249)));
    assert!(!last.contains(&row(199)));
    // Beyond the last page, the last page; nonsense, the first.
    assert_eq!(table(&page("?page=99").await), table(&last));
    assert_eq!(table(&page("?page=x").await), table(&first));
    m.stop().await;
}

/// Behind a load balancer: `server.public_url` names the mirror on the
/// status page, facade answers link relative to it, and forwarded headers
/// count only from `server.trusted_proxies`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn behind_a_proxy_the_public_url_is_named_and_forwarded_headers_need_trust() {
    let public = "https://tfmirror.example.internal/";
    let scene = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
        c.server.public_url = Some(public.parse().unwrap());
    })
    .await;
    let page = scene
        .client
        .get_with_header(&scene.mirror.url("/"), "x-forwarded-host", "evil.example")
        .await;
    let html = page.page_text();
    assert!(html.contains(&format!("url = \"{public}\"")), "{html}");
    assert!(
        html.contains("https://tfmirror.example.internal/v1/providers/"),
        "{html}"
    );
    assert!(!html.contains("evil.example"));
    assert!(!html.contains(&format!("127.0.0.1:{}", scene.mirror.addr.port())));
    // The facade's links are relative, so they resolve to the URL the
    // client used: never to an instance's own address.
    let download = scene
        .client
        .get(
            &scene
                .mirror
                .url("/v1/providers/registry.origin.test/acme/widget/1.0.0/download/linux/amd64"),
        )
        .await;
    assert_eq!(download.status, StatusCode::OK);
    let doc = download.json();
    for field in ["download_url", "shasums_url", "shasums_signature_url"] {
        let link = doc[field].as_str().unwrap();
        assert!(!link.contains("://"), "{field}: {link}");
    }

    // Without public_url: forwarded headers from an untrusted peer are
    // ignored, and believed from a trusted one.
    let untrusted = Scene::start("widget", "1.0.0", &["linux_amd64"]).await;
    let page = untrusted
        .client
        .get_with_header(
            &untrusted.mirror.url("/"),
            "x-forwarded-host",
            "evil.example",
        )
        .await;
    assert!(!page.page_text().contains("evil.example"));
    let trusted = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |c| {
        c.server.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    })
    .await;
    let page = trusted
        .client
        .get_with_header(&trusted.mirror.url("/"), "x-forwarded-host", "lb.example")
        .await;
    let html = page.page_text();
    assert!(html.contains("url = \"https://lb.example/\""), "{html}");
}
