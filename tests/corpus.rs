//! The configuration reader behind `check --from` against the real
//! Terraform CLI, on several hundred root modules of real public
//! repositories (`tests/fixtures/corpus/`, pinned in its `sources.json`).
//! `terraform.json` beside them is Terraform's own reading of every root,
//! recorded offline by `scripts/corpus/record`; for each root this test
//! compares whether the client accepts the configuration, the module
//! sources it fetches itself, the registry modules it downloads, and the
//! providers with their merged version constraints. Any disagreement
//! fails, naming the root.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;
use tfmirror::address::{Product, Version};
use tfmirror::module_source::configuration::{self, Configuration, ReadOptions};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/corpus")
}

/// A version constraint term as `terraform providers` prints it: the
/// operator (none for `=`), and the version with three parts, except
/// after `~>`, whose parts say which may rise.
fn as_terraform_prints(term: &str) -> String {
    let term = term.trim();
    let (op, version) = ["~>", ">=", "<=", "!=", ">", "<", "="]
        .iter()
        .find_map(|op| term.strip_prefix(op).map(|rest| (*op, rest.trim())))
        .unwrap_or(("=", term));
    let version = version.trim_start_matches('v');
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, format!("-{pre}")),
        None => (version, String::new()),
    };
    let mut parts: Vec<&str> = core.split('.').collect();
    let least = if op == "~>" { 2 } else { 3 };
    while parts.len() < least {
        parts.push("0");
    }
    let version = format!("{}{pre}", parts.join("."));
    if op == "=" {
        version
    } else {
        format!("{op} {version}")
    }
}

/// A module source as Terraform names it once it has recognised it: the
/// `github.com/…` shorthand becomes the git URL it stands for.
fn as_terraform_fetches(source: &str) -> String {
    let Some(rest) = source.strip_prefix("github.com/") else {
        return source.to_owned();
    };
    let (rest, query) = rest.split_once('?').map_or((rest, ""), |(r, q)| (r, q));
    let (repository, subdir) = rest.split_once("//").map_or((rest, ""), |(r, d)| (r, d));
    let mut out = format!("git::https://github.com/{repository}");
    if !repository.ends_with(".git") {
        out.push_str(".git");
    }
    if !subdir.is_empty() {
        out = format!("{out}//{subdir}");
    }
    if !query.is_empty() {
        out = format!("{out}?{query}");
    }
    out
}

/// What the reader found, in the recording's terms.
fn providers_of(read: &Configuration) -> BTreeMap<String, BTreeSet<String>> {
    read.providers
        .iter()
        .map(|(provider, terms)| {
            let printed = terms
                .iter()
                .flat_map(|t| t.split(','))
                .filter(|t| !t.trim().is_empty())
                .map(as_terraform_prints)
                .collect();
            (provider.to_string(), printed)
        })
        .collect()
}

fn strings(value: &Value) -> BTreeSet<String> {
    value
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// How the reader's verdict on one root differs from Terraform's, if it
/// does.
fn differences(root: &str, expect: &Value, read: &anyhow::Result<Configuration>) -> Vec<String> {
    let mut out = Vec::new();
    let terraform_accepts = expect.get("errors").is_none();
    let (read, refused) = match read {
        Ok(read) if read.refused.is_empty() => (read, None),
        Ok(read) => (read, Some(format!("{:?}", read.refused))),
        Err(e) => {
            if terraform_accepts {
                out.push(format!(
                    "{root}: Terraform accepts it; the reader fails: {e:#}"
                ));
            }
            return out;
        }
    };
    match (terraform_accepts, refused) {
        (true, Some(why)) => {
            out.push(format!(
                "{root}: Terraform accepts it; the reader refuses it: {why}"
            ));
            return out;
        }
        (false, None) => {
            out.push(format!(
                "{root}: Terraform refuses it ({}); the reader accepts it",
                expect["errors"]
            ));
            return out;
        }
        (false, Some(_)) => return out,
        (true, None) => {}
    }
    let fetched: BTreeSet<String> = read
        .unserved
        .iter()
        .map(|u| as_terraform_fetches(&u.source))
        .collect();
    if fetched != strings(&expect["client_fetched"]) {
        out.push(format!(
            "{root}: module sources the client fetches: Terraform {:?}, the reader {fetched:?}",
            strings(&expect["client_fetched"])
        ));
    }
    let modules: BTreeSet<String> = read.modules.keys().map(ToString::to_string).collect();
    if modules != strings(&expect["registry_modules"]) {
        out.push(format!(
            "{root}: registry modules: Terraform {:?}, the reader {modules:?}",
            strings(&expect["registry_modules"])
        ));
    }
    if let Some(recorded) = expect["providers"].as_object() {
        let terraform: BTreeMap<String, BTreeSet<String>> = recorded
            .iter()
            .filter(|(address, _)| !address.starts_with("terraform.io/builtin/"))
            .map(|(address, terms)| (address.clone(), strings(terms)))
            .collect();
        let ours = providers_of(read);
        if ours != terraform {
            out.push(format!(
                "{root}: providers: Terraform {terraform:?}, the reader {ours:?}"
            ));
        }
    }
    out
}

#[test]
fn every_root_of_the_corpus_reads_as_terraform_reads_it() {
    let text = std::fs::read_to_string(corpus().join("terraform.json")).unwrap();
    let recorded: Value = serde_json::from_str(&text).unwrap();
    let version = Version::parse(recorded["terraform"].as_str().unwrap()).unwrap();
    let roots = recorded["roots"].as_object().unwrap();
    assert!(roots.len() >= 300, "only {} roots recorded", roots.len());
    let options = ReadOptions {
        client: Some(Product::Terraform),
        client_version: Some(version),
        test_directory: None,
    };
    let mut disagreements = Vec::new();
    let mut compared = BTreeMap::<&str, usize>::new();
    for (root, expect) in roots {
        let read = configuration::read(&corpus().join(root), &options);
        disagreements.extend(differences(root, expect, &read));
        let what = match (
            expect.get("errors").is_none(),
            expect["providers"].is_object(),
        ) {
            (false, _) => "refused by Terraform",
            (true, true) => "accepted, providers compared",
            (true, false) => "accepted, stopped at a module the client fetches",
        };
        *compared.entry(what).or_default() += 1;
    }
    eprintln!("{} roots: {compared:?}", roots.len());
    assert!(
        disagreements.is_empty(),
        "{} of {} roots read otherwise than Terraform {} reads them:\n{}",
        disagreements.len(),
        roots.len(),
        recorded["terraform"],
        disagreements.join("\n")
    );
}

/// Every repository of the corpus is pinned and named, and every root
/// recorded is one of them.
#[test]
fn the_corpus_is_pinned_and_recorded_whole() {
    let sources: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("sources.json")).unwrap())
            .unwrap();
    let repositories = sources["repositories"].as_array().unwrap();
    assert!(repositories.len() >= 10);
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(corpus().join("terraform.json")).unwrap())
            .unwrap();
    let mut dirs = BTreeSet::new();
    for repository in repositories {
        let name = repository["repository"].as_str().unwrap();
        let commit = repository["commit"].as_str().unwrap();
        assert_eq!(commit.len(), 40, "{name} is pinned to a full commit");
        let dir = name.replace('/', "+");
        assert!(corpus().join(&dir).is_dir(), "{dir} is imported");
        dirs.insert(dir);
    }
    for root in recorded["roots"].as_object().unwrap().keys() {
        let repo = root.split('/').next().unwrap();
        assert!(dirs.contains(repo), "{root} is of no pinned repository");
    }
    assert_eq!(as_terraform_prints(">= 4.0"), ">= 4.0.0");
    assert_eq!(as_terraform_prints("~> 5.0"), "~> 5.0");
    assert_eq!(as_terraform_prints("~> 4"), "~> 4.0");
    assert_eq!(
        as_terraform_fetches("github.com/acme/net?ref=v1"),
        "git::https://github.com/acme/net.git?ref=v1"
    );
    assert_eq!(as_terraform_prints("5.1.2"), "5.1.2");
    assert_eq!(as_terraform_prints("= 2.0.0-rc1"), "2.0.0-rc1");
}
