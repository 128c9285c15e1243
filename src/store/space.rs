//! Free space on the file system that holds the cache's staging directory,
//! against the reserve `cache.min_free_space` keeps: every write that
//! grows the store (archives, module packages, release files, by the
//! daemon, `sync` or `import`) is refused before it starts when its size
//! is known and would eat into it, and checked as it streams when not.

use std::io;
use std::path::{Path, PathBuf};

/// The bytes an unprivileged writer may still use on the file system of
/// `dir`.
pub fn free_space(dir: &Path) -> io::Result<u64> {
    let stat = rustix::fs::statvfs(dir).map_err(io::Error::from)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// Why something does not fit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NoRoom {
    /// What needs the space, in bytes (0 when unknown).
    pub size: u64,
    /// What is free.
    pub free: u64,
    /// The reserve kept.
    pub reserve: u64,
}

impl NoRoom {
    /// The sizes for people.
    pub fn describe(&self) -> String {
        let human = |b: u64| bytesize::ByteSize(b).display().iec().to_string();
        format!(
            "{} free, keeping cache.min_free_space = {}",
            human(self.free),
            human(self.reserve)
        )
    }

    /// `size`, for people.
    pub fn size(&self) -> String {
        bytesize::ByteSize(self.size).display().iec().to_string()
    }
}

/// The reserve kept on the file system of a directory (the cache's, where
/// everything is staged before it is kept).
#[derive(Debug, Clone)]
pub struct Room {
    dir: PathBuf,
    reserve: u64,
}

impl Room {
    /// The reserve `reserve` on the file system of `dir`.
    pub fn new(dir: &Path, reserve: u64) -> Room {
        Room {
            dir: dir.to_path_buf(),
            reserve,
        }
    }

    /// `cache.min_free_space` on the file system of `cache.dir`.
    pub fn of(config: &crate::config::Config) -> Room {
        Room::new(&config.cache.dir, config.cache.min_free_space.as_u64())
    }

    /// Whether `size` more bytes fit while keeping the reserve free
    /// (always, when the free space cannot be read: the write itself then
    /// says what is wrong).
    pub fn fits(&self, size: u64) -> Result<(), NoRoom> {
        match free_space(&self.dir) {
            Ok(free) if self.reserve > 0 || size > 0 => fits(size, free, self.reserve),
            _ => Ok(()),
        }
    }
}

/// Whether `size` bytes fit in `free` while keeping `reserve` free.
pub fn fits(size: u64, free: u64, reserve: u64) -> Result<(), NoRoom> {
    if size
        .checked_add(reserve)
        .is_some_and(|needed| needed <= free)
    {
        return Ok(());
    }
    Err(NoRoom {
        size,
        free,
        reserve,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_would_eat_into_the_reserve_does_not_fit() {
        assert!(fits(10, 100, 90).is_ok());
        let no = fits(11, 100, 90).unwrap_err();
        assert_eq!((no.size, no.free, no.reserve), (11, 100, 90));
        assert!(fits(0, 100, 0).is_ok());
        assert!(fits(0, 5, 6).is_err());
        assert!(fits(u64::MAX, u64::MAX, 1).is_err());
        assert_eq!(
            fits(3 << 30, 1 << 30, 256 << 20).unwrap_err().describe(),
            "1.0 GiB free, keeping cache.min_free_space = 256.0 MiB"
        );
    }

    #[test]
    fn the_free_space_of_a_real_directory_is_read() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_space(dir.path()).unwrap() > 0);
        assert!(free_space(&dir.path().join("missing")).is_err());
    }
}
