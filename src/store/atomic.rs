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

/// The directory `path` is in: its parent, or `.` for a bare file name
/// (`--output rel.json`).
pub fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Moves a finished temporary file to `dest`, creating `dest`'s directory.
/// The file's contents must already have been flushed to disk.
pub fn persist(temp: TempPath, dest: &Path) -> io::Result<()> {
    let dir = dir_of(dest);
    std::fs::create_dir_all(dir)?;
    temp.persist(dest).map_err(|e| e.error)?;
    sync_dir(dir)
}

/// Why [`copy_hashed`] failed.
#[derive(Debug, thiserror::Error)]
pub enum CopyError {
    /// Reading the source failed.
    #[error("reading failed: {0}")]
    Read(io::Error),
    /// Writing the temporary file failed.
    #[error("cache: {0}")]
    Write(io::Error),
    /// The next bytes would eat into `cache.min_free_space`.
    #[error(
        "after {}, the next bytes do not fit in the cache's free space ({}); nothing was stored",
        bytesize::ByteSize(*.written).display().iec(),
        .no.describe()
    )]
    NoRoom {
        /// Why.
        no: super::space::NoRoom,
        /// What was copied before.
        written: u64,
    },
}

/// Copies `input` into a new temporary file in `tmp_dir` while hashing it,
/// and flushes the file to disk. Returns the file and its SHA-256 (hex).
pub fn copy_hashed(
    input: &mut impl io::Read,
    tmp_dir: &Path,
) -> Result<(TempPath, String), CopyError> {
    let room = super::space::Room::new(tmp_dir, 0);
    copy_hashed_into(input, temp_file(tmp_dir).map_err(CopyError::Write)?, &room)
}

/// Copies `input` into `temp` (a new, empty temporary file) as
/// [`copy_hashed`] does, keeping `room`'s reserve free: each piece is
/// checked before it is written.
pub fn copy_hashed_into(
    input: &mut impl io::Read,
    temp: NamedTempFile,
    room: &super::space::Room,
) -> Result<(TempPath, String), CopyError> {
    let (file, temp_path) = temp.into_parts();
    let mut out = io::BufWriter::new(file);
    let mut hasher = crate::verify::Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    let mut written = 0u64;
    loop {
        let n = input.read(&mut buf).map_err(CopyError::Read)?;
        if n == 0 {
            break;
        }
        // Bytes still in the writer's buffer count as not yet written.
        let piece = (n + out.buffer().len()) as u64;
        room.fits(piece)
            .map_err(|no| CopyError::NoRoom { no, written })?;
        written += n as u64;
        hasher.update(&buf[..n]);
        out.write_all(&buf[..n]).map_err(CopyError::Write)?;
    }
    let file = out
        .into_inner()
        .map_err(|e| CopyError::Write(e.into_error()))?;
    file.sync_all().map_err(CopyError::Write)?;
    Ok((temp_path, crate::verify::hex(&hasher.finalize())))
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
