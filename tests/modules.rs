//! The module registry proxy at the protocol level: version lists, download
//! answers in both clients' shapes, module sources fetched from real git
//! repositories (made with Debian's git, served by `git http-backend` over
//! HTTPS) and from archives, packaged once, pinned, and refused when a tag
//! moves.

mod common;

use std::io::Read;
use std::path::Path;

use common::*;
use http::StatusCode;

const HOST: &str = "registry.origin.test";

/// A fake origin with a module registry and git repositories, and a mirror
/// mapping `registry.origin.test` to it.
struct ModuleScene {
    setup: Setup,
    origin: FakeOrigin,
    net: Repo,
    /// The commit of `net`'s tag `v1.0.0`.
    v1: String,
    mirror: RunningMirror,
    client: Client,
}

/// The files of `net` at v1.0.0.
const NET_V1: &[(&str, &str)] = &[
    ("main.tf", "variable \"name\" {\n  default = \"net\"\n}\n"),
    ("modules/sub/main.tf", "output \"sub\" {\n  value = 1\n}\n"),
    ("README.md", "net v1\n"),
];

impl ModuleScene {
    async fn start() -> ModuleScene {
        Self::start_with(|_| {}).await
    }

    async fn start_with(configure: impl FnOnce(&mut tfmirror::config::Config)) -> ModuleScene {
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        let git_root = setup.dir.path().join("git");
        let net = Repo::new(&git_root, "net");
        let v1 = net.commit(NET_V1, "v1");
        net.tag("v1.0.0");
        origin.serve_git(&git_root);
        origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
        let mut config = setup.module_config(&origin, HOST);
        configure(&mut config);
        let mirror = RunningMirror::start(config).await;
        let client = Client::trusting(&mirror.ca_file);
        ModuleScene {
            setup,
            origin,
            net,
            v1,
            mirror,
            client,
        }
    }

    fn url(&self, below: &str) -> String {
        self.mirror.url(&format!("/v1/modules/{HOST}/acme/{below}"))
    }

    /// The download answer's location, checking both shapes agree.
    async fn location(&self, below: &str) -> String {
        let a = self.client.get(&self.url(below)).await;
        assert_eq!(
            a.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&a.body)
        );
        let json = a.json()["location"].as_str().unwrap().to_owned();
        let header = a.headers["x-terraform-get"].to_str().unwrap();
        assert_eq!(json, header);
        json
    }

    /// Fetches a package and unpacks it; returns the bytes and the files.
    async fn package(&self, below: &str) -> (Vec<u8>, Vec<(String, String)>) {
        let a = self.client.get(&self.url(below)).await;
        assert_eq!(
            a.status,
            StatusCode::OK,
            "{}",
            String::from_utf8_lossy(&a.body)
        );
        assert_eq!(a.headers["content-type"], "application/gzip");
        (a.body.to_vec(), unpacked(&a.body))
    }

    /// The git fetches the origin has answered for `repo` (each starts
    /// with one request for the repository's refs and capabilities).
    fn git_fetches(&self, repo: &str) -> usize {
        self.origin.hits(&format!("/git/{repo}.git/info/refs"))
    }
}

/// The files of a `tar.gz`, relative and sorted, with contents.
fn unpacked(bytes: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
    for entry in archive.entries().unwrap() {
        let mut entry = entry.unwrap();
        let header = entry.header();
        assert_eq!(header.uid().unwrap(), 0);
        assert_eq!(header.mtime().unwrap(), 0);
        if header.entry_type() == tar::EntryType::Regular {
            let name = entry.path().unwrap().display().to_string();
            let mut body = String::new();
            entry.read_to_string(&mut body).unwrap();
            out.push((name, body));
        }
    }
    out.sort();
    out
}

fn files(list: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = list
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
    out.sort();
    out
}

fn package_path(cache: &Path, below: &str) -> std::path::PathBuf {
    cache.join(format!("modules/{HOST}/acme/{below}/package.tar.gz"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_module_is_listed_located_packaged_once_and_pinned() {
    let s = ModuleScene::start().await;

    let versions = s.client.get(&s.url("net/aws/versions")).await;
    assert_eq!(versions.status, StatusCode::OK);
    assert_eq!(
        versions.json(),
        serde_json::json!({"modules": [{"versions": [{"version": "1.0.0"}]}]})
    );

    assert_eq!(
        s.location("net/aws/1.0.0/download").await,
        "./package.tar.gz"
    );

    // Eight clients at once: one git fetch.
    let url = s.url("net/aws/1.0.0/package.tar.gz");
    let fetches = futures_util::future::join_all((0..8).map(|_| s.client.get(&url))).await;
    let first = fetches[0].body.clone();
    for a in &fetches {
        assert_eq!(a.status, StatusCode::OK);
        assert_eq!(a.body, first);
    }
    assert_eq!(unpacked(&first), files(NET_V1));
    assert_eq!(s.git_fetches("net"), 1);

    // The pin names the commit the tag resolved to and the tree's hash.
    let pin: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            s.setup
                .cache_dir()
                .join(format!("modules/{HOST}/acme/net/aws/1.0.0/module.json")),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(pin["commit"], s.v1.as_str());
    assert!(pin["h1"].as_str().unwrap().starts_with("h1:"));
    assert_eq!(pin["source_kind"], "git");

    // HEAD gives the size without the body.
    let head = s
        .client
        .request(http::Method::HEAD, &s.url("net/aws/1.0.0/package.tar.gz"))
        .await;
    assert_eq!(head.status, StatusCode::OK);
    assert_eq!(
        head.headers["content-length"].to_str().unwrap(),
        first.len().to_string()
    );
    assert!(head.body.is_empty());

    let metrics =
        String::from_utf8(s.client.get(&s.mirror.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_module_fetches_total{source=\"git\",outcome=\"packaged\"} 1\n"),
        "{metrics}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_moved_tag_is_caught_and_the_pinned_package_kept() {
    let s = ModuleScene::start().await;
    let (before, _) = s.package("net/aws/1.0.0/package.tar.gz").await;

    // The tag moves upstream to other content.
    let moved = s.net.commit(&[("main.tf", "# rewritten\n")], "rewrite");
    s.net.tag("v1.0.0");

    // The held package keeps being served, without asking the origin.
    let (again, _) = s.package("net/aws/1.0.0/package.tar.gz").await;
    assert_eq!(again, before);
    assert_eq!(s.git_fetches("net"), 1);

    // Once the package is gone (evicted), a fetch meets the moved tag: 502
    // naming both commits, and nothing stored.
    let package = package_path(&s.setup.cache_dir(), "net/aws/1.0.0");
    std::fs::remove_file(&package).unwrap();
    let refused = s.client.get(&s.url("net/aws/1.0.0/package.tar.gz")).await;
    // The mirror still held the pin in memory: it notices the package is
    // gone and fetches again.
    assert_eq!(
        refused.status,
        StatusCode::BAD_GATEWAY,
        "{}",
        refused.error_text()
    );
    let text = refused.error_text();
    assert!(text.contains(&s.v1) && text.contains(&moved), "{text}");
    assert!(!package.exists());
    let metrics =
        String::from_utf8(s.client.get(&s.mirror.url("/metrics")).await.body.to_vec()).unwrap();
    assert!(
        metrics.contains("tfmirror_module_pin_mismatches_total 1\n"),
        "{metrics}"
    );

    // Put back where it was, the tag yields the pinned tree again.
    git(
        &s.net.work,
        &["tag", "--force", "-a", "-m", "v1", "v1.0.0", &s.v1],
    );
    git(
        &s.net.work,
        &[
            "push",
            "--quiet",
            "--force",
            s.net.bare.to_str().unwrap(),
            "refs/tags/v1.0.0",
        ],
    );
    let (restored, _) = s.package("net/aws/1.0.0/package.tar.gz").await;
    assert_eq!(restored, before);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn branches_commits_subdirectories_and_archives() {
    let s = ModuleScene::start().await;
    let head = s.net.commit(
        &[
            ("main.tf", "# main branch\n"),
            ("modules/x/main.tf", "# x\n"),
        ],
        "main",
    );
    let git_url = s.origin.git_url("net");
    s.origin.publish_module(
        "acme",
        "net",
        "aws",
        "2.0.0",
        ModuleAnswer::Json(format!("git::{git_url}//modules/x?ref=main")),
    );
    s.origin.publish_module(
        "acme",
        "net",
        "aws",
        "1.0.1",
        ModuleAnswer::Header(format!("git::{git_url}?ref={}&depth=1", s.v1)),
    );
    // Archives: a .tar.gz by a relative location, a zip by ?archive=zip.
    let mut tgz = Vec::new();
    {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            &mut tgz,
            flate2::Compression::default(),
        ));
        let mut h = tar::Header::new_gnu();
        h.set_size(6);
        h.set_mode(0o644);
        b.append_data(&mut h, "top/main.tf", &b"# tgz\n"[..])
            .unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    s.origin.replace_file("dns-3.0.0.tar.gz", tgz);
    s.origin.publish_module(
        "acme",
        "dns",
        "aws",
        "3.0.0",
        ModuleAnswer::Header("../../../../../../files/dns-3.0.0.tar.gz//top".into()),
    );
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("main.tf", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut zip, b"# zip\n").unwrap();
    s.origin
        .replace_file("dns-3.1.0", zip.finish().unwrap().into_inner());
    s.origin.publish_module(
        "acme",
        "dns",
        "aws",
        "3.1.0",
        ModuleAnswer::Json(format!("{}?archive=zip", s.origin.file_url("dns-3.1.0"))),
    );

    assert_eq!(
        s.location("net/aws/2.0.0/download").await,
        "./package.tar.gz//modules/x"
    );
    let (_, tree) = s.package("net/aws/2.0.0/package.tar.gz").await;
    assert_eq!(
        tree,
        files(&[
            ("main.tf", "# main branch\n"),
            ("modules/x/main.tf", "# x\n")
        ])
    );
    let pin = |v: &str| -> serde_json::Value {
        serde_json::from_slice(
            &std::fs::read(
                s.setup
                    .cache_dir()
                    .join(format!("modules/{HOST}/acme/net/aws/{v}/module.json")),
            )
            .unwrap(),
        )
        .unwrap()
    };
    assert_eq!(pin("2.0.0")["commit"], head.as_str());

    // A commit ID that is no longer any branch's head.
    let (_, tree) = s.package("net/aws/1.0.1/package.tar.gz").await;
    assert_eq!(tree, files(NET_V1));
    assert_eq!(pin("1.0.1")["commit"], s.v1.as_str());

    assert_eq!(
        s.location("dns/aws/3.0.0/download").await,
        "./package.tar.gz//top"
    );
    let (_, tree) = s.package("dns/aws/3.0.0/package.tar.gz").await;
    assert_eq!(tree, files(&[("top/main.tf", "# tgz\n")]));
    let (_, tree) = s.package("dns/aws/3.1.0/package.tar.gz").await;
    assert_eq!(tree, files(&[("main.tf", "# zip\n")]));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_and_hostile_sources_are_refused_and_nothing_is_stored() {
    let s = ModuleScene::start().await;
    s.origin.publish_module(
        "acme",
        "bucket",
        "aws",
        "1.0.0",
        ModuleAnswer::Header("s3::https://s3-eu-west-1.amazonaws.com/bucket/m.zip".into()),
    );
    for below in [
        "bucket/aws/1.0.0/download",
        "bucket/aws/1.0.0/package.tar.gz",
    ] {
        let a = s.client.get(&s.url(below)).await;
        assert_eq!(a.status, StatusCode::BAD_GATEWAY, "{below}");
        assert!(a.error_text().contains("s3::"), "{}", a.error_text());
    }

    // A tar.gz with an entry that climbs out of the tree.
    let mut evil = tar::Header::new_gnu();
    evil.set_size(2);
    evil.set_mode(0o644);
    evil.as_gnu_mut().unwrap().name[..11].copy_from_slice(b"../evil.txt");
    evil.set_cksum();
    let mut raw = evil.as_bytes().to_vec();
    raw.extend_from_slice(b"x\n");
    raw.resize(1024 + 1024, 0);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::Write::write_all(&mut gz, &raw).unwrap();
    s.origin.replace_file("evil.tar.gz", gz.finish().unwrap());
    s.origin.publish_module(
        "acme",
        "evil",
        "aws",
        "1.0.0",
        ModuleAnswer::Header(s.origin.file_url("evil.tar.gz")),
    );
    let a = s.client.get(&s.url("evil/aws/1.0.0/package.tar.gz")).await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    assert!(a.error_text().contains("climbs out"), "{}", a.error_text());
    assert!(!s
        .setup
        .cache_dir()
        .join("modules")
        .join(HOST)
        .join("acme/evil")
        .exists());
    assert!(!s.setup.dir.path().join("evil.txt").exists());

    // Bad names and versions never reach the origin.
    let before = s.origin.requests.load(std::sync::atomic::Ordering::SeqCst);
    for below in [
        "net/AWS/versions",
        "-net/aws/versions",
        "net/aws/1.0/download",
        "net/aws/1.0.0/package.zip",
        "net/aws/1.0.0/download/more",
    ] {
        let a = s.client.get(&s.url(below)).await;
        assert_eq!(a.status, StatusCode::BAD_REQUEST, "{below}");
    }
    assert_eq!(
        s.origin.requests.load(std::sync::atomic::Ordering::SeqCst),
        before
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn modules_are_served_after_a_restart_with_the_origin_down() {
    let s = ModuleScene::start().await;
    let (before, _) = s.package("net/aws/1.0.0/package.tar.gz").await;
    s.client.get(&s.url("net/aws/versions")).await;
    let config = s.mirror.app.mirror.config().clone();
    let ModuleScene {
        setup,
        origin,
        mirror,
        ..
    } = s;
    mirror.stop().await;
    origin.stop();

    for offline in [false, true] {
        let mut config = config.clone();
        config.upstream.offline = offline;
        let mirror = RunningMirror::start(config).await;
        let client = Client::trusting(&mirror.ca_file);
        let url = |below: &str| mirror.url(&format!("/v1/modules/{HOST}/acme/net/aws/{below}"));
        let versions = client.get(&url("versions")).await;
        assert_eq!(versions.status, StatusCode::OK, "offline={offline}");
        let download = client.get(&url("1.0.0/download")).await;
        assert_eq!(download.status, StatusCode::OK, "offline={offline}");
        let package = client.get(&url("1.0.0/package.tar.gz")).await;
        assert_eq!(package.status, StatusCode::OK, "offline={offline}");
        assert_eq!(package.body.to_vec(), before);
        let missing = client.get(&url("9.9.9/package.tar.gz")).await;
        assert!(missing.status.is_client_error() || missing.status.is_server_error());
        mirror.stop().await;
    }
    drop(setup);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn package_links_are_signed_when_access_control_is_on() {
    let s = ModuleScene::start_with(|c| c.auth.tokens = vec!["secret-token".into()]).await;
    let anonymous = s.client.get(&s.url("net/aws/1.0.0/download")).await;
    assert_eq!(anonymous.status, StatusCode::UNAUTHORIZED);
    let a = s
        .client
        .get_with_header(
            &s.url("net/aws/1.0.0/download"),
            "authorization",
            "Bearer secret-token",
        )
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let location = a.json()["location"].as_str().unwrap().to_owned();
    let query = location
        .strip_prefix("./package.tar.gz?")
        .unwrap_or_else(|| panic!("{location}"));
    assert!(query.contains("sig="), "{location}");
    let unsigned = s.client.get(&s.url("net/aws/1.0.0/package.tar.gz")).await;
    assert_eq!(unsigned.status, StatusCode::FORBIDDEN);
    let signed = s
        .client
        .get(&s.url(&format!("net/aws/1.0.0/package.tar.gz?{query}")))
        .await;
    assert_eq!(signed.status, StatusCode::OK);
    assert_eq!(unpacked(&signed.body), files(NET_V1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn module_packages_are_evicted_under_the_size_limit_and_come_back_pinned() {
    // Room for no more than the newest thing stored.
    let s = ModuleScene::start_with(|c| c.cache.max_size = Some(bytesize::ByteSize(1))).await;
    s.net.commit(&[("main.tf", "# two\n")], "two");
    s.net.tag("v2.0.0");
    s.origin.publish_git_module("net", "2.0.0", "net", "v2.0.0");
    let (first, _) = s.package("net/aws/1.0.0/package.tar.gz").await;
    s.package("net/aws/2.0.0/package.tar.gz").await;
    let cache = s.setup.cache_dir();
    let one = package_path(&cache, "net/aws/1.0.0");
    assert!(!one.exists(), "1.0.0 was not evicted");
    assert!(
        one.with_file_name("module.json").exists(),
        "the pin went too"
    );
    assert!(package_path(&cache, "net/aws/2.0.0").exists());

    // Asked for again, 1.0.0 is fetched again and matches its pin.
    let (again, _) = s.package("net/aws/1.0.0/package.tar.gz").await;
    assert_eq!(again, first);
    assert_eq!(s.git_fetches("net"), 3);
    assert!(!package_path(&cache, "net/aws/2.0.0").exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_source_hosts_token_goes_to_that_host_only() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let git_root = setup.dir.path().join("git");
    let repo = Repo::new(&git_root, "net");
    repo.commit(NET_V1, "v1");
    repo.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("main.tf", zip::write::SimpleFileOptions::default())
        .unwrap();
    std::io::Write::write_all(&mut zip, b"# zip\n").unwrap();
    origin.replace_file("dns.zip", zip.finish().unwrap().into_inner());
    origin.publish_module(
        "acme",
        "dns",
        "aws",
        "1.0.0",
        ModuleAnswer::Header(origin.file_url("dns.zip")),
    );
    let mut config = setup.module_config(&origin, HOST);
    let source_host = tfmirror::config::HostConfig {
        token: Some("source-token".into()),
        ..Default::default()
    };
    config
        .upstream
        .hosts
        .insert(origin.hostname().parse().unwrap(), source_host);
    let mirror = RunningMirror::start(config).await;
    let client = Client::trusting(&mirror.ca_file);
    for name in ["net", "dns"] {
        let a = client
            .get(&mirror.url(&format!(
                "/v1/modules/{HOST}/acme/{name}/aws/1.0.0/package.tar.gz"
            )))
            .await;
        assert_eq!(
            a.status,
            StatusCode::OK,
            "{name}: {}",
            String::from_utf8_lossy(&a.body)
        );
    }
    let bearer = Some("Bearer source-token".to_owned());
    assert_eq!(origin.authorization("/files/dns.zip"), vec![bearer.clone()]);
    let git = origin.authorization("/git/net.git/info/refs");
    assert!(
        !git.is_empty() && git.iter().all(|a| *a == bearer),
        "{git:?}"
    );
    // The registry host (another host name) never sees it.
    let registry = origin.authorization("/v1/modules/acme/net/aws/1.0.0/download");
    assert_eq!(registry, vec![None]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_request_forgery_guard_covers_git_sources() {
    let s = ModuleScene::start_with(|c| c.upstream.allow_private_addresses = false).await;
    let a = s.client.get(&s.url("net/aws/1.0.0/package.tar.gz")).await;
    assert_eq!(a.status, StatusCode::BAD_GATEWAY);
    assert!(
        a.error_text().contains("refusing to connect"),
        "{}",
        a.error_text()
    );
    assert_eq!(s.git_fetches("net"), 0);
    assert!(!s
        .setup
        .cache_dir()
        .join("modules")
        .join(HOST)
        .join("acme/net/aws/1.0.0")
        .exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_module_version_is_left_out_and_its_pinned_package_not_served() {
    let s = ModuleScene::start().await;
    let answer = s.url("net/aws/1.0.0/download");
    let location = s.location("net/aws/1.0.0/download").await;
    let package = url::Url::parse(&resolve(&answer, &location)).unwrap();
    let held = s.client.get(package.as_str()).await;
    assert_eq!(held.status, StatusCode::OK);
    let ModuleScene {
        setup,
        origin,
        mirror,
        ..
    } = s;
    mirror.stop().await;

    // The same cache, now with a rule against the version it holds.
    let mut config = setup.module_config(&origin, HOST);
    config.policy.rules.push(tfmirror::policy::RuleConfig {
        verification: None,
        advisories: None,
        source: format!("{HOST}/acme/net/*"),
        versions: Some("= 1.0.0".into()),
        action: tfmirror::policy::Action::Deny,
        reason: "a known-bad release".into(),
    });
    let mirror = RunningMirror::start(config).await;
    let client = Client::trusting(&mirror.ca_file);
    let below = |rest: &str| mirror.url(&format!("/v1/modules/{HOST}/acme/{rest}"));
    let versions = client.get(&below("net/aws/versions")).await;
    assert_eq!(versions.status, StatusCode::OK);
    assert_eq!(
        versions.json()["modules"][0]["versions"],
        serde_json::json!([])
    );
    let refused = client.get(&below("net/aws/1.0.0/download")).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    let text = refused.error_text();
    assert!(text.contains("a known-bad release"), "{text}");
    assert!(text.contains("policy.rule[0]"), "{text}");
    let path = match package.query() {
        Some(q) => format!("{}?{q}", package.path()),
        None => package.path().to_owned(),
    };
    let pinned = client.get(&mirror.url(&path)).await;
    assert_eq!(
        pinned.status,
        StatusCode::FORBIDDEN,
        "{}",
        pinned.error_text()
    );
    mirror.stop().await;
}
