//! The paths of the documentation files served in the OpenTofu
//! Registry's static shape, below `/-/registry-docs/:hostname/`
//! ([`crate::web::registry_docs`]).

use crate::address::{DocName, Hostname, Provider, Version};
use crate::docs::DocKind;
use crate::error::RequestError;

/// What a path of the OpenTofu Registry's documentation shape asks for,
/// below `/-/registry-docs/:hostname/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RegistryDoc {
    /// `providers/:namespace/:type/index.json`: the versions held whose
    /// documentation is kept.
    Provider(Provider),
    /// `providers/:namespace/:type/v:version/index.json`: a version's
    /// list of documents.
    Version(Provider, Version),
    /// `providers/:namespace/:type/v:version/index.md` (the overview) and
    /// `…/v:version/:folder/:name.md`: one document's Markdown.
    Page(Provider, Version, DocKind, DocName),
}

/// What the segments below a provider's folder of the documentation files
/// ask for. A version is named `v`-prefixed, as the OpenTofu Registry
/// names them (bare is read too); CDKTF documentation is not kept.
pub(super) fn registry_doc(provider: Provider, rest: &[&str]) -> Result<RegistryDoc, RequestError> {
    let version = |v: &str| Version::parse(v.strip_prefix('v').unwrap_or(v));
    let not_kept = |what: &str| {
        RequestError::NoSuchPage(format!(
            "no documentation file {what}: below a version are index.json, index.md and FOLDER/NAME.md, FOLDER one of {}",
            DocKind::ALL
                .iter()
                .filter_map(|k| k.opentofu_folder().map(|f| f.0))
                .collect::<Vec<_>>()
                .join(", ")
        ))
    };
    Ok(match rest {
        ["index.json"] => RegistryDoc::Provider(provider),
        [v, "index.json"] => RegistryDoc::Version(provider, version(v)?),
        [v, "index.md"] => {
            RegistryDoc::Page(provider, version(v)?, DocKind::Overview, DocName::index())
        }
        [v, folder, file] => {
            let kind = (DocKind::ALL.into_iter())
                .find(|k| k.opentofu_folder().is_some_and(|f| f.0 == *folder))
                .ok_or_else(|| not_kept(&format!("{folder}/{file}")))?;
            let name = file.strip_suffix(".md").ok_or_else(|| not_kept(file))?;
            RegistryDoc::Page(provider, version(v)?, kind, DocName::parse(name)?)
        }
        _ => return Err(not_kept(&rest.join("/"))),
    })
}

/// The root of the documentation files this mirror serves of `host`'s
/// providers (a tool built for the OpenTofu Registry's documentation API
/// is pointed at it; a lower tier names it as its `tfmirror-docs.v1`).
pub fn registry_docs_root(host: &Hostname) -> String {
    format!("/-/registry-docs/{host}/")
}
