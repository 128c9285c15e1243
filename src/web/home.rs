//! The home page: a search box, how much the mirror holds, the CLI
//! configuration to copy, and what arrived lately. Without a sign-in (with
//! access control on) it shows how to use the mirror and how to sign in,
//! as the status page did.

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::recipes::{recipes, Recipes};
use super::{PageAnswer, PageRequest, Site};
use crate::error::RequestError;
use crate::store::Item;

/// How many arrivals the page lists.
const RECENT_SHOWN: usize = 20;

/// The home page's data.
#[derive(Debug, Serialize)]
pub struct Home {
    /// What the mirror holds; absent without a sign-in.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Counts>,
    /// The CLI configuration to copy.
    pub recipes: Recipes,
    /// What arrived lately, newest first; empty without a sign-in.
    pub recent: Vec<Arrival>,
}

/// How much the mirror holds.
#[derive(Debug, Serialize)]
pub struct Counts {
    /// Providers with an archive held.
    pub providers: usize,
    /// Provider versions with an archive held.
    pub versions: usize,
    /// Archives held.
    pub archives: u64,
    /// Bytes held: archives, module packages and release files.
    pub bytes: u64,
    /// The bytes, for people.
    pub size: String,
    /// Module versions whose package is held.
    pub modules: usize,
    /// CLI releases with files held.
    pub releases: usize,
}

/// Something that arrived lately.
#[derive(Debug, Serialize)]
pub struct Arrival {
    /// `provider`, `module` or `release`.
    pub kind: &'static str,
    /// Its address.
    pub name: String,
    /// Its version.
    pub version: String,
    /// The platform or file, where it has one.
    pub detail: String,
    /// When, RFC 3339.
    pub at: String,
    /// Its page.
    pub href: String,
}

#[derive(Template)]
#[template(path = "home.html")]
struct HomePage<'a> {
    layout: &'a Layout,
    home: &'a Home,
}

/// `/`.
pub fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let home = home(site, req, layout.signed_in);
    if req.route.json {
        return Ok(PageAnswer::json(&home));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &HomePage {
            layout,
            home: &home,
        },
    ))
}

fn home(site: Site<'_>, req: &PageRequest<'_>, signed_in: bool) -> Home {
    let mirror = site.mirror;
    let counts = signed_in.then(|| {
        let (bytes, archives) = mirror.usage();
        let (providers, versions) = mirror.held_counts();
        Counts {
            providers,
            versions,
            archives,
            bytes,
            size: bytesize::ByteSize(bytes).display().iec().to_string(),
            modules: mirror.held_modules().len(),
            releases: mirror.held_releases().len(),
        }
    });
    let recent = if signed_in {
        mirror
            .arrivals()
            .into_iter()
            .map(|(item, at)| arrival(&item, at))
            .take(RECENT_SHOWN)
            .collect()
    } else {
        Vec::new()
    };
    Home {
        counts,
        recipes: recipes(site, req),
        recent,
    }
}

fn arrival(item: &Item, at_ms: u64) -> Arrival {
    let at = humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(at_ms)).to_string();
    match item {
        Item::Archive(key) => Arrival {
            kind: "provider",
            name: key.provider.to_string(),
            version: key.version.to_string(),
            detail: key.platform.to_string(),
            at,
            href: super::routes::provider_path(&key.provider),
        },
        Item::Module(module, version) => Arrival {
            kind: "module",
            name: module.to_string(),
            version: version.to_string(),
            detail: String::new(),
            at,
            href: super::routes::module_path(module, Some(version)),
        },
        Item::Release(file) => Arrival {
            kind: "release",
            name: file.product.title().to_owned(),
            version: file.version.to_string(),
            detail: file.name.to_string(),
            at,
            href: "/-/releases".to_owned(),
        },
    }
}
