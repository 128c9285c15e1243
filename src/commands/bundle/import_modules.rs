//! Importing module versions from a bundle: each package must match its
//! pin, and the pin this cache holds for the version, if any.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::Read;
use std::path::Path;

use super::staging::{read_small, stage, Imported};
use super::ROOT;
use crate::address::{Module, Version};
use crate::commands::store::CommandStore;
use crate::commands::Refusal;
use crate::module_source::tree::TreeError;
use crate::store::ModuleRecord;

/// The module entries of a bundle, as they are read.
#[derive(Default)]
pub(super) struct Modules {
    /// Pins read, waiting for their packages.
    pub(super) pins: BTreeMap<(Module, Version), ModuleRecord>,
    /// Versions whose package was checked and kept (or was held already).
    pub(super) delivered: BTreeSet<(Module, Version)>,
    /// Versions refused.
    pub(super) refused: BTreeSet<(Module, Version)>,
    /// The cap on a package's unpacked size.
    pub(super) max_unpacked: u64,
}

impl Modules {
    /// Handles one module entry: a pin, or the package after it.
    pub(super) fn entry(
        &mut self,
        store: &CommandStore,
        report: &mut Imported,
        module: Module,
        version: Version,
        leaf: &str,
        entry: &mut impl Read,
    ) {
        let item = format!("module {module} {version}");
        let key = (module, version);
        let outcome = match leaf {
            "module.json" => read_small(entry)
                .map_err(|e| Refusal::from(e.to_string()))
                .and_then(|b| {
                    serde_json::from_slice::<ModuleRecord>(&b)
                        .map_err(|e| Refusal::from(format!("its pin is not valid: {e}")))
                })
                .and_then(|pin| check_module_pin(store, &key.0, &key.1, pin))
                .map(|pin| {
                    self.pins.insert(key.clone(), pin);
                }),
            "package.tar.gz" => match self.pins.remove(&key) {
                None => Err(Refusal::from(if self.refused.contains(&key) {
                    "its pin was refused"
                } else {
                    "its pin does not come before it"
                })),
                Some(pin) => import_module(store, &pin, entry, self.max_unpacked).map(|kept| {
                    if kept {
                        report.archives += 1;
                    } else {
                        report.unchanged += 1;
                    }
                    report.modules += 1;
                    self.delivered.insert(key.clone());
                }),
            },
            _ => Err(Refusal::from("not a bundle path")),
        };
        if let Err(reason) = outcome {
            self.refused.insert(key);
            report.rejected.push((item, reason.to_string()));
        }
    }
}

/// Splits `tfmirror-bundle/modules/<host>/<ns>/<name>/<system>/<version>/<leaf>`
/// into validated parts, each in its one normal spelling.
pub(super) fn parse_module_path(path: &str) -> Option<(Module, Version, String)> {
    let rest = path.strip_prefix(ROOT)?.strip_prefix("/modules/")?;
    let parts: Vec<&str> = rest.split('/').collect();
    let [host, ns, name, system, version, leaf] = parts.as_slice() else {
        return None;
    };
    let address = format!("{host}/{ns}/{name}/{system}");
    let (module, _) = Module::from_source(&address).ok()?;
    if module.to_string() != address {
        return None;
    }
    let parsed = Version::parse(version).ok()?;
    if parsed.as_str() != *version {
        return None;
    }
    Some((module, parsed, (*leaf).to_owned()))
}

/// A bundle's pin must be the one its path names; a pin this cache holds
/// for the version wins, and the bundle's must agree with it.
pub(super) fn check_module_pin(
    store: &CommandStore,
    module: &Module,
    version: &Version,
    pin: ModuleRecord,
) -> Result<ModuleRecord, Refusal> {
    if pin.module != *module || pin.version != *version {
        return Err(format!("its pin is for {} {} instead", pin.module, pin.version).into());
    }
    let held = store
        .wait(store.store().read_module(module, version))
        .map_err(|e| format!("the pin this cache holds cannot be read: {e}"))?;
    match held {
        Some(h) if h.commit != pin.commit || h.h1 != pin.h1 => Err(format!(
            "its pin (commit {}, tree {}) differs from the one this cache holds (commit {}, tree {})",
            pin.commit.as_deref().unwrap_or("-"),
            pin.h1,
            h.commit.as_deref().unwrap_or("-"),
            h.h1
        )
        .into()),
        _ => Ok(pin),
    }
}

/// Checks a module package against its pin (the bytes' SHA-256, and the
/// tree's `h1:` hash computed afresh) and keeps it with the pin.
/// `Ok(false)` when the cache holds the package already.
pub(super) fn import_module(
    store: &CommandStore,
    pin: &ModuleRecord,
    entry: &mut impl Read,
    max_unpacked: u64,
) -> Result<bool, Refusal> {
    let (m, v) = (&pin.module, &pin.version);
    let held = store.wait(async {
        Ok::<_, crate::store::StoreError>(
            store.store().read_module(m, v).await?.is_some()
                && store.store().open_module(m, v).await?.is_some(),
        )
    });
    if held.map_err(|e| format!("the cache cannot be read: {e}"))? {
        return Ok(false);
    }
    let (temp_path, actual) = stage(store, entry)?;
    if actual != pin.sha256 {
        return Err(format!(
            "its package's SHA-256 {actual} does not match its pin ({})",
            pin.sha256
        )
        .into());
    }
    let scratch = temp_path.parent().unwrap_or(Path::new("."));
    let packed = File::open(&temp_path)
        .map_err(TreeError::from)
        .and_then(|file| crate::module_source::tree::repack(file, scratch, max_unpacked))
        .map_err(|e| format!("its package cannot be checked: {e}"))?;
    if packed.h1 != pin.h1 {
        return Err(format!(
            "its tree hashes to {} where its pin says {}",
            packed.h1, pin.h1
        )
        .into());
    }
    store
        .wait(async {
            store.store().keep_module(temp_path, pin).await?;
            store.store().add_to_module_index(m, v).await
        })
        .map_err(|e| format!("storing it failed: {e}"))?;
    Ok(true)
}
