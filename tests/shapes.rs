//! Every registry shape of `tests/fixtures/registries/` through every
//! install path: service discovery, a provider's version list, the version
//! document with its verified hashes, the archive, the registry facade's
//! download answer, and a module's versions, download location and
//! package. The origin answers in one shape at a time, exactly as that
//! registry does (nulls, absent and extra fields, other spellings, other
//! status codes and headers); the mirror must serve the same thing from
//! each.

mod common;

use common::*;
use http::StatusCode;

const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];

/// A module archive: one file, `main.tf`, saying which shape served it.
fn module_tar_gz(shape: &str) -> Vec<u8> {
    let mut tgz = Vec::new();
    {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            &mut tgz,
            flate2::Compression::default(),
        ));
        let body = format!("# served in the shape of {shape}\n");
        let mut h = tar::Header::new_gnu();
        h.set_size(body.len() as u64);
        h.set_mode(0o644);
        b.append_data(&mut h, "main.tf", body.as_bytes()).unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    tgz
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_registry_shape_installs_providers_and_modules() {
    let shapes = all_shapes();
    assert!(shapes.len() >= 8, "the corpus lost shapes: {shapes:?}");
    for shape in shapes {
        check_shape(&shape).await;
    }
}

async fn check_shape(shape: &Shape) {
    let name = shape.name.as_str();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.use_shape(name);
    let signer = Signer::new("Shape Tests");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    origin.publish("acme", "widget", "0.9.0", &PLATFORMS, &signer, &[&signer]);
    origin.publish_archive_module(("acme", "net", "aws"), "1.0.0", module_tar_gz(name));
    origin.publish_archive_module(("acme", "net", "aws"), "1.1.0", module_tar_gz(name));

    // Discovery, not configured services: the shape's own document.
    let host = origin.hostname();
    let config = setup.config(&origin, &[&host], &[]);
    let mirror = RunningMirror::start(config).await;
    let client = Client::trusting_when_ready(&mirror.ca_file).await;
    let discovery = shape.json("discovery.json", &Vars::new(), &NoLists);
    let offers = |service: &str| discovery.get(service).is_some();

    if offers("providers.v1") {
        let index = client
            .get(&mirror.url(&format!("/{host}/acme/widget/index.json")))
            .await;
        assert_eq!(
            index.status,
            StatusCode::OK,
            "{name}: {}",
            index.error_text()
        );
        let versions = index.json()["versions"].as_object().unwrap().clone();
        assert_eq!(
            versions.keys().collect::<Vec<_>>(),
            ["0.9.0", "1.0.0"],
            "{name}"
        );

        let doc_url = mirror.url(&format!("/{host}/acme/widget/1.0.0.json"));
        let doc = client.get(&doc_url).await;
        assert_eq!(doc.status, StatusCode::OK, "{name}: {}", doc.error_text());
        let doc = doc.json();
        for platform in PLATFORMS {
            let entry = &doc["archives"][platform];
            let zh = format!("zh:{}", sha256_hex(&archives[platform]));
            assert!(
                entry["hashes"].as_array().unwrap().iter().any(|h| h == &zh),
                "{name}: {platform} lacks {zh}: {entry}"
            );
            let archive = client
                .get(&resolve(&doc_url, entry["url"].as_str().unwrap()))
                .await;
            assert_eq!(archive.status, StatusCode::OK, "{name} {platform}");
            assert_eq!(
                &archive.body[..],
                &archives[platform][..],
                "{name} {platform}"
            );
        }

        // The facade passes the keys on as the clients read them: a null
        // the origin sent is the empty string they would have seen.
        let answer = client
            .get(&mirror.url(&format!(
                "/v1/providers/{host}/acme/widget/1.0.0/download/linux/amd64"
            )))
            .await;
        assert_eq!(
            answer.status,
            StatusCode::OK,
            "{name}: {}",
            answer.error_text()
        );
        let key = &answer.json()["signing_keys"]["gpg_public_keys"][0];
        assert_eq!(key["ascii_armor"], signer.public_armored(), "{name}");
        for field in ["trust_signature", "source", "source_url"] {
            assert!(key[field].is_string(), "{name}: {field} is {}", key[field]);
        }
    } else {
        let index = client
            .get(&mirror.url(&format!("/{host}/acme/widget/index.json")))
            .await;
        assert_eq!(index.status, StatusCode::BAD_GATEWAY, "{name}");
        assert!(
            index
                .error_text()
                .contains("offers no providers.v1 service"),
            "{name}: {}",
            index.error_text()
        );
    }

    assert!(offers("modules.v1"), "{name}: every shape offers modules");
    let below = |rest: &str| mirror.url(&format!("/v1/modules/{host}/acme/net/aws/{rest}"));
    let versions = client.get(&below("versions")).await;
    assert_eq!(
        versions.status,
        StatusCode::OK,
        "{name}: {}",
        versions.error_text()
    );
    let listed: Vec<String> = versions.json()["modules"][0]["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(listed, ["1.0.0", "1.1.0"], "{name}");
    let download_url = below("1.1.0/download");
    let answer = client.get(&download_url).await;
    assert_eq!(
        answer.status,
        StatusCode::OK,
        "{name}: {}",
        answer.error_text()
    );
    let location = answer.json()["location"].as_str().unwrap().to_owned();
    let package = client.get(&resolve(&download_url, &location)).await;
    assert_eq!(
        package.status,
        StatusCode::OK,
        "{name}: {}",
        package.error_text()
    );
    let mut files = tar::Archive::new(flate2::read::GzDecoder::new(&package.body[..]));
    let mut main = String::new();
    for entry in files.entries().unwrap() {
        let mut entry = entry.unwrap();
        if entry.path().unwrap().to_str() == Some("main.tf") {
            std::io::Read::read_to_string(&mut entry, &mut main).unwrap();
        }
    }
    assert_eq!(main, format!("# served in the shape of {name}\n"));
    mirror.stop().await;
}
