//! The listener: accepts connections, performs the TLS handshake when TLS is
//! on, serves HTTP/1.1 and HTTP/2 with hyper, and shuts down gracefully,
//! letting requests in flight finish.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;
use tokio_rustls::TlsAcceptor;

use super::drain::Drain;
use super::sendfile::{Conn, SendQueue};
use super::streams::Streams;
use super::{dispatch, App};

/// The most bytes of request headers read (HTTP/1.1 read buffer, HTTP/2
/// header list); more answers 431.
pub const MAX_HEADER_BYTES: usize = 16 * 1024;
/// Serves `app` on `listener` until `shutdown` completes, then waits for
/// in-flight connections, at most `grace`.
pub async fn run(
    listener: TcpListener,
    tls: Option<Arc<rustls::ServerConfig>>,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
    grace: Duration,
) {
    let acceptor = tls.map(TlsAcceptor::from);
    // Plain connections send stored archives with sendfile(2): hyper must
    // queue body parts, never copy them (see `sendfile`).
    let plain = acceptor.is_none();
    let drain = Drain::new();
    let settings = &app.mirror.config().server;
    let header_timeout = settings.header_timeout;
    let max_connections = settings.max_connections;
    let slots = Arc::new(Semaphore::new(max_connections));
    let mut builder = auto::Builder::new(Streams);
    builder
        .http1()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(header_timeout)
        .max_buf_size(MAX_HEADER_BYTES);
    if plain {
        builder.http1().writev(true);
    }
    builder
        .http2()
        .timer(hyper_util::rt::TokioTimer::new())
        .max_header_list_size(u32::try_from(MAX_HEADER_BYTES).expect("a small constant"));
    let builder = Arc::new(builder);
    let mut warned_full: Option<Instant> = None;
    tokio::pin!(shutdown);
    loop {
        // A slot first: at the limit, new connections wait in the kernel's
        // listen queue rather than being accepted and starved.
        let slot = if let Ok(slot) = slots.clone().try_acquire_owned() {
            slot
        } else {
            if warned_full.is_none_or(|t| t.elapsed() >= Duration::from_secs(60)) {
                tracing::warn!(
                    max_connections,
                    "server.max_connections reached; new connections wait until one closes"
                );
                warned_full = Some(Instant::now());
            }
            tokio::select! {
                slot = slots.clone().acquire_owned() => slot.expect("never closed"),
                () = &mut shutdown => break,
            }
        };
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(conn) => conn,
                Err(e) => {
                    // Usually too many open files; back off instead of spinning.
                    tracing::warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let client = dispatch::Peer::new(peer.ip());
        let builder = builder.clone();
        let drain = drain.clone();
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let result = if let Some(acceptor) = acceptor {
                let tls = match tokio::time::timeout(header_timeout, acceptor.accept(stream)).await
                {
                    Ok(Ok(tls)) => tls,
                    Ok(Err(e)) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%peer, "TLS handshake timed out");
                        return;
                    }
                };
                let io = TokioIo::new(tls);
                let service = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                    dispatch::handle(app.clone(), client, req)
                });
                let conn = builder.serve_connection(io, service).into_owned();
                drain.watch(conn, auto::Connection::graceful_shutdown).await
            } else {
                // Behind a proxy, HTTP/1 (HTTP/2 needs prior knowledge
                // here), with the queue for `sendfile`.
                let queue = SendQueue::default();
                let conn = Conn::new(stream, queue.clone());
                let service = service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
                    req.extensions_mut().insert(queue.clone());
                    dispatch::handle(app.clone(), client, req)
                });
                let conn = builder.serve_connection(TokioIo::new(conn), service);
                drain
                    .watch(conn.into_owned(), auto::Connection::graceful_shutdown)
                    .await
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended with an error");
            }
        });
    }
    drop(listener);
    tracing::info!("shutting down: waiting for requests in flight");
    if tokio::time::timeout(grace, drain.shutdown()).await.is_err() {
        tracing::warn!("requests still in flight after the grace period; exiting anyway");
    }
}
