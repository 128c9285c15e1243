//! Links between a provider's documentation pages stay on the mirror:
//! the template provider's real 2.2.0 tree (`tests/fixtures/docs/`, the
//! older `website/docs/{r,d}` layout), served in registry.terraform.io's
//! shape, links its `dir` resource to `../d/file.html` and to the
//! language documentation at `/docs/configuration/…`. On the mirror the
//! first leads to the mirror's own page of the `file` data source, which
//! answers with that page; the second leads to the registry the
//! documentation came from; links elsewhere are kept as written and
//! marked as leaving the site by the stylesheet.

mod common;

use common::docs::{docs_from, serve_terraform_shape, website_docs};
use common::*;
use http::StatusCode;

const HOST: &str = "registry.origin.test";

/// The addresses of the links in `html`'s documentation, in order.
fn hrefs(html: &str) -> Vec<String> {
    let at = html.find("<div class=\"readme\" id=\"doc\">").unwrap();
    let doc = &html[at..html.rfind("</main>").unwrap()];
    (doc.split("<a ").skip(1))
        .filter_map(|a| a.split('>').next().unwrap().split("href=\"").nth(1))
        .map(|h| h.split('"').next().unwrap().replace("&amp;", "&"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_between_documentation_pages_lead_to_the_mirror_s_own_pages() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "template",
        "2.2.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let docs = website_docs("template-v2.2.0");
    serve_terraform_shape(&origin, ("template", "2.2.0"), &docs, 5_000);
    let mut config = setup.module_config(&origin, HOST);
    let root = docs_from(&mut config, HOST, &origin);
    let mirror = RunningMirror::start(config).await;
    let http = Client::trusting(&mirror.ca_file);
    let version_url = mirror.url(&format!("/{HOST}/acme/template/2.2.0.json"));
    let listed = http.get(&version_url).await.json();
    let link = listed["archives"]["linux_amd64"]["url"].as_str().unwrap();
    assert_eq!(
        http.get(&resolve(&version_url, link)).await.status,
        StatusCode::OK
    );
    let kept = setup
        .cache_dir()
        .join(format!("docs/versions/{HOST}/acme/template/2.2.0.json"));
    wait_until(
        "acme/template 2.2.0's documentation is kept",
        std::time::Duration::from_secs(60),
        || kept.exists(),
    )
    .await;

    let docs_path = format!("/-/providers/{HOST}/acme/template/2.2.0/docs");
    let dir = http
        .get(&mirror.url(&format!("{docs_path}/resource/dir")))
        .await;
    assert_eq!(dir.status, StatusCode::OK);
    let dir = String::from_utf8_lossy(&dir.body).into_owned();
    // The tree's own words: `[`template_file`](../d/file.html)` and
    // `[Terraform template syntax](/docs/configuration/expressions.html#string-templates)`.
    let registry = root.trim_end_matches('/');
    assert_eq!(
        hrefs(&dir),
        [
            format!("{docs_path}/data-source/file"),
            format!("{registry}/docs/configuration/expressions.html#string-templates"),
        ],
        "{dir}"
    );
    // The link leads to the page it names.
    let file = http
        .get(&mirror.url(&format!("{docs_path}/data-source/file")))
        .await;
    assert_eq!(file.status, StatusCode::OK);
    let file = String::from_utf8_lossy(&file.body).into_owned();
    assert!(file.contains("<h1>template_file</h1>"), "{file}");
    // Links elsewhere are kept as written.
    let cloudinit = http
        .get(&mirror.url(&format!("{docs_path}/data-source/cloudinit_config")))
        .await;
    let cloudinit = String::from_utf8_lossy(&cloudinit.body).into_owned();
    assert_eq!(
        hrefs(&cloudinit),
        [
            "https://cloudinit.readthedocs.io/en/latest/topics/format.html#mime-multi-part-archive",
            "https://cloudinit.readthedocs.io/",
            "https://cloudinit.readthedocs.io/en/latest/topics/format.html",
            "https://cloudinit.readthedocs.io/en/latest/topics/merging.html",
        ],
        "{cloudinit}"
    );
    // The stylesheet marks a link with a scheme as leaving the mirror; the
    // mirror's own links have none.
    let css = http.get(&mirror.url("/-/assets/style.css")).await;
    let css = String::from_utf8_lossy(&css.body).into_owned();
    for scheme in ["http:", "https:", "mailto:"] {
        assert!(
            css.contains(&format!(".readme a[href^=\"{scheme}\"]::after")),
            "{scheme}: {css}"
        );
    }
    assert!(css.contains("(leaves this mirror)"), "{css}");
}
