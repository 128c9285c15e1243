//! Terraform and OpenTofu CLI releases through tfmirror: verified against
//! the release key before anything is kept, served byte for byte in the
//! layouts version managers read, and served again with the origin gone.
//!
//! Each client's requests are replayed as its source makes them (tenv's
//! `versionmanager/retriever/{terraform,tofu}`, tfswitch's `lib/`,
//! tfenv's `libexec/`, hc-install's `internal/releasesjson`), and what it
//! parses is checked the way it parses it.

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use common::daemon::{run_ok, run_tfmirror};
use common::releases::*;
use common::*;
use tfmirror::config::Config;

const LINUX: &str = "linux_amd64";

/// The `[releases]` settings serving Terraform from the origin's `/files/`,
/// trusting `signer`, and OpenTofu from its GitHub-like release downloads
/// (redirected to `/files/`, as GitHub redirects them); `extra` goes into
/// Terraform's table. `table` prefixes the tables' names (`"releases."`
/// inside a configuration file, which then starts with `[releases]`).
fn releases_toml(
    setup: &Setup,
    origin: &FakeOrigin,
    signer: &Signer,
    extra: &str,
    table: &str,
) -> String {
    let key = setup
        .dir
        .path()
        .join(format!("release-key-{}.asc", signer.key_id()));
    std::fs::write(&key, signer.public_armored()).unwrap();
    let port = origin.file_url("x");
    let base = port.trim_end_matches("/files/x");
    let header = if table.is_empty() { "" } else { "[releases]" };
    format!(
        r#"
{header}
products = ["terraform", "tofu"]
[{table}terraform]
list_url = "{base}/files/index.json"
download_url = "{base}/files/{{artifact}}"
key_files = ["{key}"]
{extra}
[{table}tofu]
list_url = "{base}/files/api.json"
download_url = "{base}/gh/opentofu/opentofu/releases/download/v{{version}}/{{artifact}}"
key_files = ["{key}"]
"#,
        key = key.display()
    )
}

/// A mirror configuration with [`releases_toml`]'s settings.
fn releases_config(setup: &Setup, origin: &FakeOrigin, signer: &Signer, extra: &str) -> Config {
    let mut config = setup.config(origin, &[], &[]);
    *config.releases = toml::from_str(&releases_toml(setup, origin, signer, extra, "")).unwrap();
    config
}

/// The files a mirror holds below `releases/`.
fn held_release_files(setup: &Setup) -> Vec<String> {
    files_below(&setup.cache_dir().join("releases"))
        .into_iter()
        .filter(|f| f.contains("/files/"))
        .collect()
}

/// What hc-install does with `ApiBaseURL` set to the mirror: the product
/// index (exactly `application/json`), the version index, the signature
/// whose name carries a key ID it holds, the checksums, and the build's
/// URL path joined to the base (exactly `application/zip`). Returns the zip.
async fn hc_install(client: &Client, base: &str, version: &str, key_id: &str) -> Vec<u8> {
    let index = client.get(&format!("{base}/terraform/index.json")).await;
    assert_eq!(index.status, 200);
    assert_eq!(index.headers["content-type"], "application/json");
    assert!(
        index.json()["versions"].get(version).is_some(),
        "{}",
        index.json()
    );
    let pv = client
        .get(&format!("{base}/terraform/{version}/index.json"))
        .await;
    assert_eq!(pv.headers["content-type"], "application/json");
    let pv = pv.json();
    let short = &key_id[key_id.len() - 8..];
    let sig_name = pv["shasums_signatures"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .find(|s| {
            s.ends_with(&format!("_SHA256SUMS.{short}.sig")) || s.ends_with("_SHA256SUMS.sig")
        })
        .expect("a signature hc-install can pick");
    let sig = client
        .get(&format!("{base}/terraform/{version}/{sig_name}"))
        .await;
    assert_eq!(sig.status, 200);
    let shasums = pv["shasums"].as_str().unwrap();
    let sums = client
        .get(&format!("{base}/terraform/{version}/{shasums}"))
        .await;
    assert_eq!(sums.status, 200);
    let build = pv["builds"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["os"] == "linux" && b["arch"] == "amd64")
        .expect("a linux_amd64 build")
        .clone();
    let path = url::Url::parse(build["url"].as_str().unwrap())
        .unwrap()
        .path()
        .to_owned();
    let zip = client.get(&format!("{base}{path}")).await;
    assert_eq!(zip.status, 200);
    assert_eq!(zip.headers["content-type"], "application/zip");
    let filename = build["filename"].as_str().unwrap();
    let line = format!("{}  {filename}", sha256_hex(&zip.body));
    assert!(String::from_utf8_lossy(&sums.body)
        .lines()
        .any(|l| l == line));
    zip.body.to_vec()
}

/// Extracts the `terraform` binary from a release zip and runs `version`.
fn run_terraform_from(zip: &[u8], dir: &Path) -> String {
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(zip)).unwrap();
    let mut entry = archive.by_name("terraform").unwrap();
    let mut bytes = Vec::new();
    entry.read_to_end(&mut bytes).unwrap();
    let path = dir.join("terraform");
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let out = std::process::Command::new(&path)
        .arg("version")
        .env("CHECKPOINT_DISABLE", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn terraform_binary() -> PathBuf {
    match std::env::var_os("TERRAFORM_BIN") {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        other => panic!(
            "TERRAFORM_BIN must name the Terraform v1.0.3 binary (got {other:?}); run the README's test command"
        ),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
async fn the_real_terraform_release_is_verified_and_served_to_every_client_also_offline() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let binary = std::fs::read(terraform_binary()).unwrap();
    let zip = zip_of("terraform", &binary);
    let other = zip_of("terraform", b"#!/bin/sh\necho darwin\n");
    let published = publish_terraform(
        &origin,
        &signer,
        "1.0.3",
        &[(LINUX, zip.clone()), ("darwin_arm64", other)],
    );
    publish_terraform_index(&origin, &["1.0.3", "0.15.5", "1.1.0-alpha20210616"]);
    let config = releases_config(&setup, &origin, &signer, "");
    let m = RunningMirror::start(config.clone()).await;
    let client = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();

    // hc-install with ApiBaseURL = the mirror.
    let served = hc_install(&client, &base, "1.0.3", &signer.key_id()).await;
    assert_eq!(served, zip, "the zip is served byte for byte");
    let dir = tempfile::tempdir().unwrap();
    let version = run_terraform_from(&served, dir.path());
    assert!(version.starts_with("Terraform v1.0.3"), "{version}");

    // tenv with TFENV_REMOTE = the mirror: the HTML list at <remote>/terraform
    // (no slash), versions from each link's href; install in API mode: the
    // version index, the build URL, and SHA256SUMS and `shasums_signature`
    // beside the version.
    let page = client.get(&format!("{base}/terraform")).await;
    assert_eq!(page.status, 200);
    let html = String::from_utf8_lossy(&page.body).into_owned();
    let tenv_version = regex::Regex::new(
        r"(v?[0-9]+(\.[0-9]+){0,2}(-[0-9A-Za-z\-.]+)?|alpha\-?[0-9]+|beta\-?[0-9]+)",
    )
    .unwrap();
    let href = regex::Regex::new(r#"<a href="([^"]*)""#).unwrap();
    let listed: Vec<String> = href
        .captures_iter(&html)
        .map(|c| tenv_version.find(&c[1]).unwrap().as_str().to_owned())
        .collect();
    assert_eq!(listed, ["1.1.0-alpha20210616", "1.0.3", "0.15.5"]);
    let pv = client
        .get(&format!("{base}/terraform/1.0.3/index.json"))
        .await
        .json();
    for name in [
        pv["shasums"].as_str().unwrap(),
        pv["shasums_signature"].as_str().unwrap(),
    ] {
        let got = client.get(&format!("{base}/terraform/1.0.3/{name}")).await;
        assert_eq!(got.status, 200, "{name}");
        assert_eq!(got.body.as_ref(), published[name].as_slice(), "{name}");
    }

    // tfenv with TFENV_REMOTE = the mirror: `<remote>/terraform/` grepped for
    // versions, newest first; then the zip, SHA256SUMS and the .72D7468F.sig.
    let page = client.get(&format!("{base}/terraform/")).await;
    let tfenv =
        regex::Regex::new(r"[0-9]+\.[0-9]+\.[0-9]+(-(rc|beta|alpha|oci)-?[0-9]*)?").unwrap();
    let mut grepped: Vec<&str> = tfenv
        .find_iter(std::str::from_utf8(&page.body).unwrap())
        .map(|m| m.as_str())
        .collect();
    grepped.dedup();
    assert_eq!(grepped, ["1.1.0-alpha20210616", "1.0.3", "0.15.5"]);
    // tfswitch with --mirror <mirror>/terraform (a slash is appended; the
    // JSON parse fails, so `/<version>/"` is matched) and --mirror-download
    // <mirror>/terraform: the same three files as tfenv.
    let tfswitch = regex::Regex::new(r#"/?(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)/?""#).unwrap();
    let released: Vec<&str> = tfswitch
        .find_iter(std::str::from_utf8(&page.body).unwrap())
        .map(|m| m.as_str().trim_matches(|c| c == '/' || c == '"'))
        .collect();
    assert_eq!(released, ["1.0.3", "0.15.5"]);
    for name in [
        "terraform_1.0.3_linux_amd64.zip",
        "terraform_1.0.3_SHA256SUMS",
        "terraform_1.0.3_SHA256SUMS.72D7468F.sig",
    ] {
        let got = client.get(&format!("{base}/terraform/1.0.3/{name}")).await;
        assert_eq!(got.status, 200, "{name}");
        assert_eq!(got.body.as_ref(), published[name].as_slice(), "{name}");
    }
    // tfswitch with --mirror <mirror>/terraform/index.json reads the keys.
    let keys = client
        .get(&format!("{base}/terraform/index.json"))
        .await
        .json();
    let mut keys: Vec<&String> = keys["versions"].as_object().unwrap().keys().collect();
    keys.sort();
    assert_eq!(keys, ["0.15.5", "1.0.3", "1.1.0-alpha20210616"]);

    // One download from the origin, however many clients asked.
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    assert_eq!(origin.hits("/files/terraform_1.0.3_darwin_arm64.zip"), 0);
    assert_eq!(
        held_release_files(&setup),
        ["terraform/1.0.3/files/terraform_1.0.3_linux_amd64.zip"]
    );

    // The origin gone and the mirror restarted: everything still answers.
    m.stop().await;
    origin.stop();
    let m = RunningMirror::start(config).await;
    let client = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let again = hc_install(&client, &base, "1.0.3", &signer.key_id()).await;
    assert_eq!(again, zip);
    let page = client.get(&format!("{base}/terraform/")).await;
    assert_eq!(page.status, 200);
    assert!(String::from_utf8_lossy(&page.body).contains("/terraform/1.0.3/"));
    let version = run_terraform_from(&again, dir.path());
    assert!(version.starts_with("Terraform v1.0.3"), "{version}");
    // What was never fetched cannot be served now, and says why.
    let missing = client
        .get(&format!(
            "{base}/terraform/1.0.3/terraform_1.0.3_darwin_arm64.zip"
        ))
        .await;
    assert_eq!(missing.status, 502, "{}", missing.error_text());
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tampered_releases_are_refused_and_nothing_is_kept() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let stranger = Signer::new("someone else");
    let zip = |seed: &str| zip_of("terraform", seed.as_bytes());
    // 2.0.0: the zip replaced after its checksum was signed.
    publish_terraform(&origin, &signer, "2.0.0", &[(LINUX, zip("a"))]);
    origin.replace_file("terraform_2.0.0_linux_amd64.zip", zip("tampered"));
    // 2.1.0: checksums signed by another key.
    publish_terraform(&origin, &stranger, "2.1.0", &[(LINUX, zip("b"))]);
    // 2.2.0: a signature over other bytes.
    let files = publish_terraform(&origin, &signer, "2.2.0", &[(LINUX, zip("c"))]);
    let forged = signer.sign_binary(b"other bytes");
    for name in files.keys().filter(|n| n.ends_with(".sig")) {
        origin.replace_file(name, forged.clone());
    }
    // 2.3.0: fine, to show the rest works.
    publish_terraform(
        &origin,
        &signer,
        "2.3.0",
        &[(LINUX, zip("d")), ("windows_amd64", zip("e"))],
    );
    publish_terraform_index(&origin, &["2.0.0", "2.1.0", "2.2.0", "2.3.0", "3.0.0"]);
    let config = releases_config(
        &setup,
        &origin,
        &signer,
        "versions = \"< 3.0.0\"\nplatforms = [\"linux_amd64\"]",
    );
    let m = RunningMirror::start(config).await;
    let client = Client::trusting(&m.ca_file);
    let url = |v: &str, f: &str| m.url(&format!("/terraform/{v}/terraform_{v}_{f}"));

    let tampered = client.get(&url("2.0.0", "linux_amd64.zip")).await;
    assert_eq!(tampered.status, 502);
    assert_eq!(tampered.headers["content-type"], "application/json");
    assert!(
        tampered.error_text().contains("does not match the signed"),
        "{}",
        tampered.error_text()
    );
    for (v, why) in [("2.1.0", "did not verify"), ("2.2.0", "did not verify")] {
        let refused = client.get(&url(v, "linux_amd64.zip")).await;
        assert_eq!(refused.status, 502, "{v}");
        assert!(
            refused.error_text().contains(why),
            "{v}: {}",
            refused.error_text()
        );
        let index = client
            .get(&m.url(&format!("/terraform/{v}/index.json")))
            .await;
        assert_eq!(index.status, 502, "{v}");
        assert!(
            !setup
                .cache_dir()
                .join(format!("releases/terraform/{v}"))
                .exists(),
            "{v}: nothing is kept"
        );
    }
    assert!(
        held_release_files(&setup).is_empty(),
        "{:?}",
        held_release_files(&setup)
    );

    // Outside the configured versions and platforms, and not in the sums.
    let list = client.get(&m.url("/terraform/index.json")).await.json();
    assert!(list["versions"].get("3.0.0").is_none(), "{list}");
    assert_eq!(
        client.get(&url("3.0.0", "linux_amd64.zip")).await.status,
        403
    );
    assert_eq!(
        client.get(&url("2.3.0", "windows_amd64.zip")).await.status,
        403
    );
    assert_eq!(
        client.get(&url("2.3.0", "freebsd_amd64.zip")).await.status,
        404
    );
    assert_eq!(origin.hits("/files/terraform_2.3.0_windows_amd64.zip"), 0);
    let fine = client.get(&url("2.3.0", "linux_amd64.zip")).await;
    assert_eq!(fine.status, 200);
    assert_eq!(fine.body.as_ref(), zip("d").as_slice());
    let builds = client
        .get(&m.url("/terraform/2.3.0/index.json"))
        .await
        .json();
    assert_eq!(builds["builds"].as_array().unwrap().len(), 1, "{builds}");
    // Not a path a release has, and an unknown product.
    assert_eq!(
        client.get(&m.url("/terraform/2.3.0/..%2Fx")).await.status,
        400
    );
    assert_eq!(
        client
            .get(&m.url("/terraform/latest/index.json"))
            .await
            .status,
        400
    );
    m.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn opentofu_releases_answer_tenv_tfswitch_and_tofudl_layouts() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("tofu signer");
    let v = "1.8.0";
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    files.insert(
        format!("tofu_{v}_{LINUX}.zip"),
        zip_of("tofu", b"tofu linux"),
    );
    files.insert(
        format!("tofu_{v}_{LINUX}.tar.gz"),
        b"not really a tarball".to_vec(),
    );
    files.insert(
        format!("tofu_{v}_darwin_arm64.zip"),
        zip_of("tofu", b"tofu darwin"),
    );
    let sums_name = format!("tofu_{v}_SHA256SUMS");
    let sums = sums_of(&files);
    files.insert(format!("{sums_name}.gpgsig"), signer.sign_binary(&sums));
    files.insert(
        format!("{sums_name}.sig"),
        b"MEUCIQ-cosign-signature".to_vec(),
    );
    files.insert(
        format!("{sums_name}.pem"),
        b"-----BEGIN CERTIFICATE-----\n".to_vec(),
    );
    files.insert(sums_name.clone(), sums);
    for (name, bytes) in &files {
        origin.replace_file(name, bytes.clone());
    }
    let api = serde_json::json!({"versions": [
        {"id": "1.7.3", "files": ["tofu_1.7.3_linux_amd64.zip"]},
        {"id": v, "files": files.keys().collect::<Vec<_>>(), "extra": null},
        {"id": "1.9.0-beta1", "files": null},
    ]});
    origin.replace_file("api.json", serde_json::to_vec(&api).unwrap());
    let mut config = releases_config(&setup, &origin, &signer, "");
    config.auth.tokens = vec!["s3cret".into()];
    let m = RunningMirror::start(config).await;
    let client = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    // tenv sends TOFUENV_REMOTE_USER/PASSWORD as Basic authentication.
    let basic = "Basic dGVudjpzM2NyZXQ="; // tenv:s3cret
    let get = |path: String| {
        let client = &client;
        let url = format!("{base}{path}");
        async move { client.get_with_header(&url, "authorization", basic).await }
    };
    assert_eq!(
        client.get(&format!("{base}/tofu/api.json")).await.status,
        401
    );

    // TofuDL, and tenv's and tfswitch's mirror mode: api.json, newest first.
    let doc = get("/tofu/api.json".into()).await;
    assert_eq!(doc.status, 200);
    let doc = doc.json();
    let ids: Vec<&str> = doc["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["1.9.0-beta1", v, "1.7.3"]);

    // tenv, direct install mode (TOFUENV_REMOTE = the mirror): the assets
    // below <remote>/opentofu/opentofu/releases/download/v<version>/, in its
    // order: archive, SHA256SUMS, .pem, .sig, .gpgsig.
    let direct = format!("/opentofu/opentofu/releases/download/v{v}");
    for name in [
        format!("tofu_{v}_{LINUX}.zip"),
        sums_name.clone(),
        format!("{sums_name}.pem"),
        format!("{sums_name}.sig"),
        format!("{sums_name}.gpgsig"),
    ] {
        let got = get(format!("{direct}/{name}")).await;
        assert_eq!(got.status, 200, "{name}: {}", got.error_text());
        assert_eq!(got.body.as_ref(), files[&name].as_slice(), "{name}");
    }
    // The .gpgsig verifies the SHA256SUMS the mirror served, with the key.
    let keyring =
        tfmirror::verify::Keyring::from_armored([signer.public_armored().as_str()]).unwrap();
    let served_sums = get(format!("{direct}/{sums_name}")).await.body;
    let served_sig = get(format!("{direct}/{sums_name}.gpgsig")).await.body;
    keyring
        .verify(&served_sums, &served_sig, "test key")
        .unwrap();

    // tenv's HTML list mode: links below …/releases/download, versions
    // found in each href.
    let page = get("/opentofu/opentofu/releases/download".into()).await;
    assert_eq!(page.status, 200);
    let html = String::from_utf8_lossy(&page.body).into_owned();
    assert!(
        html.contains(&format!(
            "href=\"/opentofu/opentofu/releases/download/v{v}/\""
        )),
        "{html}"
    );

    // tenv's mirror install mode with TOFUENV_URL_TEMPLATE =
    // <mirror>/tofu/{{ .Version }}/{{ .Artifact }}; the files api.json
    // names for a held release are all served.
    let listed = doc["versions"][1]["files"].as_array().unwrap().clone();
    assert!(listed
        .iter()
        .any(|f| f == &format!("tofu_{v}_{LINUX}.tar.gz")));
    for name in listed {
        let name = name.as_str().unwrap();
        let got = get(format!("/tofu/{v}/{name}")).await;
        assert_eq!(got.status, 200, "{name}");
        assert_eq!(got.body.as_ref(), files[name].as_slice(), "{name}");
    }
    // tfswitch for OpenTofu: --mirror <mirror>/tofu/api.json (ids, above)
    // and --mirror-download <mirror>/opentofu/opentofu/releases/download:
    // v<version>/ then the archive, SHA256SUMS and .gpgsig (same paths as
    // tenv's direct mode, above).
    let redirected = format!("/gh/opentofu/opentofu/releases/download/v{v}/tofu_{v}_{LINUX}.zip");
    assert_eq!(
        origin.hits(&redirected),
        1,
        "one download through GitHub's redirect"
    );
    let held = held_release_files(&setup);
    assert_eq!(held.len(), 3, "{held:?}");
    // The status page gives the lines to paste, with this mirror's URL.
    let page = client.get(&format!("{base}/")).await;
    let page = String::from_utf8_lossy(&page.body).into_owned();
    for line in [
        format!("export TFENV_REMOTE={base}"),
        format!("TOFUENV_LIST_URL={base}/tofu/api.json"),
        format!("--mirror-download {base}/opentofu/opentofu/releases/download"),
    ] {
        assert!(page.contains(&line), "{line} in {page}");
    }
    // With the origin gone, the held release is still whole.
    origin.stop();
    let got = get(format!("/tofu/{v}/tofu_{v}_{LINUX}.zip")).await;
    assert_eq!(got.status, 200);
    m.stop().await;
}

/// Rewrites a bundle, replacing the bytes of the entry whose path ends
/// with `leaf` (sizes follow the new bytes).
fn bundle_with(bundle: &Path, out: &Path, leaf: &str, bytes: &[u8]) {
    let mut reader = tar::Archive::new(std::fs::File::open(bundle).unwrap());
    let mut writer = tar::Builder::new(std::fs::File::create(out).unwrap());
    let mut replaced = false;
    for entry in reader.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().to_string_lossy().into_owned();
        let mut body = Vec::new();
        entry.read_to_end(&mut body).unwrap();
        if path.ends_with(leaf) {
            body = bytes.to_vec();
            replaced = true;
        }
        let mut header = entry.header().clone();
        header.set_size(body.len() as u64);
        header.set_cksum();
        writer
            .append_data(&mut header, &path, body.as_slice())
            .unwrap();
    }
    writer.finish().unwrap();
    assert!(replaced, "no entry ends with {leaf}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
async fn a_synced_terraform_release_crosses_the_gap_in_a_bundle_and_serves_offline() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let zip = zip_of("terraform", &std::fs::read(terraform_binary()).unwrap());
    let published = publish_terraform(
        &origin,
        &signer,
        "1.0.3",
        &[
            (LINUX, zip.clone()),
            ("darwin_arm64", zip_of("terraform", b"darwin")),
        ],
    );
    publish_terraform_index(&origin, &["1.0.3", "0.15.5"]);
    let home = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let connected = common::daemon::config_file(
        &setup,
        &origin,
        &releases_toml(&setup, &origin, &signer, "", "releases."),
    );

    // sync fills the cache from a manifest's [[release]] entries; a second
    // run transfers nothing.
    let manifest = home.join("releases.toml");
    std::fs::write(
        &manifest,
        "platforms = [\"linux_amd64\"]\n[[release]]\nproduct = \"terraform\"\nversions = \"~> 1.0.0\"\n",
    )
    .unwrap();
    let sync = [
        "sync",
        "--config",
        &s(&connected),
        "--manifest",
        &s(&manifest),
    ];
    let first = run_ok(home, &sync).await;
    assert!(
        first
            .stdout
            .contains("release files: 1 (1 downloaded, 0 already cached)"),
        "{}",
        first.stdout
    );
    let second = run_ok(home, &sync).await;
    assert!(
        second
            .stdout
            .contains("release files: 1 (0 downloaded, 1 already cached)"),
        "{}",
        second.stdout
    );
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    assert_eq!(origin.hits("/files/terraform_1.0.3_darwin_arm64.zip"), 0);

    // ls --releases names the file and the key that signed its checksums.
    let listed = run_ok(
        home,
        &["ls", "--config", &s(&connected), "--releases", "--json"],
    )
    .await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    assert_eq!(listed.as_array().unwrap().len(), 1, "{listed}");
    assert_eq!(listed[0]["file"], "terraform_1.0.3_linux_amd64.zip");
    assert_eq!(listed[0]["size"], zip.len());
    assert_eq!(listed[0]["key_id"], signer.key_id());

    // The bundle carries the record and the file.
    let bundle = home.join("gap.tar");
    let wrote = common::daemon::export_bundle(home, &connected, &bundle, &[]).await;
    assert!(wrote.stdout.contains("1 release files"), "{}", wrote.stdout);

    // An offline site that serves Terraform releases under the same key
    // imports it, and serves it to clients with no origin anywhere.
    let site_releases = releases_toml(&setup, &origin, &signer, "", "releases.");
    let site = common::daemon::site_config(home, "site", &site_releases);
    let imported = run_ok(home, &["import", "--config", &s(&site), &s(&bundle)]).await;
    assert!(
        imported.stdout.contains("1 CLI releases verified")
            && imported.stdout.contains("0 rejected"),
        "{}",
        imported.stdout
    );
    origin.stop();
    let mut config = releases_config(&setup, &origin, &signer, "");
    config.cache.dir = home.join("site-cache");
    config.upstream.offline = true;
    let m = RunningMirror::start(config).await;
    let client = Client::trusting(&m.ca_file);
    let base = m.url("").trim_end_matches('/').to_owned();
    let served = hc_install(&client, &base, "1.0.3", &signer.key_id()).await;
    assert_eq!(served, zip);
    let dir = tempfile::tempdir().unwrap();
    let version = run_terraform_from(&served, dir.path());
    assert!(version.starts_with("Terraform v1.0.3"), "{version}");
    for name in [
        "terraform_1.0.3_SHA256SUMS",
        "terraform_1.0.3_SHA256SUMS.72D7468F.sig",
    ] {
        let got = client.get(&format!("{base}/terraform/1.0.3/{name}")).await;
        assert_eq!(got.body.as_ref(), published[name].as_slice(), "{name}");
    }
    let page = client.get(&format!("{base}/terraform/")).await;
    assert!(String::from_utf8_lossy(&page.body).contains("/terraform/1.0.3/"));
    let status = client.get(&format!("{base}/-/status")).await;
    assert!(
        String::from_utf8_lossy(&status.body).contains("Held: Terraform 1.0.3 (1 file)"),
        "the status page lists the held release"
    );
    m.stop().await;

    // The site's inventory holds it: a delta for the site carries nothing
    // of it.
    let inventory = home.join("site.json");
    common::daemon::write_inventory(home, &site, &inventory).await;
    let delta = home.join("delta.tar");
    let ran = export_delta(home, &connected, &delta, &inventory).await;
    assert!(ran.stdout.contains("0 release files"), "{}", ran.stdout);

    // Sites that cannot check it refuse it and keep nothing: one that does
    // not serve Terraform releases, one that trusts another key, and a
    // bundle whose zip was replaced.
    let other = Signer::new("another signer");
    let elsewhere = releases_toml(&setup, &origin, &other, "", "releases.");
    let tampered = home.join("tampered.tar");
    bundle_with(
        &bundle,
        &tampered,
        "terraform_1.0.3_linux_amd64.zip",
        &zip_of("terraform", b"evil"),
    );
    for (name, extra, carried, says) in [
        (
            "plain",
            "",
            &bundle,
            "this site does not serve Terraform releases",
        ),
        ("stranger", elsewhere.as_str(), &bundle, "did not verify"),
        (
            "victim",
            site_releases.as_str(),
            &tampered,
            "does not match the signed terraform_1.0.3_SHA256SUMS",
        ),
    ] {
        let site = common::daemon::site_config(home, name, extra);
        let ran = run_tfmirror(home, &["import", "--config", &s(&site), &s(carried)]).await;
        assert!(!ran.ok, "{name}: {}", ran.stdout);
        assert!(ran.stdout.contains(says), "{name}: {}", ran.stdout);
        let kept: Vec<String> = files_below(&home.join(format!("{name}-cache")).join("releases"))
            .into_iter()
            .filter(|f| f.contains("/files/"))
            .collect();
        assert!(kept.is_empty(), "{name} kept {kept:?}");
    }

    // verify re-hashes the held file: a corrupted one is quarantined and
    // no longer held; gc evicts release files like archives.
    let stored = setup
        .cache_dir()
        .join("releases/terraform/1.0.3/files/terraform_1.0.3_linux_amd64.zip");
    std::fs::write(&stored, b"corrupted").unwrap();
    let ran = run_tfmirror(home, &["verify", "--config", &s(&connected)]).await;
    assert!(!ran.ok);
    assert!(
        ran.stdout.contains("QUARANTINED releases/terraform/1.0.3/files/terraform_1.0.3_linux_amd64.zip: its SHA-256"),
        "{}",
        ran.stdout
    );
    assert!(!stored.exists());
    let site_stored =
        home.join("site-cache/releases/terraform/1.0.3/files/terraform_1.0.3_linux_amd64.zip");
    assert!(site_stored.exists());
    let ran = run_ok(home, &["gc", "--config", &s(&site), "--max-size", "1KiB"]).await;
    assert!(ran.stdout.contains(", 1 release files"), "{}", ran.stdout);
    assert!(!site_stored.exists());
}

/// Runs `export --missing-from INVENTORY` of `config`'s cache to `out`.
async fn export_delta(
    home: &Path,
    config: &Path,
    out: &Path,
    inventory: &Path,
) -> common::daemon::Ran {
    common::daemon::export_bundle(
        home,
        config,
        out,
        &["--missing-from", inventory.to_str().unwrap()],
    )
    .await
}

#[cfg_attr(
    tfmirror_no_seaweedfs,
    ignore = "needs WEED_BIN naming SeaweedFS's weed; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn releases_kept_on_a_bucket_serve_every_instance_and_cross_the_gap() {
    use common::seaweed::{use_bucket, Seaweed};
    let weed = Seaweed::start().await;
    weed.create_bucket("releases").await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let zip = zip_of("terraform", b"#!/bin/sh\necho linux\n");
    publish_terraform(&origin, &signer, "1.0.3", &[(LINUX, zip.clone())]);
    publish_terraform_index(&origin, &["1.0.3"]);
    let home = setup.dir.path();
    let mut config = releases_config(&setup, &origin, &signer, "");
    use_bucket(&mut config, weed.s3_config("releases", home));
    let path = "/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip";

    // Instance a fetches it into the bucket; the bucket holds the record
    // and the file under the same names as a disk cache.
    let a = RunningMirror::start(config.clone()).await;
    let got = Client::trusting(&a.ca_file).get(&a.url(path)).await;
    assert_eq!(got.status, 200, "{}", got.error_text());
    assert_eq!(got.body.as_ref(), zip.as_slice());
    a.stop().await;
    let keys = weed.keys("releases").await;
    for key in [
        "mirror/releases/terraform/1.0.3/release.json",
        "mirror/releases/terraform/1.0.3/files/terraform_1.0.3_linux_amd64.zip",
    ] {
        assert!(keys.iter().any(|k| k == key), "{key} not in {keys:?}");
    }

    // Instance b, with its own local directories and the origin gone,
    // serves it from the bucket.
    origin.stop();
    let mut b_config = config.clone();
    b_config.cache.dir = home.join("b-cache");
    b_config.server.data_dir = home.join("b-data");
    let b = RunningMirror::start(b_config).await;
    let got = Client::trusting(&b.ca_file).get(&b.url(path)).await;
    assert_eq!(got.status, 200, "{}", got.error_text());
    assert_eq!(got.body.as_ref(), zip.as_slice());
    b.stop().await;
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);

    // ls and export read the bucket through the same store.
    let file = common::daemon::config_file(
        &setup,
        &origin,
        &format!(
            "{}\n{}",
            weed.storage_toml("releases", home),
            releases_toml(&setup, &origin, &signer, "", "releases.")
        ),
    );
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let listed = run_ok(home, &["ls", "--config", &s(&file), "--releases"]).await;
    assert!(
        listed.stdout.contains("1 releases verified, 1 files held"),
        "{}",
        listed.stdout
    );
    let bundle = home.join("from-bucket.tar");
    let wrote = common::daemon::export_bundle(home, &file, &bundle, &[]).await;
    assert!(wrote.stdout.contains("1 release files"), "{}", wrote.stdout);
    let checked = run_ok(home, &["verify", "--config", &s(&file)]).await;
    assert!(
        checked.stdout.contains("quarantined 0"),
        "{}",
        checked.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_pass_keeps_the_cli_releases_it_lists() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    publish_terraform(
        &origin,
        &signer,
        "1.0.3",
        &[
            (LINUX, zip_of("terraform", b"linux 1.0.3")),
            ("darwin_arm64", zip_of("terraform", b"darwin 1.0.3")),
        ],
    );
    publish_terraform(
        &origin,
        &signer,
        "0.15.5",
        &[(LINUX, zip_of("terraform", b"old"))],
    );
    publish_terraform_index(&origin, &["1.0.3", "0.15.5"]);
    let home = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let watched = "[watch]\nplatforms = [\"linux_amd64\"]\n[[watch.release]]\nproduct = \"terraform\"\nversions = \"~> 1.0.0\"\n";
    let config = common::daemon::config_file(
        &setup,
        &origin,
        &format!(
            "{}{watched}",
            releases_toml(&setup, &origin, &signer, "", "releases.")
        ),
    );
    let once = ["watch", "--once", "--config", &s(&config)];
    run_ok(home, &once).await;
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    assert_eq!(origin.hits("/files/terraform_1.0.3_darwin_arm64.zip"), 0);
    assert_eq!(origin.hits("/files/terraform_0.15.5_linux_amd64.zip"), 0);
    // A new release that matches arrives with the next pass.
    publish_terraform(
        &origin,
        &signer,
        "1.0.4",
        &[(LINUX, zip_of("terraform", b"1.0.4"))],
    );
    publish_terraform_index(&origin, &["1.0.4", "1.0.3", "0.15.5"]);
    run_ok(home, &once).await;
    assert_eq!(origin.hits("/files/terraform_1.0.4_linux_amd64.zip"), 1);
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    let listed = run_ok(
        home,
        &["ls", "--config", &s(&config), "--releases", "--json"],
    )
    .await;
    let listed: serde_json::Value = serde_json::from_str(&listed.stdout).unwrap();
    let files: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    assert_eq!(
        files,
        [
            "terraform_1.0.3_linux_amd64.zip",
            "terraform_1.0.4_linux_amd64.zip"
        ]
    );
    // A mistake in an entry is named.
    let bad = common::daemon::config_file(
        &setup,
        &origin,
        &format!(
            "{}[watch]\n[[watch.release]]\nproduct = \"packer\"\nversions = \"1\"\n",
            releases_toml(&setup, &origin, &signer, "", "releases.")
        ),
    );
    let ran = run_tfmirror(home, &["watch", "--once", "--config", &s(&bad)]).await;
    assert!(!ran.ok);
    assert!(
        ran.stderr.contains("watch.release 1 (packer)"),
        "{}",
        ran.stderr
    );
}

/// CLI releases through two tiers: the lower tier's `[releases]` source is
/// the upper tier's release paths, behind the upper tier's `[auth]`. The
/// lower tier is refused without the token and verifies with it (the
/// signature checked again against its own key files); the origin sends
/// the file once; the lower tier serves it alone once the upper one and
/// the origin are gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_releases_come_through_an_upper_tier_with_its_token() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    let zip = zip_of("terraform", b"#!/bin/sh\necho tiers\n");
    publish_terraform(&origin, &signer, "1.0.3", &[(LINUX, zip.clone())]);
    publish_terraform_index(&origin, &["1.0.3"]);
    let token = "between-the-tiers-0123456789abcdef";
    let mut upper_config = releases_config(&setup, &origin, &signer, "");
    upper_config.auth.tokens = vec![token.to_owned()];
    let upper = RunningMirror::start(upper_config).await;

    let home = setup.dir.path();
    let lower_config = |token: Option<&str>| {
        let mut c = releases_config(&setup, &origin, &signer, "");
        c.cache.dir = home.join("lower-cache");
        c.server.data_dir = home.join("lower-data");
        c.upstream.ca_file = Some(upper.ca_file.clone());
        c.releases.products = vec![tfmirror::address::Product::Terraform];
        let t = &mut c.releases.terraform;
        t.list_url = upper.url("/terraform/index.json").parse().unwrap();
        t.download_url = upper.url("/terraform/{version}/{artifact}");
        t.token = token.map(str::to_owned);
        c
    };
    let path = "/terraform/1.0.3/terraform_1.0.3_linux_amd64.zip";

    // Without the token the upper tier refuses, and the lower one says so.
    let lower = RunningMirror::start(lower_config(None)).await;
    let client = Client::trusting(&lower.ca_file);
    let refused = client.get(&lower.url(path)).await;
    assert_eq!(refused.status, 502, "{}", refused.error_text());
    assert!(
        refused.error_text().contains("401"),
        "{}",
        refused.error_text()
    );
    lower.stop().await;
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 0);

    let lower = RunningMirror::start(lower_config(Some(token))).await;
    let listed = client.get(&lower.url("/terraform/index.json")).await;
    assert_eq!(listed.status, 200, "{}", listed.error_text());
    assert!(listed.json()["versions"].get("1.0.3").is_some());
    let got = client.get(&lower.url(path)).await;
    assert_eq!(got.status, 200, "{}", got.error_text());
    assert_eq!(got.body.as_ref(), zip.as_slice());
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    assert!(files_below(&home.join("lower-cache"))
        .iter()
        .any(|f| f.ends_with("files/terraform_1.0.3_linux_amd64.zip")));

    upper.stop().await;
    origin.stop();
    let got = client.get(&lower.url(path)).await;
    assert_eq!(got.status, 200, "{}", got.error_text());
    assert_eq!(got.body.as_ref(), zip.as_slice());
    lower.stop().await;
}

/// A configuration's `required_version`: `check --from` says whether a
/// Terraform release meeting it is held for each platform, `sync --from`
/// fetches the newest one that does (and no other), and a constraint no
/// listed release meets is named.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_configurations_required_version_is_checked_and_synced() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("release signer");
    for version in ["1.0.2", "1.0.3", "1.1.0"] {
        publish_terraform(
            &origin,
            &signer,
            version,
            &[(LINUX, zip_of("terraform", version.as_bytes()))],
        );
    }
    publish_terraform_index(&origin, &["1.0.2", "1.0.3", "1.1.0"]);
    let home = setup.dir.path();
    let s = |p: &Path| p.to_str().unwrap().to_owned();
    let connected = common::daemon::config_file(
        &setup,
        &origin,
        &releases_toml(&setup, &origin, &signer, "", "releases."),
    );
    let conf = home.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    let write = |constraint: &str| {
        std::fs::write(
            conf.join("versions.tf"),
            format!("terraform {{\n  required_version = \"{constraint}\"\n}}\n"),
        )
        .unwrap();
    };
    write("~> 1.0.0");
    let on_conf = |verb: &'static str| {
        let (connected, conf) = (s(&connected), s(&conf));
        async move {
            let args = [
                verb,
                "--config",
                &connected,
                "--from",
                &conf,
                "--platform",
                LINUX,
            ];
            run_tfmirror(home, &args).await
        }
    };

    let before = on_conf("check").await;
    assert!(!before.ok, "{}", before.stdout);
    assert!(
        before
            .stdout
            .contains("MISSING  cli terraform (required by required_version ~> 1.0.0): never listed by this mirror"),
        "{}",
        before.stdout
    );
    let synced = on_conf("sync").await;
    assert!(synced.ok, "{}{}", synced.stdout, synced.stderr);
    assert_eq!(origin.hits("/files/terraform_1.0.3_linux_amd64.zip"), 1);
    assert_eq!(origin.hits("/files/terraform_1.0.2_linux_amd64.zip"), 0);
    assert_eq!(origin.hits("/files/terraform_1.1.0_linux_amd64.zip"), 0);
    let after = on_conf("check").await;
    assert!(after.ok, "{}{}", after.stdout, after.stderr);
    assert!(
        after.stdout.contains(
            "HELD     cli terraform 1.0.3 linux_amd64 (required by required_version ~> 1.0.0)"
        ),
        "{}",
        after.stdout
    );

    // A constraint no listed release meets.
    write(">= 2.0.0");
    let none = on_conf("check").await;
    assert!(!none.ok);
    assert!(
        none.stdout
            .contains("MISSING  cli terraform (required by required_version >= 2.0.0): no version this mirror lists meets \">= 2.0.0\""),
        "{}",
        none.stdout
    );

    // A registry module's own `required_version`, which `init` checks as
    // it checks the root's: the release held no longer meets them all.
    origin.publish_archive_module(
        ("acme", "net", "aws"),
        "1.0.0",
        common::pages::tar_gz(&[(
            "main.tf",
            b"terraform {\n  required_version = \"< 1.0.3\"\n}\n",
        )]),
    );
    std::fs::write(
        conf.join("versions.tf"),
        "terraform {\n  required_version = \"~> 1.0.0\"\n}\nmodule \"net\" {\n  source  = \"registry.origin.test/acme/net/aws\"\n  version = \"1.0.0\"\n}\n",
    )
    .unwrap();
    let synced = on_conf("sync").await;
    assert!(synced.ok, "{}{}", synced.stdout, synced.stderr);
    let joined = on_conf("check").await;
    assert!(!joined.ok, "{}", joined.stdout);
    assert!(
        joined.stdout.contains(
            "MISSING  cli terraform 1.0.2 linux_amd64 (required by required_version ~> 1.0.0, < 1.0.3): never fetched"
        ),
        "{}",
        joined.stdout
    );
}
