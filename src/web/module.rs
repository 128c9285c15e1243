//! A module's pages: its versions held with their pins and sources
//! (`/-/modules/:hostname/:namespace/:name/:system`), and one version's
//! (`…/:version`): its README ([`super::markdown`]), its inputs and
//! outputs, the providers and CLI versions it requires, its submodules
//! and examples, and a usage snippet, all read from the package the mirror
//! holds with the configuration reader the readiness check uses.

use std::path::{Path, PathBuf};

use askama::Template;
use http::StatusCode;
use serde::Serialize;
use tokio::io::AsyncReadExt;

use super::layout::Layout;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Module, Product, Version};
use crate::error::RequestError;
use crate::module_source::configuration::fs::Package;
use crate::module_source::configuration::interface::{read_interface, Input, Output};
use crate::module_source::configuration::read_package;
use crate::store::ModuleRecord;

/// The largest package a page reads.
const PACKAGE_SHOWN: u64 = 64 << 20;

/// A module's versions held.
#[derive(Debug, Serialize)]
pub struct ModulePage {
    /// The module's address.
    pub module: String,
    /// Its versions held, newest first.
    pub versions: Vec<PinRow>,
}

/// A version held, with its pin.
#[derive(Debug, Serialize)]
pub struct PinRow {
    /// The version.
    pub version: String,
    /// Where its source came from, as the registry named it.
    pub source: String,
    /// The git commit it was fetched at, for a git source.
    pub commit: Option<String>,
    /// The `h1:` hash of its source tree.
    pub tree: String,
    /// When it was pinned (RFC 3339).
    pub pinned: String,
    /// Its page.
    pub href: String,
}

/// One version of a module.
#[derive(Debug, Serialize)]
pub struct VersionPage {
    /// The module's address.
    pub module: String,
    /// The version, and its pin.
    pub pin: PinRow,
    /// The page of all its versions held.
    pub all_versions: String,
    /// A `module` block calling it.
    pub usage: String,
    /// Its README as safe HTML, when it has one.
    pub readme: Option<String>,
    /// Whether the README was longer than what is shown.
    pub readme_cut: bool,
    /// Input variables.
    pub inputs: Vec<Input>,
    /// Outputs.
    pub outputs: Vec<Output>,
    /// Providers it requires, with the constraints written for each.
    pub providers: Vec<(String, String)>,
    /// Its `required_version` constraints.
    pub required_version: Vec<String>,
    /// Its submodules (`modules/…`) and examples (`examples/…`).
    pub parts: Vec<Part>,
    /// What could not be read of it, if anything.
    pub unread: Option<String>,
}

/// A submodule or an example.
#[derive(Debug, Serialize)]
pub struct Part {
    /// `submodule` or `example`.
    pub kind: &'static str,
    /// Its directory in the package.
    pub path: String,
    /// Its inputs' names, required ones marked with `*`.
    pub inputs: Vec<String>,
    /// Its outputs' names.
    pub outputs: Vec<String>,
}

#[derive(Template)]
#[template(path = "module.html")]
struct ModuleHtml<'a> {
    layout: &'a Layout,
    page: &'a ModulePage,
}

#[derive(Template)]
#[template(path = "module_version.html")]
struct VersionHtml<'a> {
    layout: &'a Layout,
    page: &'a VersionPage,
}

/// The pins of `module`'s versions held, newest first.
fn pins(site: Site<'_>, module: &Module) -> Vec<std::sync::Arc<ModuleRecord>> {
    let mut pins: Vec<_> = (site.mirror.held_modules().into_iter())
        .filter(|p| &p.module == module)
        .collect();
    pins.sort_by(|a, b| b.version.cmp(&a.version));
    pins
}

fn row(pin: &ModuleRecord) -> PinRow {
    PinRow {
        version: pin.version.to_string(),
        source: pin.location.clone(),
        commit: pin.commit.clone(),
        tree: pin.h1.clone(),
        pinned: humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(pin.pinned_at_ms))
            .to_string(),
        href: super::routes::module_path(&pin.module, Some(&pin.version)),
    }
}

/// `/-/modules/…`.
pub fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    module: &Module,
) -> Result<PageAnswer, RequestError> {
    let pins = pins(site, module);
    if pins.is_empty() {
        return Err(not_held(module, None));
    }
    let page = ModulePage {
        module: module.to_string(),
        versions: pins.iter().map(|p| row(p)).collect(),
    };
    if req.route.json {
        return Ok(PageAnswer::json(&page));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &ModuleHtml {
            layout,
            page: &page,
        },
    ))
}

fn not_held(module: &Module, version: Option<&Version>) -> RequestError {
    let what = match version {
        Some(v) => format!("{module} {v}"),
        None => module.to_string(),
    };
    RequestError::NoSuchPage(format!(
        "this mirror holds no package of {what}: a client's first request for it fetches it"
    ))
}

/// `/-/modules/…/:version`.
pub async fn version_page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    module: &Module,
    version: &Version,
) -> Result<PageAnswer, RequestError> {
    let pin = pins(site, module)
        .into_iter()
        .find(|p| &p.version == version)
        .ok_or_else(|| not_held(module, Some(version)))?;
    let package = read_held(site, module, version).await;
    let mut page = VersionPage {
        module: module.to_string(),
        pin: row(&pin),
        all_versions: super::routes::module_path(module, None),
        usage: usage(module, version),
        readme: None,
        readme_cut: false,
        inputs: Vec::new(),
        outputs: Vec::new(),
        providers: Vec::new(),
        required_version: Vec::new(),
        parts: Vec::new(),
        unread: None,
    };
    match package {
        Ok(package) => {
            if let Err(e) = describe(&package, &pin, &mut page) {
                page.unread = Some(format!("{e:#}"));
            }
        }
        Err(e) => page.unread = Some(e),
    }
    if req.route.json {
        return Ok(PageAnswer::json(&page));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &VersionHtml {
            layout,
            page: &page,
        },
    ))
}

/// The package the store holds, read whole (up to [`PACKAGE_SHOWN`]).
async fn read_held(site: Site<'_>, module: &Module, version: &Version) -> Result<Package, String> {
    let opened = site
        .mirror
        .store()
        .open_module(module, version)
        .await
        .map_err(|e| format!("the package cannot be read: {e}"))?
        .ok_or("the package is no longer in the cache (evicted); its pin stays")?;
    if opened.size > PACKAGE_SHOWN {
        return Err(format!(
            "the package is {} bytes, more than a page reads",
            opened.size
        ));
    }
    let mut bytes = Vec::new();
    opened
        .into_reader()
        .take(PACKAGE_SHOWN)
        .read_to_end(&mut bytes)
        .await
        .map_err(|e| format!("the package cannot be read: {e}"))?;
    tokio::task::spawn_blocking(move || Package::read_with_readmes(&bytes[..]))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("the package cannot be read: {e}"))
}

/// Fills `page` from the package: the module lives in the pin's
/// subdirectory, if it has one.
fn describe(package: &Package, pin: &ModuleRecord, page: &mut VersionPage) -> anyhow::Result<()> {
    let root = PathBuf::from(pin.subdir.clone().unwrap_or_default());
    let readme = ["README.md", "readme.md", "README.markdown", "README"]
        .iter()
        .find_map(|name| package.readme(&root.join(name)));
    if let Some((text, cut)) = readme {
        page.readme = Some(super::markdown::render(text));
        page.readme_cut = cut;
    }
    let interface = read_interface(package, &root, Product::Terraform)?;
    page.inputs = interface.inputs;
    page.outputs = interface.outputs;
    let subdir = root.to_string_lossy().into_owned();
    let read = read_package(package, &[subdir].into(), Product::Terraform)?;
    page.providers = read
        .providers
        .iter()
        .map(|(provider, terms)| (provider.to_string(), terms.join(", ")))
        .collect();
    page.required_version = read.core.iter().map(|c| c.constraint.clone()).collect();
    for (kind, dir) in [("submodule", "modules"), ("example", "examples")] {
        for sub in package.subdirs(&root.join(dir)) {
            page.parts.push(part(package, kind, &sub));
        }
    }
    Ok(())
}

fn part(package: &Package, kind: &'static str, dir: &Path) -> Part {
    let interface = read_interface(package, dir, Product::Terraform).unwrap_or_default();
    Part {
        kind,
        path: dir.display().to_string(),
        inputs: (interface.inputs.iter())
            .map(|i| {
                if i.required {
                    format!("{}*", i.name)
                } else {
                    i.name.clone()
                }
            })
            .collect(),
        outputs: interface.outputs.into_iter().map(|o| o.name).collect(),
    }
}

/// A `module` block calling `version`.
fn usage(module: &Module, version: &Version) -> String {
    let source = if module.hostname.as_str() == crate::address::Provider::DEFAULT_HOSTNAME {
        format!("{}/{}/{}", module.namespace, module.name, module.system)
    } else {
        module.to_string()
    };
    format!(
        "module \"{}\" {{\n  source  = \"{source}\"\n  version = \"{version}\"\n}}",
        module.name.as_str().replace('-', "_")
    )
}
