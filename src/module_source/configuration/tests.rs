use std::path::PathBuf;

use serde_json::Value;

use super::*;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configurations")
}

/// What `read` found, in the form of `expect.json`'s `reads`.
fn as_expected(read: &Configuration) -> Value {
    let terms = |m: &BTreeMap<String, Vec<String>>| -> Value { serde_json::to_value(m).unwrap() };
    serde_json::json!({
        "providers": terms(&read.providers.iter().map(|(p, t)| (p.to_string(), t.clone())).collect()),
        "modules": terms(&read.modules.iter().map(|(m, t)| (m.to_string(), t.constraints.clone())).collect()),
        "unserved": read.unserved.iter().map(|u| format!("{} {}", u.source, u.at.rsplit('/').next().unwrap())).collect::<Vec<_>>(),
        "core": read.core.iter().map(|c| c.constraint.clone()).collect::<Vec<_>>(),
    })
}

fn client_named(name: &str) -> Product {
    name.parse().unwrap()
}

#[test]
fn the_corpus_reads_as_its_client_reads_it() {
    let mut seen = 0;
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("expect.json")) else {
            continue;
        };
        seen += 1;
        let expect: Value = serde_json::from_str(&text).unwrap();
        let name = dir.display();
        let read = super::read(&dir.join("root"), None).unwrap();
        assert_eq!(
            read.rules.client,
            client_named(expect["client"].as_str().unwrap()),
            "{name}"
        );
        assert_eq!(as_expected(&read), expect["reads"], "{name}");
        if let Some(also) = expect.get("also") {
            let client = client_named(also["client"].as_str().unwrap());
            let other = super::read(&dir.join("root"), Some(client)).unwrap();
            assert_eq!(other.rules.chosen_by, ChosenBy::Given, "{name}");
            assert_eq!(
                as_expected(&other)["providers"],
                also["providers"],
                "{name} read by {client:?}"
            );
        }
    }
    assert!(seen >= 10, "only {seen} configurations in the corpus");
}

#[test]
fn module_sources_are_classified_as_the_clients_classify_them() {
    let t = Product::Terraform;
    let registry = |s: &str| match classify(s, t) {
        Source::Registry(m, sub) => {
            format!("{m}{}", sub.map(|s| format!("//{s}")).unwrap_or_default())
        }
        other => panic!("{s}: {other:?}"),
    };
    assert_eq!(
        registry("hashicorp/consul/aws"),
        "registry.terraform.io/hashicorp/consul/aws"
    );
    assert_eq!(
        registry("app.terraform.io/acme/net/aws//modules/x"),
        "app.terraform.io/acme/net/aws//modules/x"
    );
    assert!(
        matches!(classify("hashicorp/consul/aws", Product::Tofu), Source::Registry(m, _) if m.hostname.as_str() == "registry.opentofu.org")
    );
    assert_eq!(classify("./net", t), Source::Local("./net".into()));
    assert_eq!(classify("..\\net", t), Source::Local("../net".into()));
    for (source, kind) in [
        (
            "git::https://example.com/net.git?ref=v1",
            "a git repository",
        ),
        ("github.com/hashicorp/example", "a git repository"),
        ("github.com/acme/net/aws", "a git repository"),
        ("bitbucket.org/acme/net", "a git repository"),
        ("git@github.com:acme/net.git", "a git repository"),
        (
            "s3::https://s3-eu-west-1.amazonaws.com/bucket/net.zip",
            "an S3 bucket",
        ),
        (
            "gcs::https://www.googleapis.com/storage/v1/bucket/net.zip",
            "a Google Cloud Storage bucket",
        ),
        ("https://example.com/net.zip", "an HTTP URL"),
        (
            "hashicorp/consul/aws//../escape",
            "a source the client fetches itself",
        ),
        (
            "localhost/acme/net/aws",
            "a source the client fetches itself",
        ),
        ("oci://registry.example/acme/net", "an OCI registry"),
    ] {
        assert_eq!(classify(source, t), Source::Remote(kind), "{source}");
    }
}

#[test]
fn what_init_would_refuse_is_an_error_naming_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    };
    let error = || format!("{:#}", super::read(dir.path(), None).unwrap_err());
    write("main.tf", "module \"gone\" {\n  source = \"./absent\"\n}\n");
    assert!(
        error().contains("module \"gone\"") && error().contains("main.tf:1"),
        "{}",
        error()
    );
    write("main.tf", "module \"nothing\" {}\n");
    assert!(error().contains("has no source"), "{}", error());
    write(
        "main.tf",
        "terraform {\n  required_providers {\n    a = { source = \"x/y/z/w\" }\n  }\n}\n",
    );
    assert!(
        error().contains("required_providers entry \"a\"") && error().contains("main.tf"),
        "{}",
        error()
    );
    write("main.tf", "resource \"alpha_x\" \"a\" {}\n");
    write("x_override.tf", "module \"m\" {\n  source = \"./y\"\n}\n");
    assert!(error().contains("x_override.tf:1"), "{}", error());
    std::fs::remove_file(dir.path().join("x_override.tf")).unwrap();
    write("broken.tf.json", "{\"resource\": ");
    assert!(
        error().contains("broken.tf.json is not valid JSON"),
        "{}",
        error()
    );
    let file = dir.path().join("main.tf");
    assert!(format!("{:#}", super::read(&file, None).unwrap_err()).contains("not a directory"));
}

#[test]
fn local_modules_are_read_once_however_often_they_are_called() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(dir.path().join("m")).unwrap();
    std::fs::write(
        dir.path().join("main.tf"),
        "module \"a\" {\n  source = \"./m\"\n}\nmodule \"b\" {\n  source = \"./m/\"\n}\n",
    )
    .unwrap();
    // The module calls its caller's directory: a cycle the walk ends.
    std::fs::write(
        dir.path().join("m/main.tf"),
        "resource \"alpha_x\" \"a\" {\n  provider = alpha.west\n}\nmodule \"up\" {\n  source = \"../\"\n}\n",
    )
    .unwrap();
    let read = super::read(dir.path(), Some(Product::Terraform)).unwrap();
    assert_eq!(read.providers.len(), 1);
    assert_eq!(read.rules.chosen_by, ChosenBy::Given);
    assert!(read
        .rules
        .to_string()
        .contains("Terraform's rules (as given"));
}

#[test]
fn a_package_is_read_from_the_directories_its_callers_use() {
    let package = Package::of(&[
        (
            "main.tf",
            "terraform {\n  required_providers {\n    aws = { source = \"hashicorp/aws\", version = \">= 5.0\" }\n  }\n}\nmodule \"inner\" {\n  source = \"./modules/inner\"\n}\n",
        ),
        ("modules/inner/main.tf", "resource \"random_id\" \"x\" {}\nmodule \"vpc\" {\n  source  = \"acme/vpc/aws\"\n  version = \"~> 1.0\"\n}\n"),
        ("modules/other/main.tf", "resource \"tls_key\" \"k\" {}\nmodule \"git\" {\n  source = \"git::https://example.com/x.git\"\n}\n"),
        ("modules/escape/main.tf", "module \"up\" {\n  source = \"../../../outside\"\n}\n"),
        // Never read: nobody calls the examples.
        ("examples/complete/main.tf", "resource \"omega_x\" \"x\" {}\nmodule \"root\" {\n  source = \"../../\"\n}\n"),
    ]);
    let names = |read: &Configuration| -> Vec<String> {
        read.providers.keys().map(ToString::to_string).collect()
    };
    let root = BTreeSet::from([String::new()]);
    let read = read_package(&package, &root, Product::Tofu).unwrap();
    assert_eq!(
        names(&read),
        [
            "registry.opentofu.org/hashicorp/aws",
            "registry.opentofu.org/hashicorp/random"
        ]
    );
    assert_eq!(
        read.modules
            .keys()
            .map(ToString::to_string)
            .collect::<Vec<_>>(),
        ["registry.opentofu.org/acme/vpc/aws"]
    );
    // A caller of `//modules/other` gets that directory's needs.
    let other = read_package(
        &package,
        &BTreeSet::from(["modules/other".to_owned()]),
        Product::Terraform,
    )
    .unwrap();
    assert_eq!(names(&other), ["registry.terraform.io/hashicorp/tls"]);
    assert_eq!(other.unserved[0].at, "modules/other/main.tf:2");
    // A local call out of the package is refused, as the clients refuse it.
    let err = read_package(
        &package,
        &BTreeSet::from(["modules/escape".to_owned()]),
        Product::Terraform,
    )
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("leads out of the module package"),
        "{err:#}"
    );
    let err = read_package(
        &package,
        &BTreeSet::from(["absent".to_owned()]),
        Product::Terraform,
    )
    .unwrap_err();
    assert!(
        format!("{err:#}").contains("no directory absent"),
        "{err:#}"
    );
}
