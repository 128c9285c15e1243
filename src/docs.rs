//! Provider documentation, kept offline beside the versions the mirror
//! holds: what a registry publishes for a provider version (its overview,
//! resources, data sources, functions and guides, as Markdown), read from
//! the registry's own answers and kept so that people at a site that
//! cannot reach the registry can read it.
//!
//! Documentation is informational, not verified like an archive: a page
//! records where it came from and when. Two registries publish it, in two
//! shapes, read leniently as Go's `encoding/json` reads them (`wire`):
//! registry.terraform.io lists a version's documents
//! (`GET /v1/providers/NS/NAME/VERSION`, `docs[]`) and serves each by its
//! ID (`GET /v2/provider-docs/ID`); registry.opentofu.org's API host
//! serves static files (`/registry/docs/providers/NS/NAME/vVERSION/
//! index.json`, then one Markdown file per document). The store keeps
//! each page's content once by its SHA-256 and, per version, only the
//! list of its pages ([`crate::store::docs`]).

use serde::{Deserialize, Serialize};

pub mod capture;
pub mod changes;
pub mod fetch;
pub mod search;
pub mod wire;

/// What a document describes: the registries' categories.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DocKind {
    /// The provider's overview (its `index.md`).
    Overview,
    /// A managed resource.
    Resource,
    /// A data source.
    DataSource,
    /// An ephemeral resource.
    EphemeralResource,
    /// A provider-defined function.
    Function,
    /// A guide.
    Guide,
    /// An action.
    Action,
    /// A list resource.
    ListResource,
}

impl DocKind {
    /// Every kind, in the order the pages list them.
    pub const ALL: [DocKind; 8] = [
        DocKind::Overview,
        DocKind::Resource,
        DocKind::DataSource,
        DocKind::EphemeralResource,
        DocKind::Function,
        DocKind::Guide,
        DocKind::Action,
        DocKind::ListResource,
    ];

    /// The kind registry.terraform.io names `category` (`resources`,
    /// `data-sources`, …); `None` for a category this build does not know.
    pub fn from_terraform_category(category: &str) -> Option<DocKind> {
        Some(match category {
            "overview" => DocKind::Overview,
            "resources" => DocKind::Resource,
            "data-sources" => DocKind::DataSource,
            "ephemeral-resources" => DocKind::EphemeralResource,
            "functions" => DocKind::Function,
            "guides" => DocKind::Guide,
            "actions" => DocKind::Action,
            "list-resources" => DocKind::ListResource,
            _ => return None,
        })
    }

    /// The folder of registry.opentofu.org's static files that holds this
    /// kind's documents, with the key of its `index.json` that lists them
    /// (`resources`, `datasources`, `ephemeral`, `functions`, `guides`,
    /// `actions`, `listresources`); `None` for the overview (`index.md`,
    /// the `index` key).
    pub fn opentofu_folder(self) -> Option<(&'static str, &'static str)> {
        Some(match self {
            DocKind::Resource => ("resources", "resources"),
            DocKind::DataSource => ("datasources", "datasources"),
            DocKind::EphemeralResource => ("ephemeral", "ephemeral"),
            DocKind::Function => ("functions", "functions"),
            DocKind::Guide => ("guides", "guides"),
            DocKind::Action => ("actions", "actions"),
            DocKind::ListResource => ("listresources", "listresources"),
            DocKind::Overview => return None,
        })
    }

    /// The kind a path segment names ([`DocKind::as_str`]); `None` for
    /// any other text.
    pub fn from_segment(segment: &str) -> Option<DocKind> {
        DocKind::ALL.into_iter().find(|k| k.as_str() == segment)
    }

    /// The kind's heading on the pages (`Resources`, `Data sources`, …).
    pub fn heading(self) -> &'static str {
        match self {
            DocKind::Overview => "Overview",
            DocKind::Resource => "Resources",
            DocKind::DataSource => "Data sources",
            DocKind::EphemeralResource => "Ephemeral resources",
            DocKind::Function => "Functions",
            DocKind::Guide => "Guides",
            DocKind::Action => "Actions",
            DocKind::ListResource => "List resources",
        }
    }

    /// The kind's name in paths and JSON (`resource`, `data-source`, …).
    pub fn as_str(self) -> &'static str {
        match self {
            DocKind::Overview => "overview",
            DocKind::Resource => "resource",
            DocKind::DataSource => "data-source",
            DocKind::EphemeralResource => "ephemeral-resource",
            DocKind::Function => "function",
            DocKind::Guide => "guide",
            DocKind::Action => "action",
            DocKind::ListResource => "list-resource",
        }
    }
}
