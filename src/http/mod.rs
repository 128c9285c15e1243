//! The HTTP side: a request arrives at the [`listener`] (TLS, HTTP/1.1 and
//! HTTP/2, connection limits, graceful shutdown), is answered by
//! [`dispatch`] (request ID, access control, routing through [`routes`],
//! the mirror call, the one place where errors become answers), in a
//! [`body::Body`], built by `respond`; each route declares who may use it
//! ([`routes::Access`]) and the dispatcher checks that once; the pages for
//! people are [`crate::web`]'s, reached through the dispatcher like any
//! route; [`streams`] runs each HTTP/2 stream; [`crate::auth`] holds the tokens
//! and signs archive links and sessions; [`tls`] loads or makes the
//! certificate.

pub mod audit;
pub mod body;
mod date;
pub mod dispatch;
mod drain;
pub mod listener;
pub mod oci;
pub mod releases;
mod respond;
pub mod routes;
pub mod sendfile;
pub mod streams;
pub mod tls;

use std::sync::Arc;

use crate::mirror::Mirror;

pub use audit::AUDIT_LOG;
pub use body::Body;

/// What the HTTP side serves: the mirror and the access control in front
/// of it.
pub struct App {
    /// The mirror.
    pub mirror: Arc<Mirror>,
    /// Who may use it.
    pub auth: crate::auth::Auth,
    /// The watch (`[watch]`), when it lists anything: its passes, for the
    /// status page.
    pub watch: Option<Arc<crate::site::watch::Watch>>,
}
