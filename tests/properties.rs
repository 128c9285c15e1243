//! Property tests of the parsers that face untrusted input: request paths,
//! names, SHA256SUMS documents, detached signatures, the registry's JSON
//! answers and the cache's own JSON records. Each runs a few
//! thousand generated cases per test run; none may panic, and what parses
//! must come out normalized and stable.

use proptest::prelude::*;
use tfmirror::address::{Hostname, Namespace, Provider};
use tfmirror::http::routes::{self, Route};
use tfmirror::store::{IndexRecord, VersionRecord};
use tfmirror::upstream::registry::{PackageResponse, VersionsResponse};
use tfmirror::upstream::wire;
use tfmirror::verify::{Keyring, Sha256Sums};

/// Arbitrary JSON values, with the field names the registry uses among the
/// keys so that objects sometimes almost fit.
fn json() -> impl Strategy<Value = serde_json::Value> {
    let key = prop_oneof![
        Just("versions".to_string()),
        Just("version".to_string()),
        Just("platforms".to_string()),
        Just("os".to_string()),
        Just("arch".to_string()),
        Just("filename".to_string()),
        Just("signing_keys".to_string()),
        Just("gpg_public_keys".to_string()),
        "[a-z_]{1,8}",
    ];
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "[0-9.a-z_-]{0,12}|\\PC{0,8}".prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(4, 64, 8, move |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..8).prop_map(serde_json::Value::from),
            proptest::collection::btree_map(key.clone(), inner, 0..8)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

/// Path-like strings: segments made of characters that matter to parsers.
fn pathish() -> impl Strategy<Value = String> {
    let segment = prop_oneof![
        "[a-zA-Z0-9.-]{0,12}",
        Just("..".to_string()),
        Just("%2F".to_string()),
        Just("%00".to_string()),
        Just("%2e%2e".to_string()),
        Just("index.json".to_string()),
        Just("1.2.3.json".to_string()),
        Just("terraform-provider-x_1.0.0_linux_amd64.zip".to_string()),
        "\\PC{0,6}",
    ];
    proptest::collection::vec(segment, 0..7).prop_map(|s| format!("/{}", s.join("/")))
}

fn render(route: &Route) -> Option<String> {
    Some(match route {
        Route::Index(p) => format!(
            "/{}/{}/{}/index.json",
            p.hostname,
            enc(p.namespace.as_str()),
            enc(p.kind.as_str())
        ),
        Route::Version(p, v) => format!(
            "/{}/{}/{}/{v}.json",
            p.hostname,
            enc(p.namespace.as_str()),
            enc(p.kind.as_str())
        ),
        Route::Archive(key) => format!(
            "/{}/{}/{}/{}",
            key.provider.hostname,
            enc(key.provider.namespace.as_str()),
            enc(key.provider.kind.as_str()),
            enc(&key.file_name())
        ),
        _ => return None,
    })
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn provider_of(route: &Route) -> Option<&Provider> {
    match route {
        Route::Index(p) | Route::Version(p, _) => Some(p),
        Route::Archive(key) => Some(&key.provider),
        _ => None,
    }
}

/// Below `/v2/`, a path that names no repository (the shape of a mirror
/// document, one segment) is not found, and a bad name in a repository is
/// a bad request. (A random case of the property below found the first.)
#[test]
fn an_oci_path_naming_no_repository_is_not_found() {
    for path in ["/v2/index.json", "/v2/a/b", "/v2/a/b/c/d/e/f/tags/list"] {
        let e = routes::parse(path).unwrap_err();
        assert_eq!(e.status(), http::StatusCode::NOT_FOUND, "{path}");
    }
    let e = routes::parse("/v2/example.com/Bad_Name!/x/tags/list").unwrap_err();
    assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
}

/// A path below `/-/` that names no page is not found, and one that is not
/// a path at all stays a bad request. (A random case of the property below
/// found the first.)
#[test]
fn a_page_path_naming_no_page_is_not_found() {
    for path in ["/-/-", "/-/no-such-page", "/-/provider"] {
        let e = routes::parse(path).unwrap_err();
        assert_eq!(e.status(), http::StatusCode::NOT_FOUND, "{path}");
    }
    let e = routes::parse("/-/search/%FF").unwrap_err();
    assert_eq!(e.status(), http::StatusCode::BAD_REQUEST);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]

    #[test]
    fn paths_parse_into_normalized_routes_or_bad_requests(path in pathish()) {
        match routes::parse(&path) {
            Ok(route) => {
                if let Some(p) = provider_of(&route) {
                    for part in [p.hostname.as_str(), p.namespace.as_str(), p.kind.as_str()] {
                        prop_assert!(!part.is_empty() && !part.contains('/') && part != "..");
                        prop_assert_eq!(part.to_lowercase(), part);
                    }
                    // Rendering the route and parsing it again gives the same route.
                    let again = routes::parse(&render(&route).unwrap());
                    prop_assert_eq!(again.ok(), Some(route.clone()));
                }
            }
            // A bad path is a bad request; below `/v2/`, a path that names
            // no repository is one the registry does not have, as OCI
            // registries answer it (`NAME_UNKNOWN`), and below `/-/` a path
            // that names no page is a page the mirror does not have.
            Err(e)
                if (path.starts_with("/v2/") || path.starts_with("/-/"))
                    && e.status() == http::StatusCode::NOT_FOUND => {}
            Err(e) => prop_assert_eq!(e.status(), http::StatusCode::BAD_REQUEST),
        }
    }

    #[test]
    fn well_formed_paths_always_parse_and_round_trip(
        host in "[a-zA-Z][a-zA-Z0-9]{0,8}(\\.[a-zA-Z]{1,5}){0,2}(:[1-9][0-9]{0,3})?",
        ns in "[a-zA-Z][a-zA-Z0-9]{0,6}(-[a-z0-9]{1,4})?",
        kind in "[a-z][a-z0-9]{0,8}",
        version in "(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})\\.(0|[1-9][0-9]{0,2})(-rc[0-9])?",
        which in 0..3u8,
    ) {
        let tail = match which {
            0 => "index.json".to_string(),
            1 => format!("{version}.json"),
            _ => format!("terraform-provider-{kind}_{version}_linux_amd64.zip"),
        };
        let path = format!("/{host}/{ns}/{kind}/{tail}");
        let route = routes::parse(&path);
        prop_assert!(route.is_ok(), "{path}: {:?}", route);
        let route = route.unwrap();
        prop_assert_eq!(routes::parse(&render(&route).unwrap()).ok(), Some(route));
    }

    #[test]
    fn hostnames_normalize_once(h in "[a-zA-Z0-9.:-]{1,30}|\\PC{1,12}") {
        if let Ok(first) = Hostname::parse(&h) {
            prop_assert_eq!(Hostname::parse(first.as_str()).ok(), Some(first.clone()));
            prop_assert!(first.as_str().is_ascii());
        }
        if let Ok(ns) = Namespace::parse(&h) {
            prop_assert_eq!(Namespace::parse(ns.as_str()).ok(), Some(ns.clone()));
        }
    }

    #[test]
    fn sha256sums_never_panic_and_yield_hex(doc in proptest::collection::vec(any::<u8>(), 0..400),
                                           lines in proptest::collection::vec(("[0-9a-fA-F]{62,66}", "[ \\t*]{1,3}", "[a-z0-9_.]{1,20}"), 0..6)) {
        let _ = Sha256Sums::parse(&doc);
        let text: String = lines.iter().map(|(h, sep, n)| format!("{h}{sep}{n}\n")).collect::<Vec<_>>().concat();
        if let Ok(sums) = Sha256Sums::parse(text.as_bytes()) {
            for (_, _, name) in &lines {
                if let Some(sum) = sums.get(name) {
                    prop_assert_eq!(sum.len(), 64);
                    prop_assert!(sum.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)));
                }
            }
        }
    }

    #[test]
    fn garbage_signatures_are_refused_without_panicking(sig in proptest::collection::vec(any::<u8>(), 0..300)) {
        let key = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gnupg/signer.asc")).unwrap();
        let ring = Keyring::from_armored([key.as_str()]).unwrap();
        prop_assert!(ring.verify(b"document", &sig, "keys").is_err());
    }

    #[test]
    fn registry_and_record_json_never_panics(value in json(), bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let text = value.to_string();
        let url = url::Url::parse("https://registry.example/v1/providers/acme/widget/versions").unwrap();
        for doc in [text.as_bytes(), &bytes[..]] {
            let _ = serde_json::from_slice::<IndexRecord>(doc);
            let _ = serde_json::from_slice::<VersionRecord>(doc);
            let Ok(doc) = wire::first_value(doc) else { continue };
            let _ = PackageResponse::read(&doc, &url);
            if let Ok(listed) = VersionsResponse::read(&doc, &url) {
                let provider = Provider::from_source("registry.example/acme/widget").unwrap();
                let usable = listed.usable(&provider);
                prop_assert!(usable.len() <= listed.versions.len());
            }
        }
    }

    #[test]
    fn version_lists_keep_exactly_the_valid_versions(
        entries in proptest::collection::vec(("[0-9]{1,3}\\.[0-9]{1,3}\\.[0-9]{1,3}(-[a-z0-9]{1,5})?|[a-z0-9.]{1,8}", proptest::collection::vec(("[a-z0-9]{1,8}|\\PC{1,4}", "[a-z0-9]{1,8}"), 0..4)), 0..10)
    ) {
        let doc = serde_json::json!({"versions": entries.iter().map(|(v, ps)| serde_json::json!({
            "version": v,
            "platforms": ps.iter().map(|(os, arch)| serde_json::json!({"os": os, "arch": arch})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>()});
        let url = url::Url::parse("https://registry.example/v1/providers/acme/widget/versions").unwrap();
        let listed = VersionsResponse::read(&doc, &url).unwrap();
        let provider = Provider::from_source("registry.example/acme/widget").unwrap();
        let usable = listed.usable(&provider);
        for (at, (v, ps)) in entries.iter().enumerate() {
            match tfmirror::address::Version::parse(v) {
                Ok(version) => {
                    // A version listed twice keeps its last entry.
                    let last = entries
                        .iter()
                        .rposition(|(w, _)| tfmirror::address::Version::parse(w).ok().as_ref() == Some(&version));
                    if last == Some(at) {
                        prop_assert!(usable[&version].len() <= ps.len());
                    }
                }
                Err(_) => prop_assert!(!usable.keys().any(|k| k.as_str() == v)),
            }
        }
    }
}

/// A version the registry lists twice is kept with its last entry's
/// platforms (the case that found the property's assumption above).
#[test]
fn a_version_listed_twice_keeps_its_last_entry() {
    let url =
        url::Url::parse("https://registry.example/v1/providers/acme/widget/versions").unwrap();
    let provider = Provider::from_source("registry.example/acme/widget").unwrap();
    let platforms = |doc: serde_json::Value| {
        let listed = VersionsResponse::read(&doc, &url).unwrap();
        let usable = listed.usable(&provider);
        let version = tfmirror::address::Version::parse("3.3.5").unwrap();
        usable[&version]
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    let linux = serde_json::json!([{"os": "linux", "arch": "amd64"}]);
    assert_eq!(
        platforms(serde_json::json!({"versions": [
            {"version": "3.3.5", "platforms": []},
            {"version": "3.3.5", "platforms": linux},
        ]})),
        ["linux_amd64"]
    );
    assert!(platforms(serde_json::json!({"versions": [
        {"version": "3.3.5", "platforms": linux},
        {"version": "3.3.5", "platforms": []},
    ]}))
    .is_empty());
}

/// The fields of a provider download answer a mutation may touch.
const DOWNLOAD_FIELDS: &[&[&str]] = &[
    &["os"],
    &["arch"],
    &["filename"],
    &["download_url"],
    &["shasums_url"],
    &["shasums_signature_url"],
    &["shasum"],
    &["protocols"],
    &["signing_keys"],
    &["signing_keys", "gpg_public_keys"],
    &["signing_keys", "gpg_public_keys", "0"],
    &["signing_keys", "gpg_public_keys", "0", "ascii_armor"],
    &["signing_keys", "gpg_public_keys", "0", "key_id"],
    &["signing_keys", "gpg_public_keys", "0", "trust_signature"],
    &["signing_keys", "gpg_public_keys", "0", "source"],
    &["signing_keys", "gpg_public_keys", "0", "source_url"],
    &["packages"],
    &["warnings"],
];

/// What a field is changed into.
#[derive(Debug, Clone)]
enum Change {
    Absent,
    Null,
    Set(serde_json::Value),
    /// The same value under the key written in capitals.
    Recased,
}

fn change() -> impl Strategy<Value = Change> {
    prop_oneof![
        Just(Change::Absent),
        Just(Change::Null),
        Just(Change::Recased),
        json().prop_map(Change::Set),
    ]
}

/// A field of a JSON object as Go's decoder finds it: the exact key, else
/// one that differs only in case.
fn go_field<'a>(
    object: &'a serde_json::Map<String, serde_json::Value>,
    key: &str,
) -> &'a serde_json::Value {
    object
        .get(key)
        .or_else(|| {
            object
                .iter()
                .find(|(k, _)| k.eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
        .unwrap_or(&serde_json::Value::Null)
}

/// Whether Terraform or OpenTofu can install from this download answer,
/// stated from their code: Go's decoder reads every field (null and absent
/// are the empty value, unknown fields are skipped, a wrong type fails the
/// whole answer), a `null` key in `gpg_public_keys` is a nil pointer they
/// dereference, and an install needs the platform, the file name, the
/// three URLs and the checksum. A key entry whose armor is empty, `null` or
/// absent is read by tfmirror as no key at all (the OpenTofu Registry once
/// sent such entries for keyless providers), so the answer is read and the
/// version judged keyless later; an armor of another type fails Go's
/// decoder and the answer.
fn clients_can_install(doc: &serde_json::Value) -> bool {
    use serde_json::Value;
    let Value::Object(root) = doc else {
        return false;
    };
    let text = |v: &Value| matches!(v, Value::String(s) if !s.is_empty());
    let required = [
        "os",
        "arch",
        "filename",
        "download_url",
        "shasums_url",
        "shasums_signature_url",
        "shasum",
    ];
    if !required.iter().all(|k| text(go_field(root, k))) {
        return false;
    }
    let protocols_ok = match go_field(root, "protocols") {
        Value::Null => true,
        Value::Array(items) => items
            .iter()
            .all(|i| matches!(i, Value::String(_) | Value::Null)),
        _ => false,
    };
    let keys_ok = match go_field(root, "signing_keys") {
        Value::Null => true,
        Value::Object(keys) => match go_field(keys, "gpg_public_keys") {
            Value::Null => true,
            Value::Array(items) => items.iter().all(|item| match item {
                Value::Object(key) => {
                    matches!(go_field(key, "ascii_armor"), Value::String(_) | Value::Null)
                }
                _ => false,
            }),
            _ => false,
        },
        _ => false,
    };
    protocols_ok && keys_ok
}

/// Applies `change` to the field at `path`, when the document still has
/// the objects that lead to it.
fn apply(doc: &mut serde_json::Value, path: &[&str], change: &Change) {
    let Some((last, above)) = path.split_last() else {
        return;
    };
    let mut at = doc;
    for step in above {
        let next = match step.parse::<usize>() {
            Ok(i) => at.get_mut(i),
            Err(_) => at.get_mut(*step),
        };
        let Some(next) = next else { return };
        at = next;
    }
    if let (Ok(i), Some(list)) = (last.parse::<usize>(), at.as_array_mut()) {
        if i < list.len() {
            match change {
                Change::Absent => {
                    list.remove(i);
                }
                Change::Null | Change::Recased => list[i] = serde_json::Value::Null,
                Change::Set(v) => list[i] = v.clone(),
            }
        }
        return;
    }
    let Some(object) = at.as_object_mut() else {
        return;
    };
    match change {
        Change::Absent => {
            object.remove(*last);
        }
        Change::Null => {
            object.insert((*last).into(), serde_json::Value::Null);
        }
        Change::Recased => {
            if let Some(v) = object.remove(*last) {
                object.insert(last.to_uppercase(), v);
            }
        }
        Change::Set(v) => {
            object.insert((*last).into(), v.clone());
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(3000))]

    /// Whatever the clients install from, tfmirror reads; whatever they
    /// cannot, tfmirror refuses.
    #[test]
    fn download_answers_are_read_exactly_when_the_clients_can_install_from_them(
        changes in proptest::collection::vec((0..DOWNLOAD_FIELDS.len(), change()), 1..4),
        extra in proptest::collection::btree_map("x_[a-z]{1,6}", json(), 0..3),
    ) {
        let mut doc = serde_json::json!({
            "protocols": ["5.0"], "os": "linux", "arch": "amd64",
            "filename": "terraform-provider-widget_1.0.0_linux_amd64.zip",
            "download_url": "https://releases.example/w.zip",
            "shasums_url": "https://releases.example/SHA256SUMS",
            "shasums_signature_url": "https://releases.example/SHA256SUMS.sig",
            "shasum": "ab".repeat(32),
            "signing_keys": {"gpg_public_keys": [{
                "key_id": "51852D87348FFC4C", "ascii_armor": "ARMOR",
                "trust_signature": "", "source": "Acme", "source_url": null,
            }]},
            "warnings": null,
        });
        for (k, v) in &extra {
            doc.as_object_mut().unwrap().insert(k.clone(), v.clone());
        }
        for (index, change) in &changes {
            apply(&mut doc, DOWNLOAD_FIELDS[*index], change);
        }
        let url = url::Url::parse("https://registry.example/v1/providers/acme/widget/1.0.0/download/linux/amd64").unwrap();
        let read = PackageResponse::read(&doc, &url);
        prop_assert_eq!(read.is_ok(), clients_can_install(&doc), "{} -> {:?}", doc, read.as_ref().err());
        if let Ok(read) = read {
            // What was read is what the document says.
            let root = doc.as_object().unwrap();
            prop_assert_eq!(Some(read.os.as_str()), go_field(root, "os").as_str());
            prop_assert_eq!(Some(read.shasum.as_str()), go_field(root, "shasum").as_str());
        }
    }
}
