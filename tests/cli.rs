//! The `tfmirror` binary itself: configuration errors, `serve` on its
//! built-in defaults, signals (SIGTERM with a download in flight, SIGHUP
//! with a new certificate), systemd notification, JSON logs, `ls` and `gc`.

mod common;

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::daemon::*;
use common::*;
use http::StatusCode;

#[test]
fn check_config_names_the_bad_key() {
    let home = tempfile::tempdir().unwrap();
    let file = home.path().join("t.toml");
    std::fs::write(&file, "[upstream]\nconnect_timeout = \"forever\"\n").unwrap();
    let out = tfmirror(home.path())
        .args(["check-config", "--config"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("connect_timeout"), "{err}");

    let out = tfmirror(home.path())
        .args(["check-config"])
        .env("TFMIRROR_CACHE__INDEX_TTL", "90s")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("index_ttl = \"1m 30s\""), "{text}");
    assert!(
        text.contains(&home.path().join(".cache/tfmirror").display().to_string()),
        "{text}"
    );
}

#[tokio::test]
async fn serve_runs_on_defaults_and_stops_on_sigterm() {
    let home = tempfile::tempdir().unwrap();
    let mut cmd = tfmirror(home.path());
    cmd.arg("serve")
        .env("TFMIRROR_SERVER__LISTEN", "127.0.0.1:0");
    let mut d = Daemon::start(cmd);
    // The CLI block and the trust hint follow.
    d.wait_for("SSL_CERT_FILE=");
    assert!(d.log.contains(&format!("url = \"{}\"", d.url)), "{}", d.log);
    let ca = home.path().join(".local/share/tfmirror/tls/ca.pem");
    assert!(d.log.contains(&ca.display().to_string()), "{}", d.log);

    let c = Client::trusting(&ca);
    assert_eq!(c.get(&d.url).await.status, StatusCode::OK);
    let refused = c
        .get(&format!("{}example.com/acme/x/index.json", d.url))
        .await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);

    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "exit status {status:?}\n{log}");
    assert!(home.path().join(".cache/tfmirror/providers").is_dir());
}

#[tokio::test]
async fn every_request_is_logged_once_and_the_request_lines_can_be_switched_off() {
    for (level, logged) in [("info", true), ("info,tfmirror::access=off", false)] {
        let home = tempfile::tempdir().unwrap();
        let mut cmd = tfmirror(home.path());
        cmd.arg("serve")
            .env("TFMIRROR_SERVER__LISTEN", "127.0.0.1:0")
            .env_remove("RUST_LOG")
            .env("TFMIRROR_LOG__LEVEL", level);
        let mut d = Daemon::start(cmd);
        d.wait_for("SSL_CERT_FILE=");
        let c = Client::trusting(&home.path().join(".local/share/tfmirror/tls/ca.pem"));
        assert_eq!(c.get(&d.url).await.status, StatusCode::OK);
        let refused = format!("{}example.com/acme/x/index.json", d.url);
        assert_eq!(c.get(&refused).await.status, StatusCode::FORBIDDEN);
        let log = stopped(d).await;
        let lines = request_lines(&log);
        if logged {
            assert_eq!(lines.len(), 2, "{log}");
            assert!(lines[0].contains("path=/ ") && lines[0].contains("status=200"));
            assert!(
                lines[1].contains("path=/example.com/acme/x/index.json")
                    && lines[1].contains("status=403"),
                "{log}"
            );
        } else {
            assert!(lines.is_empty(), "{log}");
        }
        // The last line, written as the process ends, is there too.
        assert!(
            log.contains("shutting down: waiting for requests in flight"),
            "{log}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_a_slow_download_finish_and_systemd_hears_of_it() {
    let (setup, origin, _signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    origin.set_archive_delay(Duration::from_millis(1500));
    let config = config_file(&setup, &origin, "[log]\nformat = \"json\"\n");
    let notify_path = setup.dir.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
    notify
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"])
        .arg(&config)
        .env("NOTIFY_SOCKET", &notify_path);
    let d = Daemon::start(cmd);
    let mut buf = [0u8; 256];
    let n = notify.recv(&mut buf).unwrap();
    assert_eq!(String::from_utf8_lossy(&buf[..n]).trim_end(), "READY=1");

    // JSON logs: every line parses, and the request span is in them.
    let ca = setup.dir.path().join("data/tls/ca.pem");
    let c = std::sync::Arc::new(Client::trusting(&ca));
    let url = format!(
        "{}registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip",
        d.url
    );
    let download = {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(async move { c.get(&url).await })
    };
    wait_until(
        "the download to reach the origin",
        Duration::from_secs(10),
        || origin.hits("/files/terraform-provider-widget_1.0.0_linux_amd64.zip") == 1,
    )
    .await;
    d.signal("TERM");
    let n = notify.recv(&mut buf).unwrap();
    assert_eq!(String::from_utf8_lossy(&buf[..n]).trim_end(), "STOPPING=1");
    let answer = download.await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(&answer.body[..], &archives["linux_amd64"][..]);
    let (status, log) = d.wait().await;
    assert!(status.success(), "exit status {status:?}\n{log}");
    for line in log.lines() {
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
        assert!(v["level"].is_string(), "{line}");
    }
    assert!(
        log.lines().any(|l| l.contains("\"answered\"")
            && l.contains("\"cache\":\"miss\"")
            && l.contains("\"status\":200")),
        "{log}"
    );
}

/// Stops a daemon with `SIGTERM` and returns its log, once it has exited
/// successfully.
async fn stopped(d: Daemon) -> String {
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "exit status {status:?}\n{log}");
    log
}

/// The request lines of a log.
fn request_lines(log: &str) -> Vec<&str> {
    log.lines()
        .filter(|l| l.contains("tfmirror::access: answered"))
        .collect()
}

/// The daemon's plain lines name each request by the ID its answer
/// carried, with the cache outcomes noted while it was answered, in the
/// lines it logs and in the request line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_lines_name_the_request_and_its_cache_outcome() {
    let (setup, origin, _signer, _archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let config = config_file(&setup, &origin, "");
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"]).arg(&config);
    let d = Daemon::start(cmd);
    let c = Client::trusting(&setup.dir.path().join("data/tls/ca.pem"));
    let index = format!("{}registry.origin.test/acme/widget/index.json", d.url);
    let first = c.get(&index).await;
    let second = c.get(&index).await;
    let missing = c
        .get(&format!(
            "{}registry.origin.test/acme/nothing/index.json",
            d.url
        ))
        .await;
    assert_eq!(first.status, StatusCode::OK);
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    let log = stopped(d).await;
    let line_of = |answer: &Answer| -> String {
        let id = answer.headers["x-request-id"].to_str().unwrap().to_owned();
        let lines: Vec<&str> = request_lines(&log)
            .into_iter()
            .filter(|l| l.contains(&format!("request{{id={id}")))
            .collect();
        assert_eq!(lines.len(), 1, "{id}\n{log}");
        lines[0].split_once(' ').unwrap().1.to_owned()
    };
    let first_line = line_of(&first);
    let id = first.headers["x-request-id"].to_str().unwrap();
    assert!(
        first_line.starts_with(&format!(
            " INFO request{{id={id} cache=\"miss\"}}: tfmirror::access: answered client=127.0.0.1 method=GET path=/registry.origin.test/acme/widget/index.json status=200 ms="
        )),
        "{first_line}"
    );
    let id = second.headers["x-request-id"].to_str().unwrap();
    assert!(
        line_of(&second).starts_with(&format!(" INFO request{{id={id} cache=\"hit\"}}: ")),
        "{log}"
    );
    // Nothing noted: the ID alone.
    let id = missing.headers["x-request-id"].to_str().unwrap();
    assert!(
        line_of(&missing).starts_with(&format!(" INFO request{{id={id}}}: ")),
        "{log}"
    );

    // Where the filter leaves out the request's span (its target,
    // `tfmirror::http::dispatch`, below `info`), lines name no request.
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"]).arg(&config).env(
        "RUST_LOG",
        "warn,tfmirror::access=info,tfmirror::daemon=info",
    );
    let d = Daemon::start(cmd);
    let index = format!("{}registry.origin.test/acme/widget/index.json", d.url);
    assert_eq!(c.get(&index).await.status, StatusCode::OK);
    let log = stopped(d).await;
    let lines = request_lines(&log);
    assert_eq!(lines.len(), 1, "{log}");
    assert!(
        lines[0].contains(" INFO tfmirror::access: answered "),
        "{log}"
    );

    // As JSON, each request's line carries its span, with its ID and its
    // cache outcome: a document answered from memory is answered within
    // the span too.
    let config = config_file(&setup, &origin, "[log]\nformat = \"json\"\n");
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"]).arg(&config);
    let d = Daemon::start(cmd);
    let index = format!("{}registry.origin.test/acme/widget/index.json", d.url);
    let answers = [c.get(&index).await, c.get(&index).await];
    let log = stopped(d).await;
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|l| l["target"] == "tfmirror::access")
        .collect();
    assert_eq!(lines.len(), 2, "{log}");
    for (line, answer) in lines.iter().zip(&answers) {
        assert_eq!(answer.status, StatusCode::OK);
        let id = answer.headers["x-request-id"].to_str().unwrap();
        assert_eq!(line["span"]["id"], id, "{line}");
        assert_eq!(line["fields"]["status"], 200, "{line}");
    }
    assert_eq!(lines[1]["span"]["cache"], "hit", "{log}");
}

/// The certificate a TLS server presents.
async fn presented_certificate(addr: &str, roots: &[&TestCa]) -> Vec<u8> {
    use rustls_pki_types::pem::PemObject;
    let mut store = rustls::RootCertStore::empty();
    for ca in roots {
        store
            .add(rustls_pki_types::CertificateDer::from_pem_slice(ca.ca_pem.as_bytes()).unwrap())
            .unwrap();
    }
    let cfg = rustls::ClientConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(store)
    .with_no_client_auth();
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(cfg))
        .connect(name, tcp)
        .await
        .unwrap();
    tls.get_ref().1.peer_certificates().unwrap()[0].to_vec()
}

#[tokio::test]
async fn sighup_swaps_in_a_new_certificate_and_keeps_the_old_one_when_the_new_is_bad() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let dir = setup.dir.path();
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let first = TestCa::new();
    std::fs::write(&cert, &first.cert_pem).unwrap();
    std::fs::write(&key, &first.key_pem).unwrap();
    let tokens = dir.join("tokens");
    std::fs::write(&tokens, "first-secret-token\n").unwrap();
    let config = config_file(
        &setup,
        &origin,
        &format!("[auth]\ntoken_file = \"{}\"\n", tokens.display()),
    );
    // The environment layer points the server at the certificate files.
    let mut cmd = tfmirror(dir);
    cmd.args(["serve", "--config"])
        .arg(&config)
        .env("TFMIRROR_SERVER__TLS_CERT", &cert)
        .env("TFMIRROR_SERVER__TLS_KEY", &key);
    let mut d = Daemon::start(cmd);
    let addr = d
        .url
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_string();
    let second = TestCa::new();
    let roots = [&first, &second];
    let before = presented_certificate(&addr, &roots).await;

    std::fs::write(&cert, &second.cert_pem).unwrap();
    std::fs::write(&key, &second.key_pem).unwrap();
    d.signal("HUP");
    d.wait_for("reloaded the TLS certificate");
    let after = presented_certificate(&addr, &roots).await;
    assert_ne!(
        before, after,
        "the new certificate is presented after SIGHUP"
    );

    // A certificate whose key does not match is refused; the old one stays.
    std::fs::write(&key, &first.key_pem).unwrap();
    d.signal("HUP");
    d.wait_for("kept the current TLS certificate");
    assert_eq!(presented_certificate(&addr, &roots).await, after);

    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
    assert!(!log.contains("secret-token"), "a token was logged:\n{log}");
}

/// A cache holding both archives of widget 1.0.0 (the mirror that filled it
/// has stopped), and a configuration file for the commands to use it.
async fn cached_widget() -> (
    Setup,
    FakeOrigin,
    std::collections::BTreeMap<String, Vec<u8>>,
    PathBuf,
) {
    let sc = Scene::start("widget", "1.0.0", &["linux_amd64", "darwin_arm64"]).await;
    for p in ["linux_amd64", "darwin_arm64"] {
        let url = sc.archive_url("widget", "1.0.0", p);
        assert_eq!(sc.client.get(&url).await.status, StatusCode::OK);
    }
    let Scene {
        setup,
        origin,
        archives,
        mirror,
        ..
    } = sc;
    mirror.stop().await;
    let config = config_file(&setup, &origin, "");
    (setup, origin, archives, config)
}

#[tokio::test]
async fn ls_lists_the_cache_and_gc_shrinks_it() {
    let (setup, _origin, archives, config) = cached_widget().await;

    let out = tfmirror(setup.dir.path())
        .args(["ls", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rows = listed.as_array().unwrap();
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0]["provider"]["hostname"], "registry.origin.test");
    assert_eq!(rows[0]["platform"], "darwin_arm64");
    assert_eq!(rows[1]["size"], archives["linux_amd64"].len());

    let out = tfmirror(setup.dir.path())
        .args(["ls", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let table = String::from_utf8_lossy(&out.stdout);
    assert!(table.starts_with("PROVIDER"), "{table}");
    assert!(
        table.contains("registry.origin.test/acme/widget  1.0.0"),
        "{table}"
    );
    assert!(table.contains("2 archives"), "{table}");

    let smaller = archives["linux_amd64"].len() + 1;
    let out = tfmirror(setup.dir.path())
        .args(["gc", "--max-size", &format!("{smaller}B"), "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("evicted 1 archives"));
    let out = tfmirror(setup.dir.path())
        .args(["ls", "--json", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    let listed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1);

    // gc without a size to shrink to is an error that says what to set.
    let out = tfmirror(setup.dir.path())
        .args(["gc", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("cache.max_size"));
}

#[cfg_attr(
    tfmirror_no_systemd_tools,
    ignore = "needs systemd-socket-activate (Debian's systemd); scripts/test installs it"
)]
#[tokio::test]
async fn takes_over_a_socket_passed_by_systemd() {
    assert!(
        Command::new("systemd-socket-activate")
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success()),
        "systemd-socket-activate (Debian's systemd) is needed"
    );
    let home = tempfile::tempdir().unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    // server.listen names another port: the passed socket wins.
    let mut cmd = Command::new("systemd-socket-activate");
    cmd.env_clear()
        .args(["-l", &format!("127.0.0.1:{port}")])
        .args(["-E", &format!("HOME={}", home.path().display())])
        .args(["-E", "TFMIRROR_SERVER__LISTEN=127.0.0.1:1"])
        .arg(env!("CARGO_BIN_EXE_tfmirror"))
        .arg("serve")
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // The first connection starts tfmirror, which then answers it.
    let tcp = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            if let Ok(s) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await {
                break s;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .unwrap();
    drop(tcp);
    let ca = home.path().join(".local/share/tfmirror/tls/ca.pem");
    let c = Client::trusting_when_ready(&ca).await;
    let a = c.get(&format!("https://127.0.0.1:{port}/healthz")).await;
    assert_eq!(a.status, StatusCode::OK);
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let _ = tokio::task::spawn_blocking(move || child.wait()).await;
    let log = log.join().unwrap();
    assert!(
        log.contains("using the listening socket passed by systemd"),
        "{log}"
    );
}

#[tokio::test]
async fn verify_quarantines_what_no_longer_matches_its_signed_checksum() {
    let (setup, _origin, _archives, config) = cached_widget().await;
    // A file being written by a running daemon must survive the command.
    let in_flight = setup.cache_dir().join("tmp/part-in-flight");
    std::fs::write(&in_flight, b"partial").unwrap();
    let verify = || {
        tfmirror(setup.dir.path())
            .args(["verify", "--config"])
            .arg(&config)
            .output()
            .unwrap()
    };
    let out = verify();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("checked 2 archives, module packages and release files, quarantined 0"),
        "{said}"
    );
    // How much was read, and how fast.
    assert!(said.contains("read ") && said.contains(" MiB/s)"), "{said}");
    // On a terminal (util-linux's `script` gives it one), a bar shows the
    // progress on standard error.
    let on_terminal = std::process::Command::new("script")
        .args(["--quiet", "--return", "--command"])
        .arg(format!(
            "{} verify --config {}",
            env!("CARGO_BIN_EXE_tfmirror"),
            config.display()
        ))
        .arg("/dev/null")
        .env("HOME", setup.dir.path())
        .env("TERM", "xterm")
        .output()
        .expect("script (util-linux) runs");
    let shown = String::from_utf8_lossy(&on_terminal.stdout);
    assert!(on_terminal.status.success(), "{shown}");
    assert!(
        shown.contains("/2 archives, module packages and release files"),
        "{shown}"
    );
    assert!(in_flight.exists());

    // Bit rot (or tampering) in one archive on disk.
    let relative = "providers/registry.origin.test/acme/widget/1.0.0/terraform-provider-widget_1.0.0_linux_amd64.zip";
    let path = setup.cache_dir().join(relative);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[10] ^= 0x55;
    std::fs::write(&path, bytes).unwrap();
    let out = verify();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains(&format!("QUARANTINED {relative}: its SHA-256")),
        "{said}"
    );
    assert!(
        said.contains("checked 2 archives, module packages and release files, quarantined 1"),
        "{said}"
    );
    assert!(!path.exists());
    assert!(setup.cache_dir().join("quarantine").join(relative).exists());

    // A stored SHA256SUMS whose signature no longer verifies quarantines
    // the rest: the document (the last mention of the name) is altered.
    let record = setup
        .cache_dir()
        .join("providers/registry.origin.test/acme/widget/1.0.0/version.json");
    let text = std::fs::read_to_string(&record).unwrap();
    let name = "terraform-provider-widget_1.0.0_darwin_arm64.zip";
    let at = text.rfind(name).unwrap();
    let altered = format!(
        "{}{}{}",
        &text[..at],
        name.replace("arm64", "arm65"),
        &text[at + name.len()..]
    );
    std::fs::write(&record, altered).unwrap();
    let out = verify();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(
        said.contains("checked 1 archives, module packages and release files, quarantined 1"),
        "{said}"
    );
    assert!(said.contains("signature"), "{said}");
    let out = verify();
    assert!(out.status.success(), "nothing left to fail");
}

#[tokio::test]
async fn verify_quarantines_archives_whose_record_cannot_be_read() {
    let (setup, _origin, _archives, config) = cached_widget().await;
    let version = setup
        .cache_dir()
        .join("providers/registry.origin.test/acme/widget/1.0.0");
    std::fs::write(version.join("version.json"), b"{ not a record").unwrap();
    let out = tfmirror(setup.dir.path())
        .args(["verify", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("its metadata cannot be read"), "{said}");
    assert!(
        said.contains("checked 2 archives, module packages and release files, quarantined 2"),
        "{said}"
    );
    let zips: Vec<_> = std::fs::read_dir(&version)
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "zip"))
        .collect();
    assert!(zips.is_empty(), "{zips:?}");
    let kept = files_below(&setup.cache_dir().join("quarantine"));
    assert_eq!(
        kept.iter().filter(|f| f.ends_with(".zip")).count(),
        2,
        "{kept:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_mid_download_leaves_nothing_servable_and_restart_recovers() {
    let (setup, origin, _signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let name = "terraform-provider-widget_1.0.0_linux_amd64.zip";
    origin.set_file_delay(name, Duration::from_secs(30));
    let config = config_file(&setup, &origin, "");
    let start = || {
        let mut cmd = tfmirror(setup.dir.path());
        cmd.args(["serve", "--config"]).arg(&config);
        Daemon::start(cmd)
    };
    let d = start();
    let ca = setup.dir.path().join("data/tls/ca.pem");
    let c = std::sync::Arc::new(Client::trusting(&ca));
    let url = format!("{}registry.origin.test/acme/widget/{name}", d.url);
    let pending = {
        let (c, url) = (c.clone(), url.clone());
        tokio::spawn(
            async move { tokio::time::timeout(Duration::from_secs(20), c.get(&url)).await },
        )
    };
    // Wait until the download has begun: its temporary file exists.
    let tmp = setup.cache_dir().join("tmp");
    wait_until("a download to be under way", Duration::from_secs(5), || {
        std::fs::read_dir(&tmp).is_ok_and(|d| d.count() == 1)
    })
    .await;
    d.signal("KILL");
    let _ = d.wait().await;
    pending.abort();
    let stored = files_below(&setup.cache_dir());
    assert!(!stored.iter().any(|f| f.ends_with(".zip")), "{stored:?}");

    // After a restart the leftover is swept and the archive is fetched whole.
    origin.set_file_delay(name, Duration::ZERO);
    let d = start();
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "leftover not swept"
    );
    let url = format!("{}registry.origin.test/acme/widget/{name}", d.url);
    let a = c.get(&url).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], &archives["linux_amd64"][..]);
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
}

/// `kill -9` at arbitrary moments while many version lists and records are
/// being written: every metadata file on disk is always a whole record
/// (writes go to tmp/ and are renamed into place), and the restart sweeps
/// tmp/ and serves every version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_during_metadata_writes_leaves_only_whole_records() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let versions: Vec<String> = (0..24).map(|i| format!("1.{i}.0")).collect();
    for kind in ["alpha", "beta", "gamma"] {
        for v in &versions {
            origin.publish(
                "acme",
                kind,
                v,
                &["linux_amd64", "darwin_arm64"],
                &signer,
                &[&signer],
            );
        }
    }
    let config = config_file(&setup, &origin, "");
    let start = || {
        let mut cmd = tfmirror(setup.dir.path());
        cmd.args(["serve", "--config"]).arg(&config);
        Daemon::start(cmd)
    };
    let ca = setup.dir.path().join("data/tls/ca.pem");
    let check_records = || {
        let root = setup.cache_dir().join("providers");
        let mut records = 0;
        for f in files_below(&root) {
            let bytes = std::fs::read(root.join(&f)).unwrap();
            if f.ends_with("/index.json") {
                serde_json::from_slice::<tfmirror::store::IndexRecord>(&bytes)
                    .unwrap_or_else(|e| panic!("{f} is not a whole record: {e}"));
                records += 1;
            } else if f.ends_with("/version.json") {
                serde_json::from_slice::<tfmirror::store::VersionRecord>(&bytes)
                    .unwrap_or_else(|e| panic!("{f} is not a whole record: {e}"));
                records += 1;
            }
        }
        records
    };
    // Each round kills once this many more records have reached the disk,
    // so that writes are under way at the kill.
    let mut kills = 0;
    for (round, more) in [(0, 1), (1, 6), (2, 12), (3, 20)] {
        let before = check_records();
        let d = start();
        let c = std::sync::Arc::new(Client::trusting(&ca));
        let requests: Vec<_> = ["alpha", "beta", "gamma"]
            .iter()
            .flat_map(|kind| {
                versions
                    .iter()
                    .map(move |v| format!("registry.origin.test/acme/{kind}/{v}.json"))
            })
            .map(|path| {
                let (c, url) = (c.clone(), format!("{}{path}", d.url));
                tokio::spawn(async move {
                    let _ = tokio::time::timeout(Duration::from_secs(10), c.try_get(&url)).await;
                })
            })
            .collect();
        for _ in 0..5000 {
            if check_records() >= before + more {
                break;
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        d.signal("KILL");
        let _ = d.wait().await;
        kills += 1;
        for r in requests {
            r.abort();
        }
        let records = check_records();
        eprintln!("round {round}: killed with {records} records on disk");
        assert!(records >= before + more, "round {round}: no writes seen");
    }
    assert_eq!(kills, 4);

    // The restart sweeps tmp/ and answers for everything.
    let d = start();
    let c = Client::trusting(&ca);
    let tmp = setup.cache_dir().join("tmp");
    assert_eq!(
        std::fs::read_dir(&tmp).unwrap().count(),
        0,
        "leftovers not swept"
    );
    for kind in ["alpha", "beta", "gamma"] {
        for v in &versions {
            let url = format!("{}registry.origin.test/acme/{kind}/{v}.json", d.url);
            let a = c.get(&url).await;
            assert_eq!(a.status, StatusCode::OK, "{kind} {v}");
            assert_eq!(a.json()["archives"].as_object().unwrap().len(), 2);
        }
    }
    assert_eq!(check_records(), 3 + 3 * versions.len());
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_served_archive_and_module_package_leaves_an_audit_line() {
    let (setup, origin, _signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let mut tgz = Vec::new();
    {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            &mut tgz,
            flate2::Compression::default(),
        ));
        let mut h = tar::Header::new_gnu();
        h.set_size(3);
        h.set_mode(0o644);
        b.append_data(&mut h, "main.tf", &b"# x"[..]).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    origin.publish_archive_module(("acme", "net", "aws"), "1.0.0", tgz);
    let audit = setup.dir.path().join("audit.jsonl");
    // The request lines switched off: the audit trail has a file of its
    // own, whatever the log's filter.
    let config = config_file(
        &setup,
        &origin,
        &format!(
            "[auth]\ntokens = [\"t0ken-of-the-ci\"]\n[log]\nlevel = \"info,tfmirror::access=off,tfmirror::audit=off\"\naudit_file = \"{}\"\n",
            audit.display()
        ),
    );
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"])
        .arg(&config)
        .env_remove("RUST_LOG");
    let mut d = Daemon::start(cmd);
    d.wait_for("SSL_CERT_FILE=");
    let c = Client::trusting(&setup.dir.path().join("data/tls/ca.pem"));
    let bearer = "Bearer t0ken-of-the-ci";
    let doc = c
        .get_with_header(
            &format!("{}registry.origin.test/acme/widget/1.0.0.json", d.url),
            "authorization",
            bearer,
        )
        .await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    let link = doc.json()["archives"]["linux_amd64"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let archive_url = resolve(
        &format!("{}registry.origin.test/acme/widget/1.0.0.json", d.url),
        &link,
    );
    for _ in ["cold", "warm"] {
        let got = c
            .get_with_header(&archive_url, "authorization", bearer)
            .await;
        assert_eq!(got.status, StatusCode::OK, "{}", got.error_text());
        assert_eq!(&got.body[..], &archives["linux_amd64"][..]);
    }
    let download = format!(
        "{}v1/modules/registry.origin.test/acme/net/aws/1.0.0/download",
        d.url
    );
    let answer = c.get_with_header(&download, "authorization", bearer).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    let location = answer.json()["location"].as_str().unwrap().to_owned();
    // A token that does not authenticate is not named, even beside a
    // signed link that opens the package.
    let package = c
        .get_with_header(
            &resolve(&download, &location),
            "authorization",
            "Bearer not-a-token",
        )
        .await;
    assert_eq!(package.status, StatusCode::OK, "{}", package.error_text());
    // A refused request leaves no line.
    let refused = c
        .get(&format!(
            "{}registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_darwin_arm64.zip",
            d.url
        ))
        .await;
    assert_ne!(refused.status, StatusCode::OK);
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");

    let lines: Vec<serde_json::Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    assert_eq!(lines.len(), 3, "{lines:#?}");
    let fingerprint = {
        let digest = sha256_hex(b"t0ken-of-the-ci");
        format!("sha256:{}", &digest[..12])
    };
    for (line, cache) in lines[..2].iter().zip(["miss", "hit"]) {
        let f = &line["fields"];
        assert_eq!(line["target"], "tfmirror::audit", "{line}");
        assert_eq!(f["kind"], "provider");
        assert_eq!(f["source"], "registry.origin.test/acme/widget");
        assert_eq!(f["version"], "1.0.0");
        assert_eq!(f["platform"], "linux_amd64");
        assert_eq!(f["bytes"], archives["linux_amd64"].len());
        assert_eq!(f["token"], fingerprint.as_str());
        assert_eq!(f["client"], "127.0.0.1");
        assert_eq!(line["span"]["cache"], cache, "{line}");
        assert!(line["timestamp"].is_string(), "{line}");
    }
    let module = &lines[2]["fields"];
    assert_eq!(module["kind"], "module");
    assert_eq!(module["source"], "registry.origin.test/acme/net/aws");
    assert_eq!(module["token"], "-", "no token authenticated");
    assert!(module["bytes"].as_u64().unwrap() > 0);
    // And the log, filtered, has neither request nor audit lines.
    assert!(!log.contains("tfmirror::access"), "{log}");
    assert!(!log.contains("tfmirror::audit"), "{log}");
}

/// `tfmirror --version` names the version and, built from a git
/// checkout, the commit and the build date, so that an operator can tell
/// builds apart.
#[test]
fn the_version_names_the_commit_it_was_built_from() {
    let out = Command::new(env!("CARGO_BIN_EXE_tfmirror"))
        .arg("--version")
        .output()
        .unwrap();
    assert!(out.status.success());
    let line = String::from_utf8(out.stdout).unwrap();
    assert!(
        line.starts_with(&format!("tfmirror {}", env!("CARGO_PKG_VERSION"))),
        "{line}"
    );
    let head = Command::new("git")
        .args(["rev-parse", "--short=12", "HEAD"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned());
    if let Some(commit) = head {
        assert!(
            line.contains(&format!("(commit {commit}, built 20")),
            "{line} does not name {commit}"
        );
    }
}
