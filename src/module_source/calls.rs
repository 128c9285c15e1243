//! What a Terraform configuration asks of the registries: the registry
//! modules its `module` blocks call and the providers its
//! `required_providers` blocks require, read from `.tf` files on disk or
//! inside a packaged module.

use std::io::Read;

use anyhow::{bail, Context as _};

use crate::address::{Module, Provider};

/// What the `.tf` files of a packaged module ask of the registries, each
/// with its version constraint when given.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Needs {
    /// The registry modules its `module` blocks call.
    pub modules: Vec<(Module, Option<String>)>,
    /// The providers its `required_providers` blocks require.
    pub providers: Vec<(Provider, Option<String>)>,
}

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

/// What every `.tf` file in a packaged module (`tar.gz`) asks for. Files
/// that are not valid HCL, and `required_providers` entries that cannot be
/// read, are skipped with a warning: Terraform itself would refuse them
/// when the module is used.
pub fn needs_in_package(package: impl Read) -> std::io::Result<Needs> {
    let mut out = Needs::default();
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
        let body = match hcl::parse(&text) {
            Ok(body) => body,
            Err(e) => {
                tracing::warn!(file = %name, error = %e, "skipping a .tf file that is not valid HCL");
                continue;
            }
        };
        out.modules.extend(module_calls(&body));
        match required_providers(&body) {
            Ok(providers) => out.providers.extend(providers),
            Err(e) => {
                tracing::warn!(file = %name, error = %format!("{e:#}"), "skipping the required_providers of a .tf file that cannot be read");
            }
        }
    }
    Ok(out)
}

/// Why what a stored package asks for could not be read.
#[derive(Debug, thiserror::Error)]
pub enum CallsError {
    /// Reading the package from the store failed.
    #[error("reading the package: {0}")]
    Read(std::io::Error),
    /// The package is not a readable `tar.gz`.
    #[error("the package cannot be read: {0}")]
    Unpack(std::io::Error),
}

/// What a package opened from the store asks for; the unpacking runs off
/// the async threads.
pub async fn needs_in_stored(package: crate::store::ArchiveReader) -> Result<Needs, CallsError> {
    use tokio::io::AsyncReadExt;
    let mut bytes = Vec::with_capacity(usize::try_from(package.size).unwrap_or(0));
    package
        .into_reader()
        .read_to_end(&mut bytes)
        .await
        .map_err(CallsError::Read)?;
    tokio::task::spawn_blocking(move || needs_in_package(&bytes[..]))
        .await
        .map_err(|e| CallsError::Unpack(std::io::Error::other(e)))?
        .map_err(CallsError::Unpack)
}

/// The providers of the `required_providers` blocks of one file, with their
/// version constraints when given. An entry without `source` names
/// `hashicorp/<local name>`, as Terraform reads it.
pub fn required_providers(body: &hcl::Body) -> anyhow::Result<Vec<(Provider, Option<String>)>> {
    let mut out = Vec::new();
    for terraform in body.blocks().filter(|b| b.identifier() == "terraform") {
        for block in terraform
            .body()
            .blocks()
            .filter(|b| b.identifier() == "required_providers")
        {
            for attr in block.body().attributes() {
                let local = attr.key();
                let (source, version) = match attr.expr() {
                    // The old form: `aws = "~> 5.0"`.
                    hcl::Expression::String(v) => (None, Some(v.clone())),
                    hcl::Expression::Object(fields) => {
                        let field = |name: &str| {
                            fields.iter().find_map(|(k, v)| {
                                let key = match k {
                                    hcl::ObjectKey::Identifier(i) => i.as_str().to_string(),
                                    hcl::ObjectKey::Expression(hcl::Expression::String(s)) => {
                                        s.clone()
                                    }
                                    _ => return None,
                                };
                                match v {
                                    hcl::Expression::String(s) if key == name => Some(s.clone()),
                                    _ => None,
                                }
                            })
                        };
                        (field("source"), field("version"))
                    }
                    _ => bail!(
                        "required_providers entry {local:?} is neither a string nor an object"
                    ),
                };
                // Without a source, Terraform assumes hashicorp/<local name>.
                let source = source.unwrap_or_else(|| format!("hashicorp/{local}"));
                let provider = Provider::from_source(&source)
                    .with_context(|| format!("required_providers entry {local:?}"))?;
                out.push((provider, version));
            }
        }
    }
    Ok(out)
}
