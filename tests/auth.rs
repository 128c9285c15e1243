//! Access control: bearer tokens on the JSON endpoints, signed expiring
//! archive links, the token file, and the real Terraform CLI sending its
//! credentials.

mod common;

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use common::*;
use http::{Method, StatusCode};

const TOKEN: &str = "tok-5d8a1c0e7f";

#[tokio::test]
async fn tokens_guard_the_json_endpoints_and_archive_links_are_signed() {
    let Scene {
        origin,
        archives,
        mirror: m,
        client: c,
        setup: _setup,
        signer: _signer,
    } = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.auth.tokens = vec![TOKEN.into()];
    })
    .await;
    let index = m.url("/registry.origin.test/acme/widget/index.json");
    let doc = m.url("/registry.origin.test/acme/widget/1.0.0.json");

    for (auth, want) in [
        (None, StatusCode::UNAUTHORIZED),
        (Some("Bearer wrong"), StatusCode::UNAUTHORIZED),
        (
            Some(&format!("Basic {TOKEN}")[..]),
            StatusCode::UNAUTHORIZED,
        ),
        (Some(&format!("Bearer {TOKEN}")[..]), StatusCode::OK),
    ] {
        for url in [&index, &doc] {
            let a = c.request_with(Method::GET, url, auth).await;
            assert_eq!(a.status, want, "{url} with {auth:?}");
            if want == StatusCode::UNAUTHORIZED {
                assert_eq!(a.headers["www-authenticate"], "Bearer realm=\"tfmirror\"");
                assert!(a.json()["errors"][0].is_string());
            }
        }
    }
    // Nothing was fetched for the refused requests.
    assert_eq!(origin.hits("/v1/providers/acme/widget/versions"), 1);

    // The archive link carries a signature; it works without a token.
    let d = c
        .request_with(Method::GET, &doc, Some(&format!("Bearer {TOKEN}")))
        .await
        .json();
    let link = d["archives"]["linux_amd64"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        link.starts_with("terraform-provider-widget_1.0.0_linux_amd64.zip?expires="),
        "{link}"
    );
    assert!(link.contains("&sig="), "{link}");
    let zip = m.url(&format!("/registry.origin.test/acme/widget/{link}"));
    let a = c.get(&zip).await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(&a.body[..], &archives["linux_amd64"][..]);

    // Unsigned, tampered, or moved to another archive: refused.
    let plain =
        m.url("/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_linux_amd64.zip");
    let query = link.split_once('?').unwrap().1;
    let mut tampered = query.to_string();
    let last = tampered.pop().unwrap();
    tampered.push(if last == '0' { '1' } else { '0' });
    for url in [
        plain.clone(),
        format!("{plain}?{tampered}"),
        format!("{plain}?sig=00"),
        m.url(&format!("/registry.origin.test/acme/widget/terraform-provider-widget_1.0.0_darwin_arm64.zip?{query}")),
    ] {
        let a = c.get(&url).await;
        assert_eq!(a.status, StatusCode::FORBIDDEN, "{url}");
    }
    // The status page shows the credentials block, and no provider list
    // without a token.
    let page = c.get(&m.url("/")).await.page_text();
    assert!(page.contains("credentials \"127.0.0.1:"), "{page}");
    assert!(!page.contains("acme/widget"), "{page}");
    // The operator's view needs a sign-in.
    assert_eq!(
        c.get(&m.url("/-/status")).await.status,
        http::StatusCode::SEE_OTHER
    );
    let page = c
        .request_with(
            Method::GET,
            &m.url("/-/status"),
            Some(&format!("Bearer {TOKEN}")),
        )
        .await;
    assert!(String::from_utf8_lossy(&page.body).contains("acme/widget"));
    m.stop().await;
}

#[tokio::test]
async fn expired_links_are_refused_and_the_token_file_is_reread() {
    let dir = tempfile::tempdir().unwrap();
    let token_file = dir.path().join("tokens");
    std::fs::write(&token_file, "# build hosts\nfirst-token\n\n").unwrap();
    let Scene {
        mirror: m,
        client: c,
        setup: _setup,
        origin: _origin,
        signer: _signer,
        archives: _archives,
    } = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        config.auth.token_file = Some(token_file.clone());
        config.auth.url_lifetime = Duration::from_secs(1);
    })
    .await;
    let doc = m.url("/registry.origin.test/acme/widget/1.0.0.json");
    let d = c
        .request_with(Method::GET, &doc, Some("Bearer first-token"))
        .await;
    assert_eq!(d.status, StatusCode::OK);
    let link = d.json()["archives"]["linux_amd64"]["url"]
        .as_str()
        .unwrap()
        .to_string();
    // A link lives its lifetime after the end of the signing window it
    // was made in (a second long for a lifetime this short).
    m.clock.advance(Duration::from_secs(3));
    let a = c
        .get(&m.url(&format!("/registry.origin.test/acme/widget/{link}")))
        .await;
    assert_eq!(a.status, StatusCode::FORBIDDEN);
    assert!(a.error_text().contains("expired"), "{}", a.error_text());

    // A changed token file takes effect (the daemon checks every 2 s and on SIGHUP).
    std::fs::write(&token_file, "second-token\n").unwrap();
    m.app.auth.reload_if_changed();
    assert_eq!(
        c.request_with(Method::GET, &doc, Some("Bearer first-token"))
            .await
            .status,
        StatusCode::UNAUTHORIZED
    );
    assert_eq!(
        c.request_with(Method::GET, &doc, Some("Bearer second-token"))
            .await
            .status,
        StatusCode::OK
    );
    // An unreadable file keeps the tokens in force.
    std::fs::remove_file(&token_file).unwrap();
    m.app.auth.reload_if_changed();
    assert_eq!(
        c.request_with(Method::GET, &doc, Some("Bearer second-token"))
            .await
            .status,
        StatusCode::OK
    );
    m.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_sends_its_credentials_and_downloads_through_signed_links() {
    let tf = std::env::var_os("TERRAFORM_BIN")
        .filter(|p| Path::new(p).is_file())
        .expect("TERRAFORM_BIN must name Terraform v1.0.3; run the README's test command");
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "2.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let mut config = setup.config(&origin, &[], &["registry.tfmirror.test"]);
    config.auth.tokens = vec![TOKEN.into()];
    let m = RunningMirror::start(config).await;

    let work = tempfile::tempdir().unwrap();
    std::fs::write(
        work.path().join("main.tf"),
        "terraform {\n  required_providers {\n    widget = {\n      source = \"registry.tfmirror.test/acme/widget\"\n    }\n  }\n}\n",
    )
    .unwrap();
    let run = |with_credentials: bool| {
        let mut rc = format!(
            "provider_installation {{\n  network_mirror {{\n    url = \"{}\"\n  }}\n}}\n",
            m.url("/")
        );
        if with_credentials {
            let port = m.addr.port();
            writeln!(
                rc,
                "credentials \"127.0.0.1:{port}\" {{\n  token = \"{TOKEN}\"\n}}"
            )
            .unwrap();
        }
        let rc_path = work.path().join("cli.tfrc");
        std::fs::write(&rc_path, rc).unwrap();
        let _ = std::fs::remove_dir_all(work.path().join(".terraform"));
        let mut cmd = Command::new(&tf);
        cmd.args(["init", "-input=false", "-no-color"])
            .current_dir(work.path())
            .env_clear()
            .env("HOME", work.path())
            .env("TF_CLI_CONFIG_FILE", &rc_path)
            .env("SSL_CERT_FILE", &m.ca_file)
            .env("CHECKPOINT_DISABLE", "1");
        cmd
    };
    let out = tokio::task::spawn_blocking({
        let mut cmd = run(false);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    assert!(!out.status.success(), "init without credentials succeeded");
    let out = tokio::task::spawn_blocking({
        let mut cmd = run(true);
        move || cmd.output().unwrap()
    })
    .await
    .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(work
        .path()
        .join(".terraform/providers/registry.tfmirror.test/acme/widget/2.0.0/linux_amd64/terraform-provider-widget_v2.0.0")
        .is_file());
    m.stop().await;
}

#[tokio::test]
async fn origin_tokens_go_to_the_registry_api_only() {
    let sc = Scene::start_with("widget", "1.0.0", &["linux_amd64"], |config| {
        let host = config.upstream.hosts.values_mut().next().unwrap();
        host.token = Some("origin-secret".into());
    })
    .await;
    let a = sc
        .client
        .get(&sc.archive_url("widget", "1.0.0", "linux_amd64"))
        .await;
    assert_eq!(a.status, StatusCode::OK);
    let bearer = Some("Bearer origin-secret".to_string());
    for api in [
        "/v1/providers/acme/widget/versions",
        "/v1/providers/acme/widget/1.0.0/download/linux/amd64",
    ] {
        assert_eq!(sc.origin.authorization(api), vec![bearer.clone()], "{api}");
    }
    for download in [
        "/dl/terraform-provider-widget_1.0.0_linux_amd64.zip",
        "/files/terraform-provider-widget_1.0.0_linux_amd64.zip",
        "/files/terraform-provider-widget_1.0.0_SHA256SUMS",
        "/files/terraform-provider-widget_1.0.0_SHA256SUMS.sig",
    ] {
        assert_eq!(sc.origin.authorization(download), vec![None], "{download}");
    }

    // Discovery gets the token of the host it asks, here from a host entry
    // that configures nothing else.
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let host = origin.hostname();
    let mut config = setup.config(&origin, &[], &[]);
    config.upstream.hosts.insert(
        host.parse().unwrap(),
        tfmirror::config::HostConfig {
            token: Some("discovery-secret".into()),
            ..Default::default()
        },
    );
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);
    let a = c
        .get(&m.url(&format!("/{host}/acme/nothing/index.json")))
        .await;
    assert_eq!(a.status, StatusCode::NOT_FOUND);
    assert_eq!(
        origin.authorization("/.well-known/terraform.json"),
        vec![Some("Bearer discovery-secret".to_string())]
    );
}
