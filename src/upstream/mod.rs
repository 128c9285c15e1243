//! Everything that talks to the outside: the HTTPS client, service
//! discovery, and the provider and module registry protocols.

pub mod client;
pub mod credentials;
pub mod discovery;
pub mod download;
mod error;
pub mod guard;
mod limits;
pub mod module_registry;
pub mod origin;
pub mod post;
pub mod registry;
pub mod wire;

pub use client::{Client, UpstreamError};
pub use credentials::Credentials;
pub use discovery::Discovery;
pub use origin::Origin;
