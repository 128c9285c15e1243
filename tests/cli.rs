//! The `tfmirror` binary itself: configuration errors, and `serve` on its
//! built-in defaults (generated certificate, platform directories) until
//! SIGTERM.

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Duration;

fn tfmirror(home: &std::path::Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_tfmirror"));
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "info")
        .env("NO_COLOR", "1");
    cmd
}

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

#[cfg(unix)]
#[tokio::test]
async fn serve_runs_on_defaults_and_stops_on_sigterm() {
    let home = tempfile::tempdir().unwrap();
    let mut child = tfmirror(home.path())
        .arg("serve")
        .env("TFMIRROR_SERVER__LISTEN", "127.0.0.1:0")
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    let mut log = String::new();
    let url = loop {
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .unwrap_or_else(|_| panic!("no serving line in:\n{log}"));
        log.push_str(&line);
        log.push('\n');
        if let Some(rest) = line.split("protocol at ").nth(1) {
            break rest.split_whitespace().next().unwrap().to_string();
        }
    };
    // The CLI block and the trust hint follow.
    while !log.contains("SSL_CERT_FILE=") {
        log.push_str(&rx.recv_timeout(Duration::from_secs(5)).unwrap());
        log.push('\n');
    }
    assert!(log.contains(&format!("url = \"{url}\"")), "{log}");
    let ca = home.path().join(".local/share/tfmirror/tls/ca.pem");
    assert!(log.contains(&ca.display().to_string()), "{log}");

    let c = common::Client::trusting(&ca);
    let page = c.get(&url).await;
    assert_eq!(page.status, http::StatusCode::OK);
    let refused = c.get(&format!("{url}example.com/acme/x/index.json")).await;
    assert_eq!(refused.status, http::StatusCode::FORBIDDEN);

    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = tokio::task::spawn_blocking(move || child.wait().unwrap())
        .await
        .unwrap();
    assert!(status.success(), "exit status {status:?}");
    assert!(home.path().join(".cache/tfmirror/providers").is_dir());
}
