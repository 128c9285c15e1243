//! What a bucket holds, listed once per prefix: the archives with their
//! sizes and last uses, the module pins with whether each package is
//! there, and the CLI releases with their files.

use std::collections::HashSet;
use std::path::PathBuf;

use futures_util::TryStreamExt;
use object_store::path::Path as Key;
use object_store::{ObjectMeta, ObjectStore};

use super::S3Store;
use crate::address::{Hostname, Namespace, Provider, ProviderType};
use crate::store::{CachedArchive, HeldRelease, ModuleRecord, ReleaseRecord, StoreError};

impl S3Store {
    /// The archives the bucket holds, with their `h1:` files, in order.
    pub(super) async fn archives_held(&self) -> Result<Vec<CachedArchive>, StoreError> {
        let mut out = Vec::new();
        self.each_archive_held(&mut |a| out.push(a)).await?;
        out.sort_by(|a, b| {
            (&a.provider, &a.version, &a.platform).cmp(&(&b.provider, &b.version, &b.platform))
        });
        Ok(out)
    }

    /// Hands `each` every archive the bucket holds with its `h1:` file, as
    /// the listing goes. The listing comes in key order (S3 lists keys in
    /// ascending order, a page at a time), so a directory's objects come
    /// together: one directory is held at a time, however many archives
    /// the bucket holds.
    pub(super) async fn each_archive_held(
        &self,
        each: &mut (dyn FnMut(CachedArchive) + Send),
    ) -> Result<(), StoreError> {
        let root = self.key(["providers"]);
        let mut listing = self.bucket.list(Some(&root));
        let mut dir: Vec<ObjectMeta> = Vec::new();
        while let Some(object) = listing.try_next().await.map_err(|e| self.failed(&e))? {
            if dir
                .last()
                .is_some_and(|last| parent(&last.location) != parent(&object.location))
            {
                archives_in(&root, &mut dir, each);
            }
            dir.push(object);
        }
        archives_in(&root, &mut dir, each);
        Ok(())
    }

    /// The module pins the bucket holds, and whether each package is there.
    pub(super) async fn modules_held(&self) -> Result<Vec<(ModuleRecord, bool)>, StoreError> {
        let objects = self.list_below("modules").await?;
        let names: std::collections::HashSet<&str> =
            objects.iter().map(|o| o.location.as_ref()).collect();
        let mut out = Vec::new();
        for object in &objects {
            let Some(dir) = object.location.as_ref().strip_suffix("/module.json") else {
                continue;
            };
            let held = names.contains(format!("{dir}/package.tar.gz").as_str());
            if let Some(record) = self.read_json(&object.location, "module pin").await? {
                out.push((record, held));
            }
        }
        out.sort_by(|a: &(ModuleRecord, bool), b| {
            (&a.0.module, &a.0.version).cmp(&(&b.0.module, &b.0.version))
        });
        Ok(out)
    }

    /// The release records the bucket holds, with their files and sizes.
    pub(super) async fn releases_held(&self) -> Result<Vec<HeldRelease>, StoreError> {
        let objects = self.list_below("releases").await?;
        let mut out = Vec::new();
        for object in &objects {
            let Some(dir) = object.location.as_ref().strip_suffix("/release.json") else {
                continue;
            };
            let files_dir = format!("{dir}/files/");
            let mut files: Vec<(String, u64)> = objects
                .iter()
                .filter_map(|o| {
                    let name = o.location.as_ref().strip_prefix(&files_dir)?;
                    Some((name.to_owned(), o.size))
                })
                .collect();
            files.sort();
            if let Some(record) = self.read_json(&object.location, "release record").await? {
                out.push((record, files));
            }
        }
        out.sort_by(|a: &(ReleaseRecord, _), b| {
            (a.0.product, &a.0.version).cmp(&(b.0.product, &b.0.version))
        });
        Ok(out)
    }
}

/// The directory `key` is in.
fn parent(key: &Key) -> &str {
    key.as_ref().rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// Hands `each` the archives among `dir`'s objects (one directory's, below
/// `root`) that have their `h1:` file, and empties `dir`.
fn archives_in(
    root: &Key,
    dir: &mut Vec<ObjectMeta>,
    each: &mut (dyn FnMut(CachedArchive) + Send),
) {
    let hashed: HashSet<&str> = dir
        .iter()
        .filter_map(|o| o.location.as_ref().strip_suffix(".h1"))
        .collect();
    for object in dir.iter() {
        if !hashed.contains(object.location.as_ref()) {
            continue;
        }
        let Some(parts) = object
            .location
            .prefix_match(root)
            .map(|parts| parts.map(|p| p.as_ref().to_owned()).collect::<Vec<_>>())
        else {
            continue;
        };
        let [host, ns, kind, _version, file] = parts.as_slice() else {
            continue;
        };
        let (Ok(hostname), Ok(namespace), Ok(kind)) = (
            Hostname::parse(host),
            Namespace::parse(ns),
            ProviderType::parse(kind),
        ) else {
            continue;
        };
        let provider = Provider {
            hostname,
            namespace,
            kind,
        };
        let Some((version, platform)) = provider.parse_archive_name(file) else {
            continue;
        };
        each(CachedArchive {
            provider,
            version,
            platform,
            size: object.size,
            last_used: u64::try_from(object.last_modified.timestamp()).unwrap_or(0),
            path: PathBuf::from(object.location.as_ref()),
        });
    }
    dir.clear();
}
