//! Whether the mirror keeps the documentation of each provider version a
//! configuration gets, and why not where it does not: `check --from`
//! says it beside the version, so that a site learns which versions its
//! people cannot read up on before they need to.

use std::collections::BTreeMap;

use serde::Serialize;

use super::{Finding, Report};
use crate::address::{Provider, Version};
use crate::mirror::Mirror;

/// What the mirror keeps of a held provider version's documentation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "kept", rename_all = "snake_case")]
pub enum Documentation {
    /// Kept: this many pages, from this source.
    Pages {
        /// How many.
        pages: usize,
        /// Where they were fetched from.
        source: String,
    },
    /// None kept, for this reason.
    None {
        /// Why.
        why: String,
    },
}

/// The documentation of each held provider version of `report`, by the
/// place of the version's first item (a version needed for several
/// platforms is said once). `offline` is whether the mirror's
/// configuration is offline (a check reads the store offline whatever
/// its configuration says).
pub async fn documentation(
    mirror: &Mirror,
    report: &Report,
    offline: bool,
) -> BTreeMap<usize, Documentation> {
    let mut out = BTreeMap::new();
    let mut seen: Vec<(Provider, Version)> = Vec::new();
    for (i, item) in report.items.iter().enumerate() {
        let n = &item.needed;
        let Some(version) = &n.version else {
            continue;
        };
        if n.kind != "provider" || item.finding != Finding::Held {
            continue;
        }
        let Ok(provider) = Provider::from_source(&n.source) else {
            continue;
        };
        let key = (provider, version.clone());
        if seen.contains(&key) {
            continue;
        }
        let said = match mirror.held_docs(&key.0, &key.1).await {
            Ok(Some(docs)) => Documentation::Pages {
                pages: docs.pages.len(),
                source: docs.source.clone(),
            },
            Ok(None) => Documentation::None {
                why: mirror.why_no_docs(&key.0, offline),
            },
            Err(e) => Documentation::None { why: e.to_string() },
        };
        seen.push(key);
        out.insert(i, said);
    }
    out
}

impl std::fmt::Display for Documentation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Documentation::Pages { pages, source } => {
                write!(f, "documentation: {pages} pages, from {source}")
            }
            Documentation::None { why } => write!(f, "documentation: none kept: {why}"),
        }
    }
}
