use super::*;

#[test]
fn pages_and_their_json_share_paths_and_every_segment_is_checked() {
    let p = |path: &str| parse(path).unwrap();
    assert_eq!(p("/").page, Page::Home);
    assert!(!p("/").json);
    assert!(p("/-/api/").json && p("/-/api").json);
    assert_eq!(p("/-/api/").page, Page::Home);
    let aws = p("/-/providers/registry.terraform.io/hashicorp/aws");
    assert_eq!(
        aws.page,
        Page::Provider(Provider::from_source("hashicorp/aws").unwrap())
    );
    assert!(p("/-/api/providers/registry.terraform.io/hashicorp/aws").json);
    assert!(matches!(
        p("/-/modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0").page,
        Page::ModuleVersion(_, _)
    ));
    assert!(matches!(
        p("/-/modules/registry.terraform.io/terraform-aws-modules/vpc/aws").page,
        Page::Module(_)
    ));
    for bad in [
        "/-/providers/registry.terraform.io/hashicorp/a%2Fws",
        "/-/providers/../etc/passwd/x",
        "/-/modules/h.example/n/m/s/not-a-version",
        "/-/nothing",
        "/-/api/signin",
        "/-/assets/other.css",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert!(is_page("/") && is_page("/-/check") && !is_page("/registry.example/a/b/index.json"));
    assert!(p("/-/check").takes_posts() && !p("/-/status").takes_posts());
}

#[test]
fn a_version_s_documentation_and_each_page_have_paths_that_parse_back() {
    let provider = Provider::from_source("hashicorp/aws").unwrap();
    let version = Version::parse("5.1.0").unwrap();
    let index = docs_path(&provider, &version);
    assert_eq!(
        index,
        "/-/providers/registry.terraform.io/hashicorp/aws/5.1.0/docs"
    );
    assert_eq!(
        parse(&index).unwrap().page,
        Page::Docs(provider.clone(), version.clone())
    );
    let name = DocName::parse("a b").unwrap();
    let page = doc_page_path(&provider, &version, DocKind::DataSource, &name);
    assert!(page.ends_with("/5.1.0/docs/data-source/a%20b"), "{page}");
    assert_eq!(
        parse(&page.replacen("/-/", "/-/api/", 1)).unwrap(),
        PageRoute {
            page: Page::DocPage(provider, version, DocKind::DataSource, name),
            json: true
        }
    );
    for bad in [
        "/-/providers/registry.terraform.io/hashicorp/aws/5.1.0/docs/resources/x",
        "/-/providers/registry.terraform.io/hashicorp/aws/5.1.0/docs/resource/.x",
        "/-/providers/registry.terraform.io/hashicorp/aws/5.1.0/docs/resource",
        "/-/providers/registry.terraform.io/hashicorp/aws/v5/docs",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
}

#[test]
fn decisions_have_a_page_per_version_of_a_provider_or_a_module() {
    for path in [
        "/-/decide/providers/registry.terraform.io/hashicorp/aws/5.1.0",
        "/-/decide/modules/registry.terraform.io/terraform-aws-modules/vpc/aws/5.1.0",
    ] {
        let route = parse(path).unwrap();
        assert!(route.takes_posts(), "{path}");
        let Page::Decide(decided, version) = &route.page else {
            panic!("{path}: {:?}", route.page);
        };
        assert_eq!(decide_path(decided, version), path);
    }
    for bad in [
        "/-/decide/providers/registry.terraform.io/hashicorp/aws",
        "/-/decide/providers/registry.terraform.io/hashicorp/a%2Fws/1.0.0",
        "/-/decide/modules/h.example/n/m/s/not-a-version",
    ] {
        assert!(parse(bad).is_err(), "{bad}");
    }
    assert!(
        matches!(parse("/-/signin/with/sso").unwrap().page, Page::SignInWith(ref n) if n == "sso")
    );
    assert!(
        parse("/-/api/signin/callback").is_err(),
        "sign-in has no JSON"
    );
}

#[test]
fn the_documentation_files_have_the_opentofu_registry_s_paths() {
    let null = Provider::from_source("registry.opentofu.org/opentofu/null").unwrap();
    let v = Version::parse("3.2.4").unwrap();
    let root = registry_docs_root(&null.hostname);
    assert_eq!(root, "/-/registry-docs/registry.opentofu.org/");
    let p = |rest: &str| parse(&format!("{root}providers/opentofu/null/{rest}")).unwrap();
    let doc = |kind, name: &str| {
        Page::RegistryDocs(RegistryDoc::Page(
            null.clone(),
            v.clone(),
            kind,
            DocName::parse(name).unwrap(),
        ))
    };
    assert_eq!(
        p("index.json").page,
        Page::RegistryDocs(RegistryDoc::Provider(null.clone()))
    );
    // Always data: errors come as JSON.
    assert!(p("index.json").json);
    for version in ["v3.2.4", "3.2.4"] {
        assert_eq!(
            p(&format!("{version}/index.json")).page,
            Page::RegistryDocs(RegistryDoc::Version(null.clone(), v.clone()))
        );
    }
    assert_eq!(p("v3.2.4/index.md").page, doc(DocKind::Overview, "index"));
    // Each folder is the registry's own (registry-ui's `DocTypes`).
    for (folder, kind) in [
        ("resources", DocKind::Resource),
        ("datasources", DocKind::DataSource),
        ("ephemeral", DocKind::EphemeralResource),
        ("functions", DocKind::Function),
        ("guides", DocKind::Guide),
        ("actions", DocKind::Action),
        ("listresources", DocKind::ListResource),
    ] {
        assert_eq!(p(&format!("v3.2.4/{folder}/a.b.md")).page, doc(kind, "a.b"));
    }
    for bad in [
        "v3.2.4/data-sources/x.md",
        "v3.2.4/resources/x.html",
        "v3.2.4/resources/.x.md",
        "v3.2.4/cdktf/python/index.md",
        "v3.2.4/index.html",
        "vv3.2.4/index.json",
        "v3.2.4",
    ] {
        let e = parse(&format!("{root}providers/opentofu/null/{bad}")).unwrap_err();
        assert!(
            matches!(
                e,
                RequestError::NoSuchPage(_) | RequestError::InvalidRequest(_)
            ),
            "{bad}: {e:?}"
        );
    }
}
