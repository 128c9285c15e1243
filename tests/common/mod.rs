//! Test support, by job: a certificate authority made at test time
//! (`ca`), OpenPGP keys (`keys`), provider archives and fixtures
//! (`archives`), a fake origin registry over real TLS (`origin`), a running
//! tfmirror and its set-up (`running`), a small HTTPS client (`client`),
//! waiting for conditions (`wait`), the binary run as a process
//! (`daemon`), git repositories served by the origin (`git`), the
//! registry shapes the origin answers in (`shapes`), an S3-compatible
//! server (`seaweed`) and a gate that makes it refuse listings (`s3_gate`), CLI releases as HashiCorp publishes them (`releases`), the Terraform CLI run on its own (`terraform`) and in a working directory (`workspace`), and
//! Podman with tfmirror's image (`podman`), chromium driven through
//! `WebDriver` (`browser`), the mirror the pages' tests browse (`pages`), and Go's own readers as oracles (`go_reader`), OpenID providers: npm's real one (`oidc`) and one that misbehaves on request (`fake_issuer`), with a mirror whose people sign in through it (`signin_world`). Each test binary uses some of it.

#![allow(dead_code, unused_imports)]

mod archives;
pub mod browser;
mod ca;
mod client;
pub mod daemon;
pub mod docs;
pub mod fake_issuer;
mod git;
pub mod go;
pub mod go_reader;
mod keys;
pub mod oci;
pub mod oidc;
mod origin;
pub mod pages;
pub mod podman;
pub mod releases;
mod running;
pub mod s3_gate;
pub mod seaweed;
mod shapes;
pub mod signin_world;
pub mod terraform;
pub mod token_gateway;
mod wait;
pub mod workspace;

pub use archives::*;
pub use ca::*;
pub use client::*;
pub use git::*;
pub use keys::*;
pub use origin::*;
pub use running::*;
pub use shapes::*;
pub use wait::*;
