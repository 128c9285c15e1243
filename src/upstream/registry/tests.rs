use super::*;
use serde_json::json;

fn url() -> Url {
    Url::parse("https://r.example/v1/providers/acme/widget/1.0.0/download/linux/amd64").unwrap()
}

/// A download answer as the public registry sends it for a community
/// provider, listing `key`.
fn answer(key: &serde_json::Value) -> serde_json::Value {
    json!({
        "protocols": ["5.0"], "os": "linux", "arch": "amd64",
        "filename": "terraform-provider-widget_1.0.0_linux_amd64.zip",
        "download_url": "https://dl.example/w.zip",
        "shasums_url": "https://dl.example/SHA256SUMS",
        "shasums_signature_url": "https://dl.example/SHA256SUMS.sig",
        "shasum": "a".repeat(64),
        "signing_keys": {"gpg_public_keys": [key]},
    })
}

#[test]
fn null_key_details_and_a_missing_key_id_read_as_empty() {
    let doc = answer(&json!({
        "ascii_armor": "ARMOR", "trust_signature": null, "source": null, "source_url": null,
    }));
    let read = PackageResponse::read(&doc, &url()).unwrap();
    let key = &read.signing_keys.gpg_public_keys[0];
    assert_eq!(key.ascii_armor, "ARMOR");
    assert_eq!(key.details, KeyDetails::default());
}

#[test]
fn extra_fields_other_spellings_and_empty_lists_are_fine() {
    let mut doc = answer(
        &json!({"key_id": "51852D87348FFC4C", "ascii_armor": "ARMOR", "source_url": 7, "comment": {"a": 1}}),
    );
    doc["packages"] = json!({"linux_amd64": {"hashes": ["zh:00"], "package_size": 1}});
    doc["protocols"] = serde_json::Value::Null;
    doc["Filename"] = doc["filename"].take();
    doc.as_object_mut().unwrap().remove("filename");
    let read = PackageResponse::read(&doc, &url()).unwrap();
    assert!(read.protocols.is_empty());
    assert_eq!(
        read.filename,
        "terraform-provider-widget_1.0.0_linux_amd64.zip"
    );
    // Terraform ignores source_url; a number there is read as empty.
    assert_eq!(read.signing_keys.gpg_public_keys[0].details.source_url, "");
    assert_eq!(
        read.signing_keys.gpg_public_keys[0].details.key_id,
        "51852D87348FFC4C"
    );
    // Every way the OpenTofu Registry says "no key" reads as no key.
    for none in [
        json!({"gpg_public_keys": null}),
        json!({"gpg_public_keys": []}),
        json!({}),
        serde_json::Value::Null,
        json!({"gpg_public_keys": [{"ascii_armor": "", "key_id": ""}]}),
        json!({"gpg_public_keys": [{"key_id": "X", "ascii_armor": null}, {"key_id": "Y"}]}),
    ] {
        let mut doc = answer(&json!({}));
        doc["signing_keys"] = none.clone();
        let read = PackageResponse::read(&doc, &url()).unwrap();
        assert!(read.signing_keys.gpg_public_keys.is_empty(), "{none}");
    }
    let mut doc = answer(&json!({}));
    doc.as_object_mut().unwrap().remove("signing_keys");
    assert!(PackageResponse::read(&doc, &url())
        .unwrap()
        .signing_keys
        .gpg_public_keys
        .is_empty());
}

#[test]
fn what_the_clients_refuse_is_refused_naming_the_field_and_the_url() {
    let cases = [
        (
            "os",
            json!(5),
            "`os`: expected a string, found the number 5",
        ),
        (
            "protocols",
            json!("5.0"),
            "`protocols`: expected a list, found a string",
        ),
        (
            "shasum",
            serde_json::Value::Null,
            "`shasum`: required, but null",
        ),
        (
            "signing_keys",
            json!({"gpg_public_keys": [null]}),
            "`signing_keys.gpg_public_keys[0]`: is null",
        ),
        (
            "signing_keys",
            json!({"gpg_public_keys": [{"ascii_armor": 7}]}),
            "`signing_keys.gpg_public_keys[0].ascii_armor`: expected a string",
        ),
        (
            "signing_keys",
            json!([]),
            "`signing_keys`: expected an object, found a list",
        ),
    ];
    for (field, value, says) in cases {
        let mut doc = answer(&json!({"ascii_armor": "ARMOR"}));
        doc[field] = value;
        let err = PackageResponse::read(&doc, &url()).unwrap_err().to_string();
        assert!(err.contains(says), "{field}: {err}");
        assert!(err.contains(url().as_str()), "{err}");
    }
    let err = PackageResponse::read(&json!([1]), &url())
        .unwrap_err()
        .to_string();
    assert!(err.contains("(the document)`: expected an object"), "{err}");
}

#[test]
fn version_lists_read_as_the_clients_read_them() {
    let doc = json!({
        "id": "acme/widget", "warnings": null,
        "versions": [
            {"version": "1.0.0", "protocols": ["5.0"], "platforms": [{"os": "linux", "arch": "amd64"}]},
            {"version": "1.1.0", "protocols": null, "platforms": null},
            {"version": "1.2.0", "platforms": "not a list"},
            null,
        ],
    });
    let read = VersionsResponse::read(&doc, &url()).unwrap();
    assert_eq!(read.versions.len(), 4);
    assert_eq!(read.versions[3].version, "");
    assert!(read.versions[2].platforms.is_empty());
    let provider = Provider::from_source("r.example/acme/widget").unwrap();
    assert_eq!(read.usable(&provider).len(), 3);
    assert!(VersionsResponse::read(&json!({"versions": null}), &url())
        .unwrap()
        .versions
        .is_empty());
    assert!(VersionsResponse::read(&serde_json::Value::Null, &url())
        .unwrap()
        .versions
        .is_empty());
    let err = VersionsResponse::read(&json!({"versions": [{"version": 1}]}), &url()).unwrap_err();
    assert!(err.to_string().contains("`versions[0].version`"), "{err}");
}

#[test]
fn endpoints_land_beneath_the_base() {
    let base = Url::parse("https://r.example/v1/providers/").unwrap();
    let url = endpoint(&base, &["ns", "t", "1.0.0+b", "download", "linux", "amd64"]).unwrap();
    assert_eq!(
        url.as_str(),
        "https://r.example/v1/providers/ns/t/1.0.0+b/download/linux/amd64"
    );
    let url = endpoint(&base, &["ünï", "t", "versions"]).unwrap();
    assert_eq!(
        url.as_str(),
        "https://r.example/v1/providers/%C3%BCn%C3%AF/t/versions"
    );
}

#[test]
fn the_packages_field_is_used_only_in_a_shape_opentofu_accepts() {
    let with = |packages: serde_json::Value| {
        let mut doc = answer(&json!({"ascii_armor": "KEY"}));
        doc["packages"] = packages;
        PackageResponse::read(&doc, &url()).expect("the answer itself is fine")
    };
    let zh = format!("zh:{}", "a".repeat(64));
    let read = with(json!({
        "linux_amd64": {"hashes": [zh, "h1:abc="], "package_size": 6_184_593},
        "darwin_arm64": {"hashes": [zh], "package_size": 1, "extra": true},
    }));
    let linux = Platform::parse("linux_amd64").unwrap();
    assert_eq!(read.packages.len(), 2);
    assert_eq!(read.packages[&linux].size, 6_184_593);
    assert_eq!(
        read.packages[&linux].with_scheme("h1:").collect::<Vec<_>>(),
        ["h1:abc="]
    );
    // Absent and null are no field; each shape OpenTofu's client
    // refuses (and Terraform ignores) leaves the field unused.
    assert!(with(serde_json::Value::Null).packages.is_empty());
    for refused in [
        json!("linux_amd64"),
        json!({"linux-amd64": {"hashes": [zh], "package_size": 1}}),
        json!({"linux_amd64": {"hashes": [zh], "package_size": 0}}),
        json!({"linux_amd64": {"hashes": [zh], "package_size": -5}}),
        json!({"linux_amd64": {"hashes": [zh]}}),
        json!({"linux_amd64": {"hashes": [zh], "package_size": 1.5}}),
        json!({"linux_amd64": {"hashes": [zh, "abc"], "package_size": 1}}),
        json!({"linux_amd64": {"hashes": [zh, ":abc"], "package_size": 1}}),
        json!({"linux_amd64": {"hashes": zh, "package_size": 1}}),
        json!({"linux_amd64": null}),
    ] {
        assert!(with(refused.clone()).packages.is_empty(), "{refused}");
    }
}
