//! The things whose bytes make the cache's size, named as one type: an
//! archive, a module version's package, a CLI release file. The archive
//! index counts them, eviction removes them, the journal
//! ([`super::journal`]) says which changed, and [`super::Store::held`]
//! says whether the store holds one now.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::address::{ArchiveKey, Module, ReleaseFile, Version};

/// An archive, a module package or a release file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Item {
    /// A provider's archive for one version and platform.
    Archive(ArchiveKey),
    /// A module version's package (its pin is a record, not an item).
    Module(Module, Version),
    /// A file of a CLI release (its release's record is not an item).
    Release(ReleaseFile),
}

impl Item {
    /// The item's kind, as metrics and logs name it: `archive`, `module`
    /// or `release`.
    pub fn kind(&self) -> &'static str {
        match self {
            Item::Archive(_) => "archive",
            Item::Module(..) => "module",
            Item::Release(_) => "release",
        }
    }
}

impl fmt::Display for Item {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Item::Archive(key) => write!(f, "archive {key}"),
            Item::Module(module, version) => write!(f, "module package {module} {version}"),
            Item::Release(file) => write!(f, "release file {file}"),
        }
    }
}

/// What the store says of an item it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeldItem {
    /// Its size in bytes.
    pub size: u64,
    /// Its last use as the store records it, in seconds since the Unix
    /// epoch (an archive's last recorded use on disk; else when it was
    /// written).
    pub last_used: u64,
}

/// A record kept below a folder, as a listing with sizes finds it
/// ([`super::Store::list_documents_aged`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptDocument {
    /// Its path below the folder listed.
    pub path: Vec<String>,
    /// Its size in bytes.
    pub size: u64,
    /// When it was last written, by the store's clock.
    pub written: std::time::SystemTime,
}
