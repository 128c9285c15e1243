//! A mirror for the pages' tests: two providers and the `vpc` module with
//! an interface to show, and a module per hostile README, all fetched
//! through the protocol's paths.

use std::collections::BTreeSet;
use std::path::Path;

use http::StatusCode;

use super::{resolve, Client, FakeOrigin, RunningMirror, Setup, Signer};

const HOST: &str = "registry.origin.test";

/// The module with an interface to show: what its `variables.tf` says.
pub const VARIABLES_TF: &str = r#"variable "name" {
  type        = string
  description = "The network's name"
}

variable "cidr" {
  type        = string
  default     = "10.0.0.0/16"
  description = "Its address range"
}

variable "zones" {
  type    = list(string)
  default = []
}

variable "secret" {
  type      = string
  sensitive = true
  default   = null
}
"#;

pub const README: &str = "# VPC\n\nA network, with **subnets**.\n\n| input | meaning |\n|---|---|\n| name | the name |\n\n```hcl\nmodule \"vpc\" {}\n```\n";

/// A `.tar.gz` of `files`.
pub fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut tar = tar::Builder::new(flate2::write::GzEncoder::new(
        Vec::new(),
        flate2::Compression::fast(),
    ));
    for (path, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        tar.append_data(&mut header, path, *bytes).unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap()
}

/// A mirror holding two providers (four versions), the `vpc` module and
/// a module per hostile README, all fetched through the protocol's paths.
pub struct World {
    pub setup: Setup,
    pub mirror: RunningMirror,
    pub http: Client,
    /// The hostile modules' names, by corpus file.
    pub hostile: Vec<(String, String)>,
    /// The documentation of acme/widget 1.2.0, as its origin serves it:
    /// the null provider's v3.2.4 tree, then a resource page per hostile
    /// README (`hostile_<corpus file>`).
    pub docs: Vec<super::docs::TreeDoc>,
    /// The documentation of acme/widget 1.0.0: the null provider's v3.2.1
    /// tree.
    pub older_docs: Vec<super::docs::TreeDoc>,
    /// The ID of the key that signed the providers.
    pub key_id: String,
    /// The origin the mirror fetched them from, still up.
    pub origin: FakeOrigin,
    /// The key that signed them.
    pub signer: Signer,
    /// When the world began to be built: nothing in it is older.
    pub began: std::time::SystemTime,
}

pub async fn world(tokens: &[&str]) -> World {
    let began = std::time::SystemTime::now();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "1.2.0",
        &["linux_amd64", "darwin_arm64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "widget",
        "1.1.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    origin.publish(
        "acme",
        "gadget",
        "0.9.1",
        &["windows_amd64"],
        &signer,
        &[&signer],
    );
    let vpc = tar_gz(&[
        ("README.md", README.as_bytes()),
        ("variables.tf", VARIABLES_TF.as_bytes()),
        ("outputs.tf", b"output \"id\" {\n  value       = \"x\"\n  description = \"The network's id\"\n}\n"),
        ("versions.tf", b"terraform {\n  required_version = \">= 1.0\"\n  required_providers {\n    widget = {\n      source  = \"registry.origin.test/acme/widget\"\n      version = \"~> 1.2\"\n    }\n  }\n}\n"),
        ("modules/subnet/main.tf", b"variable \"cidr\" {}\noutput \"subnet_id\" {\n  value = var.cidr\n}\n"),
        ("examples/basic/main.tf", b"module \"vpc\" {\n  source = \"../..\"\n  name   = \"x\"\n}\n"),
    ]);
    origin.publish_archive_module(("acme", "vpc", "aws"), "1.0.0", vpc);
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/hostile-readmes");
    let mut hostile = Vec::new();
    let mut names: Vec<_> = std::fs::read_dir(&corpus)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    names.sort();
    let mut readmes: Vec<(String, Vec<u8>)> = names
        .iter()
        .map(|p| {
            (
                p.file_stem().unwrap().to_string_lossy().into_owned(),
                std::fs::read(p).unwrap(),
            )
        })
        .collect();
    // A 5 MiB README, of links and script tags.
    let paragraph = "A [link](https://evil.example/big) <script>document.title='pwned-big'</script> and text.\n\n";
    readmes.push((
        "big".into(),
        paragraph.repeat((5 << 20) / paragraph.len()).into_bytes(),
    ));
    for (name, readme) in &readmes {
        let module = format!("hostile-{name}");
        let package = tar_gz(&[("README.md", readme), ("main.tf", b"variable \"x\" {}\n")]);
        origin.publish_archive_module(("acme", &module, "aws"), "1.0.0", package);
        hostile.push((name.clone(), module));
    }
    // acme/widget 1.2.0's documentation, in registry.terraform.io's
    // shape: a real tree, and each hostile README as a resource's page.
    let mut docs = super::docs::tree_docs("null-v3.2.4");
    for (name, readme) in readmes.iter().filter(|(n, _)| n != "big") {
        docs.push(super::docs::TreeDoc {
            category: "resources",
            name: format!("hostile_{name}"),
            content: readme.clone(),
        });
    }
    super::docs::serve_terraform_shape(&origin, ("widget", "1.2.0"), &docs, 7_000);
    // acme/widget 1.0.0's: the null provider's older v3.2.1 tree, so that
    // what changed between the two is the trees' difference.
    let older_docs = super::docs::tree_docs("null-v3.2.1");
    super::docs::serve_terraform_shape(&origin, ("widget", "1.0.0"), &older_docs, 8_000);
    let mut config = setup.module_config(&origin, HOST);
    super::docs::docs_from(&mut config, HOST, &origin);
    config.auth.tokens = tokens.iter().map(|t| (*t).to_owned()).collect();
    let mirror = RunningMirror::start(config).await;
    let http = Client::trusting(&mirror.ca_file);
    let bearer = tokens.first().map(|t| format!("Bearer {t}"));
    // Archive links are signed when tokens are on: ask for the documents
    // and follow them as Terraform does.
    for (kind, version, platforms) in [
        ("widget", "1.2.0", vec!["linux_amd64", "darwin_arm64"]),
        ("widget", "1.1.0", vec!["linux_amd64"]),
        ("widget", "1.0.0", vec!["linux_amd64"]),
        ("gadget", "0.9.1", vec!["windows_amd64"]),
    ] {
        let version_url = mirror.url(&format!("/{HOST}/acme/{kind}/{version}.json"));
        let listed = http
            .request_with(http::Method::GET, &version_url, bearer.as_deref())
            .await
            .json();
        for platform in platforms {
            let link = listed["archives"][platform]["url"].as_str().unwrap();
            let got = http.get(&resolve(&version_url, link)).await;
            assert_eq!(got.status, StatusCode::OK, "{kind} {version} {platform}");
        }
    }
    let mut modules = vec!["vpc".to_owned()];
    modules.extend(hostile.iter().map(|(_, m)| m.clone()));
    for module in modules {
        let download = mirror.url(&format!(
            "/v1/modules/{HOST}/acme/{module}/aws/1.0.0/download"
        ));
        let got = http
            .request_with(http::Method::GET, &download, bearer.as_deref())
            .await;
        assert_eq!(got.status, StatusCode::OK, "{module}");
        let location = got.headers["x-terraform-get"].to_str().unwrap().to_owned();
        let package = http.get(&resolve(&download, &location)).await;
        assert_eq!(package.status, StatusCode::OK, "{module}");
    }
    // The documentation is kept in the background, after the archive.
    for version in ["1.2.0", "1.0.0"] {
        let kept = setup
            .cache_dir()
            .join(format!("docs/versions/{HOST}/acme/widget/{version}.json"));
        super::wait_until(
            &format!("acme/widget {version}'s documentation is kept"),
            std::time::Duration::from_secs(60),
            || kept.exists(),
        )
        .await;
    }
    World {
        docs,
        older_docs,
        setup,
        mirror,
        http,
        hostile,
        key_id: signer.key_id(),
        began,
        origin,
        signer,
    }
}

/// The `h1:` hashes of a lock file's text.
pub fn h1_set(lock: &str) -> BTreeSet<String> {
    let re = regex::Regex::new(r#""(h1:[A-Za-z0-9+/=]+)""#).unwrap();
    re.captures_iter(lock).map(|c| c[1].to_owned()).collect()
}

/// A form's fields, URL-encoded.
pub fn form(fields: &[(&str, &str)]) -> Vec<u8> {
    url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs(fields)
        .finish()
        .into_bytes()
}
