use super::*;

#[test]
fn reads_required_providers_and_lock_files() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        r#"
terraform {
  required_providers {
aws = {
  source  = "hashicorp/aws"
  version = "~> 5.0"
}
widget = {
  source = "registry.example/acme/widget"
}
null = ">= 3.0"
  }
}
resource "null_resource" "x" {}
"#,
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("modules/net/.terraform")).unwrap();
    std::fs::write(
        dir.path().join("modules/net/versions.tf"),
        "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \">= 5.1\" }\n  }\n}\n",
    )
    .unwrap();
    // Working data is skipped.
    std::fs::write(
        dir.path().join("modules/net/.terraform/ignored.tf"),
        "this is { not hcl",
    )
    .unwrap();
    std::fs::write(
        dir.path().join(".terraform.lock.hcl"),
        r#"
provider "registry.example/acme/widget" {
  version     = "1.2.0"
  constraints = "~> 1.0"
  hashes = [
"h1:abc=",
  ]
}
"#,
    )
    .unwrap();
    std::fs::write(
        dir.path().join("modules.tf"),
        r#"
module "vpc" {
  source  = "terraform-aws-modules/vpc/aws"
  version = "~> 5.0"
}
module "vpc_again" {
  source  = "registry.terraform.io/terraform-aws-modules/vpc/aws//modules/x"
  version = "< 5.2"
}
module "local" {
  source = "./modules/net"
}
module "git" {
  source = "git::https://example.com/net.git?ref=v1"
}
module "github" {
  source = "github.com/org/repo"
}
"#,
    )
    .unwrap();
    let platforms = vec![Platform::parse("linux_amd64").unwrap()];
    let selection = from_directory(
        dir.path(),
        &platforms,
        &crate::module_source::configuration::ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(selection.modules.len(), 1);
    assert_eq!(
        selection.modules[0].module.to_string(),
        "registry.terraform.io/terraform-aws-modules/vpc/aws"
    );
    assert_eq!(selection.modules[0].constraints.as_str(), "~> 5.0, < 5.2");
    let found = selection.providers;
    let by_name: BTreeMap<String, &Requirement> =
        found.iter().map(|r| (r.provider.to_string(), r)).collect();
    assert_eq!(
        by_name.keys().collect::<Vec<_>>(),
        [
            "registry.example/acme/widget",
            "registry.terraform.io/hashicorp/aws",
            "registry.terraform.io/hashicorp/null",
        ]
    );
    let aws = by_name["registry.terraform.io/hashicorp/aws"];
    assert_eq!(aws.constraints.as_str(), "~> 5.0, >= 5.1");
    let widget = by_name["registry.example/acme/widget"];
    assert_eq!(widget.pinned, [Version::parse("1.2.0").unwrap()]);
    assert_eq!(
        widget.locked_hashes[&Version::parse("1.2.0").unwrap()],
        BTreeSet::from(["h1:abc=".to_owned()])
    );
    // One file read alone: the lock file pins, its hashes kept.
    let alone = from_directory(
        &dir.path().join(".terraform.lock.hcl"),
        &platforms,
        &crate::module_source::configuration::ReadOptions::default(),
    )
    .unwrap();
    assert_eq!(alone.providers.len(), 1);
    assert_eq!(
        alone.providers[0]
            .locked_hashes
            .values()
            .next()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        by_name["registry.terraform.io/hashicorp/null"]
            .constraints
            .as_str(),
        ">= 3.0"
    );
}

#[test]
fn manifests_name_their_mistakes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.toml");
    for (text, says) in [
        ("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"a/b/c/d\"\n", "provider 1"),
        ("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"a/b\"\nversions = \"=> 1\"\n", "did you mean"),
        ("[[provider]]\nsource = \"a/b\"\n", "no platforms"),
        ("platforms = [\"Linux\"]\n[[provider]]\nsource = \"a/b\"\n", "platforms"),
        ("platforms = []\n[[provider]]\nsource = \"a/b\"\nversion = \"1\"\n", "unknown field"),
        ("[[module]]\nsource = \"a/b\"\n", "module 1"),
        ("[[module]]\nsource = \"a/b/c//sub\"\n", "subdirectory"),
        ("platforms = []\n", "no [[provider]], [[module]] or [[release]]"),
        ("[[release]]\nproduct = \"packer\"\nversions = \"1.0\"\n", "release 1 (packer)"),
        ("platforms = [\"linux_amd64\"]\n[[release]]\nproduct = \"terraform\"\n", "give `versions`"),
        ("[[release]]\nproduct = \"tofu\"\nversions = \"1.8.0\"\n", "no platforms"),
        ("platforms = [\"linux_amd64\"]\n[[release]]\nproduct = \"tofu\"\nversions = \">= 1\"\nos = \"linux\"\n", "unknown field"),
    ] {
        std::fs::write(&path, text).unwrap();
        let err = format!("{:#}", from_manifest(&path).unwrap_err());
        assert!(err.contains(says), "{text}: {err}");
    }
    std::fs::write(
        &path,
        "platforms = [\"linux_amd64\", \"darwin_arm64\"]\n[[provider]]\nsource = \"hashicorp/aws\"\nversions = \"~> 5.0\"\n[[provider]]\nsource = \"registry.opentofu.org/opentofu/random\"\nversions = \">= 3.5, < 4.0\"\nplatforms = [\"linux_amd64\"]\n",
    )
    .unwrap();
    let found = from_manifest(&path).unwrap().providers;
    std::fs::write(
        &path,
        "platforms = [\"linux_amd64\"]\n[[release]]\nproduct = \"opentofu\"\nversions = \"~> 1.8.0\"\nplatforms = [\"darwin_arm64\"]\n",
    )
    .unwrap();
    let releases = from_manifest(&path).unwrap().releases;
    assert_eq!(releases.len(), 1);
    assert_eq!(releases[0].product, Product::Tofu);
    assert_eq!(
        releases[0].platforms,
        [Platform::parse("darwin_arm64").unwrap()]
    );
    assert!(releases[0]
        .constraints
        .allows(Version::parse("1.8.3").unwrap().semver()));
    assert!(!releases[0]
        .constraints
        .allows(Version::parse("1.9.0").unwrap().semver()));
    assert_eq!(
        found[0].provider.to_string(),
        "registry.terraform.io/hashicorp/aws"
    );
    assert_eq!(found[0].platforms.len(), 2);
    assert_eq!(found[1].platforms.len(), 1);
}

#[test]
fn a_manifests_client_decides_where_unqualified_sources_are() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.toml");
    let entries = "platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"hashicorp/aws\"\n[[module]]\nsource = \"acme/net/aws\"\n";
    for (client, host) in [
        ("", "registry.terraform.io"),
        ("client = \"terraform\"\n", "registry.terraform.io"),
        ("client = \"opentofu\"\n", "registry.opentofu.org"),
        ("client = \"tofu\"\n", "registry.opentofu.org"),
    ] {
        std::fs::write(&path, format!("{client}{entries}")).unwrap();
        let selection = from_manifest(&path).unwrap();
        assert_eq!(
            selection.providers[0].provider.hostname.as_str(),
            host,
            "{client}"
        );
        assert_eq!(
            selection.modules[0].module.hostname.as_str(),
            host,
            "{client}"
        );
        let expected = if host == "registry.opentofu.org" {
            Product::Tofu
        } else {
            Product::Terraform
        };
        assert_eq!(selection.client(), expected);
    }
    std::fs::write(&path, format!("client = \"packer\"\n{entries}")).unwrap();
    let err = format!("{:#}", from_manifest(&path).unwrap_err());
    assert!(err.contains("client") || err.contains("packer"), "{err}");
}
