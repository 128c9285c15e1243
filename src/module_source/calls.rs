//! The registry modules a Terraform configuration calls: `module` blocks
//! whose `source` is a registry address, read from `.tf` files on disk or
//! inside a packaged module.

use std::io::Read;

use crate::address::Module;

/// The registry modules the `module` blocks of one file call, with their
/// `version` constraints when given. Other sources (local paths, git,
/// archives) go through no registry and are left out.
pub fn module_calls(body: &hcl::Body) -> Vec<(Module, Option<String>)> {
    let mut out = Vec::new();
    for block in body.blocks().filter(|b| b.identifier() == "module") {
        let string = |name: &str| string_attribute(block.body(), name);
        let Some(source) = string("source") else {
            continue;
        };
        if source.starts_with("./") || source.starts_with("../") {
            continue;
        }
        if let Ok((module, _)) = Module::from_source(&source) {
            out.push((module, string("version")));
        }
    }
    out
}

/// The value of a body's attribute `name` when it is a literal string.
pub fn string_attribute(body: &hcl::Body, name: &str) -> Option<String> {
    body.attributes()
        .find(|a| a.key() == name)
        .and_then(|a| match a.expr() {
            hcl::Expression::String(s) => Some(s.clone()),
            _ => None,
        })
}

/// The registry module calls of every `.tf` file in a packaged module
/// (`tar.gz`). Files that are not valid HCL are skipped with a warning:
/// Terraform itself would refuse them when the module is used.
pub fn calls_in_package(package: impl Read) -> std::io::Result<Vec<(Module, Option<String>)>> {
    let mut out = Vec::new();
    let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(package));
    for entry in archive.entries()? {
        let mut entry = entry?;
        let name = entry.path()?.to_string_lossy().into_owned();
        let is_tf = std::path::Path::new(&name)
            .extension()
            .is_some_and(|e| e == "tf");
        if entry.header().entry_type() != tar::EntryType::Regular || !is_tf {
            continue;
        }
        let mut text = String::new();
        if entry.read_to_string(&mut text).is_err() {
            tracing::warn!(file = %name, "skipping a .tf file that is not UTF-8");
            continue;
        }
        match hcl::parse(&text) {
            Ok(body) => out.extend(module_calls(&body)),
            Err(e) => {
                tracing::warn!(file = %name, error = %e, "skipping a .tf file that is not valid HCL");
            }
        }
    }
    Ok(out)
}

/// Why the calls inside a stored package could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CallsError {
    /// Reading the package from the store failed.
    #[error("reading the package: {0}")]
    Read(std::io::Error),
    /// The package is not a readable `tar.gz`.
    #[error("the package cannot be read: {0}")]
    Unpack(std::io::Error),
}

/// The registry module calls of a package opened from the store; the
/// unpacking runs off the async threads.
pub async fn calls_in_stored(
    package: crate::store::ArchiveReader,
) -> Result<Vec<(Module, Option<String>)>, CallsError> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::with_capacity(usize::try_from(package.size).unwrap_or(0));
    package
        .into_reader()
        .read_to_end(&mut bytes)
        .await
        .map_err(CallsError::Read)?;
    tokio::task::spawn_blocking(move || calls_in_package(&bytes[..]))
        .await
        .map_err(|e| CallsError::Unpack(std::io::Error::other(e)))?
        .map_err(CallsError::Unpack)
}
