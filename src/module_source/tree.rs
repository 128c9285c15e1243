//! Source trees on disk: unpacking fetched archives safely, and packing a
//! tree into the deterministic `tar.gz` the mirror serves, with the tree's
//! `h1:` hash.
//!
//! Unpacking refuses any entry that would land outside the tree (`..`,
//! absolute paths, links pointing outside, hard links), device files, and
//! archives that unpack to more than the configured cap (decompression
//! bombs), whatever their headers claim: bytes are counted as they are
//! written.
//!
//! Packing walks the tree in bytewise path order and writes every entry with
//! owner 0, group 0, modification time 0, mode `0755` for directories and
//! executables and `0644` for other files, so the same tree always gives
//! the same bytes. `.git` is left out.

use std::fs::{self, File};
use std::io::{self, BufWriter, Read, Write};
use std::path::{Component, Path, PathBuf};

use super::source::ArchiveFormat;
use crate::verify::{hex, sha256_of_file, Sha256, H1};

/// The most entries an archive may hold.
const MAX_ENTRIES: usize = 100_000;

/// Why a tree could not be unpacked or packed.
#[derive(Debug, thiserror::Error)]
pub enum TreeError {
    /// The archive holds something the mirror refuses to unpack.
    #[error("the archive holds {0}; nothing was stored")]
    Refused(String),
    /// The archive unpacks to more than allowed.
    #[error("the archive unpacks to more than {0}; nothing was stored")]
    TooLarge(String),
    /// The archive cannot be read.
    #[error("the archive cannot be read: {0}")]
    Unreadable(String),
    /// Reading or writing local files failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

/// Counts what is unpacked against the cap.
struct Budget {
    left: u64,
    cap: u64,
    entries: usize,
}

impl Budget {
    fn entry(&mut self) -> Result<(), TreeError> {
        self.entries += 1;
        if self.entries > MAX_ENTRIES {
            return Err(TreeError::Refused(format!(
                "more than {MAX_ENTRIES} entries"
            )));
        }
        Ok(())
    }

    /// Copies `from` into a new file at `to`, charging the bytes.
    fn copy(&mut self, from: &mut dyn Read, to: &Path, executable: bool) -> Result<(), TreeError> {
        let mut out = BufWriter::new(File::create(to)?);
        let mut limited = from.take(self.left.saturating_add(1));
        let written = io::copy(&mut limited, &mut out).map_err(unreadable)?;
        if written > self.left {
            return Err(TreeError::TooLarge(human(self.cap)));
        }
        self.left -= written;
        out.into_inner().map_err(io::IntoInnerError::into_error)?;
        set_executable(to, executable)?;
        Ok(())
    }
}

#[allow(clippy::needless_pass_by_value)] // the shape `map_err` calls
fn unreadable(e: io::Error) -> TreeError {
    TreeError::Unreadable(e.to_string())
}

fn human(bytes: u64) -> String {
    bytesize::ByteSize(bytes).display().iec().to_string()
}

/// Unpacks `archive` (read from its start) into the empty directory
/// `into`, writing at most `max_unpacked` bytes of file content.
pub fn unpack(
    archive: File,
    format: ArchiveFormat,
    into: &Path,
    max_unpacked: u64,
) -> Result<(), TreeError> {
    let mut budget = Budget {
        left: max_unpacked,
        cap: max_unpacked,
        entries: 0,
    };
    if format == ArchiveFormat::Zip {
        return unpack_zip(archive, into, &mut budget);
    }
    let file = io::BufReader::new(archive);
    match format {
        ArchiveFormat::Zip => unreachable!("handled above"),
        ArchiveFormat::Tar => unpack_tar(file, into, &mut budget),
        ArchiveFormat::TarGz => {
            unpack_tar(flate2::read::MultiGzDecoder::new(file), into, &mut budget)
        }
        ArchiveFormat::TarXz => unpack_tar(liblzma::read::XzDecoder::new(file), into, &mut budget),
        ArchiveFormat::TarBz2 => unpack_tar(bzip2::read::BzDecoder::new(file), into, &mut budget),
    }
}

/// The relative path of an entry name, refused when it would leave the
/// tree. `None` for the tree's root itself.
fn inside(name: &Path) -> Result<Option<PathBuf>, TreeError> {
    let mut out = PathBuf::new();
    for component in name.components() {
        match component {
            Component::Normal(part) => out.push(part),
            Component::CurDir => {}
            Component::ParentDir => {
                return Err(TreeError::Refused(format!(
                    "an entry that climbs out of the tree ({})",
                    name.display()
                )))
            }
            Component::RootDir | Component::Prefix(_) => {
                return Err(TreeError::Refused(format!(
                    "an entry with an absolute path ({})",
                    name.display()
                )))
            }
        }
    }
    Ok((!out.as_os_str().is_empty()).then_some(out))
}

/// Whether a symbolic link at `link` (relative to the tree) pointing at
/// `target` stays inside the tree.
fn link_stays_inside(link: &Path, target: &Path) -> bool {
    if target.is_absolute() {
        return false;
    }
    let mut depth: usize = link.components().count().saturating_sub(1);
    for component in target.components() {
        match component {
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::ParentDir => match depth.checked_sub(1) {
                Some(d) => depth = d,
                None => return false,
            },
            Component::RootDir | Component::Prefix(_) => return false,
        }
    }
    true
}

/// Makes the parent directories of `path` inside `root`, refusing to go
/// through a symbolic link.
fn make_parents(root: &Path, relative: &Path) -> Result<(), TreeError> {
    let mut at = root.to_path_buf();
    if let Some(parent) = relative.parent() {
        for part in parent.components() {
            at.push(part);
            match fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => {
                    return Err(TreeError::Refused(format!(
                        "an entry written through a link ({})",
                        relative.display()
                    )))
                }
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(TreeError::Refused(format!(
                        "an entry beneath a file ({})",
                        relative.display()
                    )))
                }
                Err(_) => fs::create_dir(&at)?,
            }
        }
    }
    Ok(())
}

/// Clears the way for a new entry at `path`: a later entry of the same
/// name replaces an earlier file or link (as tar does), never a directory.
fn replace(path: &Path) -> Result<(), TreeError> {
    match fs::symlink_metadata(path) {
        Ok(m) if m.is_dir() => Err(TreeError::Refused(format!(
            "a file entry over a directory ({})",
            path.display()
        ))),
        Ok(_) => Ok(fs::remove_file(path)?),
        Err(_) => Ok(()),
    }
}

/// Makes the link `relative` (at `path`) to `target`, refused when it
/// would point outside the tree.
fn place_link(relative: &Path, target: &Path, path: &Path) -> Result<(), TreeError> {
    if !link_stays_inside(relative, target) {
        return Err(TreeError::Refused(format!(
            "a link pointing outside the tree ({} -> {})",
            relative.display(),
            target.display()
        )));
    }
    replace(path)?;
    symlink(target, path)?;
    Ok(())
}

fn unpack_tar(reader: impl Read, into: &Path, budget: &mut Budget) -> Result<(), TreeError> {
    let mut archive = tar::Archive::new(reader);
    for entry in archive.entries().map_err(unreadable)? {
        let mut entry = entry.map_err(unreadable)?;
        budget.entry()?;
        let name = entry.path().map_err(unreadable)?.into_owned();
        let Some(relative) = inside(&name)? else {
            continue;
        };
        let kind = entry.header().entry_type();
        let path = into.join(&relative);
        make_parents(into, &relative)?;
        match kind {
            tar::EntryType::Directory => match fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => {}
                Ok(_) => {
                    return Err(TreeError::Refused(format!(
                        "a directory entry over a file ({})",
                        relative.display()
                    )))
                }
                Err(_) => fs::create_dir(&path)?,
            },
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                replace(&path)?;
                let executable = entry.header().mode().is_ok_and(|m| m & 0o111 != 0);
                budget.copy(&mut entry, &path, executable)?;
            }
            tar::EntryType::Symlink => {
                let target = entry
                    .link_name()
                    .map_err(unreadable)?
                    .ok_or_else(|| TreeError::Unreadable("a link without a target".into()))?
                    .into_owned();
                place_link(&relative, &target, &path)?;
            }
            tar::EntryType::Link => {
                return Err(TreeError::Refused(format!(
                    "a hard link ({})",
                    relative.display()
                )))
            }
            // Extended headers are consumed by the tar reader itself; what
            // remains here (devices, FIFOs) has no place in a module.
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader => {}
            other => {
                return Err(TreeError::Refused(format!(
                    "an entry of type {other:?} ({})",
                    relative.display()
                )))
            }
        }
    }
    Ok(())
}

fn unpack_zip(file: File, into: &Path, budget: &mut Budget) -> Result<(), TreeError> {
    let mut archive = zip::ZipArchive::new(io::BufReader::new(file))
        .map_err(|e| TreeError::Unreadable(e.to_string()))?;
    for i in 0..archive.len() {
        let mut entry = archive
            .by_index(i)
            .map_err(|e| TreeError::Unreadable(e.to_string()))?;
        budget.entry()?;
        let name = PathBuf::from(
            entry
                .name()
                .map_err(|e| TreeError::Unreadable(e.to_string()))?
                .into_owned(),
        );
        let Some(relative) = inside(&name)? else {
            continue;
        };
        let path = into.join(&relative);
        make_parents(into, &relative)?;
        let mode = entry.unix_mode().unwrap_or(0);
        if entry.is_dir() {
            if fs::symlink_metadata(&path).is_err() {
                fs::create_dir(&path)?;
            }
        } else if mode & 0o170_000 == 0o120_000 {
            let mut target = String::new();
            entry
                .by_ref()
                .take(4096)
                .read_to_string(&mut target)
                .map_err(unreadable)?;
            place_link(&relative, &PathBuf::from(target), &path)?;
        } else {
            replace(&path)?;
            budget.copy(&mut entry, &path, mode & 0o111 != 0)?;
        }
    }
    Ok(())
}

#[cfg(unix)]
fn symlink(target: &Path, path: &Path) -> io::Result<()> {
    std::os::unix::fs::symlink(target, path)
}

#[cfg(unix)]
fn set_executable(path: &Path, executable: bool) -> io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(
        path,
        fs::Permissions::from_mode(if executable { 0o755 } else { 0o644 }),
    )
}

#[cfg(unix)]
fn is_executable(meta: &fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

/// One entry of a tree, by its path relative to the root with `/`
/// separators.
enum Entry {
    Dir,
    File { executable: bool },
    Link(PathBuf),
}

/// Every entry below `root` except `.git`, in bytewise path order.
fn walk(root: &Path) -> Result<Vec<(String, Entry)>, TreeError> {
    let mut out = Vec::new();
    let mut pending = vec![PathBuf::new()];
    while let Some(dir) = pending.pop() {
        for item in fs::read_dir(root.join(&dir))? {
            let item = item?;
            let name = item.file_name();
            if dir.as_os_str().is_empty() && name == ".git" {
                continue;
            }
            let relative = dir.join(&name);
            let text = relative
                .to_str()
                .ok_or_else(|| TreeError::Refused("a file name that is not UTF-8".into()))?
                .replace(std::path::MAIN_SEPARATOR, "/");
            if text.contains('\n') {
                return Err(TreeError::Refused("a file name with a newline".into()));
            }
            let meta = fs::symlink_metadata(item.path())?;
            let entry = if meta.file_type().is_symlink() {
                Entry::Link(fs::read_link(item.path())?)
            } else if meta.is_dir() {
                pending.push(relative);
                Entry::Dir
            } else if meta.is_file() {
                Entry::File {
                    executable: is_executable(&meta),
                }
            } else {
                return Err(TreeError::Refused(format!("a special file ({text})")));
            };
            out.push((text, entry));
        }
    }
    out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    Ok(out)
}

/// What packing a tree produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Packed {
    /// The tree's `h1:` hash: every file (links by the content they point
    /// at, as the clients' own hashing reads them) in bytewise path order.
    pub h1: String,
    /// Size of the `tar.gz` in bytes.
    pub size: u64,
    /// SHA-256 of the `tar.gz`, lowercase hex.
    pub sha256: String,
}

/// Writes the tree at `root` (without `.git`) to `out` as a deterministic
/// `tar.gz`, and hashes it. A tree whose files hold more than
/// `max_content` bytes is refused before anything is written.
pub fn pack(root: &Path, out: &mut File, max_content: u64) -> Result<Packed, TreeError> {
    let entries = walk(root)?;
    let mut content: u64 = 0;
    for (name, entry) in &entries {
        if matches!(entry, Entry::File { .. }) {
            content = content.saturating_add(fs::symlink_metadata(root.join(name))?.len());
        }
    }
    if content > max_content {
        return Err(TreeError::TooLarge(human(max_content)));
    }
    let counted = Counting {
        inner: BufWriter::new(out),
        hasher: Sha256::new(),
        size: 0,
    };
    let gz = flate2::GzBuilder::new()
        .mtime(0)
        .operating_system(255)
        .write(counted, flate2::Compression::default());
    let mut builder = tar::Builder::new(gz);
    builder.mode(tar::HeaderMode::Deterministic);
    builder.follow_symlinks(false);
    let mut h1 = H1::default();
    for (name, entry) in &entries {
        let mut header = tar::Header::new_gnu();
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        let path = root.join(name);
        match entry {
            Entry::Dir => {
                header.set_entry_type(tar::EntryType::Directory);
                header.set_mode(0o755);
                header.set_size(0);
                builder.append_data(&mut header, format!("{name}/"), io::empty())?;
            }
            Entry::File { executable } => {
                let mut file = File::open(&path)?;
                let len = file.metadata()?.len();
                header.set_entry_type(tar::EntryType::Regular);
                header.set_mode(if *executable { 0o755 } else { 0o644 });
                header.set_size(len);
                builder.append_data(&mut header, name, &mut file)?;
                h1.add(&sha256_of_file(&path)?, name.as_bytes());
            }
            Entry::Link(target) => {
                header.set_entry_type(tar::EntryType::Symlink);
                header.set_mode(0o777);
                header.set_size(0);
                builder.append_link(&mut header, name, target)?;
                if fs::metadata(&path).is_ok_and(|m| m.is_file()) {
                    h1.add(&sha256_of_file(&path)?, name.as_bytes());
                }
            }
        }
    }
    let gz = builder.into_inner()?;
    let mut counted = gz.finish()?;
    counted.flush()?;
    Ok(Packed {
        h1: h1.finish(),
        size: counted.size,
        sha256: hex(&counted.hasher.finalize()),
    })
}

/// Unpacks a package the mirror made (`tar.gz`) in a scratch directory
/// under `scratch` and packs it again: the tree's hashes, to check a
/// package against its pin.
pub fn repack(package: File, scratch: &Path, max_unpacked: u64) -> Result<Packed, TreeError> {
    let tree = tempfile::tempdir_in(scratch)?;
    unpack(package, ArchiveFormat::TarGz, tree.path(), max_unpacked)?;
    let mut out = tempfile::tempfile_in(scratch)?;
    pack(tree.path(), &mut out, max_unpacked)
}

/// A writer that hashes and counts what passes through it.
struct Counting<W> {
    inner: W,
    hasher: Sha256,
    size: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.size += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests;
