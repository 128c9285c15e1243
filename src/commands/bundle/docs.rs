//! Provider documentation in a bundle, so that it crosses the gap with
//! the versions it describes. After a version's archives come its list of
//! pages (`…/<version>/docs.json`: the list the exporting store keeps,
//! named in the manifest by its SHA-256 and size), then each page it
//! names (`…/<version>/docs/<sha256>.md`), once per version: a page
//! several versions share is carried with each, so that a site whose
//! policy denies one still receives the others whole. An export for a
//! site's inventory leaves out the pages the site keeps, and carries the
//! documentation of a version the site holds without any by itself (the
//! version's record, its list and the pages the site lacks, no archive). A bundle that
//! carries documentation is of format 4; builds before it refuse it by
//! name.
//!
//! An import keeps a version's documentation only with the version: its
//! record verified in the same bundle and the site's policy allowing it
//! (the entries of a denied version are passed over with it). Each page
//! must be one its version's list names, and hash to its name; the store
//! keeps each content once.
//! The lists are written at the end, once every page they name is kept
//! (from the bundle, or here already), so the store never holds a list
//! naming a page not there.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};

use serde::{Deserialize, Serialize};

use super::staging::{read_small, Imported};
use crate::address::{Provider, Version};
use crate::commands::store::CommandStore;
use crate::store::docs::{self as kept, VersionDocs, DOCS_FORMAT, MAX_PAGE};

/// The format of a bundle that carries documentation.
pub const FORMAT_WITH_DOCS: u32 = 4;

/// The manifest's word on one version's documentation.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ManifestDocs {
    /// The SHA-256 of its `docs.json`.
    pub sha256: String,
    /// That entry's size.
    pub size: u64,
    /// How many pages it lists.
    pub pages: usize,
}

/// The SHA-256 a page entry's name below its version names (the leaf
/// `docs/<sha256>.md`), if it is one.
pub fn page_leaf(leaf: &str) -> Option<&str> {
    let sha = leaf.strip_prefix("docs/")?.strip_suffix(".md")?;
    (sha.len() == 64 && sha.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))).then_some(sha)
}

/// A version's documentation to carry: its list's bytes, and the
/// manifest's word on them.
pub struct Carried {
    /// The list as the entry holds it.
    pub bytes: Vec<u8>,
    /// The list.
    pub docs: VersionDocs,
}

/// What an export carries of documentation: the pages checked so far.
#[derive(Default)]
pub struct Export {
    /// Pages read back whole and found to match their names.
    checked: BTreeSet<String>,
    /// Versions whose documentation is left out, and why.
    pub left_out: Vec<String>,
}

impl Export {
    /// `version`'s documentation, if the store keeps it whole: a list this
    /// build reads, and every page it names there and matching its name.
    /// Documentation that is not whole is left out, and said.
    pub fn version(
        &mut self,
        store: &CommandStore,
        (provider, version): (&Provider, &Version),
    ) -> anyhow::Result<Option<(Carried, ManifestDocs)>> {
        let what = format!("documentation of {provider} {version}");
        let docs = match store.wait(kept::version(store.store(), provider, version)) {
            Ok(Some(docs)) => docs,
            Ok(None) => return Ok(None),
            Err(e) => {
                self.left_out.push(format!("{what}: {e}"));
                return Ok(None);
            }
        };
        for page in &docs.pages {
            if self.checked.contains(&page.sha256) {
                continue;
            }
            match store.wait(kept::page(store.store(), &page.sha256)) {
                Ok(Some(_)) => {
                    self.checked.insert(page.sha256.clone());
                }
                Ok(None) => {
                    self.left_out.push(format!(
                        "{what}: its {} page {} is no longer in the store",
                        page.kind.as_str(),
                        page.name
                    ));
                    return Ok(None);
                }
                Err(e) => {
                    self.left_out.push(format!("{what}: {e}"));
                    return Ok(None);
                }
            }
        }
        let bytes = serde_json::to_vec(&docs)?;
        let named = ManifestDocs {
            sha256: crate::verify::hex(&crate::verify::Sha256::digest(&bytes)),
            size: bytes.len() as u64,
            pages: docs.pages.len(),
        };
        Ok(Some((Carried { bytes, docs }, named)))
    }
}

/// Writes a version's list into the bundle below `base`, then each page
/// it names, once, but those `site_has` says the receiving site keeps;
/// how many pages it wrote.
pub fn append<W: Write>(
    tar: &mut tar::Builder<W>,
    store: &CommandStore,
    base: &str,
    carried: &Carried,
    site_has: impl Fn(&str) -> bool,
) -> anyhow::Result<usize> {
    super::append_bytes(tar, &format!("{base}/docs.json"), &carried.bytes)?;
    let mut written = BTreeSet::new();
    for page in &carried.docs.pages {
        if site_has(&page.sha256) || !written.insert(page.sha256.as_str()) {
            continue;
        }
        let content = store
            .wait(kept::page(store.store(), &page.sha256))?
            .ok_or_else(|| {
                anyhow::anyhow!(
                    "page {} of {base} left the store while the bundle was written",
                    page.sha256
                )
            })?;
        super::append_bytes(tar, &format!("{base}/docs/{}.md", page.sha256), &content)?;
    }
    Ok(written.len())
}

/// What an import has read of documentation so far.
#[derive(Default)]
pub struct Import {
    /// Lists read and checked, to write at the end.
    lists: BTreeMap<(Provider, Version), VersionDocs>,
    /// Pages kept from this bundle.
    kept: BTreeSet<String>,
}

impl Import {
    /// Whether the page `sha256` is kept: from this bundle, or here
    /// already, whole (kept again, so that it counts as just written and
    /// no sweep takes it before its list is written).
    fn kept_here(&mut self, store: &CommandStore, sha256: &str) -> bool {
        if self.kept.contains(sha256) {
            return true;
        }
        let Ok(Some(content)) = store.wait(kept::page(store.store(), sha256)) else {
            return false;
        };
        if store
            .wait(kept::keep_page(store.store(), &content))
            .is_err()
        {
            return false;
        }
        self.kept.insert(sha256.to_owned());
        true
    }

    /// A version's `docs.json`, for a version whose record this bundle
    /// verified, against what the manifest names (`named`).
    pub fn list(
        &mut self,
        (provider, version): (&Provider, &Version),
        named: Option<&ManifestDocs>,
        entry: &mut impl Read,
    ) -> Result<(), String> {
        let named = named.ok_or("the manifest names no documentation of this version")?;
        let bytes = read_small(entry).map_err(|e| format!("reading it failed: {e}"))?;
        super::staging::as_named(&bytes, named.size, &named.sha256)?;
        let docs: VersionDocs = serde_json::from_slice(&bytes)
            .map_err(|e| format!("it is not a list of pages: {e}"))?;
        if docs.format > DOCS_FORMAT {
            return Err(format!(
                "it is of format {}; this build reads formats up to {DOCS_FORMAT}",
                docs.format
            ));
        }
        if docs.provider != *provider || docs.version != *version {
            return Err(format!("it describes {} {}", docs.provider, docs.version));
        }
        self.lists.insert((provider.clone(), version.clone()), docs);
        Ok(())
    }

    /// A page's entry below `version`: one its list (before it) names,
    /// whose content hashes to its name; kept in the store.
    pub fn page(
        &mut self,
        store: &CommandStore,
        (provider, version): (&Provider, &Version),
        sha256: &str,
        entry: &mut impl Read,
    ) -> Result<(), String> {
        let named = (self.lists.get(&(provider.clone(), version.clone())))
            .is_some_and(|l| l.pages.iter().any(|p| p.sha256 == sha256));
        if !named {
            return Err("its version's list of pages, before it, does not name it".into());
        }
        let mut content = Vec::new();
        entry
            .take(MAX_PAGE as u64 + 1)
            .read_to_end(&mut content)
            .map_err(|e| format!("reading it failed: {e}"))?;
        if content.len() > MAX_PAGE {
            return Err(format!("larger than the {MAX_PAGE} bytes kept of a page"));
        }
        let got = crate::verify::hex(&crate::verify::Sha256::digest(&content));
        if got != sha256 {
            return Err(format!("its content's SHA-256 is {got}"));
        }
        store
            .wait(kept::keep_page(store.store(), &content))
            .map_err(|e| format!("keeping it failed: {e}"))?;
        self.kept.insert(got);
        Ok(())
    }

    /// Writes each list whose pages are all kept, from this bundle or
    /// kept here already (a delta bundle leaves out the pages its site
    /// keeps), unless the site keeps a list of the version fetched later
    /// (or one this build cannot read, which is left as it is); says what
    /// it did.
    pub fn finish(mut self, store: &CommandStore, report: &mut Imported) {
        for ((p, v), docs) in std::mem::take(&mut self.lists) {
            let item = format!("documentation of {p} {v}");
            if let Some(missing) = (docs.pages.iter()).find(|pg| !self.kept_here(store, &pg.sha256))
            {
                report.rejected.push((
                    item,
                    format!(
                        "its {} page {} is missing from the bundle (truncated?) and not kept here",
                        missing.kind.as_str(),
                        missing.name
                    ),
                ));
                continue;
            }
            match store.wait(kept::version(store.store(), &p, &v)) {
                Ok(Some(site)) if site.fetched_at_ms >= docs.fetched_at_ms => {
                    report.docs_unchanged += 1;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(provider = %p, version = %v, error = %e, "documentation kept that this build cannot read; left as it is");
                    report.docs_unchanged += 1;
                    continue;
                }
            }
            match store.wait(kept::write_version(store.store(), &docs)) {
                Ok(()) => report.docs += 1,
                Err(e) => report
                    .rejected
                    .push((item, format!("keeping it failed: {e}"))),
            }
        }
    }
}
