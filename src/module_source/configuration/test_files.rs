//! The test files `init` reads beside a root module, as each client reads
//! them: Terraform from 1.6 on reads `*.tftest.hcl` and `*.tftest.json`
//! in the root module's directory and in its test directory (`tests` unless
//! `-test-directory` says otherwise); OpenTofu, in every release, reads
//! those and `*.tofutest.hcl` and `*.tofutest.json` as well, a `.tofutest`
//! file replacing the `.tftest` file of the same name. What they add to
//! what `init` installs: the modules their `run` blocks call
//! (`module { source = … }`) with what those require; and for OpenTofu,
//! the providers their `provider` blocks configure (Terraform installs
//! only what the called modules require).
//!
//! Terraform 1.6.0 introduced `.tftest.hcl` files and the `module` block
//! of `run` blocks (its v1.6 upgrade guide; hashicorp/terraform#33456);
//! earlier releases read no test files. OpenTofu forked from 1.6 and reads
//! them in every release (`internal/configs/parser_config_dir.go`).

use std::path::{Path, PathBuf};

use anyhow::{anyhow, Context};
use hcl::edit::Span;
use serde_json::Value;

use super::fs::ConfigFs;
use super::parts::{Call, ProviderBlock};
use crate::address::{Product, Version};

/// The test directory the clients read when none is given.
pub const DEFAULT_DIRECTORY: &str = "tests";

/// Which test files a reading takes, and the rule that decided it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TestsRead {
    /// Whether the client reads test files at all.
    pub read: bool,
    /// The rule, for people.
    pub rule: String,
    /// The test files read, as paths below the root.
    pub files: Vec<String>,
}

/// What the test files ask `init` to install.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TestNeeds {
    /// The `run` blocks' module calls (named `run.<name>`).
    pub calls: Vec<Call>,
    /// The `provider` blocks.
    pub providers: Vec<ProviderBlock>,
}

/// Whether `client` at `version` (the newest when `None`) reads test files
/// for `init`, and the rule that says so.
pub fn rule(client: Product, version: Option<&Version>, directory: &str) -> (bool, String) {
    match client {
        Product::Tofu => (
            true,
            format!(
                "OpenTofu reads *.tftest.hcl, *.tftest.json, *.tofutest.hcl and *.tofutest.json in the root directory and in {directory}/ (every release)"
            ),
        ),
        Product::Terraform => {
            let reads = version.is_none_or(|v| (v.semver().major, v.semver().minor) >= (1, 6));
            let rule = match version {
                None => format!("Terraform 1.6 and later read *.tftest.hcl and *.tftest.json in the root directory and in {directory}/; --client-version names an older release"),
                Some(v) if reads => format!("Terraform {v} reads *.tftest.hcl and *.tftest.json in the root directory and in {directory}/, as every release from 1.6 on"),
                Some(v) => format!("Terraform {v} reads no test files; releases from 1.6 on do"),
            };
            (reads, rule)
        }
    }
}

/// The endings of `client`'s test files, longest first.
fn endings(client: Product) -> &'static [&'static str] {
    match client {
        Product::Terraform => &[".tftest.hcl", ".tftest.json"],
        Product::Tofu => &[
            ".tofutest.hcl",
            ".tofutest.json",
            ".tftest.hcl",
            ".tftest.json",
        ],
    }
}

/// The test files of `dir` (`skip_hidden`: leave out hidden files and
/// editor backups, as both clients do in the root directory and OpenTofu
/// in the test directory).
fn in_dir(
    fs: &dyn ConfigFs,
    dir: &Path,
    client: Product,
    skip_hidden: bool,
) -> anyhow::Result<Vec<PathBuf>> {
    let names = fs.files(dir)?;
    let out = super::files::pick(&names, endings(client), client, !skip_hidden)
        .into_iter()
        .map(|(name, _)| dir.join(name))
        .collect();
    Ok(out)
}

/// The test files of the root module `root`, as `client` picks them; the
/// test directory is read when it is there.
pub fn pick(
    fs: &dyn ConfigFs,
    root: &Path,
    client: Product,
    directory: &str,
) -> anyhow::Result<Vec<PathBuf>> {
    let mut out = in_dir(fs, root, client, true)?;
    if let Ok(tests) = fs.join(root, &format!("./{directory}")) {
        out.extend(in_dir(fs, &tests, client, client == Product::Tofu)?);
    }
    Ok(out)
}

/// What the test file at `path` asks for; `name` names it in messages.
pub fn read(fs: &dyn ConfigFs, path: &Path, name: &str) -> anyhow::Result<TestNeeds> {
    let text = fs.read(path)?;
    let read = if name.ends_with(".json") {
        let value: Value = serde_json::from_str(&text)
            .map_err(|e| anyhow!("{name} is not a valid JSON test file: {e}"))?;
        Ok(from_json(&value, name))
    } else {
        from_native(&text, name)
    };
    read.with_context(|| format!("reading {name}"))
}

fn from_native(text: &str, name: &str) -> anyhow::Result<TestNeeds> {
    let (text, edit) = super::parts::parse_native(text, name)?;
    let text = text.as_str();
    let lines: Vec<usize> = edit
        .blocks()
        .map(|b| b.span().map_or(0, |r| super::parts::line_of(text, r.start)))
        .collect();
    let body: hcl::Body = edit.into();
    let mut out = TestNeeds::default();
    for (block, line) in body.blocks().zip(lines) {
        let label = block.labels().first().map(hcl::BlockLabel::as_str);
        match (block.identifier(), label) {
            ("run", Some(run)) => {
                for module in block.body().blocks().filter(|b| b.identifier() == "module") {
                    let string = |key| super::parts::string(module.body(), key);
                    out.calls.push(Call {
                        name: format!("run.{run}"),
                        source: string("source")
                            .with_context(|| format!("run {run:?} ({name}:{line})"))?,
                        version: string("version")
                            .with_context(|| format!("run {run:?} ({name}:{line})"))?,
                        at: format!("{name}:{line}"),
                    });
                }
            }
            ("provider", Some(local)) => out.providers.push(ProviderBlock {
                local: local.to_owned(),
                alias: super::parts::string(block.body(), "alias")?,
                version: None,
            }),
            _ => {}
        }
    }
    Ok(out)
}

fn from_json(value: &Value, name: &str) -> TestNeeds {
    let mut out = TestNeeds::default();
    let text = |v: &Value, key: &str| v.get(key).and_then(Value::as_str).map(str::to_owned);
    if let Some(runs) = value.get("run").and_then(Value::as_object) {
        for (run, body) in runs {
            if let Some(module) = body.get("module") {
                out.calls.push(Call {
                    name: format!("run.{run}"),
                    source: text(module, "source"),
                    version: text(module, "version"),
                    at: name.to_owned(),
                });
            }
        }
    }
    if let Some(providers) = value.get("provider").and_then(Value::as_object) {
        for (local, body) in providers {
            out.providers.push(ProviderBlock {
                local: local.clone(),
                alias: text(body, "alias"),
                version: None,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use crate::address::{Product, Version};
    use crate::module_source::configuration::{read, ReadOptions};

    fn write(root: &Path, files: &[(&str, &str)]) {
        for (name, text) in files {
            let path = root.join(name);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
    }

    fn providers(root: &Path, options: &ReadOptions) -> Vec<String> {
        let read = read(root, options).unwrap();
        read.providers.keys().map(ToString::to_string).collect()
    }

    fn at(client: Option<Product>, version: Option<&str>, directory: Option<&str>) -> ReadOptions {
        ReadOptions {
            client,
            client_version: version.map(|v| Version::parse(v).unwrap()),
            test_directory: directory.map(str::to_owned),
        }
    }

    #[test]
    fn terraform_reads_test_files_from_1_6_on_and_only_their_modules_requirements() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("main.tf", "resource \"alpha_x\" \"a\" {}\n"),
                ("root.tftest.hcl", "run \"r\" {\n  module {\n    source = \"./fixtures/one\"\n  }\n}\n"),
                ("tests/a.tftest.json", r#"{"provider": {"gamma": {}}, "run": {"x": {"module": {"source": "acme/net/aws", "version": "~> 1.0"}}}}"#),
                ("tests/.hidden.tftest.hcl", "run \"h\" {\n  module {\n    source = \"./fixtures/hidden\"\n  }\n}\n"),
                ("tests/b.tofutest.hcl", "run \"t\" {\n  module {\n    source = \"./fixtures/tofu\"\n  }\n}\n"),
                ("fixtures/one/main.tf", "resource \"beta_x\" \"b\" {}\n"),
                ("fixtures/hidden/main.tf", "resource \"delta_x\" \"d\" {}\n"),
                ("fixtures/tofu/main.tf", "resource \"omega_x\" \"o\" {}\n"),
                ("integration/c.tftest.hcl", "run \"c\" {\n  module {\n    source = \"git::https://example.com/x.git\"\n  }\n}\n"),
            ],
        );
        let root = dir.path();
        // Terraform reads its test directory without skipping hidden files.
        let newest = read(root, &at(Some(Product::Terraform), None, None)).unwrap();
        let tests = newest.tests.as_ref().unwrap();
        assert!(
            tests.read && tests.rule.contains("1.6 and later"),
            "{tests:?}"
        );
        let exactly = read(root, &at(Some(Product::Terraform), Some("1.11.4"), None)).unwrap();
        assert!(exactly
            .tests
            .unwrap()
            .rule
            .starts_with("Terraform 1.11.4 reads *.tftest.hcl"));
        assert_eq!(
            tests.files,
            [
                "root.tftest.hcl",
                "tests/.hidden.tftest.hcl",
                "tests/a.tftest.json"
            ]
        );
        assert_eq!(
            providers(root, &at(Some(Product::Terraform), None, None)),
            [
                "registry.terraform.io/hashicorp/alpha",
                "registry.terraform.io/hashicorp/beta",
                "registry.terraform.io/hashicorp/delta"
            ]
        );
        assert_eq!(
            newest
                .modules
                .keys()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["registry.terraform.io/acme/net/aws"]
        );
        assert_eq!(
            providers(root, &at(Some(Product::Terraform), Some("1.6.0"), None)).len(),
            3
        );
        let old = read(root, &at(Some(Product::Terraform), Some("1.5.7"), None)).unwrap();
        assert!(!old.tests.as_ref().unwrap().read);
        assert_eq!(
            old.tests.unwrap().rule,
            "Terraform 1.5.7 reads no test files; releases from 1.6 on do"
        );
        assert_eq!(old.providers.len(), 1);
        assert!(old.modules.is_empty());
        // Another test directory, as `-test-directory` names it.
        let other = read(
            root,
            &at(Some(Product::Terraform), None, Some("integration")),
        )
        .unwrap();
        assert_eq!(
            other.tests.unwrap().files,
            ["root.tftest.hcl", "integration/c.tftest.hcl"]
        );
        assert_eq!(other.unserved.len(), 1);
        assert_eq!(other.unserved[0].kind, "a git repository");
    }

    #[test]
    fn opentofu_reads_its_own_test_files_and_installs_their_providers() {
        let dir = tempfile::tempdir().unwrap();
        write(
            dir.path(),
            &[
                ("main.tf", "terraform {\n  required_providers {\n    cloud = { source = \"acme/cloud\" }\n  }\n}\n"),
                ("tests/a.tftest.hcl", "run \"a\" {\n  module {\n    source = \"./fixtures/replaced\"\n  }\n}\n"),
                ("tests/a.tofutest.hcl", "provider \"cloud\" {}\nprovider \"gamma\" {\n  alias = \"two\"\n}\n"),
                ("tests/.b.tofutest.hcl", "provider \"delta\" {}\n"),
                ("fixtures/replaced/main.tf", "resource \"beta_x\" \"b\" {}\n"),
            ],
        );
        let tofu = read(dir.path(), &at(Some(Product::Tofu), Some("1.6.0"), None)).unwrap();
        let tests = tofu.tests.unwrap();
        assert!(
            tests.read && tests.rule.contains("every release"),
            "{}",
            tests.rule
        );
        assert_eq!(tests.files, ["tests/a.tofutest.hcl"]);
        assert_eq!(
            tofu.providers
                .keys()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [
                "registry.opentofu.org/acme/cloud",
                "registry.opentofu.org/hashicorp/gamma"
            ]
        );
        // Terraform reads neither `.tofutest` files nor test providers.
        assert_eq!(
            providers(dir.path(), &at(Some(Product::Terraform), None, None)),
            [
                "registry.terraform.io/acme/cloud",
                "registry.terraform.io/hashicorp/beta"
            ]
        );
    }
}
