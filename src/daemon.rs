//! The daemon's lifecycle, one library call for `tfmirror serve` and the
//! tests alike: build the mirror and its HTTP side, say how to use it,
//! serve until told to stop, reload the certificate and the token file
//! when told to, and drain: stop accepting, let requests in flight finish,
//! and give downloads whose clients have gone their time to be kept, all
//! within `server.shutdown_grace`.

use std::fmt::Write as _;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::sync::mpsc;

use crate::auth::Auth;
use crate::clock::SharedClock;
use crate::config::Config;
use crate::http::tls::ServerTls;
use crate::http::App;
use crate::mirror::Mirror;

/// What a running daemon is told.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Reload the TLS certificate and the token file, and reconcile the
    /// archive index with the store (SIGHUP).
    Reload,
    /// Drain and stop (SIGTERM, SIGINT).
    Stop,
}

/// A daemon that is set up and not yet serving.
pub struct Daemon {
    config: Config,
    listener: TcpListener,
    tls: Option<Arc<ServerTls>>,
    app: Arc<App>,
}

impl Daemon {
    /// Sets the daemon up on `listener`: TLS, the mirror on its store, and
    /// access control.
    pub async fn new(config: Config, listener: TcpListener) -> anyhow::Result<Daemon> {
        Daemon::with_clock(config, listener, crate::clock::system()).await
    }

    /// Like [`Daemon::new`], with expiry (of version lists and archive
    /// links) read from `clock`.
    pub async fn with_clock(
        config: Config,
        listener: TcpListener,
        clock: SharedClock,
    ) -> anyhow::Result<Daemon> {
        let tls = if config.server.tls {
            Some(Arc::new(crate::http::tls::server_tls(&config.server)?))
        } else {
            None
        };
        let watch = crate::site::watch::Watch::new(&config.watch)?;
        let mirror = Arc::new(Mirror::new(config.clone()).await?.with_clock(clock.clone()));
        let auth = Auth::new(
            &config.auth,
            &config.server.data_dir,
            clock,
            Some(mirror.origin_client()),
            Some(mirror.shared_metrics()),
        )?;
        give_back_freed_memory();
        Ok(Daemon {
            config,
            listener,
            tls,
            app: Arc::new(App {
                mirror,
                auth,
                watch,
            }),
        })
    }

    /// What the daemon serves.
    pub fn app(&self) -> &Arc<App> {
        &self.app
    }

    /// The TLS set-up, when TLS is on.
    pub fn tls(&self) -> Option<&ServerTls> {
        self.tls.as_deref()
    }

    /// The address it listens on.
    pub fn local_addr(&self) -> std::io::Result<std::net::SocketAddr> {
        self.listener.local_addr()
    }

    /// Serves until [`Signal::Stop`] arrives (or `signals` closes), then
    /// drains. `ready` runs once the daemon accepts connections;
    /// `stopping` once it has begun to drain.
    pub async fn run(
        self,
        mut signals: mpsc::Receiver<Signal>,
        ready: impl FnOnce(),
        stopping: impl FnOnce() + Send + 'static,
    ) -> anyhow::Result<()> {
        let Daemon {
            config,
            listener,
            tls,
            app,
        } = self;
        announce(&config, &listener, tls.as_deref(), &app)?;
        if let Some(tls) = &tls {
            app.mirror.metrics().set_tls_expiry(tls.not_after());
        }
        let watcher = config
            .auth
            .token_file
            .is_some()
            .then(|| tokio::spawn(watch_token_file(app.clone())));
        let passes = match &app.watch {
            Some(_) if config.upstream.offline => {
                tracing::warn!("[watch] lists providers or modules, but this mirror is offline (upstream.offline): nothing is watched");
                None
            }
            Some(watch) => Some(tokio::spawn(watch.clone().run(app.mirror.clone()))),
            None => None,
        };
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        let control = {
            let (app, tls) = (app.clone(), tls.clone());
            tokio::spawn(async move {
                while let Some(signal) = signals.recv().await {
                    match signal {
                        Signal::Reload => reload(tls.as_deref(), &app),
                        Signal::Stop => break,
                    }
                }
                let _ = stop_tx.send(());
            })
        };
        let upkeep = {
            let mirror = app.mirror.clone();
            let docs_index = config.server.data_dir.join("docs-index");
            let walking = mirror.index_walking();
            tokio::spawn(async move {
                tokio::join!(
                    mirror.keep_index(),
                    mirror.clone().keep_advisory_census(give_back_freed_memory),
                    mirror.clone().keep_advisories_fetched(),
                    mirror.clone().keep_docs_backfilled(),
                    mirror.clone().keep_docs_searchable(docs_index),
                    mirror.clone().keep_docs_swept(),
                    async {
                        if walking {
                            mirror.index_built().await;
                            give_back_freed_memory();
                        }
                    }
                );
            })
        };
        ready();
        let draining = app.mirror.clone();
        let stopped = async move {
            let _ = stop_rx.await;
            draining.set_draining();
            stopping();
        };
        let grace = config.server.shutdown_grace;
        crate::http::listener::run(
            listener,
            tls.as_ref().map(|t| t.config.clone()),
            app.clone(),
            stopped,
            grace,
        )
        .await;
        control.abort();
        // Downloads a watch pass started run on in the mirror's tasks, and
        // are drained with the rest.
        upkeep.abort();
        for task in [watcher, passes].into_iter().flatten() {
            task.abort();
        }
        // Downloads whose clients have gone still get their time to finish.
        // The index snapshot is written only when nothing can be stored
        // after it; otherwise the next start walks the cache.
        if !app.mirror.drain(grace).await {
            tracing::warn!("downloads still running after the grace period; exiting anyway, without an index snapshot");
        } else if let Err(e) = app.mirror.save_index().await {
            tracing::warn!(
                error = format!("{e:#}"),
                "could not write the archive index snapshot; the next start walks the cache"
            );
        }
        app.mirror.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// Sets up and runs a daemon on `listener` until `shutdown` completes: the
/// shape of `tfmirror serve` without process signals.
pub async fn run(
    config: Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> anyhow::Result<()> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        shutdown.await;
        let _ = tx.send(Signal::Stop).await;
    });
    Daemon::new(config, listener)
        .await?
        .run(rx, || {}, || {})
        .await
}

/// Logs where the mirror serves and the CLI configuration that uses it.
fn announce(
    config: &Config,
    listener: &TcpListener,
    tls: Option<&ServerTls>,
    app: &App,
) -> anyhow::Result<()> {
    let addr = listener
        .local_addr()
        .context("reading the listening address")?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    let public = public_authority(config, addr);
    tracing::info!(
        %addr,
        cache = %app.mirror.store().location(),
        "tfmirror {} serving the provider network mirror protocol at {scheme}://{public}/",
        env!("CARGO_PKG_VERSION")
    );
    let mut hint = format!(
        "Point Terraform or OpenTofu at this mirror with this CLI configuration \
         (~/.terraformrc, or the file named by TF_CLI_CONFIG_FILE):\n\n\
         provider_installation {{\n  network_mirror {{\n    url = \"{scheme}://{public}/\"\n  }}\n}}\n"
    );
    if let Some(generated) = tls.and_then(|t| t.generated.as_ref()) {
        let _ = write!(
            hint,
            "\nThe certificate was generated by tfmirror; make clients trust its authority:\n\n\
             export SSL_CERT_FILE={}\n",
            generated.ca_cert.display()
        );
    }
    tracing::info!("\n{hint}");
    Ok(())
}

/// Reloads the certificate and the token file (what cannot be read is
/// kept as it is), and reconciles the archive index with the store.
fn reload(tls: Option<&ServerTls>, app: &App) {
    app.mirror.reconcile_index("signal");
    if let Some(tls) = tls {
        match tls.reload() {
            Ok(()) => {
                tracing::info!("reloaded the TLS certificate");
                app.mirror.metrics().set_tls_expiry(tls.not_after());
            }
            Err(e) => {
                tracing::error!(error = %format!("{e:#}"), "kept the current TLS certificate: the new one is not usable");
            }
        }
    } else {
        tracing::info!("SIGHUP: TLS is off, no certificate to reload");
    }
    // The issuers' keys files are re-read within; each says how it went.
    match app.auth.reload() {
        Ok(n) if app.auth.has_token_file() => {
            tracing::info!(tokens = n, "reloaded auth.token_file");
        }
        Ok(_) => {}
        Err(e) => {
            tracing::error!(error = %format!("{e:#}"), "kept the tokens in force: auth.token_file could not be read");
        }
    }
}

/// Re-reads the token file whenever it changes. A fixed interval is right
/// here: the check is one `stat` of the file, and two seconds bounds how
/// long a token written by an operator's tooling waits to take effect
/// without depending on file-change notification, which does not see
/// files replaced on some mounts.
async fn watch_token_file(app: Arc<App>) {
    loop {
        tokio::time::sleep(Duration::from_secs(2)).await;
        let app = app.clone();
        let _ = tokio::task::spawn_blocking(move || app.auth.reload_if_changed()).await;
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
        .map_or("localhost", String::as_str);
    format!("{host}:{}", addr.port())
}

/// Hands back to the system the memory that start-up needed only while it
/// read the cache and built its index (after the start, and again after a
/// walk of the store run while serving), and that an advisory count needed
/// while it read every build record: at 100,000 archives, tens of MiB
/// freed on the threads that walked the cache, which the C library's
/// allocator otherwise keeps in those threads' arenas for good (RSS at
/// rest 74 MiB instead of 44 in `benches/scale/run`'s cache).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn give_back_freed_memory() {
    // SAFETY: malloc_trim takes no pointers and only releases memory the
    // allocator holds free; glibc documents it as safe to call at any time
    // from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Elsewhere the allocator gives freed memory back on its own, or keeps
/// nothing worth asking for.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn give_back_freed_memory() {}
