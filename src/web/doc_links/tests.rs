//! Each form of link the registries' documentation carries, against the
//! mirror's paths written out by hand: the template provider's own
//! (`../d/file.html`, `/docs/configuration/…`), the provider sites' old
//! layout, both registries' pages, and what must not become a link.

use std::collections::HashSet;
use std::sync::Arc;

use super::{DocLinks, HeldVersions};
use crate::address::{DocName, Provider, Version};
use crate::docs::DocKind;

fn provider(text: &str) -> Provider {
    let mut parts = text.split('/');
    Provider {
        hostname: crate::address::Hostname::parse(parts.next().unwrap()).unwrap(),
        namespace: crate::address::Namespace::parse(parts.next().unwrap()).unwrap(),
        kind: crate::address::ProviderType::parse(parts.next().unwrap()).unwrap(),
    }
}

/// The template provider 2.1.2's `dir` resource page on a mirror holding
/// template 2.2.0 and 2.1.2 (so that the newest is not the one shown),
/// hashicorp/random 3.6.0 and 3.5.1, and the OpenTofu Registry's
/// hashicorp/aws 5.0.0.
fn links(site: Option<&str>) -> DocLinks {
    let held: HeldVersions = Arc::new(|p: &Provider| {
        let versions: &[&str] = match p.to_string().as_str() {
            "registry.terraform.io/hashicorp/template" => &["2.2.0", "2.1.2"],
            "registry.terraform.io/hashicorp/random" => &["3.6.0", "3.5.1"],
            "registry.opentofu.org/hashicorp/aws" => &["5.0.0"],
            _ => &[],
        };
        versions
            .iter()
            .map(|v| Version::parse(v).unwrap())
            .collect()
    });
    let pages: HashSet<(DocKind, DocName)> = [
        (DocKind::Overview, "index"),
        (DocKind::Resource, "dir"),
        (DocKind::DataSource, "file"),
        (DocKind::DataSource, "cloudinit_config"),
    ]
    .into_iter()
    .map(|(k, n)| (k, DocName::parse(n).unwrap()))
    .collect();
    DocLinks::new(
        (
            provider("registry.terraform.io/hashicorp/template"),
            Version::parse("2.1.2").unwrap(),
            DocKind::Resource,
        ),
        pages,
        site.map(|s| s.parse().unwrap()),
        held,
    )
}

const HERE: &str = "/-/providers/registry.terraform.io/hashicorp/template/2.1.2/docs";

#[test]
fn links_between_a_provider_s_pages_lead_to_the_mirror_s_pages() {
    let l = links(Some("https://registry.terraform.io/"));
    let file = format!("{HERE}/data-source/file");
    for (href, want) in [
        // The template provider's own, and the other relative forms.
        ("../d/file.html", file.as_str()),
        ("../d/file.html#argument-reference", &file),
        ("../data-sources/file.md", &file),
        ("./dir.html.md", &format!("{HERE}/resource/dir")),
        ("dir", &format!("{HERE}/resource/dir")),
        ("../d/cloudinit_config.html.markdown", &format!("{HERE}/data-source/cloudinit_config")),
        // The provider sites' old layout, this provider's and another's.
        ("/docs/providers/template/d/file.html", &file),
        ("/docs/providers/template/d/template_file.html", &file),
        ("/docs/providers/template/index.html", HERE),
        ("/docs/providers/random/r/id.html", "/-/providers/registry.terraform.io/hashicorp/random/3.6.0/docs/resource/id"),
        // registry.terraform.io's pages: "latest" is the version shown
        // here (not the newest held), and the newest held of another
        // provider.
        ("https://registry.terraform.io/providers/hashicorp/template/latest/docs/data-sources/file", &file),
        ("https://registry.terraform.io/providers/hashicorp/template/2.2.0/docs/data-sources/file",
            "/-/providers/registry.terraform.io/hashicorp/template/2.2.0/docs/data-source/file"),
        ("https://registry.terraform.io/providers/hashicorp/template/9.9.9/docs",
            "/-/providers/registry.terraform.io/hashicorp/template"),
        ("https://registry.terraform.io/providers/hashicorp/random", "/-/providers/registry.terraform.io/hashicorp/random"),
        ("https://REGISTRY.terraform.io/providers/HashiCorp/random/latest/docs",
            "/-/providers/registry.terraform.io/hashicorp/random/3.6.0/docs"),
        ("https://registry.terraform.io/providers/hashicorp/random/3.5.1/docs/resources/id",
            "/-/providers/registry.terraform.io/hashicorp/random/3.5.1/docs/resource/id"),
        // The OpenTofu Registry's, with its `v` and its folder names.
        ("https://search.opentofu.org/provider/hashicorp/aws/v5.0.0/docs/datasources/ami",
            "/-/providers/registry.opentofu.org/hashicorp/aws/5.0.0/docs/data-source/ami"),
        ("https://search.opentofu.org/provider/hashicorp/aws/latest",
            "/-/providers/registry.opentofu.org/hashicorp/aws/5.0.0/docs"),
    ] {
        assert_eq!(l.resolve(href).as_deref(), Some(want), "{href}");
    }
}

#[test]
fn links_elsewhere_are_kept_and_links_to_nowhere_dropped() {
    let l = links(Some("https://registry.terraform.io/"));
    for (href, want) in [
        // Not held: the registry's own page, as written.
        ("https://registry.terraform.io/providers/hashicorp/aws/latest/docs",
            Some("https://registry.terraform.io/providers/hashicorp/aws/latest/docs")),
        ("https://registry.terraform.io/modules/hashicorp/dir/template",
            Some("https://registry.terraform.io/modules/hashicorp/dir/template")),
        ("https://cloudinit.readthedocs.io/", Some("https://cloudinit.readthedocs.io/")),
        ("mailto:someone@example.com", Some("mailto:someone@example.com")),
        ("//example.com/x", Some("https://example.com/x")),
        // A path from the root, on the registry it was published on.
        ("/docs/configuration/expressions.html#string-templates",
            Some("https://registry.terraform.io/docs/configuration/expressions.html#string-templates")),
        ("/docs/providers/azurerm/r/vm.html", Some("https://registry.terraform.io/docs/providers/azurerm/r/vm.html")),
        // Leading nowhere the mirror can name: a page this version does
        // not list, an anchor (the pages give headings none), a scheme
        // that runs, a folder that is not a kind, a step out.
        ("../d/nothing.html", None),
        ("nothing", None),
        ("#section", None),
        ("", None),
        ("javascript:alert(1)", None),
        ("data:text/html,x", None),
        ("images/diagram.png", None),
        ("..\\..\\secret", None),
        ("../d/%2e%2e%2fx.html", None),
        ("https://registry.terraform.io/providers/hashicorp/template/not-a-version/docs",
            Some("https://registry.terraform.io/providers/hashicorp/template/not-a-version/docs")),
    ] {
        assert_eq!(l.resolve(href).as_deref(), want, "{href}");
    }
    // Where the documentation came from a host no page is on, a path from
    // the root is dropped.
    let offsite = links(None);
    assert_eq!(
        offsite.resolve("/docs/configuration/expressions.html"),
        None
    );
    assert_eq!(
        offsite
            .resolve("/docs/providers/template/d/file.html")
            .as_deref(),
        Some(format!("{HERE}/data-source/file").as_str())
    );
}

#[test]
fn a_page_s_links_in_markdown_and_in_html_are_led_through_the_one_sanitiser() {
    let markdown = "[file](../d/file.html) and <a href=\"../d/file.html\">raw</a>, \
        [out](https://example.com/a), <a href=\"javascript:alert(1)\">js</a>, \
        <a href=\"/-/providers/registry.terraform.io/hashicorp/template/2.2.0/docs/../../../../-/status\">up</a>, \
        <a href=\"/-/status\">status</a>, [lang](/docs/configuration/x.html), [gone](#top)\n";
    let html =
        super::super::markdown::render_doc(markdown, links(Some("https://registry.terraform.io/")));
    let hrefs: Vec<&str> = html
        .split("href=\"")
        .skip(1)
        .map(|rest| &rest[..rest.find('"').unwrap()])
        .collect();
    assert_eq!(
        hrefs,
        [
            "/-/providers/registry.terraform.io/hashicorp/template/2.1.2/docs/data-source/file",
            "/-/providers/registry.terraform.io/hashicorp/template/2.1.2/docs/data-source/file",
            "https://example.com/a",
            "https://registry.terraform.io/-/providers/registry.terraform.io/-/status",
            "https://registry.terraform.io/-/status",
            "https://registry.terraform.io/docs/configuration/x.html",
        ],
        "{html}"
    );
    for text in ["js</a>", "gone</a>"] {
        assert!(html.contains(text), "{text}: {html}");
    }
    // Without a site, a path from the root is dropped, not let through.
    let html = super::super::markdown::render_doc("<a href=\"/-/status\">s</a>", links(None));
    assert!(!html.contains("href"), "{html}");
}
