//! The operator's view (`/-/status`): how full and how effective the
//! cache is, whether its index agrees with the store, the providers held
//! ([`PROVIDERS_PER_PAGE`] at a time, `?page=2`), the module versions, what
//! the policy holds back, the keyless versions and their pins, and the
//! watch. Built from the mirror's memory, never from a walk of the store,
//! so its cost does not grow with the cache.

use std::fmt::Write as _;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::layout::Layout;
use super::recipes::{recipes, Recipes};
use super::{PageAnswer, PageRequest, Site};
use crate::error::RequestError;

/// How many providers one page lists.
pub const PROVIDERS_PER_PAGE: usize = 100;

/// How many module versions, keyless versions and held-back versions the
/// page lists.
pub const LISTED: usize = 200;

/// How many items of a watch pass's stored list and failures it shows.
pub const WATCH_ITEMS_SHOWN: usize = 50;

/// The operator's view.
#[derive(Debug, Serialize)]
pub struct Status {
    /// The cache's figures.
    pub cache: CacheFigures,
    /// The providers of this page, each with its versions, newest first.
    pub providers: Vec<HeldProvider>,
    /// Providers held, in all.
    pub provider_count: usize,
    /// Versions held, in all.
    pub version_count: usize,
    /// This page of providers (from 1), and how many there are.
    pub page: usize,
    /// How many pages of providers there are.
    pub pages: usize,
    /// Module versions held (the first [`LISTED`]).
    pub modules: Vec<HeldModule>,
    /// Module versions held, in all.
    pub module_count: usize,
    /// Versions the policy left out of the lists last made.
    pub held_back: Vec<HeldBack>,
    /// Keyless provider versions pinned, and answers that differed.
    pub keyless: Keyless,
    /// The watch.
    pub watch: WatchView,
    /// The CLI configuration to copy.
    pub recipes: Recipes,
    /// The CLI releases held, each with how many of its files
    /// (`Terraform 1.0.3 (1 file)`).
    pub releases_held: Vec<String>,
    /// The advisory database and what the held versions come to against
    /// it, in a line; none before a database is read.
    pub advisories: Option<String>,
}

/// The cache's figures.
#[derive(Debug, Serialize)]
pub struct CacheFigures {
    /// Bytes held.
    pub bytes: u64,
    /// The bytes, for people.
    pub size: String,
    /// Archives held.
    pub archives: u64,
    /// Cache hits, and lookups, since start.
    pub hits: u64,
    /// Cache lookups since start.
    pub lookups: u64,
    /// The hit rate, for people.
    pub hit_rate: String,
    /// Free space on the cache's file system, for people.
    pub free: Option<String>,
    /// Whether that is below `cache.min_free_space`.
    pub low_on_space: bool,
    /// Whether the index agrees with the store, for people.
    pub index: String,
}

/// A provider and its versions held.
#[derive(Debug, Serialize)]
pub struct HeldProvider {
    /// Its address.
    pub provider: String,
    /// Its page.
    pub href: String,
    /// Versions, newest first, with their platforms.
    pub versions: Vec<(String, Vec<String>)>,
}

/// A module version held.
#[derive(Debug, Serialize)]
pub struct HeldModule {
    /// The module.
    pub module: String,
    /// The version.
    pub version: String,
    /// Where it was packaged from (`git <commit>`, `archive`).
    pub source: String,
    /// Its page.
    pub href: String,
}

/// A version the policy held back.
#[derive(Debug, Serialize)]
pub struct HeldBack {
    /// The provider or module.
    pub subject: String,
    /// The version.
    pub version: String,
    /// The rule that decided.
    pub rule: String,
    /// Its reason.
    pub reason: String,
}

/// Keyless provider versions.
#[derive(Debug, Serialize)]
pub struct Keyless {
    /// How many are pinned.
    pub count: usize,
    /// The first [`LISTED`]: provider, version, platforms, when pinned and
    /// re-pins.
    pub pins: Vec<KeylessRow>,
    /// Answers refused since start for differing from a pin: when, what.
    pub incidents: Vec<(String, String)>,
}

/// One keyless version.
#[derive(Debug, Serialize)]
pub struct KeylessRow {
    /// The provider.
    pub provider: String,
    /// The version.
    pub version: String,
    /// The platforms pinned.
    pub platforms: String,
    /// When it was pinned, and its re-pins.
    pub pinned: String,
}

/// The watch, as the page says it.
#[derive(Debug, Serialize)]
pub struct WatchView {
    /// What is watched and how often; `None` when nothing is.
    pub watched: Option<String>,
    /// The last pass, the running one, the next one.
    pub passes: Option<String>,
    /// The last pass's failures and stored items: outcome, what.
    pub items: Vec<(String, String)>,
}

#[derive(Template)]
#[template(path = "status.html")]
struct StatusPage<'a> {
    layout: &'a Layout,
    status: &'a Status,
}

/// `/-/status`.
pub fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let wanted = req
        .param("page")
        .and_then(|p| p.parse::<usize>().ok())
        .unwrap_or(1);
    let status = status(site, req, wanted);
    if req.route.json {
        return Ok(PageAnswer::json(&status));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &StatusPage {
            layout,
            status: &status,
        },
    ))
}

fn status(site: Site<'_>, req: &PageRequest<'_>, wanted: usize) -> Status {
    let mirror = site.mirror;
    let table = mirror.held_page(wanted, PROVIDERS_PER_PAGE);
    let providers = table
        .rows
        .iter()
        .map(|(provider, versions)| HeldProvider {
            href: crate::address::Provider::from_source(provider)
                .map(|p| super::routes::provider_path(&p))
                .unwrap_or_default(),
            provider: provider.clone(),
            versions: versions
                .iter()
                .map(|(v, platforms)| (v.to_string(), platforms.clone()))
                .collect(),
        })
        .collect();
    let held = mirror.held_modules();
    let modules = held
        .iter()
        .take(LISTED)
        .map(|pin| HeldModule {
            module: pin.module.to_string(),
            version: pin.version.to_string(),
            source: match &pin.commit {
                Some(commit) => format!("git {}", commit.get(..12).unwrap_or(commit)),
                None => pin.source_kind.clone(),
            },
            href: super::routes::module_path(&pin.module, Some(&pin.version)),
        })
        .collect();
    let held_back = mirror
        .held_back()
        .into_iter()
        .take(LISTED)
        .map(|d| HeldBack {
            subject: d.subject,
            version: d.version,
            rule: d.rule,
            reason: d.reason,
        })
        .collect();
    Status {
        cache: figures(site),
        providers,
        provider_count: table.providers,
        version_count: table.versions,
        page: table.page,
        pages: table.pages,
        modules,
        module_count: held.len(),
        held_back,
        keyless: keyless(site),
        watch: watch(site),
        recipes: recipes(site, req),
        advisories: advisories_line(mirror),
        releases_held: (mirror.held_releases().into_iter())
            .map(|((product, version), files)| {
                let plural = if files == 1 { "" } else { "s" };
                format!("{} {version} ({files} file{plural})", product.title())
            })
            .collect(),
    }
}

fn figures(site: Site<'_>) -> CacheFigures {
    let mirror = site.mirror;
    let (bytes, archives) = mirror.usage();
    let (hits, lookups) = mirror.metrics().hit_rate();
    #[allow(clippy::cast_precision_loss)] // a rounded percentage
    let hit_rate = if lookups == 0 {
        "n/a".to_owned()
    } else {
        format!("{:.0}%", hits as f64 * 100.0 / lookups as f64)
    };
    CacheFigures {
        bytes,
        size: bytesize::ByteSize(bytes).display().iec().to_string(),
        archives,
        hits,
        lookups,
        hit_rate,
        free: mirror
            .free_space()
            .map(|f| bytesize::ByteSize(f).display().iec().to_string()),
        low_on_space: mirror.room_for(0).is_err(),
        index: index_state(site),
    }
}

/// Whether the counts are the store's: a reconciliation under way, or
/// when the last one ended and what it corrected.
fn index_state(site: Site<'_>) -> String {
    let status = site.mirror.index_status();
    if let Some((reason, since)) = status.reconciling {
        return format!(
            "index: reconciling with the store since {} ({reason}); nothing is evicted meanwhile",
            at(since)
        );
    }
    match status.last {
        Some(last) if last.corrections.none() => {
            format!("index: agreed with the store at {}", at(last.ended_ms))
        }
        Some(last) => format!(
            "index: reconciled with the store at {} ({} added, {} dropped, {} resized)",
            at(last.ended_ms),
            last.corrections.added,
            last.corrections.dropped,
            last.corrections.resized
        ),
        None => String::new(),
    }
}

fn keyless(site: Site<'_>) -> Keyless {
    let pins = site.mirror.keyless_versions();
    let incidents = site.mirror.pin_incidents();
    Keyless {
        count: pins.len(),
        pins: pins
            .iter()
            .take(LISTED)
            .map(|pin| {
                let repinned = match (pin.replaced.len(), &pin.repin) {
                    (_, Some(_)) => " (re-pin approved, pending)".to_owned(),
                    (0, None) => String::new(),
                    (n, None) => format!(" (re-pinned {n}×)"),
                };
                KeylessRow {
                    provider: pin.provider.to_string(),
                    version: pin.version.to_string(),
                    platforms: (pin.packages.keys())
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "),
                    pinned: format!("{}{repinned}", at(pin.pinned_at_ms)),
                }
            })
            .collect(),
        incidents: incidents
            .iter()
            .rev()
            .map(|i| (at(i.at_ms), i.what.clone()))
            .collect(),
    }
}

fn watch(site: Site<'_>) -> WatchView {
    let Some(watch) = site.watch else {
        return WatchView {
            watched: None,
            passes: None,
            items: Vec::new(),
        };
    };
    let (providers, modules, releases) = watch.watched();
    let releases = if releases == 0 {
        String::new()
    } else {
        format!(" and {releases} CLI release entries")
    };
    let watched = Some(format!(
        "{providers} providers and {modules} modules{releases} are watched: their origins are asked for new versions every {}.",
        humantime::format_duration(watch.interval())
    ));
    if site.mirror.offline() {
        return WatchView {
            watched,
            passes: Some("This mirror is offline: nothing is watched.".into()),
            items: Vec::new(),
        };
    }
    let status = watch.status();
    let mut passes = match &status.last {
        None => "No pass has finished yet.".to_owned(),
        Some(pass) => format!(
            "Last pass {}: {} stored, {} already cached, {} failed{}.",
            at(pass.finished_ms),
            pass.stored.len(),
            pass.cached,
            pass.failures.len(),
            if pass.failures.is_empty() {
                String::new()
            } else {
                format!(
                    " (tried again sooner; {} failed passes in a row)",
                    status.failed_in_a_row
                )
            }
        ),
    };
    if let Some(ms) = status.running_since_ms {
        let _ = write!(passes, " A pass is running since {}.", at(ms));
    }
    if let Some(ms) = status.next_ms {
        let _ = write!(passes, " Next pass {}.", at(ms));
    }
    if let Some(ms) = status.last_success_ms {
        let _ = write!(passes, " Last pass without a failure {}.", at(ms));
    }
    let items = status
        .last
        .map(|pass| {
            let failed = pass.failures.into_iter().take(WATCH_ITEMS_SHOWN);
            let stored = pass.stored.into_iter().take(WATCH_ITEMS_SHOWN);
            failed
                .map(|f| ("failed".to_owned(), f))
                .chain(stored.map(|s| ("stored".to_owned(), s)))
                .collect()
        })
        .unwrap_or_default();
    WatchView {
        watched,
        passes: Some(passes),
        items,
    }
}

/// A time, RFC 3339 to the second.
fn at(ms: u64) -> String {
    humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(ms)).to_string()
}

/// The advisory database and the census, in a line.
fn advisories_line(mirror: &crate::mirror::Mirror) -> Option<String> {
    let held = mirror.advisories_now()?;
    let Some(current) = &held.current else {
        return Some("no advisory database is imported (tfmirror advisories import)".into());
    };
    let mut line = super::advisory::describe(&current.source);
    match mirror
        .advisory_census()
        .filter(|c| c.database == current.sha256)
    {
        Some(c) => {
            let _ = write!(
                line,
                ". {} of {} provider versions held fall under known advisories{}",
                c.affected,
                c.versions,
                worst_of(&c.by_worst)
            );
            if c.not_known > 0 {
                let _ = write!(
                    line,
                    "; for {} of them what they fall under is not known (a binary not understood: `tfmirror advisories show` says why)",
                    c.not_known
                );
            }
            if c.releases > 0 {
                let _ = write!(
                    line,
                    "; {} of {} CLI releases held{}",
                    c.releases_affected,
                    c.releases,
                    worst_of(&c.releases_by_worst)
                );
            }
        }
        None => line.push_str(". The held versions are being counted against it"),
    }
    Some(line)
}

/// Counts by worst severity, worst first (` (worst: high 1, low 2)`);
/// empty for none.
fn worst_of(by_worst: &std::collections::BTreeMap<String, usize>) -> String {
    let parts: Vec<String> = crate::advisories::WORST
        .iter()
        .filter_map(|w| by_worst.get(*w).map(|n| format!("{w} {n}")))
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!(" (worst: {})", parts.join(", "))
    }
}
