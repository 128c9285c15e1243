//! The command line: `tfmirror serve`, `sync`, `lock`, `export`, `import`,
//! `check-config`, `ls`, `gc` and `verify`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::cache::{inventory, Store};
use crate::config::{Config, LogFormat};
use crate::mirror::Mirror;

/// A caching, verifying provider network mirror for Terraform and OpenTofu.
#[derive(Debug, Parser)]
#[command(name = "tfmirror", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the mirror until SIGTERM or SIGINT; SIGHUP reloads the TLS certificate.
    Serve {
        /// Configuration file (TOML). Without one, the built-in defaults and
        /// TFMIRROR_* environment variables apply.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Never contact an origin: serve the cache, 404 for the rest
        /// (upstream.offline).
        #[arg(long)]
        offline: bool,
    },
    /// Fill the cache ahead of time: download, verify and cache the
    /// providers a manifest or a Terraform configuration asks for.
    Sync {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A manifest (TOML) listing providers, version constraints and
        /// platforms (see the README, "Air-gapped sites").
        #[arg(long, required_unless_present = "from", conflicts_with = "from")]
        manifest: Option<PathBuf>,
        /// A Terraform configuration directory: its required_providers
        /// blocks and .terraform.lock.hcl files say what to fetch.
        #[arg(long)]
        from: Option<PathBuf>,
        /// With --from: a platform to fetch (repeatable; default: this
        /// machine's).
        #[arg(long = "platform", requires = "from")]
        platforms: Vec<String>,
        /// How many archives to download at once.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
    },
    /// Print .terraform.lock.hcl provider blocks with h1: and zh: hashes for
    /// every platform given (downloading and verifying archives as needed).
    Lock {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A platform to lock (repeatable; default: this machine's).
        #[arg(long = "platform")]
        platforms: Vec<String>,
        /// A Terraform configuration directory: lock what its
        /// required_providers blocks and lock files ask for.
        #[arg(long, conflicts_with = "sources")]
        from: Option<PathBuf>,
        /// Providers to lock, as `[hostname/]namespace/type`, optionally
        /// followed by `@` and version constraints (`hashicorp/aws@~> 5.0`);
        /// the newest version that meets them is locked.
        #[arg(required_unless_present = "from")]
        sources: Vec<String>,
    },
    /// Write cached providers, with the evidence that verified them, to one
    /// bundle file; or (--static) as a static mirror directory.
    Export {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The bundle file to write.
        #[arg(
            long,
            required_unless_present = "static_dir",
            conflicts_with = "static_dir"
        )]
        output: Option<PathBuf>,
        /// Write the network mirror protocol as static files into this
        /// directory instead (the layout `terraform providers mirror` writes).
        #[arg(long = "static", value_name = "DIR")]
        static_dir: Option<PathBuf>,
        /// Only this provider, `[hostname/]namespace/type` (repeatable).
        #[arg(long = "provider")]
        providers: Vec<String>,
    },
    /// Verify and import a bundle written by `export`; or (--static) a
    /// directory written by `terraform providers mirror`.
    Import {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The bundle file.
        #[arg(required_unless_present = "static_dir", conflicts_with = "static_dir")]
        bundle: Option<PathBuf>,
        /// Import this static mirror directory instead; its providers are
        /// marked unsigned (see cache.allow_unsigned_imports).
        #[arg(long = "static", value_name = "DIR")]
        static_dir: Option<PathBuf>,
    },
    /// Validate the configuration and print the effective settings.
    CheckConfig {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// List the cached archives: provider, version, platform, size, last use.
    Ls {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Re-check every cached archive against its signed SHA256SUMS; move
    /// failures to quarantine and exit non-zero when there were any.
    Verify {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Evict least recently used archives until the cache fits cache.max_size.
    Gc {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The size to shrink to, instead of cache.max_size (e.g. "10GiB").
        #[arg(long)]
        max_size: Option<bytesize::ByteSize>,
    },
}

/// Parses the command line and runs the command; the process's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Serve { config, offline } => load(config).and_then(|mut c| {
            c.upstream.offline |= offline;
            serve(c)
        }),
        Command::Sync {
            config,
            manifest,
            from,
            platforms,
            jobs,
        } => load(config).and_then(|c| sync(c, manifest, from, platforms, jobs)),
        Command::Lock {
            config,
            platforms,
            from,
            sources,
        } => load(config).and_then(|c| lock(c, &platforms, from, &sources)),
        Command::Export {
            config,
            output,
            static_dir,
            providers,
        } => load(config).and_then(|c| export(&c, output, static_dir, &providers)),
        Command::Import {
            config,
            bundle,
            static_dir,
        } => load(config).and_then(|c| import(&c, bundle, static_dir)),
        Command::CheckConfig { config } => load(config).and_then(|c| {
            print!("{}", c.to_toml()?);
            Ok(())
        }),
        Command::Ls { config, json } => load(config).and_then(|c| list(&c, json)),
        Command::Gc { config, max_size } => load(config).and_then(|c| gc(&c, max_size)),
        Command::Verify { config } => load(config).and_then(|c| verify_cache(&c)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tfmirror: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Loads the configuration and starts logging as it says.
fn load(file: Option<PathBuf>) -> anyhow::Result<Config> {
    let config = Config::load(file.as_deref())?;
    init_logging(&config)?;
    Ok(config)
}

fn init_logging(config: &Config) -> anyhow::Result<()> {
    let filter = match std::env::var("RUST_LOG") {
        Ok(spec) if !spec.is_empty() => tracing_subscriber::EnvFilter::try_new(spec)
            .context("RUST_LOG is not a valid log filter")?,
        _ => tracing_subscriber::EnvFilter::try_new(&config.log.level).with_context(|| {
            format!("log.level {:?} is not a valid log filter", config.log.level)
        })?,
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match config.log.format {
        LogFormat::Pretty => builder
            .with_ansi(std::io::stderr().is_terminal())
            .try_init(),
        LogFormat::Json => builder.json().with_current_span(true).try_init(),
    }
    .map_err(|e| anyhow::anyhow!("starting logging: {e}"))
}

/// Runs the daemon until SIGINT or SIGTERM.
pub fn serve(config: Config) -> anyhow::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async move {
        let tls = if config.server.tls {
            Some(Arc::new(crate::tls::server_tls(&config.server)?))
        } else {
            None
        };
        let listener = listener(&config).await?;
        let addr = listener.local_addr()?;
        let mirror = Arc::new(Mirror::new(config.clone())?);
        let scheme = if tls.is_some() { "https" } else { "http" };
        let public = public_authority(&config, addr);
        tracing::info!(
            %addr,
            cache = %mirror.store().root().display(),
            "tfmirror {} serving the provider network mirror protocol at {scheme}://{public}/",
            env!("CARGO_PKG_VERSION")
        );
        let mut hint = format!(
            "Point Terraform or OpenTofu at this mirror with this CLI configuration \
             (~/.terraformrc, or the file named by TF_CLI_CONFIG_FILE):\n\n\
             provider_installation {{\n  network_mirror {{\n    url = \"{scheme}://{public}/\"\n  }}\n}}\n"
        );
        if let Some(generated) = tls.as_ref().and_then(|t| t.generated.as_ref()) {
            hint.push_str(&format!(
                "\nThe certificate was generated by tfmirror; make clients trust its authority:\n\n\
                 export SSL_CERT_FILE={}\n",
                generated.ca_cert.display()
            ));
        }
        tracing::info!("\n{hint}");

        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(handle_signals(tls.clone(), mirror.clone(), stop_tx));
        if config.auth.token_file.is_some() {
            let watched = mirror.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_secs(2)).await;
                    let w = watched.clone();
                    let _ = tokio::task::spawn_blocking(move || w.auth().reload_if_changed()).await;
                }
            });
        }
        notify(&[sd_notify::NotifyState::Ready]);
        let draining = mirror.clone();
        crate::server::run(
            listener,
            tls.map(|t| t.config.clone()),
            mirror.clone(),
            async move {
                let _ = stop_rx.await;
                draining.set_draining();
                notify(&[sd_notify::NotifyState::Stopping]);
            },
            config.server.shutdown_grace,
        )
        .await;
        // Downloads whose clients have gone still get their time to finish.
        let deadline = Instant::now() + config.server.shutdown_grace;
        while mirror.metrics().downloads_in_flight() > 0 && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        tracing::info!("stopped");
        Ok(())
    })
}

/// The listening socket: the one systemd passed (socket activation), or a
/// new one bound to `server.listen`.
async fn listener(config: &Config) -> anyhow::Result<tokio::net::TcpListener> {
    let mut fds = listenfd::ListenFd::from_env();
    if let Some(std_listener) = fds
        .take_tcp_listener(0)
        .context("taking over the socket passed by systemd")?
    {
        std_listener.set_nonblocking(true)?;
        tracing::info!("using the listening socket passed by systemd");
        return Ok(tokio::net::TcpListener::from_std(std_listener)?);
    }
    tokio::net::TcpListener::bind(config.server.listen)
        .await
        .with_context(|| format!("listening on server.listen {}", config.server.listen))
}

/// Tells systemd about a state change (does nothing outside systemd).
fn notify(states: &[sd_notify::NotifyState]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::debug!(error = %e, "could not notify systemd");
    }
}

/// SIGHUP reloads the certificate and the token file; the first SIGTERM or SIGINT starts a
/// graceful shutdown, the second exits at once (files being written are only
/// ever in the cache's tmp/ directory, which the next start sweeps).
async fn handle_signals(
    tls: Option<Arc<crate::tls::ServerTls>>,
    mirror: Arc<Mirror>,
    stop: tokio::sync::oneshot::Sender<()>,
) {
    use tokio::signal::unix::{signal, SignalKind};
    let (Ok(mut hup), Ok(mut term), Ok(mut int)) = (
        signal(SignalKind::hangup()),
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) else {
        tracing::error!("could not install signal handlers");
        return;
    };
    let mut stop = Some(stop);
    loop {
        tokio::select! {
            _ = hup.recv() => {
                let mut states = vec![sd_notify::NotifyState::Reloading];
                if let Ok(now) = sd_notify::NotifyState::monotonic_usec_now() {
                    states.push(now);
                }
                notify(&states);
                match &tls {
                    Some(tls) => match tls.reload() {
                        Ok(()) => tracing::info!("reloaded the TLS certificate"),
                        Err(e) => tracing::error!(error = %format!("{e:#}"), "kept the current TLS certificate: the new one is not usable"),
                    },
                    None => tracing::info!("SIGHUP: TLS is off, no certificate to reload"),
                }
                if mirror.config().auth.token_file.is_some() {
                    match mirror.auth().reload_token_file() {
                        Ok(n) => tracing::info!(tokens = n, "reloaded auth.token_file"),
                        Err(e) => tracing::error!(error = %format!("{e:#}"), "kept the tokens in force: auth.token_file could not be read"),
                    }
                }
                notify(&[sd_notify::NotifyState::Ready]);
                continue;
            }
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
        match stop.take() {
            Some(tx) => {
                tracing::info!("shutdown requested; a second signal exits at once");
                let _ = tx.send(());
            }
            None => {
                tracing::warn!("second signal: exiting now");
                std::process::exit(1);
            }
        }
    }
}

/// The `host:port` clients should use: the listening address, or when that
/// is a wildcard address, the first of `server.hostnames` (else `localhost`).
fn public_authority(config: &Config, addr: std::net::SocketAddr) -> String {
    if !addr.ip().is_unspecified() {
        return addr.to_string();
    }
    let host = config
        .server
        .hostnames
        .first()
        .map(String::as_str)
        .unwrap_or("localhost");
    format!("{host}:{}", addr.port())
}

/// `tfmirror ls`.
fn list(config: &Config, json: bool) -> anyhow::Result<()> {
    let store = Store::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    let archives = inventory::archives(&store);
    if json {
        println!("{}", serde_json::to_string_pretty(&archives)?);
        return Ok(());
    }
    let rows: Vec<[String; 5]> = archives
        .iter()
        .map(|a| {
            [
                a.provider.to_string(),
                a.version.to_string(),
                a.platform.to_string(),
                bytesize::ByteSize(a.size).display().iec().to_string(),
                humantime::format_rfc3339_seconds(
                    std::time::UNIX_EPOCH + Duration::from_secs(a.last_used),
                )
                .to_string(),
            ]
        })
        .collect();
    let header = ["PROVIDER", "VERSION", "PLATFORM", "SIZE", "LAST USED"];
    let mut widths = header.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: [&str; 5]| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i == 3 {
                s.push_str(&format!("{cell:>w$}  "));
            } else {
                s.push_str(&format!("{cell:<w$}  "));
            }
        }
        s.trim_end().to_owned()
    };
    println!("{}", line(header));
    for row in &rows {
        println!("{}", line(row.each_ref().map(String::as_str)));
    }
    let total: u64 = archives.iter().map(|a| a.size).sum();
    println!(
        "{} archives, {}",
        archives.len(),
        bytesize::ByteSize(total).display().iec()
    );
    Ok(())
}

/// The platforms given on the command line, or this machine's.
fn platforms_or_current(given: &[String]) -> anyhow::Result<Vec<crate::address::Platform>> {
    if given.is_empty() {
        Ok(vec![crate::address::Platform::current()])
    } else {
        crate::selection::parse_platforms(given, "--platform")
    }
}

/// A runtime for the commands that do network work.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// `tfmirror sync`.
fn sync(
    config: Config,
    manifest: Option<PathBuf>,
    from: Option<PathBuf>,
    platforms: Vec<String>,
    jobs: usize,
) -> anyhow::Result<()> {
    let requirements = match (manifest, from) {
        (Some(path), _) => crate::selection::from_manifest(&path)?,
        (None, Some(dir)) => {
            crate::selection::from_directory(&dir, &platforms_or_current(&platforms)?)?
        }
        (None, None) => anyhow::bail!("give --manifest FILE or --from DIR"),
    };
    if config.upstream.offline {
        anyhow::bail!("sync fetches from origins; it cannot run with upstream.offline");
    }
    let summary = runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config)?);
        anyhow::Ok(crate::sync::run(mirror, &requirements, jobs).await)
    })?;
    println!("{summary}");
    for failure in &summary.failures {
        println!("FAILED {failure}");
    }
    if summary.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} failures", summary.failures.len())
    }
}

/// `tfmirror lock`.
fn lock(
    config: Config,
    platforms: &[String],
    from: Option<PathBuf>,
    sources: &[String],
) -> anyhow::Result<()> {
    let platforms = platforms_or_current(platforms)?;
    let requirements = match from {
        Some(dir) => crate::selection::from_directory(&dir, &platforms)?,
        None => sources
            .iter()
            .map(|s| crate::selection::from_argument(s, &platforms))
            .collect::<anyhow::Result<Vec<_>>>()?,
    };
    let text = runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config)?);
        let mut entries = Vec::new();
        for req in &requirements {
            let versions = crate::sync::select_versions(&mirror, req)
                .await
                .map_err(|e| anyhow::anyhow!(e))?;
            // With several pinned versions, the newest is locked.
            let version = versions.last().expect("never empty");
            let constraints = Some(req.constraints.as_str().to_string());
            let entry =
                crate::lockfile::entry(&mirror, &req.provider, version, constraints, &platforms)
                    .await
                    .with_context(|| format!("locking {} {version}", req.provider))?;
            entries.push(entry);
        }
        anyhow::Ok(crate::lockfile::render(&entries))
    })?;
    print!("{text}");
    Ok(())
}

/// Parses `--provider` values.
fn providers(sources: &[String]) -> anyhow::Result<Vec<crate::address::Provider>> {
    sources
        .iter()
        .map(|s| {
            crate::address::Provider::from_source(s).with_context(|| format!("--provider {s:?}"))
        })
        .collect()
}

/// `tfmirror export`.
fn export(
    config: &Config,
    output: Option<PathBuf>,
    static_dir: Option<PathBuf>,
    only: &[String],
) -> anyhow::Result<()> {
    let store = Store::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    let only = providers(only)?;
    match (output, static_dir) {
        (Some(output), _) => {
            let done = crate::bundle::export(&store, &only, &output)?;
            println!(
                "wrote {}: {} versions, {} archives, {}",
                output.display(),
                done.versions,
                done.archives,
                bytesize::ByteSize(done.bytes).display().iec()
            );
        }
        (None, Some(dir)) => {
            let done = crate::static_dir::export(&store, &only, &dir)?;
            println!(
                "wrote {}: {} providers, {} versions, {} archives",
                dir.display(),
                done.providers,
                done.versions,
                done.archives
            );
        }
        (None, None) => anyhow::bail!("give --output FILE or --static DIR"),
    }
    Ok(())
}

/// `tfmirror import`.
fn import(
    config: &Config,
    bundle: Option<PathBuf>,
    static_dir: Option<PathBuf>,
) -> anyhow::Result<()> {
    let store = Store::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    let (report, source) = match (bundle, static_dir) {
        (Some(path), _) => {
            let trust = crate::verify::TrustPolicy::new(
                &config.trust,
                config.upstream.reject_expired_keys,
            )?;
            (crate::bundle::import(&store, &trust, &path)?, path)
        }
        (None, Some(dir)) => (crate::static_dir::import(&store, &dir)?, dir),
        (None, None) => anyhow::bail!("give a bundle file or --static DIR"),
    };
    for (item, reason) in &report.rejected {
        println!("REJECTED {item}: {reason}");
    }
    println!(
        "imported {}: {} versions verified, {} archives stored, {} already cached, {} rejected",
        source.display(),
        report.versions,
        report.archives,
        report.unchanged,
        report.rejected.len()
    );
    if report.rejected.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} items were rejected; nothing else was changed",
            report.rejected.len()
        )
    }
}

/// `tfmirror verify`.
fn verify_cache(config: &Config) -> anyhow::Result<()> {
    let store = Store::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    let trust =
        crate::verify::TrustPolicy::new(&config.trust, config.upstream.reject_expired_keys)?;
    let report = crate::integrity::verify_cache(&store, &trust).context("verifying the cache")?;
    for f in &report.quarantined {
        println!("QUARANTINED {}: {}", f.archive.display(), f.reason);
    }
    println!(
        "checked {} archives, quarantined {}",
        report.checked,
        report.quarantined.len()
    );
    if report.quarantined.is_empty() {
        Ok(())
    } else {
        anyhow::bail!(
            "{} cached archives failed verification and were moved to {}",
            report.quarantined.len(),
            store.root().join("quarantine").display()
        )
    }
}

/// `tfmirror gc`.
fn gc(config: &Config, max_size: Option<bytesize::ByteSize>) -> anyhow::Result<()> {
    let max = max_size
        .or(config.cache.max_size)
        .context("no size to shrink to: set cache.max_size or pass --max-size")?;
    let store = Store::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    let removed = inventory::evict(&store, max.as_u64(), |_| false);
    let freed: u64 = removed.iter().map(|a| a.size).sum();
    let left: u64 = inventory::archives(&store).iter().map(|a| a.size).sum();
    println!(
        "evicted {} archives ({}); the cache now holds {} (limit {})",
        removed.len(),
        bytesize::ByteSize(freed).display().iec(),
        bytesize::ByteSize(left).display().iec(),
        max.display().iec()
    );
    Ok(())
}
