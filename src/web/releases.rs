//! `/-/releases`: the Terraform and OpenTofu releases the mirror holds,
//! newest first, with the platforms of their files, each platform zip's
//! bill of materials, the advisories they fall under, and how each
//! version manager is pointed at the mirror.

use std::collections::BTreeMap;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::recipes::recipes;
use super::routes::release_bom_path;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Product, ReleaseFile, Version};
use crate::advisories::Summary;

/// The releases page.
#[derive(Debug, Serialize)]
pub struct ReleasesPage {
    /// Each product.
    pub products: Vec<ProductReleases>,
    /// The version managers' settings, when releases are served.
    pub version_managers: Option<String>,
    /// The advisory database the findings come from, described.
    pub advisory_database: Option<String>,
}

/// One product's releases held.
#[derive(Debug, Serialize)]
pub struct ProductReleases {
    /// `Terraform` or `OpenTofu`.
    pub product: &'static str,
    /// Whether `[releases]` serves it.
    pub served: bool,
    /// Its releases held, newest first.
    pub releases: Vec<Release>,
}

/// One release held.
#[derive(Debug, Serialize)]
pub struct Release {
    /// The version.
    pub version: String,
    /// The platforms of its builds held.
    pub platforms: Vec<String>,
    /// Its files held.
    pub files: Vec<String>,
    /// The bill of materials of each platform zip held: (platform, path).
    pub boms: Vec<(String, String)>,
    /// What its platform zips fall under; `None` when no advisory
    /// database is imported.
    pub advisories: Option<Summary>,
}

#[derive(Template)]
#[template(path = "releases.html")]
struct Page<'a> {
    layout: &'a Layout,
    page: &'a ReleasesPage,
}

/// `/-/releases`.
pub async fn page(site: Site<'_>, req: &PageRequest<'_>, layout: &Layout) -> PageAnswer {
    let served = site.mirror.release_state().products();
    let mut held: BTreeMap<(Product, Version), Vec<ReleaseFile>> = BTreeMap::new();
    for file in site.mirror.held_release_files() {
        held.entry((file.product, file.version.clone()))
            .or_default()
            .push(file);
    }
    let mut products = Vec::new();
    for product in Product::ALL {
        let mut releases = Vec::new();
        for ((_, version), files) in held.iter().filter(|((p, _), _)| *p == product) {
            releases.push(release(site, product, version, files).await);
        }
        releases.reverse();
        products.push(ProductReleases {
            product: product.title(),
            served: served.contains(&product),
            releases,
        });
    }
    let page = ReleasesPage {
        products,
        version_managers: recipes(site, req).version_managers,
        advisory_database: (site.mirror.advisories().await.current.as_ref())
            .map(|c| super::advisory::describe(&c.source)),
    };
    if req.route.json {
        return PageAnswer::json(&page);
    }
    PageAnswer::html(
        StatusCode::OK,
        &Page {
            layout,
            page: &page,
        },
    )
}

/// What the page says of one release held.
async fn release(
    site: Site<'_>,
    product: Product,
    version: &Version,
    files: &[ReleaseFile],
) -> Release {
    let mut files = files.to_vec();
    files.sort();
    let mut platforms: Vec<String> = (files.iter())
        .filter_map(|f| product.platform_of(version, &f.name).map(|p| p.to_string()))
        .collect();
    platforms.sort();
    platforms.dedup();
    let boms = (files.iter())
        .filter_map(|f| Some((f.zip_platform()?.to_string(), release_bom_path(f))))
        .collect();
    Release {
        version: version.to_string(),
        platforms,
        boms,
        advisories: site
            .mirror
            .release_advisories(product, version, &files)
            .await,
        files: files.iter().map(|f| f.name.to_string()).collect(),
    }
}
