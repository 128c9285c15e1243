//! "Will it install?" (`/-/check`): a lock file pasted, or a configuration
//! sent as files or as one archive (`.tar.gz`, `.tgz`, `.zip`), checked as
//! `tfmirror check --from` checks it: for every provider version, platform
//! and module it needs, held, missing or not matching, and why, by
//! Terraform's or OpenTofu's rules. What is sent is read in memory and
//! forgotten: nothing is stored, and the mirror answers from what it
//! holds, asking no origin ([`crate::mirror::Mirror::held_only`]).

use std::io::Read;

use askama::Template;
use http::StatusCode;
use serde::Serialize;

use super::form::Form;
use super::layout::Layout;
use super::{PageAnswer, PageRequest, Site};
use crate::address::{Platform, Product};
use crate::error::RequestError;
use crate::module_source::configuration::{fs::Package, read_in, ReadOptions};
use crate::site::readiness::{self, Finding, Report};
use crate::site::selection::{self, Selection};

/// The most files one configuration may have.
const MAX_FILES: usize = 5000;

/// The most bytes a configuration's files may unpack to.
const MAX_UNPACKED: u64 = 32 << 20;

/// What was asked, and the verdict.
#[derive(Debug, Serialize)]
pub struct CheckPage {
    /// Whose rules read it: `auto`, `terraform` or `tofu`.
    pub client: String,
    /// The platforms checked, as given.
    pub platforms: String,
    /// The lock file pasted, given back to edit.
    pub lock: String,
    /// The verdict, once something was sent.
    pub verdict: Option<Verdict>,
}

/// The verdict.
#[derive(Debug, Serialize)]
pub struct Verdict {
    /// Whether everything needed is held and matches its lock file.
    pub ready: bool,
    /// `ready` or `not ready`, with the counts, as `tfmirror check` says it.
    pub summary: String,
    /// Whose rules read the configuration.
    pub rules: Option<String>,
    /// Each thing needed.
    pub items: Vec<Row>,
    /// The versions a rule by advisory hides from the constraints, newer
    /// than those chosen, as `tfmirror check` prints them.
    pub hidden: Vec<String>,
}

/// One thing needed.
#[derive(Debug, Serialize)]
pub struct Row {
    /// `held`, `missing` or `mismatch`.
    pub status: &'static str,
    /// What `tfmirror check` prints for it.
    pub text: String,
    /// The item, as `tfmirror check --json` gives it.
    pub item: readiness::Item,
    /// The known advisories of a held provider package.
    pub advisories: Vec<crate::advisories::Finding>,
    /// Why its advisories are not wholly known, where they are not: each
    /// executable that could not be told.
    pub advisories_unknown: Vec<String>,
}

#[derive(Template)]
#[template(path = "check.html")]
struct Page<'a> {
    layout: &'a Layout,
    page: &'a CheckPage,
}

/// `/-/check`.
pub async fn page(
    site: Site<'_>,
    req: &PageRequest<'_>,
    form: Option<&Form>,
    layout: &Layout,
) -> Result<PageAnswer, RequestError> {
    let text = |name: &str| form.and_then(|f| f.text(name)).unwrap_or_default();
    let mut page = CheckPage {
        client: Some(text("client"))
            .filter(|c| !c.is_empty())
            .unwrap_or("auto".into()),
        platforms: Some(text("platforms"))
            .filter(|p| !p.trim().is_empty())
            .unwrap_or_else(|| Platform::current().to_string()),
        lock: text("lock"),
        verdict: None,
    };
    if let Some(form) = form {
        let selection = selection_of(&page, form)?;
        let mut report = Report::default();
        crate::mirror::Mirror::held_only(readiness::check(site.mirror, &selection, &mut report))
            .await;
        let mut made = verdict(&report, &selection);
        for (i, found) in readiness::advisories(site.mirror, &report).await {
            if let Some(row) = made.items.get_mut(i) {
                row.advisories = found.findings;
                row.advisories_unknown = found
                    .unknown
                    .iter()
                    .map(crate::advisories::Unknown::describe)
                    .collect();
            }
        }
        page.verdict = Some(made);
    }
    if req.route.json {
        if page.verdict.is_none() {
            return Err(RequestError::InvalidRequest(
                "send a lock file (lock) or a configuration's files (files) as a form".into(),
            ));
        }
        return Ok(PageAnswer::json(&page));
    }
    Ok(PageAnswer::html(
        StatusCode::OK,
        &Page {
            layout,
            page: &page,
        },
    ))
}

fn bad(e: impl std::fmt::Display) -> RequestError {
    RequestError::InvalidRequest(e.to_string())
}

/// What the form asks to be checked.
fn selection_of(page: &CheckPage, form: &Form) -> Result<Selection, RequestError> {
    let platforms: Vec<Platform> = page
        .platforms
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|p| !p.is_empty())
        .map(|p| Platform::parse(p).map_err(|e| bad(format!("platforms: {e}"))))
        .collect::<Result<_, _>>()?;
    if platforms.is_empty() {
        return Err(bad("give at least one platform, such as linux_amd64"));
    }
    let client = match page.client.as_str() {
        "auto" => None,
        other => Some(
            other
                .parse::<Product>()
                .map_err(|e| bad(format!("client: {e}")))?,
        ),
    };
    let mut files = Vec::new();
    for part in form.files("files") {
        let name = part.file_name.clone().unwrap_or_default();
        files.extend(unpack(&name, &part.bytes)?);
        if files.len() > MAX_FILES {
            return Err(RequestError::TooLarge(format!(
                "the configuration has more than {MAX_FILES} files"
            )));
        }
    }
    if files.is_empty() {
        if page.lock.trim().is_empty() {
            return Err(bad(
                "paste a lock file, or choose a configuration's files or an archive of them",
            ));
        }
        let locks =
            selection::lock_text(&page.lock, "the lock file").map_err(|e| bad(format!("{e:#}")))?;
        return Ok(selection::from_locks(locks, &platforms));
    }
    let root = root_of(&files);
    let package = Package::from_files(&files).map_err(|e| bad(format!("{e:#}")))?;
    let read = read_in(
        &package,
        std::path::Path::new(&root),
        &ReadOptions::client(client),
    )
    .map_err(|e| bad(format!("{e:#}")))?;
    let lock_path = if root.is_empty() {
        ".terraform.lock.hcl".to_owned()
    } else {
        format!("{root}/.terraform.lock.hcl")
    };
    let locks = match files.iter().find(|(p, _)| *p == lock_path) {
        Some((_, bytes)) => {
            selection::lock_text(&String::from_utf8_lossy(bytes), ".terraform.lock.hcl")
                .map_err(|e| bad(format!("{e:#}")))?
        }
        None => Vec::new(),
    };
    selection::from_read(read, locks, &platforms).map_err(|e| bad(format!("{e:#}")))
}

/// The root module's directory among `files`: the top, unless every file
/// is in one directory (an archive of a repository's directory).
fn root_of(files: &[(String, Vec<u8>)]) -> String {
    let top: std::collections::BTreeSet<&str> = files
        .iter()
        .map(|(p, _)| p.split_once('/').map_or("", |(dir, _)| dir))
        .collect();
    match top.into_iter().collect::<Vec<_>>().as_slice() {
        [dir] if !dir.is_empty() => (*dir).to_owned(),
        _ => String::new(),
    }
}

/// One file of the archive `name`, read within the limits: `total` bytes
/// and `files` files unpacked before it.
fn unpacked(
    file: impl Read,
    name: &str,
    total: &mut u64,
    files: usize,
) -> Result<Vec<u8>, RequestError> {
    let mut content = Vec::new();
    file.take(MAX_UNPACKED - *total + 1)
        .read_to_end(&mut content)
        .map_err(|e| bad(format!("{name}: {e}")))?;
    *total += content.len() as u64;
    if *total > MAX_UNPACKED || files >= MAX_FILES {
        return Err(RequestError::TooLarge(format!(
            "{name} unpacks to more than the page reads ({MAX_FILES} files or {MAX_UNPACKED} bytes)"
        )));
    }
    Ok(content)
}

/// The files of one part a form sent: an archive's, or the file itself.
fn unpack(name: &str, bytes: &[u8]) -> Result<Vec<(String, Vec<u8>)>, RequestError> {
    let lower = name.to_ascii_lowercase();
    if lower.ends_with(".tar.gz") || lower.ends_with(".tgz") {
        let mut out = Vec::new();
        let mut total = 0u64;
        let mut archive = tar::Archive::new(flate2::read::GzDecoder::new(bytes));
        for entry in archive.entries().map_err(|e| bad(format!("{name}: {e}")))? {
            let mut entry = entry.map_err(|e| bad(format!("{name}: {e}")))?;
            if entry.header().entry_type() != tar::EntryType::Regular {
                continue;
            }
            let path = entry
                .path()
                .map_err(|e| bad(format!("{name}: {e}")))?
                .to_string_lossy()
                .into_owned();
            let content = unpacked(&mut entry, name, &mut total, out.len())?;
            out.push((path.trim_start_matches("./").to_owned(), content));
        }
        return Ok(out);
    }
    if lower.ends_with(".zip") {
        let mut zip = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| bad(format!("{name}: {e}")))?;
        let mut out = Vec::new();
        let mut total = 0u64;
        for i in 0..zip.len() {
            let mut file = zip.by_index(i).map_err(|e| bad(format!("{name}: {e}")))?;
            if !file.is_file() {
                continue;
            }
            let Some(path) = file.enclosed_name() else {
                continue;
            };
            let path = path.to_string_lossy().into_owned();
            let content = unpacked(&mut file, name, &mut total, out.len())?;
            out.push((path, content));
        }
        return Ok(out);
    }
    // One file of the configuration, by its name alone.
    let file = name.rsplit(['/', '\\']).next().unwrap_or(name);
    Ok(vec![(file.to_owned(), bytes.to_vec())])
}

fn verdict(report: &Report, selection: &Selection) -> Verdict {
    let (held, missing, mismatched) = report.counts();
    let ready = report.ready();
    let summary = if ready && selection.needs_nothing() {
        "ready: it needs no provider, module or CLI release; init has nothing to install".to_owned()
    } else {
        format!(
            "{}: {held} held, {missing} missing, {mismatched} not matching their lock files",
            if ready { "ready" } else { "not ready" }
        )
    };
    Verdict {
        ready,
        summary,
        rules: selection.rules.map(|r| r.to_string()),
        items: report
            .items
            .iter()
            .map(|item| Row {
                status: match &item.finding {
                    Finding::Held => "held",
                    Finding::Missing {
                        why: crate::site::readiness::Why::Refused { .. },
                    } => "refused",
                    Finding::Missing { .. } => "missing",
                    Finding::LockMismatch { .. } => "mismatch",
                },
                text: item.to_string(),
                item: item.clone(),
                advisories: Vec::new(),
                advisories_unknown: Vec::new(),
            })
            .collect(),
        hidden: report.hidden.iter().map(ToString::to_string).collect(),
    }
}
