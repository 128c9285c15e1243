//! What the disk cache says of one item (whether it holds it, its size and
//! last use, read as the walk of the cache reads them), the files of one
//! folder, as the journal lists them, and the priority the walk runs at.

use std::io;
use std::path::Path;
use std::time::SystemTime;

use super::DiskStore;
use crate::store::{HeldItem, Item};

impl DiskStore {
    /// Whether the cache holds `item`: an archive with its `.h1` file (its
    /// last use is the `.h1` file's time, which a use touches), a module
    /// package or a release file (its last use is when it was written).
    pub fn held_item(&self, item: &Item) -> io::Result<Option<HeldItem>> {
        let (file, used_from) = match item {
            Item::Archive(key) => (
                self.archive_path(&key.provider, &key.version, &key.platform),
                Some(self.h1_path(&key.provider, &key.version, &key.platform)),
            ),
            Item::Module(module, version) => (self.module_package_path(module, version), None),
            Item::Release(file) => (self.release_file_path(file), None),
        };
        let Some(meta) = metadata(&file)? else {
            return Ok(None);
        };
        let used = match used_from {
            Some(h1) => match metadata(&h1)? {
                Some(h1) => h1.modified(),
                // An archive without its hash is not held (half a removal).
                None => return Ok(None),
            },
            None => meta.modified(),
        };
        Ok(Some(HeldItem {
            size: meta.len(),
            last_used: used.map_or(0, epoch_secs),
        }))
    }
}

/// The names of the files in `dir` that sort after `after`, in order.
pub(super) fn files_after(dir: &Path, after: &str) -> io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e),
    };
    let mut names = Vec::new();
    for entry in entries {
        let entry = entry?;
        let Ok(name) = entry.file_name().into_string() else {
            continue;
        };
        if name.as_str() > after && entry.file_type()?.is_file() {
            names.push(name);
        }
    }
    names.sort();
    Ok(names)
}

/// Puts the calling thread at the lowest scheduling priority (nice 19):
/// work that may take seconds and must not slow the answers being served.
/// Where the system refuses, it runs as it is.
pub(super) fn lowest_priority() {
    let _ = rustix::process::setpriority_process(Some(rustix::thread::gettid()), 19);
}

fn metadata(path: &Path) -> io::Result<Option<std::fs::Metadata>> {
    match std::fs::metadata(path) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

fn epoch_secs(t: SystemTime) -> u64 {
    t.duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}
