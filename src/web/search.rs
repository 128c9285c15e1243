//! `/-/search?q=`: providers, modules and CLI releases held, by address;
//! and the held versions' documentation pages, from the documentation
//! search index ([`crate::mirror::doc_search`]).
//! A name matches as a whole first (`registry.terraform.io/hashicorp/aws`,
//! `hashicorp/aws` on its default registry, or the type `aws`), then by its
//! start, then anywhere; case does not matter. Providers are found among
//! the names the index keeps as it changes (a few per held provider, in
//! lower case), read after its lock is let go: no archive, and no
//! provider's address parsed again, for each search.

use std::collections::BTreeMap;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Module, Provider};
use crate::mirror::doc_search::DocSearch;
use crate::mirror::residency::names;

/// The most results of one kind a search lists.
const SHOWN: usize = 100;

/// The most documentation pages a search lists.
const SHOWN_DOCS: usize = 50;

/// A search's results.
#[derive(Debug, Serialize)]
pub struct Results {
    /// What was searched for.
    pub query: String,
    /// Providers, best first.
    pub providers: Vec<Hit>,
    /// Modules, best first.
    pub modules: Vec<Hit>,
    /// CLI releases, best first.
    pub releases: Vec<Hit>,
    /// Documentation pages of the versions held, best first (at most
    /// 50), each once with the held versions that have it: by name, title
    /// and words of their text.
    pub docs: Vec<DocResult>,
    /// What the documentation search could do: `complete`; `partial`
    /// while its index is still being made from the store; `none` where
    /// there is no index (documentation is off); else why it failed.
    pub docs_search: String,
    /// Matches left out past the first 100 of a kind.
    pub more: usize,
}

/// One documentation page found.
#[derive(Debug, Serialize)]
pub struct DocResult {
    /// The provider's address.
    pub provider: String,
    /// The newest held version that has it.
    pub version: String,
    /// The older held versions that have it, newest first.
    pub older: Vec<String>,
    /// What the page describes (`resource`, `data-source`, …).
    pub kind: crate::docs::DocKind,
    /// Its name.
    pub name: String,
    /// Its title.
    pub title: String,
    /// Its page in the newest version.
    pub href: String,
}

/// One result.
#[derive(Debug, Serialize)]
pub struct Hit {
    /// The address, or the release's name.
    pub name: String,
    /// How it matched: `exact`, `prefix` or `substring`.
    pub matched: &'static str,
    /// The versions held, newest first (the first few).
    pub versions: Vec<String>,
    /// Its page.
    pub href: String,
}

#[derive(Template)]
#[template(path = "search.html")]
struct SearchPage<'a> {
    layout: &'a Layout,
    results: &'a Results,
}

/// `/-/search`.
pub async fn page(site: Site<'_>, req: &PageRequest<'_>, layout: &Layout) -> PageAnswer {
    let query = req.param("q").unwrap_or_default();
    let results = search(site, query.trim()).await;
    if req.route.json {
        return PageAnswer::json(&results);
    }
    PageAnswer::html(
        StatusCode::OK,
        &SearchPage {
            layout,
            results: &results,
        },
    )
}

/// How well one of `names` matches `query` (already lower case): 0 for a
/// whole name, 1 for a start, 2 anywhere.
fn rank(query: &str, names: &[String]) -> Option<u8> {
    (names.iter())
        .filter_map(|name| names::rank(query, &name.to_lowercase()))
        .min()
}

const MATCHED: [&str; 3] = ["exact", "prefix", "substring"];

/// The results for `query`.
pub async fn search(site: Site<'_>, query: &str) -> Results {
    let q = query.to_lowercase();
    let mirror = site.mirror;
    // Providers from the names the index keeps, read after its lock.
    let found = mirror.provider_names().find(&q, SHOWN);
    let mut more = found.matched - found.shown.len();
    let mut providers: Vec<Hit> = (found.shown.into_iter())
        .map(|(r, name)| {
            let href = Provider::from_source(&name)
                .map(|p| super::routes::provider_path(&p))
                .unwrap_or_default();
            hit(r, name.to_string(), Vec::new(), href)
        })
        .collect();
    for hit in &mut providers {
        if let Ok(provider) = Provider::from_source(&hit.name) {
            hit.versions = (mirror.held_versions(&provider).into_iter())
                .take(5)
                .map(|(v, _)| v.to_string())
                .collect();
        }
    }
    let mut keep = |mut hits: Vec<(u8, Hit)>| {
        hits.sort_by(|a, b| (a.0, &a.1.name).cmp(&(b.0, &b.1.name)));
        more += hits.len().saturating_sub(SHOWN);
        hits.into_iter()
            .take(SHOWN)
            .map(|(_, h)| h)
            .collect::<Vec<_>>()
    };
    let mut by_module: BTreeMap<Module, Vec<String>> = BTreeMap::new();
    for pin in mirror.held_modules() {
        by_module
            .entry(pin.module.clone())
            .or_default()
            .push(pin.version.to_string());
    }
    let modules = by_module
        .into_iter()
        .filter_map(|(module, mut versions)| {
            let name = module.to_string();
            let short = format!("{}/{}/{}", module.namespace, module.name, module.system);
            let r = rank(&q, &[name.clone(), short, module.name.to_string()])?;
            versions.sort_by(|a, b| {
                let v = |s: &str| crate::address::Version::parse(s).ok();
                v(b).cmp(&v(a))
            });
            versions.truncate(5);
            let href = super::routes::module_path(&module, None);
            Some((r, hit(r, name, versions, href)))
        })
        .collect();
    let modules = keep(modules);
    let releases = (mirror.held_releases().into_keys())
        .filter_map(|(product, version)| {
            let name = format!("{} {version}", product.title());
            let r = rank(
                &q,
                &[
                    name.clone(),
                    product.as_str().to_owned(),
                    version.to_string(),
                ],
            )?;
            Some((
                r,
                hit(r, name, vec![version.to_string()], "/-/releases".into()),
            ))
        })
        .collect();
    let releases = keep(releases);
    let (docs, docs_search) = search_docs(site, query).await;
    Results {
        query: query.to_owned(),
        providers,
        modules,
        releases,
        docs,
        docs_search,
        more,
    }
}

/// The documentation pages `query` finds, and what the search could do.
async fn search_docs(site: Site<'_>, query: &str) -> (Vec<DocResult>, String) {
    let (pages, state) = match site.mirror.search_docs(query, SHOWN_DOCS).await {
        DocSearch::NoIndex => return (Vec::new(), "none".into()),
        DocSearch::Failed(e) => return (Vec::new(), e),
        DocSearch::Found { pages, complete } => {
            (pages, if complete { "complete" } else { "partial" })
        }
    };
    let docs = (pages.into_iter())
        .filter_map(|p| {
            let name = crate::address::DocName::parse(&p.name).ok()?;
            let (newest, older) = p.versions.split_first()?;
            Some(DocResult {
                href: super::routes::doc_page_path(&p.provider, newest, p.kind, &name),
                provider: p.provider.to_string(),
                version: newest.to_string(),
                older: older.iter().map(ToString::to_string).collect(),
                kind: p.kind,
                name: p.name,
                title: p.title,
            })
        })
        .collect();
    (docs, state.into())
}

fn hit(rank: u8, name: String, versions: Vec<String>, href: String) -> Hit {
    Hit {
        name,
        matched: MATCHED[usize::from(rank)],
        versions,
        href,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_documentation_page_s_title_and_name_are_shown_as_text() {
        let hostile = "<script>alert(1)</script>\"><img src=x onerror=alert(2)>";
        let layout = Layout {
            version: "test",
            auth_on: false,
            signed_in: true,
            session: false,
            name: None,
            grant: None,
            csrf: String::new(),
            query: hostile.into(),
            json_url: None,
            here: "/-/search".into(),
        };
        let results = Results {
            query: hostile.into(),
            providers: Vec::new(),
            modules: Vec::new(),
            releases: Vec::new(),
            docs: vec![DocResult {
                provider: hostile.into(),
                version: hostile.into(),
                older: vec![hostile.into()],
                kind: crate::docs::DocKind::Resource,
                name: hostile.into(),
                title: hostile.into(),
                href: hostile.into(),
            }],
            docs_search: "partial".into(),
            more: 0,
        };
        let html = SearchPage {
            layout: &layout,
            results: &results,
        }
        .render()
        .unwrap();
        assert!(
            html.contains("<ul class=\"results\" id=\"docs\">"),
            "{html}"
        );
        assert!(html.contains("id=\"docs-partial\""), "{html}");
        for never in ["<script>alert", "<img", "\"><"] {
            assert!(!html.contains(never), "{never}: {html}");
        }
        // Each of the six values, in the list, as text.
        let list = &html
            [html.find("id=\"docs\"").unwrap()..html.find("</ul>\n\n<p class=\"note\"").unwrap()];
        assert_eq!(
            list.matches("&#60;script&#62;alert(1)&#60;/script&#62;&#34;&#62;&#60;img src=x onerror=alert(2)&#62;").count(),
            6,
            "{list}"
        );
    }

    #[test]
    fn a_whole_name_ranks_before_its_start_and_its_start_before_the_rest() {
        let names = |s: &[&str]| s.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let aws = names(&[
            "registry.terraform.io/hashicorp/aws",
            "aws",
            "hashicorp/aws",
        ]);
        assert_eq!(rank("hashicorp/aws", &aws), Some(0));
        assert_eq!(rank("aws", &aws), Some(0));
        assert_eq!(rank("hashi", &aws), Some(1));
        assert_eq!(rank("corp/a", &aws), Some(2));
        assert_eq!(rank("azure", &aws), None);
        assert_eq!(rank("", &aws), Some(2), "an empty search lists everything");
        assert_eq!(
            rank("aws", &names(&["AWS"])),
            Some(0),
            "case does not matter"
        );
    }
}
