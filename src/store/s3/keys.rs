//! Where each thing lives in the bucket: keys under `storage.s3.prefix`
//! in the disk store's layout, and the download leases beside them.

use object_store::path::Path as Key;

use super::S3Store;
use crate::address::{ArchiveKey, Module, Product, Provider, ReleaseFile, Version};

impl S3Store {
    /// The key of `parts` under the prefix.
    pub(super) fn key<'a>(&self, parts: impl IntoIterator<Item = &'a str>) -> Key {
        parts
            .into_iter()
            .fold(self.prefix.clone(), |key, part| key.clone().join(part))
    }

    pub(super) fn provider_key<'a>(&self, p: &'a Provider, rest: &[&'a str]) -> Key {
        let head = [
            "providers",
            p.hostname.as_str(),
            p.namespace.as_str(),
            p.kind.as_str(),
        ];
        self.key(head.into_iter().chain(rest.iter().copied()))
    }

    pub(super) fn module_key<'a>(&self, m: &'a Module, rest: &[&'a str]) -> Key {
        let head = [
            "modules",
            m.hostname.as_str(),
            m.namespace.as_str(),
            m.name.as_str(),
            m.system.as_str(),
        ];
        self.key(head.into_iter().chain(rest.iter().copied()))
    }

    pub(super) fn release_key(&self, product: Product, version: &Version, leaf: &str) -> Key {
        self.key(["releases", product.as_str(), version.as_str(), leaf])
    }

    pub(super) fn release_file_key(&self, file: &ReleaseFile) -> Key {
        self.key([
            "releases",
            file.product.as_str(),
            file.version.as_str(),
            "files",
            file.name.as_str(),
        ])
    }

    pub(super) fn archive_key(&self, key: &ArchiveKey) -> Key {
        let name = key.provider.archive_name(&key.version, &key.platform);
        self.provider_key(&key.provider, &[key.version.as_str(), &name])
    }

    pub(super) fn h1_key(&self, key: &ArchiveKey) -> Key {
        let name = format!(
            "{}.h1",
            key.provider.archive_name(&key.version, &key.platform)
        );
        self.provider_key(&key.provider, &[key.version.as_str(), &name])
    }

    pub(super) fn lease_key(&self, key: &ArchiveKey) -> Key {
        let name = format!(
            "{}.lease",
            key.provider.archive_name(&key.version, &key.platform)
        );
        let p = &key.provider;
        self.key([
            "leases",
            p.hostname.as_str(),
            p.namespace.as_str(),
            p.kind.as_str(),
            key.version.as_str(),
            &name,
        ])
    }
}
