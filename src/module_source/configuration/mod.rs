//! A configuration read as Terraform or OpenTofu reads it for `init`:
//! the root module's directory and the local modules its `module` blocks
//! call (`./…`, `../…`, at any depth), each directory's files picked by
//! the client's rules ([`files`]), each module assembled with its
//! override files ([`module`]); what the modules require of the
//! registries, with unqualified sources on the client's default registry;
//! the module sources the client fetches itself, which a mirror cannot
//! serve; the `required_version` constraints; and the root directory's
//! lock file; the test files `init` reads beside the root module
//! ([`test_files`]); and what the clients refuse before they install
//! anything (a declaration made twice, a module source they do not
//! recognise ([`sources`]), a default that does not conform to its type
//! ([`defaults`]), a `required_version` excluding the release named).
//! Directories nobody calls (`examples/`, `test/`) are not read.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};

use crate::address::{Module, Product, Provider, Version};

pub mod defaults;
pub mod files;
pub mod fs;
pub mod interface;
pub mod module;
pub mod parts;
pub mod sources;
pub mod test_files;

pub use sources::{classify, Source};

pub use module::Refusal;
pub use test_files::TestsRead;

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
    /// The test files read beside the root module, and the rule that
    /// decided it (`None` for a registry module's package).
    pub tests: Option<TestsRead>,
    /// What the client refuses in the configuration.
    pub refused: Vec<Refusal>,
}

/// How to read a configuration: whose rules, which release of the client
/// (for the rules that changed between releases), which test directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The client; `None`: OpenTofu when the configuration holds `.tofu`
    /// files, else Terraform.
    pub client: Option<Product>,
    /// The client's release that runs `init`; `None`: the newest.
    pub client_version: Option<Version>,
    /// The test directory (`-test-directory`); `None`: `tests`.
    pub test_directory: Option<String>,
}

impl ReadOptions {
    /// Options that name only the client.
    pub fn client(client: Option<Product>) -> Self {
        Self {
            client,
            ..Self::default()
        }
    }
}

/// Reads the configuration at `path` (its root module's directory) by
/// `client`'s rules, or when `None` by OpenTofu's if it holds `.tofu`
/// files and by Terraform's otherwise.
pub fn read(path: &Path, options: &ReadOptions) -> anyhow::Result<Configuration> {
    if !path.is_dir() {
        bail!(
            "{} is not a directory: give the root module's directory",
            path.display()
        );
    }
    let mut read = read_in(&Disk, path, options)?;
    read.lock_file = Some(path.join(".terraform.lock.hcl")).filter(|p| p.is_file());
    Ok(read)
}

/// Reads the configuration whose root module is `root` of `fs` (a site's
/// disk, or files sent to a page, held in memory), as [`read`] does.
pub fn read_in(
    fs: &dyn ConfigFs,
    root: &Path,
    options: &ReadOptions,
) -> anyhow::Result<Configuration> {
    let roots = [root.to_path_buf()];
    let directory = options
        .test_directory
        .as_deref()
        .unwrap_or(test_files::DEFAULT_DIRECTORY);
    let read_as = |rules: ClientRules| {
        let (reads, rule) =
            test_files::rule(rules.client, options.client_version.as_ref(), directory);
        let tests = TestsRead {
            read: reads,
            rule,
            files: Vec::new(),
        };
        let (mut read, has_tofu) = walk(fs, &roots, rules, Some((directory, tests)))?;
        if let Some(version) = &options.client_version {
            refuse_other_releases(&mut read, version);
        }
        anyhow::Ok((read, has_tofu))
    };
    if let Some(client) = options.client {
        return Ok(read_as(given(client))?.0);
    }
    let terraform = ClientRules {
        client: Product::Terraform,
        chosen_by: ChosenBy::Default,
    };
    let (read, has_tofu) = read_as(terraform)?;
    if !has_tofu {
        return Ok(read);
    }
    let tofu = ClientRules {
        client: Product::Tofu,
        chosen_by: ChosenBy::TofuFiles,
    };
    Ok(read_as(tofu)?.0)
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
    Ok(walk(package, &roots, given(client), None)?.0)
}

fn given(client: Product) -> ClientRules {
    ClientRules {
        client,
        chosen_by: ChosenBy::Given,
    }
}

/// Refuses `read` where a `required_version` excludes the client's
/// release `version`, as `init` refuses it before anything else.
fn refuse_other_releases(read: &mut Configuration, version: &Version) {
    let client = read.rules.client.title();
    for core in &read.core {
        let message = match crate::constraints::Constraints::parse(&core.constraint) {
            Ok(c) if c.allows(version.semver()) => continue,
            Ok(_) => format!(
                "required_version {:?} excludes {client} {version}",
                core.constraint
            ),
            Err(e) => format!("required_version {:?} cannot be read: {e}", core.constraint),
        };
        read.refused.push(Refusal {
            message,
            at: core.dir.display().to_string(),
        });
    }
}

/// Reads the modules at `roots` and every local module they call, and
/// with `tests` (the test directory, and whether the client reads test
/// files) the test files beside the first root; says whether any of their
/// directories holds `.tofu` files.
fn walk(
    fs: &dyn ConfigFs,
    roots: &[PathBuf],
    rules: ClientRules,
    mut tests: Option<(&str, TestsRead)>,
) -> anyhow::Result<(Configuration, bool)> {
    let client = rules.client;
    let mut out = Configuration {
        rules,
        providers: BTreeMap::new(),
        modules: BTreeMap::new(),
        unserved: Vec::new(),
        core: Vec::new(),
        lock_file: None,
        tests: None,
        refused: Vec::new(),
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
        out.refused.extend(needs.refused);
        let mut calls = needs.calls;
        if let Some((directory, mut read)) = tests.take() {
            if read.read {
                let test = read_tests(fs, &dir, directory, &needs.required, &mut read, &mut out)?;
                calls.extend(test);
            }
            out.tests = Some(read);
        }
        for call in calls {
            take_call(fs, &dir, call, &mut out, &mut queue)?;
        }
    }
    Ok((out, has_tofu))
}

/// Reads the test files beside the root module `dir` (whose
/// `required_providers` are `required`) into `read`; adds the providers
/// their `provider` blocks configure where the client installs those
/// (OpenTofu); returns their `run` blocks' module calls.
fn read_tests(
    fs: &dyn ConfigFs,
    dir: &Path,
    directory: &str,
    required: &BTreeMap<String, parts::Entry>,
    read: &mut TestsRead,
    out: &mut Configuration,
) -> anyhow::Result<Vec<parts::Call>> {
    let client = out.rules.client;
    let mut calls = Vec::new();
    for path in test_files::pick(fs, dir, client, directory)? {
        let shown = path.display().to_string();
        let needs = test_files::read(fs, &path, &shown)?;
        read.files.push(
            path.strip_prefix(dir)
                .unwrap_or(&path)
                .display()
                .to_string(),
        );
        if client == Product::Tofu {
            for block in &needs.providers {
                if let Some(p) = module::provider_for(&block.local, required, client)? {
                    out.providers.entry(p).or_default();
                }
            }
        }
        calls.extend(needs.calls);
    }
    Ok(calls)
}

/// Follows one module call written in `dir`: a local module is read in
/// turn, a registry module is recorded with its constraints, anything
/// else is a source the client fetches itself.
fn take_call(
    fs: &dyn ConfigFs,
    dir: &Path,
    call: parts::Call,
    out: &mut Configuration,
    queue: &mut VecDeque<PathBuf>,
) -> anyhow::Result<()> {
    let Some(source) = &call.source else {
        bail!("module {:?} ({}) has no source", call.name, call.at);
    };
    match classify(source, out.rules.client) {
        Source::Local(relative) => {
            let callee = fs
                .join(dir, &relative)
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
        Source::Invalid => out.refused.push(Refusal {
            message: format!(
                "invalid module source address {source:?} (module {:?}): a directory beside the caller is written \"./{source}\"",
                call.name
            ),
            at: call.at,
        }),
    }
    Ok(())
}

#[cfg(test)]
mod tests;
