//! Where a configuration's files are read from: the disk (a site's own
//! configuration) or a module package held in memory (a registry
//! module's), behind one trait so that both are read by the same rules.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Component, Path, PathBuf};

use anyhow::{anyhow, bail, Context};

/// The files a configuration is read from.
pub trait ConfigFs {
    /// The names of the files (not directories) directly in `dir`, sorted.
    fn files(&self, dir: &Path) -> anyhow::Result<Vec<String>>;
    /// A file's text.
    fn read(&self, path: &Path) -> anyhow::Result<String>;
    /// Where a local module call from `dir` leads (`relative` as written,
    /// `./net`, `../shared`): the directory, or an error when it is not one.
    fn join(&self, dir: &Path, relative: &str) -> anyhow::Result<PathBuf>;
    /// The same directory however it was reached, to read each once.
    fn identity(&self, dir: &Path) -> anyhow::Result<PathBuf>;
}

/// The local disk: a configuration as a site keeps it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Disk;

impl ConfigFs for Disk {
    fn files(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        let mut names = Vec::new();
        let entries = std::fs::read_dir(dir)
            .with_context(|| format!("reading the module directory {}", dir.display()))?;
        for entry in entries {
            let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
            if !entry.path().is_dir() {
                names.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        names.sort();
        Ok(names)
    }

    fn read(&self, path: &Path) -> anyhow::Result<String> {
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
    }

    fn join(&self, dir: &Path, relative: &str) -> anyhow::Result<PathBuf> {
        // A configuration on disk may call any directory, as the clients
        // allow for the root module's own calls.
        let callee = dir.join(relative);
        if !callee.is_dir() {
            bail!(
                "the local module {relative} is not a directory ({})",
                callee.display()
            );
        }
        Ok(callee)
    }

    fn identity(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        dir.canonicalize()
            .with_context(|| format!("reading the module directory {}", dir.display()))
    }
}

/// The configuration files of a module package (`tar.gz`), in memory, by
/// their normalized path inside the package.
#[derive(Debug, Clone, Default)]
pub struct Package {
    files: BTreeMap<PathBuf, String>,
    dirs: BTreeSet<PathBuf>,
    /// README files, when read for a page ([`Package::read_with_readmes`]):
    /// the first [`README_MAX`] bytes of each, and whether there was more.
    readmes: BTreeMap<PathBuf, (String, bool)>,
}

/// The most of one README a page reads.
pub const README_MAX: u64 = 1 << 20;

/// Whether a file name is a README's (`README.md`, `readme.markdown`,
/// `README`).
fn is_readme(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    ["readme.md", "readme.markdown", "readme"].contains(&lower.as_str())
}

/// Whether a file name may be a configuration file of either client.
fn may_be_configuration(name: &str) -> bool {
    [".tf", ".tf.json", ".tofu", ".tofu.json"]
        .iter()
        .any(|e| name.ends_with(e))
}

/// `path` with `.` and `..` resolved inside the package; `None` when it
/// leads out of it.
fn normalized(path: &Path) -> Option<PathBuf> {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::Normal(p) => out.push(p),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() {
                    return None;
                }
            }
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(out)
}

impl Package {
    /// Reads the configuration files of a packaged module. A file that is
    /// not UTF-8 is an error naming it, as the clients refuse it too.
    pub fn read(package: impl Read) -> std::io::Result<Package> {
        Self::read_keeping(package, false)
    }

    /// Like [`Package::read`], also keeping the first [`README_MAX`] bytes
    /// of each README (read as UTF-8, lossily), for the module's page.
    pub fn read_with_readmes(package: impl Read) -> std::io::Result<Package> {
        Self::read_keeping(package, true)
    }

    /// A README the package holds at `path`: its text, and whether it was
    /// longer than what was kept.
    pub fn readme(&self, path: &Path) -> Option<(&str, bool)> {
        self.readmes.get(path).map(|(t, more)| (t.as_str(), *more))
    }

    /// The directories directly below `dir`.
    pub fn subdirs(&self, dir: &Path) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .filter(|d| d.parent() == Some(dir) && d.as_path() != dir)
            .cloned()
            .collect()
    }

    fn read_keeping(package: impl Read, readmes: bool) -> std::io::Result<Package> {
        let mut out = Package::default();
        out.dirs.insert(PathBuf::new());
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(package));
        for entry in archive.entries()? {
            let mut entry = entry?;
            if entry.header().entry_type() != tar::EntryType::Regular {
                continue;
            }
            let Some(path) = normalized(&entry.path()?) else {
                continue;
            };
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            for dir in path.ancestors().skip(1) {
                out.dirs.insert(dir.to_path_buf());
            }
            if readmes && name.as_deref().is_some_and(is_readme) {
                let mut bytes = Vec::new();
                (&mut entry).take(README_MAX + 1).read_to_end(&mut bytes)?;
                let more = bytes.len() as u64 > README_MAX;
                bytes.truncate(usize::try_from(README_MAX).unwrap_or(usize::MAX));
                let text = String::from_utf8_lossy(&bytes).into_owned();
                out.readmes.insert(path, (text, more));
                continue;
            }
            if !name.as_deref().is_some_and(may_be_configuration) {
                continue;
            }
            let mut text = String::new();
            entry.read_to_string(&mut text).map_err(|e| {
                std::io::Error::new(
                    e.kind(),
                    format!("{} is not UTF-8 text: {e}", path.display()),
                )
            })?;
            out.files.insert(path, text);
        }
        Ok(out)
    }

    /// The configuration files among `files` (path → bytes, as a form
    /// sent them), each path normalized inside the package (one that
    /// leads out of it is left out); a configuration file that is not
    /// UTF-8 is an error naming it.
    pub fn from_files(files: &[(String, Vec<u8>)]) -> anyhow::Result<Package> {
        let mut out = Package::default();
        out.dirs.insert(PathBuf::new());
        for (path, bytes) in files {
            let Some(path) = normalized(Path::new(path)) else {
                continue;
            };
            for dir in path.ancestors().skip(1) {
                out.dirs.insert(dir.to_path_buf());
            }
            let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
            if name.as_deref().is_some_and(may_be_configuration) {
                let text = String::from_utf8(bytes.clone())
                    .map_err(|_| anyhow!("{} is not UTF-8 text", path.display()))?;
                out.files.insert(path, text);
            }
        }
        Ok(out)
    }

    /// A package made of `files` (path → text), for tests.
    pub fn of(files: &[(&str, &str)]) -> Package {
        let mut out = Package::default();
        out.dirs.insert(PathBuf::new());
        for (path, text) in files {
            let path = PathBuf::from(path);
            for dir in path.ancestors().skip(1) {
                out.dirs.insert(dir.to_path_buf());
            }
            out.files.insert(path, (*text).to_owned());
        }
        out
    }
}

impl ConfigFs for Package {
    fn files(&self, dir: &Path) -> anyhow::Result<Vec<String>> {
        if !self.dirs.contains(dir) {
            bail!("the package has no directory {}", dir.display());
        }
        Ok(self
            .files
            .keys()
            .filter(|p| p.parent() == Some(dir))
            .filter_map(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .collect())
    }

    fn read(&self, path: &Path) -> anyhow::Result<String> {
        self.files
            .get(path)
            .cloned()
            .ok_or_else(|| anyhow!("the package has no file {}", path.display()))
    }

    fn join(&self, dir: &Path, relative: &str) -> anyhow::Result<PathBuf> {
        let callee = normalized(&dir.join(relative)).ok_or_else(|| {
            anyhow!("the local module {relative} leads out of the module package")
        })?;
        if !self.dirs.contains(&callee) {
            bail!("the local module {relative} is not a directory of the package");
        }
        Ok(callee)
    }

    fn identity(&self, dir: &Path) -> anyhow::Result<PathBuf> {
        normalized(dir).ok_or_else(|| anyhow!("{} leads out of the module package", dir.display()))
    }
}
