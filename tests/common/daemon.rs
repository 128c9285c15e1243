//! The `tfmirror` binary run as a separate process, for tests of the
//! command line, signals and crashes.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::Receiver;
use std::time::Duration;

use super::{FakeOrigin, Setup};

/// The `tfmirror` binary with a clean environment and `home` as `$HOME`.
pub fn tfmirror(home: &Path) -> Command {
    // Set by cargo for integration tests; this module is also compiled into
    // the benchmark harness, which does not start the binary this way.
    let Some(bin) = option_env!("CARGO_BIN_EXE_tfmirror") else {
        panic!("the tfmirror binary is known to integration tests only");
    };
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .env("HOME", home)
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("RUST_LOG", "info");
    cmd
}

/// A running `tfmirror serve` whose log is read line by line.
pub struct Daemon {
    pub child: Child,
    pub lines: Receiver<String>,
    pub log: String,
    pub url: String,
}

impl Daemon {
    /// Starts a prepared `serve` command (arguments already given).
    pub fn start(mut cmd: Command) -> Daemon {
        let mut child = cmd.stderr(Stdio::piped()).spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel::<String>();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let mut d = Daemon {
            child,
            lines,
            log: String::new(),
            url: String::new(),
        };
        let line = d.wait_for("protocol at ");
        d.url = line
            .split("protocol at ")
            .nth(1)
            .unwrap()
            .split(|c: char| c.is_whitespace() || c == '"')
            .next()
            .unwrap()
            .to_string();
        d
    }

    /// Waits for a log line containing `needle` and returns it.
    pub fn wait_for(&mut self, needle: &str) -> String {
        loop {
            let line = self
                .lines
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("no {needle:?} in the log:\n{}", self.log));
            self.log.push_str(&line);
            self.log.push('\n');
            if line.contains(needle) {
                return line;
            }
        }
    }

    pub fn signal(&self, sig: &str) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args([&format!("-{sig}"), &pid])
            .status()
            .unwrap()
            .success());
    }

    pub async fn wait(mut self) -> (std::process::ExitStatus, String) {
        let status = tokio::task::spawn_blocking(move || {
            let s = self.child.wait().unwrap();
            while let Ok(line) = self.lines.recv_timeout(Duration::from_secs(2)) {
                self.log.push_str(&line);
                self.log.push('\n');
            }
            (s, std::mem::take(&mut self.log))
        });
        status.await.unwrap()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.child.kill();
    }
}

/// A configuration file for a daemon that mirrors `registry.origin.test`
/// from the fake origin.
pub fn config_file(setup: &Setup, origin: &FakeOrigin, extra: &str) -> PathBuf {
    let dir = setup.dir.path();
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "{data}"
shutdown_grace = "20s"
[cache]
dir = "{cache}"
[modules]
git = "{git}"
[upstream]
allowed_hosts = []
ca_file = "{ca}"
allow_private_addresses = true
[upstream.hosts."registry.origin.test"]
services = {{ "providers.v1" = "{api}", "modules.v1" = "{modules}" }}
{extra}
"#,
        data = dir.join("data").display(),
        cache = setup.cache_dir().display(),
        git = super::git_program().display(),
        ca = dir.join("origin-ca.pem").display(),
        api = origin.providers_url(),
        modules = origin.modules_url(),
    );
    let path = dir.join("tfmirror.toml");
    std::fs::write(&path, text).unwrap();
    path
}

/// A second instance's configuration file beside `first` (in `home`): the
/// same settings and store, with its own local data and cache directories.
pub fn second_instance(home: &Path, first: &Path) -> PathBuf {
    let text = std::fs::read_to_string(first).unwrap();
    let second = home.join("second.toml");
    let dir = |name: &str| home.join(name).display().to_string();
    std::fs::write(
        &second,
        text.replace(&dir("data"), &dir("second-data"))
            .replace(&dir("cache"), &dir("second-cache")),
    )
    .unwrap();
    second
}

/// What a finished `tfmirror` command printed.
pub struct Ran {
    pub ok: bool,
    pub stdout: String,
    pub stderr: String,
}

/// Runs a `tfmirror` command to its end.
pub async fn run_tfmirror(home: &Path, args: &[&str]) -> Ran {
    let mut cmd = tfmirror(home);
    cmd.args(args);
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    Ran {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A configuration file for a mirror inside an air-gapped site: its own
/// cache and data directories under `dir`, serving `registry.origin.test`,
/// offline.
pub fn site_config(dir: &Path, name: &str, extra: &str) -> PathBuf {
    let text = format!(
        r#"
[server]
listen = "127.0.0.1:0"
data_dir = "{data}"
[cache]
dir = "{cache}"
{extra}
[upstream]
allowed_hosts = ["registry.origin.test"]
offline = true
"#,
        data = dir.join(format!("{name}-data")).display(),
        cache = dir.join(format!("{name}-cache")).display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// Runs a `tfmirror` command that must succeed.
pub async fn run_ok(home: &Path, args: &[&str]) -> Ran {
    let ran = run_tfmirror(home, args).await;
    assert!(
        ran.ok,
        "tfmirror {args:?} failed:\n{}{}",
        ran.stdout, ran.stderr
    );
    ran
}

/// Carries what `sc`'s mirror cached across an air gap: `export` of its
/// cache as a bundle, `import` into a site (`site.toml`, with `site_extra`
/// in its configuration), then an offline mirror on the site's cache with
/// `configure` applied to its configuration.
pub async fn across_the_gap(
    sc: &super::Scene,
    site_extra: &str,
    configure: impl FnOnce(&mut tfmirror::config::Config),
) -> super::RunningMirror {
    let home = sc.setup.dir.path();
    let config = config_file(&sc.setup, &sc.origin, "");
    let bundle = home.join("gap.tar");
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    run_ok(
        home,
        &["export", "--config", &s(&config), "--output", &s(&bundle)],
    )
    .await;
    let site = site_config(home, "site", site_extra);
    run_ok(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    let mut config = sc.setup.config(&sc.origin, &[], &["registry.origin.test"]);
    config.cache.dir = home.join("site-cache");
    config.upstream.offline = true;
    configure(&mut config);
    super::RunningMirror::start(config).await
}

/// Writes a sync manifest for `registry.origin.test/acme/widget` at
/// `versions` on `linux_amd64` and runs `sync` with `config`.
pub async fn sync_widget(home: &Path, config: &Path, versions: &str) {
    let manifest = sync_manifest(home, "registry.origin.test/acme/widget", versions);
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    run_ok(
        home,
        &["sync", "--config", &s(config), "--manifest", &s(&manifest)],
    )
    .await;
}

/// Writes `home/providers.toml`, a sync manifest for `source` at
/// `versions` on `linux_amd64`, and gives its path.
pub fn sync_manifest(home: &Path, source: &str, versions: &str) -> PathBuf {
    let manifest = home.join("providers.toml");
    std::fs::write(
        &manifest,
        format!("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"{source}\"\nversions = \"{versions}\"\n"),
    )
    .unwrap();
    manifest
}

/// Runs `export` of `config`'s cache to the bundle `out`, with `extra`
/// arguments (`--missing-from FILE`, `--since BUNDLE`).
pub async fn export_bundle(home: &Path, config: &Path, out: &Path, extra: &[&str]) -> Ran {
    let (config, out) = (config.to_str().unwrap(), out.to_str().unwrap());
    let mut args = vec!["export", "--config", config, "--output", out];
    args.extend_from_slice(extra);
    run_ok(home, &args).await
}

/// Runs `inventory` of `config`'s cache into `out`.
pub async fn write_inventory(home: &Path, config: &Path, out: &Path) -> Ran {
    let (config, out) = (config.to_str().unwrap(), out.to_str().unwrap());
    run_ok(home, &["inventory", "--config", config, "--output", out]).await
}

/// A bundle's entries, to alter them.
pub fn bundle_entries(path: &Path) -> Vec<(String, Vec<u8>)> {
    let mut tar = tar::Archive::new(std::fs::File::open(path).unwrap());
    tar.entries()
        .unwrap()
        .map(|e| {
            let mut e = e.unwrap();
            let name = e.path().unwrap().to_string_lossy().into_owned();
            let mut bytes = Vec::new();
            std::io::Read::read_to_end(&mut e, &mut bytes).unwrap();
            (name, bytes)
        })
        .collect()
}

/// Writes a bundle of `entries`, in order.
pub fn write_bundle(path: &Path, entries: &[(String, Vec<u8>)]) {
    let mut tar = tar::Builder::new(std::fs::File::create(path).unwrap());
    for (name, bytes) in entries {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        tar.append_data(&mut header, name, &bytes[..]).unwrap();
    }
    tar.finish().unwrap();
}

/// Runs `tfmirror ARGS` in `home` to its end, with its address space
/// limited to `limit` bytes by util-linux's `prlimit`, off the runtime
/// that serves the test's origin.
pub async fn limited(home: &Path, limit: u64, args: &[&str]) -> std::process::Output {
    let mut cmd = tfmirror(home);
    let bin = cmd.get_program().to_owned();
    let envs: Vec<_> = cmd
        .get_envs()
        .map(|(k, v)| (k.to_owned(), v.map(ToOwned::to_owned)))
        .collect();
    cmd = Command::new("prlimit");
    cmd.env_clear();
    for (k, v) in envs {
        if let Some(v) = v {
            cmd.env(k, v);
        }
    }
    cmd.arg(format!("--as={limit}"))
        .arg("--")
        .arg(bin)
        .args(args);
    tokio::task::spawn_blocking(move || cmd.output().expect("util-linux's prlimit runs"))
        .await
        .unwrap()
}
