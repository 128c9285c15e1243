//! Atomic file writes: a temporary file in the cache's `tmp/` directory,
//! written, flushed to disk, then renamed over its destination, and the
//! destination's directory flushed too. A reader therefore sees either the
//! old file or the whole new one, and a crash leaves at most a temporary file
//! that the next start sweeps away.

use std::io::{self, Write};
use std::path::Path;

use tempfile::{NamedTempFile, TempPath};

/// Creates a new temporary file in `tmp_dir`, removed again when dropped
/// unless it is persisted.
pub fn temp_file(tmp_dir: &Path) -> io::Result<NamedTempFile> {
    tempfile::Builder::new()
        .prefix("part-")
        .tempfile_in(tmp_dir)
}

/// Moves a finished temporary file to `dest`, creating `dest`'s directory.
/// The file's contents must already have been flushed to disk.
pub fn persist(temp: TempPath, dest: &Path) -> io::Result<()> {
    let dir = dest.parent().expect("cache paths have a parent");
    std::fs::create_dir_all(dir)?;
    temp.persist(dest).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Writes `bytes` to `dest` atomically.
pub fn write(tmp_dir: &Path, dest: &Path, bytes: &[u8]) -> io::Result<()> {
    let mut file = temp_file(tmp_dir)?;
    file.write_all(bytes)?;
    file.as_file().sync_all()?;
    persist(file.into_temp_path(), dest)
}

/// Flushes a directory's entries (the rename) to disk.
fn sync_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)?.sync_all()?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_whole_files_and_leave_no_temporaries() {
        let root = tempfile::tempdir().unwrap();
        let tmp = root.path().join("tmp");
        std::fs::create_dir(&tmp).unwrap();
        let dest = root.path().join("a/b/file.json");
        write(&tmp, &dest, b"first").unwrap();
        write(&tmp, &dest, b"second").unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"second");
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
        // A temporary file that is dropped unpersisted disappears.
        let t = temp_file(&tmp).unwrap();
        drop(t);
        assert_eq!(std::fs::read_dir(&tmp).unwrap().count(), 0);
    }
}
