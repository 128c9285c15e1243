//! Everything tfmirror checks before it trusts a package: the OpenPGP
//! signature over the origin's SHA256SUMS, the SHA256SUMS entries
//! themselves, and Terraform's `h1:`/`zh:` package hashes.

pub mod hash;
pub mod signature;
pub mod sums;
pub mod trust;
pub mod vouched;

pub use hash::{h1_of_zip, hex, sha256_of_file, sha256_of_reader, zh, Sha256, H1};
pub use signature::{Keyring, SignatureError, Signed};
pub use sums::{Sha256Sums, SumsError};
pub use trust::{TrustPolicy, TrustRule, Unsigned};
pub use vouched::{Verification, Vouched, KEYLESS_HOST};
