//! `tfmirror serve`: the daemon with process signals and systemd around it.
//! SIGHUP reloads the certificate and the token file; the first SIGTERM or
//! SIGINT drains and stops, the second exits at once (files being written
//! are only ever in the cache's `tmp/` directory, which the next start
//! sweeps).

use anyhow::Context;
use tokio::sync::mpsc;

use crate::config::Config;
use crate::daemon::{Daemon, Signal};

/// Runs the daemon until SIGINT or SIGTERM.
pub fn run(config: Config) -> anyhow::Result<()> {
    super::runtime()?.block_on(async move {
        let listener = listener(&config).await?;
        let daemon = Daemon::new(config, listener).await?;
        let (tx, rx) = mpsc::channel(4);
        forward_signals(tx)?;
        daemon
            .run(
                rx,
                || notify(&[sd_notify::NotifyState::Ready]),
                || notify(&[sd_notify::NotifyState::Stopping]),
            )
            .await
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

/// Turns process signals into [`Signal`]s for the daemon.
fn forward_signals(tx: mpsc::Sender<Signal>) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut hup = signal(SignalKind::hangup()).context("installing signal handlers")?;
    let mut term = signal(SignalKind::terminate()).context("installing signal handlers")?;
    let mut int = signal(SignalKind::interrupt()).context("installing signal handlers")?;
    tokio::spawn(async move {
        let mut stopping = false;
        loop {
            tokio::select! {
                _ = hup.recv() => {
                    let mut states = vec![sd_notify::NotifyState::Reloading];
                    if let Ok(now) = sd_notify::NotifyState::monotonic_usec_now() {
                        states.push(now);
                    }
                    notify(&states);
                    let _ = tx.send(Signal::Reload).await;
                    notify(&[sd_notify::NotifyState::Ready]);
                    continue;
                }
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
            if stopping {
                tracing::warn!("second signal: exiting now");
                std::process::exit(1);
            }
            stopping = true;
            tracing::info!("shutdown requested; a second signal exits at once");
            let _ = tx.send(Signal::Stop).await;
        }
    });
    Ok(())
}
