use super::*;

#[test]
fn native_syntax_names_what_init_installs() {
    let text = r#"
terraform {
  required_version = ">= 1.0.0"
  required_providers {
    aws = {
      source                = "hashicorp/aws"
      version               = "~> 5.0"
      configuration_aliases = [aws.west]
    }
    legacy = ">= 2.0"
  }
  provider_meta "aws" {
    module_name = "x"
  }
}

provider "gamma" {
  alias   = "two"
  version = "< 3.0"
}

resource "alpha_thing" "a" {
  provider = aws.west
}

data "beta_info" "b" {}

check "health" {
  data "delta_probe" "p" {}
  assert {
    condition     = true
    error_message = "never"
  }
}

module "net" {
  source  = "acme/net/aws"
  version = "1.0.0"
}
"#;
    let parts = from_native(text, "main.tf").unwrap();
    assert_eq!(parts.core, [">= 1.0.0"]);
    let locals: Vec<&str> = parts.required.iter().map(|(l, _)| l.as_str()).collect();
    assert_eq!(locals, ["aws", "legacy"]);
    assert_eq!(parts.required[1].1.version.as_deref(), Some(">= 2.0"));
    assert_eq!(parts.providers[0].alias.as_deref(), Some("two"));
    let resources: Vec<(&str, Option<&str>)> = parts
        .resources
        .iter()
        .map(|r| (r.key.as_str(), r.provider.as_deref()))
        .collect();
    assert_eq!(
        resources,
        [
            ("resource.alpha_thing.a", Some("aws")),
            ("data.beta_info.b", None),
            ("check.health.delta_probe.p", None),
        ]
    );
    assert_eq!(parts.calls[0].at, "main.tf:36");
    assert_eq!(parts.calls[0].version.as_deref(), Some("1.0.0"));
}

#[test]
fn json_syntax_reads_the_same_blocks() {
    let value: Value = serde_json::from_str(
        r#"{
  "terraform": {"required_version": ">= 1.0", "required_providers": {"aws": {"source": "hashicorp/aws", "version": "~> 5.0"}}},
  "provider": {"gamma": [{"version": "< 3"}, {"alias": "b"}]},
  "resource": {"alpha_thing": {"a": {"provider": "aws.west"}}},
  "data": {"beta_info": {"b": [{}]}},
  "module": {"net": {"source": "acme/net/aws", "version": "1.0.0"}},
  "variable": {"x": {}}
}"#,
    )
    .unwrap();
    let parts = from_json(&value, "main.tf.json").unwrap();
    assert_eq!(parts.core, [">= 1.0"]);
    assert_eq!(parts.required[0].1.source.as_deref(), Some("hashicorp/aws"));
    assert_eq!(parts.providers.len(), 2);
    let keys: Vec<(&str, Option<&str>)> = parts
        .resources
        .iter()
        .map(|r| (r.key.as_str(), r.provider.as_deref()))
        .collect();
    assert_eq!(
        keys,
        [
            ("data.beta_info.b", None),
            ("resource.alpha_thing.a", Some("aws"))
        ]
    );
    assert_eq!(parts.calls[0].at, "main.tf.json");
}

#[test]
fn what_the_clients_refuse_is_an_error_naming_the_file() {
    for (text, says) in [
        ("terraform {\n", "main.tf is not valid HCL"),
        (
            "module \"m\" {\n  source = var.x\n}\n",
            "module \"m\" (main.tf:1)",
        ),
        (
            "terraform {\n  required_providers {\n    aws = 5\n  }\n}\n",
            "required_providers entry \"aws\" is neither",
        ),
        (
            "terraform {\n  required_providers {\n    aws = { source = local.s }\n  }\n}\n",
            "`source` must be a literal string",
        ),
    ] {
        let err = format!("{:#}", from_native(text, "main.tf").unwrap_err());
        assert!(err.contains(says), "{text}: {err}");
    }
}
