use super::*;
use crate::address::oci::OciRepo;
use crate::address::Platform;

fn provider(h: &str, n: &str, t: &str) -> Provider {
    Provider {
        hostname: Hostname::parse(h).unwrap(),
        namespace: Namespace::parse(n).unwrap(),
        kind: ProviderType::parse(t).unwrap(),
    }
}

#[test]
fn parses_the_three_shapes() {
    let p = provider("registry.terraform.io", "hashicorp", "aws");
    assert!(matches!(parse("/").unwrap(), Route::Page(_)));
    assert!(matches!(parse("/-/status").unwrap(), Route::Page(_)));
    assert_eq!(
        parse("/registry.terraform.io/hashicorp/aws/index.json").unwrap(),
        Route::Index(p.clone())
    );
    assert_eq!(
        parse("/Registry.Terraform.IO:443/HashiCorp/AWS/5.1.0.json").unwrap(),
        Route::Version(p.clone(), Version::parse("5.1.0").unwrap())
    );
    assert_eq!(
        parse("/registry.terraform.io/hashicorp/aws/terraform-provider-aws_5.1.0_linux_arm64.zip")
            .unwrap(),
        Route::Archive(ArchiveKey::new(
            &p,
            &Version::parse("5.1.0").unwrap(),
            &Platform::parse("linux_arm64").unwrap()
        ))
    );
    assert_eq!(
        parse("/example.com:8443/%C3%BCn/t/index.json").unwrap(),
        Route::Index(provider("example.com:8443", "ün", "t"))
    );
}

#[test]
fn parses_the_registry_facade() {
    let p = provider("registry.terraform.io", "hashicorp", "aws");
    let v = Version::parse("5.1.0").unwrap();
    assert_eq!(
        parse("/v1/providers/registry.terraform.io/hashicorp/aws/versions").unwrap(),
        Route::RegistryVersions(p.clone())
    );
    assert_eq!(
        parse("/v1/providers/Registry.Terraform.IO/hashicorp/aws/5.1.0/download/linux/arm64")
            .unwrap(),
        Route::RegistryPackage(ArchiveKey::new(
            &p,
            &v,
            &Platform::parse("linux_arm64").unwrap()
        ))
    );
    assert_eq!(
        parse("/v1/providers/registry.terraform.io/hashicorp/aws/5.1.0/sums/0.sig").unwrap(),
        Route::RegistrySums(
            p.clone(),
            v.clone(),
            SumsFile {
                index: 0,
                signature: true
            }
        )
    );
    assert_eq!(
        parse("/v1/providers/registry.terraform.io/hashicorp/aws/5.1.0/sums/1").unwrap(),
        Route::RegistrySums(
            p,
            v,
            SumsFile {
                index: 1,
                signature: false
            }
        )
    );
    // A host called v1 still has its mirror paths.
    assert_eq!(
        parse("/v1/providers/t/index.json").unwrap(),
        Route::Index(provider("v1", "providers", "t"))
    );
    for bad in [
        "/v1/providers/r.example/ns/t/1.0.0/download/linux",
        "/v1/providers/r.example/ns/t/1.0.0/download/linux/amd64/x",
        "/v1/providers/r.example/ns/t/1.0.0/sums/+1",
        "/v1/providers/r.example/ns/t/1.0.0/sums/x.sig",
        "/v1/providers/r.example/ns/t/1.0/download/linux/amd64",
        "/v1/providers/r.example/ns/t/list",
        "/v1/providers/r.example/ns/t/1.0.0/download/linux/AMD%2F64",
    ] {
        assert_eq!(
            parse(bad).unwrap_err().status(),
            http::StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
}

#[test]
fn parses_the_module_registry() {
    let m = Module {
        hostname: Hostname::parse("registry.terraform.io").unwrap(),
        namespace: ModuleNamespace::parse("terraform-aws-modules").unwrap(),
        name: ModuleName::parse("vpc").unwrap(),
        system: ModuleSystem::parse("aws").unwrap(),
    };
    let v = Version::parse("5.1.0").unwrap();
    assert_eq!(
        parse("/v1/modules/Registry.Terraform.IO/terraform-aws-modules/vpc/aws/versions").unwrap(),
        Route::ModuleVersions(m.clone())
    );
    assert_eq!(
        parse("/v1/modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0/download")
            .unwrap(),
        Route::ModuleDownload(m.clone(), v.clone())
    );
    assert_eq!(
        parse(
            "/v1/modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0/package.tar.gz"
        )
        .unwrap(),
        Route::ModulePackage(m, v)
    );
    for bad in [
        "/v1/modules/r.example/ns/n/aws/list",
        "/v1/modules/r.example/ns/n/AWS/versions",
        "/v1/modules/r.example/ns/-n/aws/versions",
        "/v1/modules/r.example/ns/n/aws/5.1/download",
        "/v1/modules/r.example/ns/n/aws/5.1.0/package.zip",
        "/v1/modules/r.example/ns/n/aws/5.1.0/download/x",
        "/v1/modules/r.example/ns/n%2Fx/aws/versions",
        "/v1/modules/r.example/n%20s/n/aws/versions",
    ] {
        assert_eq!(
            parse(bad).unwrap_err().status(),
            http::StatusCode::BAD_REQUEST,
            "{bad}"
        );
    }
}

#[test]
fn hostile_paths_are_bad_requests() {
    let long = format!("/a.example/{}/t/index.json", "n".repeat(2000));
    for path in [
        "",
        "//",
        "/a.example/ns/t",
        "/a.example/ns/t/",
        "/a.example/ns//t/index.json",
        "/a.example/../t/index.json",
        "/a.example/%2e%2e/t/index.json",
        "/a.example/ns%2Ft/x/index.json",
        "/a.example/ns/t%00/index.json",
        "/a.example/ns/t/1.0.json",
        "/a.example/ns/t/../index.json",
        "/a.example/ns/t/terraform-provider-other_1.0.0_linux_amd64.zip",
        "/a.example/ns/t/x/index.json",
        "/a.example/ns/t/%ff.json",
        "/a.example/ns/t/index.json/extra",
        long.as_str(),
    ] {
        let e = parse(path).unwrap_err();
        assert_eq!(e.status(), http::StatusCode::BAD_REQUEST, "{path:?}");
    }
}

#[test]
fn oci_paths_leave_a_provider_host_named_v2_to_the_mirror_protocol() {
    assert_eq!(
        parse("/v2/a/b/index.json").unwrap(),
        Route::Index(provider("v2", "a", "b"))
    );
    assert!(matches!(
        parse("/v2/a/b/1.0.0.json").unwrap(),
        Route::Version(..)
    ));
    // The leaf may be percent-encoded, as any segment may.
    assert!(matches!(
        parse("/v2/a/b/terraform%2Dprovider%2Db%5F1%2E0%2E0%5Flinux%5Famd64%2Ezip").unwrap(),
        Route::Archive(..)
    ));
    assert!(matches!(
        parse("/v2/a/b/1%2E0%2E0%2Ejson").unwrap(),
        Route::Version(..)
    ));
    assert_eq!(parse("/v2/").unwrap(), Route::Oci(OciRoute::Base));
    assert_eq!(
        parse("/v2/r.example/a/b/tags/list").unwrap(),
        Route::Oci(OciRoute::Tags(OciRepo::Provider(provider(
            "r.example",
            "a",
            "b"
        ))))
    );
    match parse("/v2/r.example/a/net/aws/manifests/1.0.0").unwrap() {
        Route::Oci(OciRoute::Manifest(OciRepo::Module(m), _)) => {
            assert_eq!(m.to_string(), "r.example/a/net/aws");
        }
        other => panic!("{other:?}"),
    }
    assert!(parse("/v2/r.example/a/tags/list").is_err());
}

#[test]
fn plain_segments_decode_as_escaped_ones_do() {
    let outcome =
        |r: Result<Cow<'_, str>, RequestError>| r.map(Cow::into_owned).map_err(|e| e.to_string());
    for raw in [
        "aws",
        "5.31.0",
        "1.0.0-beta+exp.sha.5114f85",
        "a_b~c",
        "-",
        "+",
        "...",
        ".a",
        ".",
        "..",
        "%2e",
        "%2E%2e",
        "a%2Fb",
        "a%5Cb",
        "a\\b",
        "a%00",
        "é",
        "%C3%A9",
        "%FF",
        "a b",
        "a%20b",
    ] {
        assert_eq!(
            outcome(decode_segment(raw)),
            outcome(decode_any_segment(raw)),
            "{raw:?}"
        );
    }
    // The plain ones are borrowed.
    assert!(matches!(
        decode_segment("hashicorp"),
        Ok(Cow::Borrowed("hashicorp"))
    ));
    assert!(decode_segment("").is_err());
}
