//! `/-/releases`: the Terraform and OpenTofu releases the mirror holds,
//! newest first, with the platforms of their files, and how each version
//! manager is pointed at the mirror.

use std::collections::BTreeMap;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::recipes::recipes;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Product, Version};

/// The releases page.
#[derive(Debug, Serialize)]
pub struct ReleasesPage {
    /// Each product.
    pub products: Vec<ProductReleases>,
    /// The version managers' settings, when releases are served.
    pub version_managers: Option<String>,
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
}

#[derive(Template)]
#[template(path = "releases.html")]
struct Page<'a> {
    layout: &'a Layout,
    page: &'a ReleasesPage,
}

/// `/-/releases`.
pub fn page(site: Site<'_>, req: &PageRequest<'_>, layout: &Layout) -> PageAnswer {
    let served = site.mirror.release_state().products();
    let mut held: BTreeMap<(Product, Version), Vec<String>> = BTreeMap::new();
    for file in site.mirror.held_release_files() {
        held.entry((file.product, file.version.clone()))
            .or_default()
            .push(file.name.to_string());
    }
    let products = Product::ALL
        .into_iter()
        .map(|product| {
            let mut releases: Vec<Release> = (held.iter())
                .filter(|((p, _), _)| *p == product)
                .map(|((_, version), files)| {
                    let mut files = files.clone();
                    files.sort();
                    let mut platforms: Vec<String> = (files.iter())
                        .filter_map(|f| {
                            let name = crate::address::ArtifactName::parse(f).ok()?;
                            product.platform_of(version, &name).map(|p| p.to_string())
                        })
                        .collect();
                    platforms.sort();
                    platforms.dedup();
                    Release {
                        version: version.to_string(),
                        platforms,
                        files,
                    }
                })
                .collect();
            releases.reverse();
            ProductReleases {
                product: product.title(),
                served: served.contains(&product),
                releases,
            }
        })
        .collect();
    let page = ReleasesPage {
        products,
        version_managers: recipes(site, req).version_managers,
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
