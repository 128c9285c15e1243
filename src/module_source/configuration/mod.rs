//! A configuration read as Terraform or OpenTofu reads it for `init`:
//! the root module's directory and the local modules its `module` blocks
//! call (`./…`, `../…`, at any depth), each directory's files picked by
//! the client's rules ([`files`]), each module assembled with its
//! override files ([`module`]); what the modules require of the
//! registries, with unqualified sources on the client's default registry;
//! the module sources the client fetches itself, which a mirror cannot
//! serve; the `required_version` constraints; and the root directory's
//! lock file. Directories nobody calls (`examples/`, `test/`) are not
//! read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::address::{Module, Product, Provider};

pub mod files;
pub mod fs;
pub mod interface;
pub mod module;
pub mod parts;

use fs::{ConfigFs, Disk, Package};

/// Why the client was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChosenBy {
    /// `--client` (or `client =`) named it.
    Given,
    /// The configuration holds `.tofu` files: OpenTofu.
    TofuFiles,
    /// Nothing said otherwise: Terraform.
    Default,
}

/// The client whose rules read a configuration, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientRules {
    /// The client.
    pub client: Product,
    /// Why it was chosen.
    pub chosen_by: ChosenBy,
}

impl std::fmt::Display for ClientRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.chosen_by {
            ChosenBy::Given => "as given",
            ChosenBy::TofuFiles => "the configuration holds .tofu files",
            ChosenBy::Default => "the default; --client opentofu reads it as OpenTofu does",
        };
        write!(
            f,
            "{}'s rules ({why}; unqualified sources on {})",
            self.client.title(),
            self.client.default_registry()
        )
    }
}

/// A module source the client fetches itself, not through a registry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unserved {
    /// The source as written.
    pub source: String,
    /// Where the call is written: `file:line`.
    pub at: String,
    /// What kind of source it is, for people (`a git repository`).
    pub kind: &'static str,
}

/// What the calls of one registry module ask of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Called {
    /// The constraints of the calls' `version`.
    pub constraints: Vec<String>,
    /// The directories of its package the calls use (`//subdir`; `""`
    /// for the package's root).
    pub subdirs: BTreeSet<String>,
}

/// A `required_version` constraint and the module directory it is in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CoreConstraint {
    /// The constraint.
    pub constraint: String,
    /// The module's directory.
    pub dir: PathBuf,
}

/// What a configuration needs, read as its client reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Configuration {
    /// Whose rules were used.
    pub rules: ClientRules,
    /// Every provider the root and local modules require, with the
    /// constraints written for it.
    pub providers: BTreeMap<Provider, Vec<String>>,
    /// Every registry module they call, with what its calls ask of it.
    pub modules: BTreeMap<Module, Called>,
    /// The module sources the client fetches itself.
    pub unserved: Vec<Unserved>,
    /// The `required_version` constraints of the root and local modules.
    pub core: Vec<CoreConstraint>,
    /// The root directory's `.terraform.lock.hcl`, when there is one.
    pub lock_file: Option<PathBuf>,
}

/// How a `module` block's `source` is installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// A directory beside the caller's (`./net`, `../shared`).
    Local(String),
    /// A module registry address, with its `//subdirectory`.
    Registry(Module, Option<String>),
    /// Anything else: fetched by the client itself (git, HTTP, S3, …).
    Remote(&'static str),
}

/// Classifies a module source as the clients do: a local path by its
/// prefix; a registry address when it reads as one (three or four parts,
/// a hostname with a dot and not `github.com` or `bitbucket.org`, no
/// subdirectory leading out); anything else is fetched directly.
pub fn classify(source: &str, client: Product) -> Source {
    if ["./", "../", ".\\", "..\\"]
        .iter()
        .any(|p| source.starts_with(p))
    {
        return Source::Local(source.replace('\\', "/"));
    }
    let host = source.split('/').next().unwrap_or_default();
    let four_parts = source
        .split("//")
        .next()
        .unwrap_or_default()
        .split('/')
        .count()
        == 4;
    let host_ok = !four_parts
        || (host.contains('.')
            && !host.eq_ignore_ascii_case("github.com")
            && !host.eq_ignore_ascii_case("bitbucket.org"));
    if host_ok && !source.contains("://") && !source.contains("::") {
        if let Ok((module, subdir)) = Module::from_source_on(source, client.default_registry()) {
            if !subdir.as_deref().is_some_and(|s| s.starts_with("../")) {
                return Source::Registry(module, subdir);
            }
        }
    }
    Source::Remote(remote_kind(source))
}

/// What kind of directly fetched source `source` is, for people.
fn remote_kind(source: &str) -> &'static str {
    let lower = source.to_ascii_lowercase();
    let forced = lower.split_once("::").map(|(f, _)| f);
    match forced {
        Some("git") => "a git repository",
        Some("hg") => "a Mercurial repository",
        Some("s3") => "an S3 bucket",
        Some("gcs") => "a Google Cloud Storage bucket",
        Some(_) => "a source of its own kind",
        None if lower.starts_with("github.com/") || lower.starts_with("bitbucket.org/") => {
            "a git repository"
        }
        None if lower.starts_with("oci://") => "an OCI registry",
        None if lower.starts_with("git@") || lower.contains(".git") => "a git repository",
        None if lower.starts_with("https://") || lower.starts_with("http://") => "an HTTP URL",
        None if lower.contains(".s3") && lower.contains("amazonaws.com") => "an S3 bucket",
        None if lower.starts_with('/') => "an absolute path",
        None => "a source the client fetches itself",
    }
}

/// Reads the configuration at `path` (its root module's directory) by
/// `client`'s rules, or when `None` by OpenTofu's if it holds `.tofu`
/// files and by Terraform's otherwise.
pub fn read(path: &Path, client: Option<Product>) -> anyhow::Result<Configuration> {
    if !path.is_dir() {
        bail!(
            "{} is not a directory: give the root module's directory",
            path.display()
        );
    }
    let mut read = read_in(&Disk, path, client)?;
    read.lock_file = Some(path.join(".terraform.lock.hcl")).filter(|p| p.is_file());
    Ok(read)
}

/// Reads the configuration whose root module is `root` of `fs` (a site's
/// disk, or files sent to a page, held in memory), as [`read`] does.
pub fn read_in(
    fs: &dyn ConfigFs,
    root: &Path,
    client: Option<Product>,
) -> anyhow::Result<Configuration> {
    let roots = [root.to_path_buf()];
    if let Some(client) = client {
        return Ok(walk(fs, &roots, given(client))?.0);
    }
    let terraform = ClientRules {
        client: Product::Terraform,
        chosen_by: ChosenBy::Default,
    };
    let (read, has_tofu) = walk(fs, &roots, terraform)?;
    if !has_tofu {
        return Ok(read);
    }
    let tofu = ClientRules {
        client: Product::Tofu,
        chosen_by: ChosenBy::TofuFiles,
    };
    Ok(walk(fs, &roots, tofu)?.0)
}

/// Reads a registry module's package by `client`'s rules, from each of
/// the directories its calls use (`subdirs`, `""` for its root) and the
/// local modules those call inside the package.
pub fn read_package(
    package: &Package,
    subdirs: &BTreeSet<String>,
    client: Product,
) -> anyhow::Result<Configuration> {
    let roots: Vec<PathBuf> = if subdirs.is_empty() {
        vec![PathBuf::new()]
    } else {
        subdirs.iter().map(PathBuf::from).collect()
    };
    Ok(walk(package, &roots, given(client))?.0)
}

fn given(client: Product) -> ClientRules {
    ClientRules {
        client,
        chosen_by: ChosenBy::Given,
    }
}

/// Reads the modules at `roots` and every local module they call; says
/// whether any of their directories holds `.tofu` files.
fn walk(
    fs: &dyn ConfigFs,
    roots: &[PathBuf],
    rules: ClientRules,
) -> anyhow::Result<(Configuration, bool)> {
    let client = rules.client;
    let mut out = Configuration {
        rules,
        providers: BTreeMap::new(),
        modules: BTreeMap::new(),
        unserved: Vec::new(),
        core: Vec::new(),
        lock_file: None,
    };
    let mut has_tofu = false;
    let mut seen = BTreeSet::new();
    let mut queue: VecDeque<PathBuf> = roots.iter().cloned().collect();
    while let Some(dir) = queue.pop_front() {
        if !seen.insert(fs.identity(&dir)?) {
            continue;
        }
        let picked = files::module_files(fs, &dir, client)?;
        has_tofu |= picked.has_tofu;
        let needs = module::read_module(fs, &picked, client)?;
        for (provider, terms) in needs.providers {
            out.providers.entry(provider).or_default().extend(terms);
        }
        out.core
            .extend(needs.core.into_iter().map(|constraint| CoreConstraint {
                constraint,
                dir: dir.clone(),
            }));
        for call in needs.calls {
            let Some(source) = &call.source else {
                bail!("module {:?} ({}) has no source", call.name, call.at);
            };
            match classify(source, client) {
                Source::Local(relative) => {
                    let callee = fs
                        .join(&dir, &relative)
                        .with_context(|| format!("module {:?} ({})", call.name, call.at))?;
                    queue.push_back(callee);
                }
                Source::Registry(module, subdir) => {
                    let called = out.modules.entry(module).or_default();
                    called
                        .constraints
                        .extend(call.version.filter(|v| !v.trim().is_empty()));
                    called.subdirs.insert(subdir.unwrap_or_default());
                }
                Source::Remote(kind) => out.unserved.push(Unserved {
                    source: source.clone(),
                    at: call.at,
                    kind,
                }),
            }
        }
    }
    Ok((out, has_tofu))
}

#[cfg(test)]
mod tests;
