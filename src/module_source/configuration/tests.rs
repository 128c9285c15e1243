use std::path::{Path, PathBuf};

use serde_json::Value;

use super::*;

fn corpus() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configurations")
}

/// What `read` of the configuration at `root` found, in the form of
/// `expect.json`'s `reads` (test files and refusals when there are any,
/// with paths below `root`).
fn as_expected(read: &Configuration, root: &Path) -> Value {
    let terms = |m: &BTreeMap<String, Vec<String>>| -> Value { serde_json::to_value(m).unwrap() };
    let below = |s: &str| s.replace(&format!("{}/", root.display()), "");
    let mut out = serde_json::json!({
        "providers": terms(&read.providers.iter().map(|(p, t)| (p.to_string(), t.clone())).collect()),
        "modules": terms(&read.modules.iter().map(|(m, t)| (m.to_string(), t.constraints.clone())).collect()),
        "unserved": read.unserved.iter().map(|u| format!("{} {}", u.source, u.at.rsplit('/').next().unwrap())).collect::<Vec<_>>(),
        "core": read.core.iter().map(|c| c.constraint.clone()).collect::<Vec<_>>(),
    });
    if let Some(tests) = read.tests.as_ref().filter(|t| !t.files.is_empty()) {
        out["tests"] = serde_json::json!(tests.files);
    }
    if !read.refused.is_empty() {
        out["refused"] = read
            .refused
            .iter()
            .map(|r| below(&format!("{}: {}", r.at, r.message)))
            .collect();
    }
    out
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
        let read = super::read(&dir.join("root"), &super::ReadOptions::default()).unwrap();
        assert_eq!(
            read.rules.client,
            client_named(expect["client"].as_str().unwrap()),
            "{name}"
        );
        assert_eq!(
            as_expected(&read, &dir.join("root")),
            expect["reads"],
            "{name}"
        );
        // No OpenTofu CLI runs here: its expectations name their source
        // in its code.
        let cited = |v: &Value| v["sources"].as_array().is_some_and(|s| !s.is_empty());
        if expect["client"] == "opentofu" {
            assert!(
                cited(&expect),
                "{name}: OpenTofu's expectations cite no source"
            );
        }
        if expect["also"]["client"] == "opentofu" {
            assert!(
                cited(&expect["also"]),
                "{name}: OpenTofu's reading cites no source"
            );
        }
        if let Some(also) = expect.get("also") {
            let client = client_named(also["client"].as_str().unwrap());
            let other =
                super::read(&dir.join("root"), &super::ReadOptions::client(Some(client))).unwrap();
            assert_eq!(other.rules.chosen_by, ChosenBy::Given, "{name}");
            assert_eq!(
                as_expected(&other, &dir.join("root"))["providers"],
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
        ("oci://registry.example/acme/net", "an OCI registry"),
        ("/srv/modules/net", "an absolute path"),
    ] {
        assert_eq!(classify(source, t), Source::Remote(kind), "{source}");
    }
    // Nothing the clients recognise: a relative path written without
    // `./`, a registry address whose subdirectory leads out, a hostname
    // without a dot.
    for source in [
        "stage",
        "modules/net",
        "hashicorp/consul/aws//../escape",
        "localhost/acme/net/aws",
    ] {
        assert_eq!(classify(source, t), Source::Invalid, "{source}");
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
    let error = || {
        format!(
            "{:#}",
            super::read(dir.path(), &super::ReadOptions::default()).unwrap_err()
        )
    };
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
    assert!(format!(
        "{:#}",
        super::read(&file, &super::ReadOptions::default()).unwrap_err()
    )
    .contains("not a directory"));
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
    let read = super::read(
        dir.path(),
        &super::ReadOptions::client(Some(Product::Terraform)),
    )
    .unwrap();
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

/// Every declaration the clients refuse to see twice in one module, in
/// either syntax and across files; override files merge and are not
/// duplicates; different aliases are different provider configurations.
#[test]
fn declarations_made_twice_are_refused_with_both_places() {
    let dir = tempfile::tempdir().unwrap();
    let once = "terraform {\n  required_providers {\n    alpha = { source = \"hashicorp/alpha\" }\n  }\n}\nresource \"alpha_x\" \"a\" {}\ndata \"alpha_y\" \"b\" {}\nephemeral \"alpha_z\" \"c\" {}\nprovider \"alpha\" {}\nprovider \"alpha\" {\n  alias = \"west\"\n}\nvariable \"v\" {}\noutput \"o\" {\n  value = 1\n}\nlocals {\n  l = 1\n}\nmodule \"m\" {\n  source = \"./m\"\n}\ncheck \"c\" {\n  assert {\n    condition = true\n    error_message = \"x\"\n  }\n}\n";
    std::fs::create_dir(dir.path().join("m")).unwrap();
    std::fs::write(dir.path().join("a.tf"), once).unwrap();
    std::fs::write(dir.path().join("override.tf"), once).unwrap();
    let clean = super::read(dir.path(), &ReadOptions::default()).unwrap();
    assert_eq!(
        clean.refused,
        [],
        "an override file is merged, not a duplicate"
    );
    std::fs::write(dir.path().join("b.tf"), once).unwrap();
    let twice = super::read(dir.path(), &ReadOptions::default()).unwrap();
    let said: Vec<String> = twice
        .refused
        .iter()
        .map(|r| format!("{} @ {}", r.message, r.at.rsplit('/').next().unwrap()))
        .map(|s| s.replace(&format!("{}/", dir.path().display()), ""))
        .collect();
    assert_eq!(
        said,
        [
            "duplicate required providers configuration: already declared at a.tf:1 @ b.tf:1",
            "duplicate resource \"alpha_x\" alpha_x.a: already declared at a.tf:6 @ b.tf:6",
            "duplicate data \"alpha_y\" alpha_y.b: already declared at a.tf:7 @ b.tf:7",
            "duplicate ephemeral \"alpha_z\" alpha_z.c: already declared at a.tf:8 @ b.tf:8",
            "duplicate provider configuration alpha: already declared at a.tf:9 @ b.tf:9",
            "duplicate provider configuration alpha.west: already declared at a.tf:10 @ b.tf:10",
            "duplicate variable v: already declared at a.tf:13 @ b.tf:13",
            "duplicate output o: already declared at a.tf:14 @ b.tf:14",
            "duplicate local value l: already declared at a.tf:17 @ b.tf:17",
            "duplicate module call m: already declared at a.tf:20 @ b.tf:20",
            "duplicate check c: already declared at a.tf:23 @ b.tf:23",
        ]
    );
    // The JSON syntax, beside the native: the same declarations clash.
    std::fs::remove_file(dir.path().join("b.tf")).unwrap();
    std::fs::write(
        dir.path().join("c.tf.json"),
        r#"{"resource": {"alpha_x": {"a": {}}}, "variable": {"v": {}, "w": {}}, "output": {"o": {"value": 1}}, "locals": {"l": 1}, "module": {"m": {"source": "./m"}}, "provider": {"alpha": [{}, {"alias": "east"}]}}"#,
    )
    .unwrap();
    let json = super::read(dir.path(), &ReadOptions::default()).unwrap();
    let clashes: BTreeSet<&str> = json
        .refused
        .iter()
        .map(|r| r.message.split(':').next().unwrap())
        .collect();
    assert_eq!(
        clashes,
        BTreeSet::from([
            "duplicate resource \"alpha_x\" alpha_x.a",
            "duplicate variable v",
            "duplicate output o",
            "duplicate local value l",
            "duplicate module call m",
            "duplicate provider configuration alpha",
        ])
    );
    assert!(json.refused.iter().all(|r| r.at.ends_with("c.tf.json")));
}
