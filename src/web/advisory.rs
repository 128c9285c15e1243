//! An advisory's page (`/-/advisories/:id`): what the imported database
//! says of it: its other IDs, summary, severity, whether it was reviewed,
//! the modules and versions it affects and the packages it names. Its
//! details are Markdown from the database's authors, untrusted: they go
//! through the pages' one sanitiser ([`super::markdown`]), and nothing
//! on the page loads from outside the mirror. An ID known only as another
//! advisory's alias finds that advisory.

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::{PageAnswer, PageRequest, Site};
use crate::address::AdvisoryId;
use crate::advisories::database::Advisory;
use crate::advisories::range::Event;
use crate::error::RequestError;

/// An advisory's page.
#[derive(Debug, Serialize)]
pub struct AdvisoryPage {
    /// Its ID.
    pub id: String,
    /// Its other IDs.
    pub aliases: Vec<String>,
    /// One line.
    pub summary: String,
    /// Its details, as the database wrote them (Markdown), cut at import
    /// where they were longer than the pages use.
    pub details: String,
    /// How many bytes the entry's details had where they were cut; 0
    /// where they are whole.
    pub details_cut: u64,
    /// Its severity, where rated.
    pub severity: Option<String>,
    /// What the severity was read from.
    pub severity_from: String,
    /// `reviewed`, `unreviewed` or `unknown`.
    pub review: String,
    /// When published and last modified.
    pub published: String,
    /// When last modified.
    pub modified: String,
    /// Its page at its database.
    pub url: String,
    /// Each module it affects.
    pub affected: Vec<AffectedView>,
    /// The database it is read from.
    pub database: String,
}

/// A module an advisory affects.
#[derive(Debug, Serialize)]
pub struct AffectedView {
    /// The module path, or `stdlib`.
    pub module: String,
    /// Each range, in words.
    pub ranges: Vec<String>,
    /// The packages it names, with their symbols.
    pub packages: Vec<String>,
}

#[derive(Template)]
#[template(path = "advisory.html")]
struct Page<'a> {
    layout: &'a Layout,
    advisory: &'a AdvisoryPage,
    /// The details, sanitised.
    details: String,
}

/// `/-/advisories/:id`.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
    id: &AdvisoryId,
) -> Result<PageAnswer, RequestError> {
    let held = site.mirror.advisories().await;
    let (Some(db), Some(current)) = (held.db.as_ref(), held.current.as_ref()) else {
        return Err(RequestError::NoSuchPage(
            "no advisory database is imported: tfmirror advisories import keeps one".into(),
        ));
    };
    let wanted = id.as_str();
    let advisories = &db.stored.advisories;
    let found = advisories
        .iter()
        .find(|a| a.id == wanted)
        .or_else(|| {
            // Known by that name to several: the Go database's entry speaks.
            let mut named = advisories
                .iter()
                .filter(|a| a.aliases.iter().any(|x| x == wanted));
            let first = named.next()?;
            Some(named.find(|a| a.id.starts_with("GO-")).unwrap_or(first))
        })
        .ok_or_else(|| {
            RequestError::NoSuchPage(format!(
                "the advisory database ({}) holds no advisory {wanted}",
                current.source.name
            ))
        })?;
    let data = view(found, &current.source);
    if req.route.json {
        return Ok(PageAnswer::json(&data));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &Page {
            layout,
            details: super::markdown::render(&data.details),
            advisory: &data,
        },
    ))
}

/// The page's data.
fn view(a: &Advisory, source: &crate::advisories::database::Source) -> AdvisoryPage {
    AdvisoryPage {
        id: a.id.clone(),
        aliases: a.aliases.clone(),
        summary: a.summary.clone(),
        details: a.details.clone(),
        details_cut: a.details_cut,
        severity: a.severity.map(|s| s.as_str().to_string()),
        severity_from: a.severity_from.clone(),
        review: format!("{:?}", a.review).to_lowercase(),
        published: a.published.clone(),
        modified: a.modified.clone(),
        // Only a web address is a link; the database's text is untrusted.
        url: Some(&a.url)
            .filter(|u| u.starts_with("https://") || u.starts_with("http://"))
            .cloned()
            .unwrap_or_default(),
        affected: a
            .affected
            .iter()
            .map(|m| AffectedView {
                module: m.module.clone(),
                ranges: m
                    .ranges
                    .iter()
                    .chain(&m.custom_ranges)
                    .map(|r| in_words(r))
                    .chain(m.versions.iter().map(|v| format!("version {v}")))
                    .collect(),
                packages: m
                    .imports
                    .iter()
                    .map(|i| {
                        if i.symbols.is_empty() {
                            i.path.clone()
                        } else {
                            format!("{} ({})", i.path, i.symbols.join(", "))
                        }
                    })
                    .collect(),
            })
            .collect(),
        database: describe(source),
    }
}

/// A range's events, in words.
fn in_words(events: &[Event]) -> String {
    events
        .iter()
        .map(|e| match e {
            Event::Introduced(v) if v == "0" => "from the first version".to_string(),
            Event::Introduced(v) => format!("from {v}"),
            Event::Fixed(v) => format!("fixed in {v}"),
            Event::LastAffected(v) => format!("up to and including {v}"),
            Event::Limit(v) => format!("below {v}"),
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// The database, in a line: what was imported and how up to date it is.
pub fn describe(source: &crate::advisories::database::Source) -> String {
    let imported =
        humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(source.imported_at_ms));
    let newest = if source.newest_modified.starts_with("0001-") || source.newest_modified.is_empty()
    {
        "its entries carry no modification times".to_string()
    } else {
        format!("newest entry modified {}", source.newest_modified)
    };
    format!(
        "{} advisories from {} ({}), imported {imported}; {newest}",
        source.entries, source.name, source.kind
    )
}
