//! Bills of materials: what a provider package or a CLI release file
//! tfmirror hands out is made of, as a CycloneDX 1.5 JSON document. It
//! names the provider by its registry address and version (a release by
//! its product, `terraform` or `tofu`, and version), the archive by its
//! checksums (`zh:`, as SHA-256, and `h1:`) and the key that signed them, the Go toolchain that
//! built the executable (as `pkg:golang/stdlib@…`, the name vulnerability
//! databases use for Go's standard library), and every module the build
//! information lists, each as a package URL (`pkg:golang/…@v…`).
//!
//! CycloneDX rather than SPDX 2.3: its components carry hashes and
//! properties (the `h1:` hash, the platform, a module's replacement) and
//! its package URLs are what OSV-based scanners match on, without SPDX's
//! mandatory licence and file fields that a binary's build information
//! cannot fill. Package URLs of Go modules are lowercased, as the package
//! URL specification asks; each component's `name` keeps the module path
//! as Go writes it.
//!
//! The document is a function of the stored records alone: the same
//! records give the same document, serial number included.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};
use serde_json::{json, Value};

use crate::address::{Platform, Provider, Version};
use crate::gobuild::{BuildInfo, Module};
use crate::store::builds::{BuildRecord, BuildState, ExecutableBuild};
use crate::store::release_builds::ReleaseBuildRecord;
use crate::verify::Sha256;

/// What a package URL leaves unescaped in a segment or a version.
const PURL_KEEP: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'.')
    .remove(b'-')
    .remove(b'_')
    .remove(b'~');

/// What the bill of materials of one package is made from.
#[derive(Debug, Clone)]
pub struct PackageFacts<'a> {
    /// The provider.
    pub provider: &'a Provider,
    /// The version.
    pub version: &'a Version,
    /// The platform.
    pub platform: &'a Platform,
    /// The archive's file name.
    pub filename: &'a str,
    /// The archive's SHA-256, lowercase hex (its `zh:` hash).
    pub sha256: &'a str,
    /// Its `h1:` hash, when the archive was stored.
    pub h1: Option<&'a str>,
    /// The ID of the key that signed the checksums; empty when none did.
    pub signed_by: &'a str,
    /// How the checksums were vouched for (`signed`, `pinned`, `keyless`,
    /// `unsigned import`).
    pub verification: &'a str,
    /// What the archive's executables say of their build.
    pub build: &'a BuildRecord,
}

/// What the bill of materials of one CLI release file is made from.
#[derive(Debug, Clone)]
pub struct ReleaseFacts<'a> {
    /// The file's name in the release.
    pub filename: &'a str,
    /// The ID of the key that signed the release's checksums.
    pub signed_by: &'a str,
    /// What the file's executables say of their build.
    pub build: &'a ReleaseBuildRecord,
}

/// The CycloneDX 1.5 document of a package.
pub fn cyclonedx(facts: &PackageFacts<'_>) -> Value {
    let address = format!(
        "{}/{}/{}",
        facts.provider.hostname, facts.provider.namespace, facts.provider.kind
    );
    let mut properties = vec![
        property("tfmirror:platform", facts.platform.as_str()),
        property("tfmirror:archive", facts.filename),
        property("tfmirror:zh", &format!("zh:{}", facts.sha256)),
        property("tfmirror:verification", facts.verification),
    ];
    if let Some(h1) = facts.h1 {
        properties.push(property("tfmirror:h1", h1));
    }
    if !facts.signed_by.is_empty() {
        properties.push(property("tfmirror:signing_key", facts.signed_by));
    }
    let build = facts.build;
    document(
        Described {
            bom_ref: "provider",
            name: &address,
            version: facts.version,
            sha256: facts.sha256,
            properties,
        },
        &build.executables,
        (build.read_at_ms, &build.read_by),
    )
}

/// The CycloneDX 1.5 document of a CLI release file: the product named
/// as its executable is (`terraform`, `tofu`).
pub fn release_cyclonedx(facts: &ReleaseFacts<'_>) -> Value {
    let build = facts.build;
    let mut properties = vec![
        property("tfmirror:platform", build.platform.as_str()),
        property("tfmirror:release_file", facts.filename),
        property("tfmirror:verification", "signed"),
    ];
    if !facts.signed_by.is_empty() {
        properties.push(property("tfmirror:signing_key", facts.signed_by));
    }
    document(
        Described {
            bom_ref: "release",
            name: build.product.as_str(),
            version: &build.version,
            sha256: &build.archive_sha256,
            properties,
        },
        &build.executables,
        (build.read_at_ms, &build.read_by),
    )
}

/// The thing a document describes.
struct Described<'a> {
    /// Its `bom-ref`.
    bom_ref: &'static str,
    /// Its name.
    name: &'a str,
    /// Its version.
    version: &'a Version,
    /// Its file's SHA-256, lowercase hex.
    sha256: &'a str,
    /// Its properties so far.
    properties: Vec<Value>,
}

/// The document of `what`, made of `executables`, read at
/// (`read_at_ms`, by `read_by`).
fn document(mut what: Described<'_>, executables: &[ExecutableBuild], read: (u64, &str)) -> Value {
    let (read_at_ms, read_by) = read;
    let mut components: Vec<Value> = Vec::new();
    let mut refs: Vec<String> = Vec::new();
    for exe in executables {
        what.properties
            .push(property("tfmirror:executable", &exe.name));
        match &exe.build {
            BuildState::Go { build } => {
                described(build, &mut what.properties, &mut components, &mut refs);
            }
            BuildState::Nothing { reason } => {
                what.properties
                    .push(property("tfmirror:build_information", reason));
            }
            BuildState::Unreadable { error } => {
                what.properties
                    .push(property("tfmirror:build_information", error));
            }
        }
    }
    let serial = {
        let seed = format!("{}\n{read_at_ms}", what.sha256);
        uuid_of(&Sha256::digest(seed.as_bytes()))
    };
    let timestamp =
        humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(read_at_ms)).to_string();
    json!({
        "bomFormat": "CycloneDX",
        "specVersion": "1.5",
        "serialNumber": format!("urn:uuid:{serial}"),
        "version": 1,
        "metadata": {
            "timestamp": timestamp,
            "tools": {
                "components": [{
                    "type": "application",
                    "name": "tfmirror",
                    "version": read_by,
                }]
            },
            "component": {
                "type": "application",
                "bom-ref": what.bom_ref,
                "name": what.name,
                "version": what.version.as_str(),
                "hashes": [{ "alg": "SHA-256", "content": what.sha256 }],
                "properties": what.properties,
            }
        },
        "components": components,
        "dependencies": [{ "ref": what.bom_ref, "dependsOn": refs }],
    })
}

/// Adds one executable's toolchain and modules.
fn described(
    build: &BuildInfo,
    properties: &mut Vec<Value>,
    components: &mut Vec<Value>,
    refs: &mut Vec<String>,
) {
    properties.push(property("tfmirror:go_version", &build.go_version));
    if let Some(main) = &build.main {
        properties.push(property(
            "tfmirror:main_module",
            &format!("{}@{}", main.path, main.version),
        ));
    }
    let mut add = |component: Value, bom_ref: String| {
        if !refs.contains(&bom_ref) {
            refs.push(bom_ref);
            components.push(component);
        }
    };
    if let Some(version) = crate::gobuild::go_semver(&build.go_version) {
        let purl = format!("pkg:golang/stdlib@{}", encoded(&version));
        add(
            json!({
                "type": "library",
                "bom-ref": purl,
                "name": "stdlib",
                "version": version,
                "purl": purl,
                "properties": [property("tfmirror:go_version", &build.go_version)],
            }),
            purl,
        );
    }
    for dep in &build.deps {
        let (component, bom_ref) = module_component(dep);
        add(component, bom_ref);
    }
}

/// A dependency module as a component: the module the build used (its
/// replacement, where one was made).
fn module_component(dep: &Module) -> (Value, String) {
    let used = dep.replace.as_deref().unwrap_or(dep);
    let path: Vec<String> = used.path.to_lowercase().split('/').map(encoded).collect();
    let mut purl = format!("pkg:golang/{}", path.join("/"));
    if !used.version.is_empty() {
        purl.push('@');
        purl.push_str(&encoded(&used.version));
    }
    let mut properties = Vec::new();
    if !used.sum.is_empty() {
        properties.push(property("tfmirror:go_sum", &used.sum));
    }
    if dep.replace.is_some() {
        properties.push(property(
            "tfmirror:replaces",
            &format!("{}@{}", dep.path, dep.version),
        ));
    }
    let mut component = json!({
        "type": "library",
        "bom-ref": purl,
        "name": used.path,
        "purl": purl,
        "properties": properties,
    });
    if !used.version.is_empty() {
        component["version"] = json!(used.version);
    }
    (component, purl)
}

fn property(name: &str, value: &str) -> Value {
    json!({ "name": name, "value": value })
}

fn encoded(segment: &str) -> String {
    utf8_percent_encode(segment, PURL_KEEP).to_string()
}

/// An RFC 4122 version 4 UUID made from a digest's first 16 bytes.
fn uuid_of(digest: &[u8; 32]) -> String {
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    uuid::Builder::from_random_bytes(bytes)
        .into_uuid()
        .hyphenated()
        .to_string()
}

#[cfg(test)]
mod tests;
