//! Choosing the versions a requirement wants, as the clients would choose
//! them from this mirror: those lock files pin, else those meeting the
//! constraints among the versions the policy lets clients see (only the
//! newest when the requirement asks for that).

use super::selection::{ModuleRequirement, Requirement};
use crate::address::{Provider, Version};
use crate::error::RequestError;
use crate::mirror::{Freshness, Mirror};

/// Why no version of a requirement could be selected.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The provider's version list could not be had.
    #[error("{provider}: {source}")]
    Unlisted {
        /// The provider.
        provider: Provider,
        /// Why.
        source: RequestError,
    },
    /// No listed version meets the constraints.
    #[error("{provider}: no version meets {constraints:?} (the origin lists {listed})")]
    NoneMeets {
        /// The provider.
        provider: Provider,
        /// The constraints, as written.
        constraints: String,
        /// How many versions the origin lists.
        listed: usize,
    },
    /// The lock file pins a version the constraints exclude.
    #[error("{provider}: the lock file pins {version}, outside {constraints:?}; init refuses it until the lock file is upgraded")]
    LockedOutside {
        /// The provider.
        provider: Provider,
        /// The version pinned.
        version: Version,
        /// The constraints, as written.
        constraints: String,
    },
}

/// The versions of a requirement: those its lock files pin (none when a
/// pin is outside its constraints: `init` refuses that lock file), else
/// those that meet its constraints among the versions the policy lets
/// clients see (only the newest when it asks for that).
pub async fn select_versions(
    mirror: &std::sync::Arc<Mirror>,
    req: &Requirement,
    freshness: Freshness,
) -> Result<Vec<Version>, SelectError> {
    if !req.pinned.is_empty() {
        if let Some(outside) = req
            .pinned
            .iter()
            .find(|v| !req.constraints.allows(v.semver()))
        {
            return Err(SelectError::LockedOutside {
                provider: req.provider.clone(),
                version: outside.clone(),
                constraints: req.constraints.as_str().to_owned(),
            });
        }
        return Ok(req.pinned.clone());
    }
    let listed = match freshness {
        Freshness::Cached => mirror.index(&req.provider).await,
        Freshness::FromOrigin => mirror.relist(&req.provider).await,
    }
    .map_err(|source| SelectError::Unlisted {
        provider: req.provider.clone(),
        source,
    })?;
    // Versions the policy denies or holds back are not candidates.
    let (index, _, _) = mirror.visible_index(&req.provider, listed).await;
    let mut matching: Vec<Version> = index
        .versions
        .keys()
        .filter(|v| req.constraints.allows(v.semver()))
        .cloned()
        .collect();
    if matching.is_empty() {
        return Err(SelectError::NoneMeets {
            provider: req.provider.clone(),
            constraints: req.constraints.as_str().to_owned(),
            listed: index.versions.len(),
        });
    }
    if req.newest_only {
        matching = matching.split_off(matching.len() - 1);
    }
    Ok(matching)
}

/// The versions of a module requirement that meet its constraints among
/// those the policy lets clients see (only the newest when it asks for
/// that).
pub async fn select_module_versions(
    mirror: &std::sync::Arc<Mirror>,
    req: &ModuleRequirement,
    freshness: Freshness,
) -> Result<Vec<Version>, String> {
    let listed = match freshness {
        Freshness::Cached => mirror.module_index(&req.module).await,
        Freshness::FromOrigin => mirror.relist_module(&req.module).await,
    }
    .map_err(|e| format!("module {}: {e}", req.module))?;
    let index = mirror.visible_module_index(&req.module, listed).await;
    let mut matching: Vec<Version> = index
        .versions
        .iter()
        .filter(|v| req.constraints.allows(v.semver()))
        .cloned()
        .collect();
    if matching.is_empty() {
        return Err(format!(
            "module {}: no version meets {:?} (the origin lists {})",
            req.module,
            req.constraints.as_str(),
            index.versions.len()
        ));
    }
    if req.newest_only {
        matching = matching.split_off(matching.len() - 1);
    }
    Ok(matching)
}
