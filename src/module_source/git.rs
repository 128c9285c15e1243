//! Fetching one ref of a git repository over HTTP(S) with the `git` CLI,
//! as the clients themselves do, into a working tree.
//!
//! The child runs with a clean environment: no system or user
//! configuration, no prompts, only the `https` transport (and `http` for
//! hosts configured with `insecure_http`), the mirror's CA file added to
//! the system's roots, the address the request-forgery guard resolved
//! pinned with `http.curloptResolve`, and a deadline after which it is
//! killed. A token is handed to git in its environment (never its command
//! line), and redirects are then not followed, so it reaches that host only.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;
use url::Url;

/// Why a git fetch failed.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// The `git` program could not be run.
    #[error("cannot run {program}: {reason} (install git, or set modules.git)")]
    Missing {
        /// The program.
        program: String,
        /// Why.
        reason: String,
    },
    /// git ran and failed.
    #[error("git {step} of {url} failed: {message}")]
    Failed {
        /// What git was doing.
        step: &'static str,
        /// The repository.
        url: String,
        /// The end of what git said.
        message: String,
    },
    /// git ran past the deadline and was stopped.
    #[error("git {step} of {url} took longer than {secs} s and was stopped")]
    Timeout {
        /// What git was doing.
        step: &'static str,
        /// The repository.
        url: String,
        /// The deadline.
        secs: u64,
    },
    /// Local files could not be written.
    #[error("{0}")]
    Io(#[from] std::io::Error),
}

/// How git is run.
#[derive(Debug, Clone)]
pub struct Git {
    /// The program (`modules.git`).
    pub program: PathBuf,
    /// Extra CA certificates to trust besides the system's
    /// (`upstream.ca_file`).
    pub ca_file: Option<PathBuf>,
    /// The deadline for each git step.
    pub timeout: Duration,
}

/// One fetch: where from, what, and how.
pub struct Fetch<'a> {
    /// The repository.
    pub url: &'a Url,
    /// The tag, branch or commit; the default branch when `None`.
    pub reference: Option<&'a str>,
    /// The history depth to fetch (1 when `None`).
    pub depth: Option<u32>,
    /// The address to connect to, from the request-forgery guard.
    pub pinned: Option<IpAddr>,
    /// A bearer token for the repository's host.
    pub token: Option<&'a str>,
    /// Whether the host may be reached over plain http (`insecure_http`).
    pub plain_http: bool,
}

/// The system's CA bundle, which the mirror's CA file is added to.
const SYSTEM_ROOTS: &str = "/etc/ssl/certs/ca-certificates.crt";

impl Git {
    /// Fetches `fetch` into `into` (created empty by the caller), checks
    /// out what it names, removes `.git`, and returns the commit it
    /// resolved to (40 or 64 hex digits).
    pub async fn fetch(&self, fetch: &Fetch<'_>, into: &Path) -> Result<String, GitError> {
        let home = tempfile::tempdir_in(into.parent().unwrap_or(into))?;
        let mut config: Vec<(String, String)> = vec![
            ("protocol.version".into(), "2".into()),
            ("advice.detachedHead".into(), "false".into()),
            ("core.symlinks".into(), "true".into()),
            ("init.defaultBranch".into(), "main".into()),
            // A fetch that moves less than 1 KiB/s for the deadline stops.
            ("http.lowSpeedLimit".into(), "1024".into()),
            (
                "http.lowSpeedTime".into(),
                self.timeout.as_secs().to_string(),
            ),
        ];
        if let Some(extra) = &self.ca_file {
            let mut bundle = std::fs::read(SYSTEM_ROOTS).unwrap_or_default();
            bundle.push(b'\n');
            bundle.extend(std::fs::read(extra)?);
            let path = home.path().join("roots.pem");
            std::fs::write(&path, bundle)?;
            config.push(("http.sslCAInfo".into(), path.display().to_string()));
        }
        let host = fetch.url.host_str().unwrap_or("");
        let port = fetch.url.port_or_known_default().unwrap_or(443);
        if let Some(addr) = fetch.pinned {
            let addr = match addr {
                IpAddr::V6(v6) => format!("[{v6}]"),
                IpAddr::V4(v4) => v4.to_string(),
            };
            config.push((
                "http.curloptResolve".into(),
                format!("{host}:{port}:{addr}"),
            ));
        }
        if let Some(token) = fetch.token {
            config.push((
                format!("http.{}.extraHeader", origin_of(fetch.url)),
                format!("Authorization: Bearer {token}"),
            ));
            config.push(("http.followRedirects".into(), "false".into()));
        }
        let protocols = if fetch.plain_http {
            "https:http"
        } else {
            "https"
        };
        let run = Runner {
            git: self,
            home: home.path(),
            config: &config,
            protocols,
            url: fetch.url.as_str(),
        };

        run.step("init", into, &["init", "--quiet", "."]).await?;
        let wanted = fetch.reference.unwrap_or("HEAD");
        let depth = format!("--depth={}", fetch.depth.unwrap_or(1).max(1));
        let shallow = run
            .step(
                "fetch",
                into,
                &[
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    &depth,
                    fetch.url.as_str(),
                    wanted,
                ],
            )
            .await;
        let target = match shallow {
            Ok(_) => "FETCH_HEAD".to_owned(),
            Err(e @ (GitError::Failed { .. } | GitError::Timeout { .. }))
                if is_commit_id(wanted) =>
            {
                // A server that will not hand out an unadvertised commit:
                // fetch its branches and tags, then find the commit.
                tracing::debug!(error = %e, "fetching a commit directly failed; fetching every ref");
                run.step(
                    "fetch",
                    into,
                    &[
                        "fetch",
                        "--quiet",
                        fetch.url.as_str(),
                        "+refs/heads/*:refs/remotes/origin/*",
                        "+refs/tags/*:refs/tags/*",
                    ],
                )
                .await?;
                wanted.to_owned()
            }
            Err(e) => return Err(e),
        };
        let commit = run
            .step(
                "rev-parse",
                into,
                &[
                    "rev-parse",
                    "--verify",
                    "--end-of-options",
                    &format!("{target}^{{commit}}"),
                ],
            )
            .await?;
        let commit = commit.trim().to_owned();
        run.step(
            "checkout",
            into,
            &["checkout", "--quiet", "--detach", &commit],
        )
        .await?;
        tokio::fs::remove_dir_all(into.join(".git")).await?;
        Ok(commit)
    }
}

/// Runs git steps with the fetch's settings.
struct Runner<'a> {
    git: &'a Git,
    home: &'a Path,
    config: &'a [(String, String)],
    protocols: &'a str,
    url: &'a str,
}

impl Runner<'_> {
    /// Runs `git args` in `dir`; returns what it printed.
    async fn step(
        &self,
        step: &'static str,
        dir: &Path,
        args: &[&str],
    ) -> Result<String, GitError> {
        let mut cmd = Command::new(&self.git.program);
        cmd.args(args)
            .current_dir(dir)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home)
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_ASKPASS", "/bin/false")
            .env("GIT_ALLOW_PROTOCOL", self.protocols)
            .env("GIT_CONFIG_COUNT", self.config.len().to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for (i, (key, value)) in self.config.iter().enumerate() {
            cmd.env(format!("GIT_CONFIG_KEY_{i}"), key)
                .env(format!("GIT_CONFIG_VALUE_{i}"), value);
        }
        let child = cmd.spawn().map_err(|e| GitError::Missing {
            program: self.git.program.display().to_string(),
            reason: e.to_string(),
        })?;
        let output = tokio::time::timeout(self.git.timeout, child.wait_with_output())
            .await
            .map_err(|_| GitError::Timeout {
                step,
                url: self.url.to_owned(),
                secs: self.git.timeout.as_secs(),
            })??;
        if output.status.success() {
            return Ok(String::from_utf8_lossy(&output.stdout).into_owned());
        }
        let said = String::from_utf8_lossy(&output.stderr);
        let message = said
            .lines()
            .filter(|l| !l.trim().is_empty())
            .rev()
            .take(3)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect::<Vec<_>>()
            .join(" / ");
        Err(GitError::Failed {
            step,
            url: self.url.to_owned(),
            message: if message.is_empty() {
                output.status.to_string()
            } else {
                message
            },
        })
    }
}

/// `scheme://host[:port]/`, the scope of a per-URL git setting.
fn origin_of(url: &Url) -> String {
    format!("{}/", url.origin().ascii_serialization())
}

/// A full commit ID (SHA-1 or SHA-256).
pub fn is_commit_id(given: &str) -> bool {
    (given.len() == 40 || given.len() == 64) && given.bytes().all(|b| b.is_ascii_hexdigit())
}
