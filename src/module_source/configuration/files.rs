//! Which files of a directory make one module, as each client picks them:
//! `.tf` and `.tf.json` for Terraform, and for OpenTofu `.tofu` and
//! `.tofu.json` as well, a `.tofu` file replacing the `.tf` file of the
//! same name; `override.tf` and `*_override.tf` (of any of these
//! endings) apart, merged last; hidden files, editor backups and test
//! files left out. Subdirectories are never part of the module.

use std::path::{Path, PathBuf};

use super::fs::ConfigFs;
use crate::address::Product;

/// The configuration files of one module directory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModuleFiles {
    /// The primary files, by name.
    pub primary: Vec<PathBuf>,
    /// The override files, by name, merged after every primary file.
    pub overrides: Vec<PathBuf>,
    /// Whether the directory holds `.tofu` or `.tofu.json` files (read
    /// by OpenTofu only).
    pub has_tofu: bool,
}

/// The endings of the configuration files each client reads, longest
/// first so that `x.tf.json` is not taken for another ending.
fn endings(client: Product) -> &'static [&'static str] {
    match client {
        Product::Terraform => &[".tf.json", ".tf"],
        Product::Tofu => &[".tofu.json", ".tf.json", ".tofu", ".tf"],
    }
}

/// Files the clients skip whatever their ending: hidden files, and the
/// backups editors leave (`x.tf~`, `#x.tf#`).
pub(super) fn ignored(name: &str) -> bool {
    name.starts_with('.') || name.ends_with('~') || (name.starts_with('#') && name.ends_with('#'))
}

/// The ending of `name` among `client`'s, if it is a configuration file.
fn ending_of(name: &str, client: Product) -> Option<&'static str> {
    endings(client)
        .iter()
        .copied()
        .find(|e| name.len() > e.len() && name.ends_with(e))
}

/// The names among `names` with one of `endings` (longest first) that
/// `client` reads, each with its stem; hidden files and editor backups
/// left out unless `hidden` says to keep them. OpenTofu reads `x.tofu`
/// instead of `x.tf` (`.tofu.json` instead of `.tf.json`, `.tofutest.hcl`
/// instead of `.tftest.hcl`) when both are there.
pub(super) fn pick<'a>(
    names: &'a [String],
    endings: &[&str],
    client: Product,
    hidden: bool,
) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    for name in names {
        if !hidden && ignored(name) {
            continue;
        }
        let Some(ending) = endings
            .iter()
            .find(|e| name.len() > e.len() && name.ends_with(*e))
        else {
            continue;
        };
        let stem = &name[..name.len() - ending.len()];
        if client == Product::Tofu && ending.starts_with(".tf") {
            let alternative = format!("{stem}{}", ending.replacen(".tf", ".tofu", 1));
            if names.contains(&alternative) {
                continue;
            }
        }
        out.push((name.as_str(), stem));
    }
    out
}

/// The files of the module in `dir` of `fs`, as `client` reads them.
pub fn module_files(fs: &dyn ConfigFs, dir: &Path, client: Product) -> anyhow::Result<ModuleFiles> {
    let names = fs.files(dir)?;
    let mut out = ModuleFiles {
        has_tofu: names.iter().any(|n| {
            !ignored(n) && ending_of(n, Product::Tofu).is_some_and(|e| e.starts_with(".tofu"))
        }),
        ..ModuleFiles::default()
    };
    for (name, stem) in pick(&names, endings(client), client, false) {
        let path = dir.join(name);
        if stem == "override" || stem.ends_with("_override") {
            out.overrides.push(path);
        } else {
            out.primary.push(path);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::super::fs::Disk;
    use super::*;

    fn names(paths: &[PathBuf]) -> Vec<String> {
        paths
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect()
    }

    #[test]
    fn each_client_picks_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        for name in [
            "main.tf",
            "main.tofu",
            "net.tf",
            "extra.tofu",
            "vars.tf.json",
            "vars.tofu.json",
            "override.tf",
            "b_override.tofu",
            "b_override.tf",
            ".hidden.tf",
            "main.tf~",
            "#main.tf#",
            "notes.md",
            "x.tftest.hcl",
            "terraform.tfvars",
        ] {
            std::fs::write(dir.path().join(name), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("examples.tf")).unwrap();
        let tf = module_files(&Disk, dir.path(), Product::Terraform).unwrap();
        assert_eq!(names(&tf.primary), ["main.tf", "net.tf", "vars.tf.json"]);
        assert_eq!(names(&tf.overrides), ["b_override.tf", "override.tf"]);
        assert!(tf.has_tofu);
        let tofu = module_files(&Disk, dir.path(), Product::Tofu).unwrap();
        assert_eq!(
            names(&tofu.primary),
            ["extra.tofu", "main.tofu", "net.tf", "vars.tofu.json"]
        );
        assert_eq!(names(&tofu.overrides), ["b_override.tofu", "override.tf"]);
        let err = module_files(&Disk, &dir.path().join("absent"), Product::Tofu).unwrap_err();
        assert!(format!("{err:#}").contains("absent"), "{err:#}");
    }
}
