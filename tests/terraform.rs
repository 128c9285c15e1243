//! The real Terraform CLI (v1.0.3) installing providers through tfmirror.
//!
//! The binary is found through `TERRAFORM_BIN` (the README's test
//! command installs it). Without it these tests are skipped with a message,
//! except under `CI=true`, where a missing binary fails them.

mod common;

use std::path::{Path, PathBuf};

use common::daemon::*;
use common::workspace::Workspace;
use common::*;

const PROVIDER_HOST: &str = "registry.tfmirror.test";

/// The Terraform CLI the tests drive. Tests that call this are ignored
/// where it is missing, outside CI (see `build.rs`).
fn terraform() -> PathBuf {
    match std::env::var_os("TERRAFORM_BIN") {
        Some(p) if Path::new(&p).is_file() => PathBuf::from(p),
        other => panic!(
            "TERRAFORM_BIN must name the Terraform v1.0.3 binary (got {other:?}); run the README's test command"
        ),
    }
}

/// A Terraform working directory requiring one provider through the mirror.
/// The GnuPG-signed widget 1.1.0 is installed in `ws`, and Terraform
/// computed the same `h1:` that the real CLI recorded for its archive.
fn assert_widget_installed(ws: &Workspace, source: &str) {
    assert!(ws
        .installed(source, "1.1.0", "linux_amd64")
        .join("terraform-provider-widget_v1.1.0")
        .is_file());
    assert!(
        ws.lock_file()
            .contains("h1:sOTXWnXSxY+hmLoQsMc+YUZZUMEIs+hKVrGB0OLMNVo="),
        "{}",
        ws.lock_file()
    );
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_cold_warm_and_with_the_origin_down() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    let mirror = RunningMirror::start(config.clone()).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let providers = [("widget", source.as_str(), "1.1.0")];

    // Cold: the mirror fetches, verifies the GnuPG signature, caches.
    let ws = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init failed:\n{out}");
    assert_widget_installed(&ws, &source);
    let zip_path = "/files/terraform-provider-widget_1.1.0_linux_amd64.zip";
    assert_eq!(origin.hits(zip_path), 1);

    // Warm: a second workspace installs without another download.
    let ws2 = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws2.init().await;
    assert!(ok, "warm terraform init failed:\n{out}");
    assert_eq!(origin.hits(zip_path), 1);

    // The origin goes away and the mirror restarts: still installable.
    origin.stop();
    mirror.stop().await;
    let mirror = RunningMirror::start(config).await;
    let ws3 = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws3.init().await;
    assert!(ok, "terraform init with the origin down failed:\n{out}");
    // And the lock file written through the mirror is accepted again.
    let (ok, out) = ws3.init().await;
    assert!(ok, "re-init against the lock file failed:\n{out}");
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_providers_lock_for_three_platforms() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["darwin_arm64", "linux_amd64", "windows_amd64"];
    let archives = origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    let mirror = RunningMirror::start(setup.config(&origin, &[], &[PROVIDER_HOST])).await;
    let source = format!("{PROVIDER_HOST}/acme/gadget");
    let ws = Workspace::new(&tf, &mirror, &[("gadget", source.as_str(), "0.3.1")]);
    let net_mirror = format!("-net-mirror={}", mirror.url("/"));
    let mut args = vec!["providers", "lock", "-no-color", net_mirror.as_str()];
    let platform_args: Vec<String> = platforms.iter().map(|p| format!("-platform={p}")).collect();
    args.extend(platform_args.iter().map(String::as_str));
    let (ok, out) = ws.run(&args).await;
    assert!(ok, "terraform providers lock failed:\n{out}");
    let lock = ws.lock_file();

    // Each platform's h1: that Terraform computed itself is the one the
    // mirror now reports, and the archives are the published bytes.
    let c = Client::trusting(&mirror.ca_file);
    let doc = c
        .get(&mirror.url(&format!("/{PROVIDER_HOST}/acme/gadget/0.3.1.json")))
        .await
        .json();
    for p in platforms {
        let hashes = doc["archives"][p]["hashes"].as_array().unwrap();
        let h1 = hashes[0].as_str().unwrap();
        assert!(h1.starts_with("h1:"), "{p}: {hashes:?}");
        assert!(lock.contains(h1), "{p}: {h1} not in\n{lock}");
        assert_eq!(hashes[1], format!("zh:{}", sha256_hex(&archives[p])));
    }
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_init_fails_cleanly_on_a_tampered_package() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let mut evil = h1_fixture("terraform-provider-widget_1.1.0_linux_amd64.zip");
    evil[40] ^= 1;
    origin.replace_file("terraform-provider-widget_1.1.0_linux_amd64.zip", evil);
    let mirror = RunningMirror::start(setup.config(&origin, &[], &[PROVIDER_HOST])).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let ws = Workspace::new(&tf, &mirror, &[("widget", source.as_str(), "1.1.0")]);
    let (ok, out) = ws.init().await;
    assert!(!ok, "terraform init accepted a tampered package:\n{out}");
    assert!(out.contains("502"), "{out}");
    assert!(!ws.installed(&source, "1.1.0", "linux_amd64").exists());
    let stored = files_below(&setup.cache_dir());
    assert!(!stored.iter().any(|f| f.ends_with(".zip")), "{stored:?}");
    mirror.stop().await;
}

/// The hashes of a lock file's provider blocks.
fn lock_hashes(text: &str) -> std::collections::BTreeSet<String> {
    text.lines()
        .map(str::trim)
        .filter(|l| l.starts_with("\"h1:") || l.starts_with("\"zh:"))
        .map(|l| l.trim_end_matches(',').trim_matches('"').to_string())
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// The README's air-gapped walkthrough, command for command: sync on the
/// connected side, export, import inside the site, serve offline, and the
/// real Terraform installs through it with the origin gone; then a
/// complete lock file from `tfmirror lock` is accepted by `terraform init`.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_through_an_offline_site_mirror() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    for v in ["1.0.0", "1.1.0", "2.0.0"] {
        origin.publish(
            "acme",
            "widget",
            v,
            &["linux_amd64", "darwin_arm64"],
            &signer,
            &[&signer],
        );
    }
    let dir = setup.dir.path();
    // Connected side (the file names are the README's).
    let connected = dir.join("connected.toml");
    std::fs::rename(config_file(&setup, &origin, ""), &connected).unwrap();
    let manifest = dir.join("providers.toml");
    std::fs::write(
        &manifest,
        "platforms = [\"linux_amd64\", \"darwin_arm64\"]\n\n[[provider]]\nsource = \"registry.origin.test/acme/widget\"\nversions = \"~> 1.0\"\n",
    )
    .unwrap();
    let bundle = dir.join("providers.bundle");
    for args in [
        vec![
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
        vec!["export", "--config", s(&connected), "--output", s(&bundle)],
    ] {
        run_ok(dir, &args).await;
    }
    // The gap: nothing reaches the origin from here on.
    origin.stop();
    let site = site_config(dir, "site", "");
    run_ok(dir, &["import", "--config", s(&site), s(&bundle)]).await;
    let mut serve = tfmirror(dir);
    serve.args(["serve", "--config", s(&site), "--offline"]);
    let daemon = Daemon::start(serve);
    let ca = dir.join("site-data/tls/ca.pem");
    let installation = format!("  network_mirror {{\n    url = \"{}\"\n  }}\n", daemon.url);
    let source = "registry.origin.test/acme/widget";
    let ws = Workspace::with(&tf, &installation, &ca, &[("widget", source, "~> 1.0")]);
    let (ok, out) = ws.init().await;
    assert!(
        ok,
        "terraform init through the offline site mirror failed:\n{out}"
    );
    assert!(
        ws.installed(source, "1.1.0", "linux_amd64").exists(),
        "{out}"
    );

    // A lock file for both platforms, written inside the site.
    let lock = run_ok(
        dir,
        &[
            "lock",
            "--config",
            s(&site),
            "--platform",
            "linux_amd64",
            "--platform",
            "darwin_arm64",
            "registry.origin.test/acme/widget@~> 1.0",
        ],
    )
    .await;
    let ours = lock_hashes(&lock.stdout);
    assert_eq!(
        ours.iter().filter(|h| h.starts_with("h1:")).count(),
        2,
        "{}",
        lock.stdout
    );
    assert!(
        lock.stdout.contains("constraints = \"~> 1.0\""),
        "{}",
        lock.stdout
    );
    std::fs::write(ws.dir.path().join(".terraform.lock.hcl"), &lock.stdout).unwrap();
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init refused tfmirror's lock file:\n{out}");
    // Terraform kept every hash: they all belong to the version it installed.
    assert!(
        ours.is_subset(&lock_hashes(&ws.lock_file())),
        "{}",
        ws.lock_file()
    );
    daemon.signal("TERM");
    let (status, log) = daemon.wait().await;
    assert!(status.success(), "{log}");
}

/// The README's weekly routine, from the site's side: sites that hold
/// widget 1.0.0 receive only 1.1.0, site A through its inventory (`export
/// --missing-from`), site B through the bundle it last received (`export
/// --since`); each imports the delta, and the real Terraform installs
/// 1.1.0 through each, offline, with the origin gone.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_a_version_that_a_delta_carried() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let size = 256 * 1024;
    publish_big(&origin, &signer, "widget", &["1.0.0", "1.1.0"], size);
    let dir = setup.dir.path();
    let connected = config_file(&setup, &origin, "");
    sync_widget(dir, &connected, "= 1.0.0").await;
    let first = dir.join("first.tfm");
    export_bundle(dir, &connected, &first, &[]).await;
    let sites = [site_config(dir, "a", ""), site_config(dir, "b", "")];
    for site in &sites {
        run_ok(dir, &["import", "--config", s(site), s(&first)]).await;
    }
    sync_widget(dir, &connected, "~> 1.0").await;
    let inventory = dir.join("a.json");
    write_inventory(dir, &sites[0], &inventory).await;
    let deltas = [dir.join("delta-a.tfm"), dir.join("delta-b.tfm")];
    export_bundle(
        dir,
        &connected,
        &deltas[0],
        &["--missing-from", s(&inventory)],
    )
    .await;
    export_bundle(dir, &connected, &deltas[1], &["--since", s(&first)]).await;
    // The gap: nothing reaches the origin from here on.
    origin.stop();
    let source = "registry.origin.test/acme/widget";
    for ((site, delta), name) in sites.iter().zip(&deltas).zip(["a", "b"]) {
        let bytes = std::fs::metadata(delta).unwrap().len();
        assert!(
            bytes > size as u64 && bytes < (size + size / 4) as u64,
            "{name}: the delta holds one archive, not two: {bytes} bytes"
        );
        let imported = run_ok(dir, &["import", "--config", s(site), s(delta)]).await;
        assert!(
            imported
                .stdout
                .contains("1 versions verified, 1 archives stored"),
            "{name}: {}",
            imported.stdout
        );
        let mut serve = tfmirror(dir);
        serve.args(["serve", "--config", s(site), "--offline"]);
        let daemon = Daemon::start(serve);
        let ca = dir.join(format!("{name}-data/tls/ca.pem"));
        let installation = format!("  network_mirror {{\n    url = \"{}\"\n  }}\n", daemon.url);
        let ws = Workspace::with(&tf, &installation, &ca, &[("widget", source, "~> 1.0")]);
        let (ok, out) = ws.init().await;
        assert!(ok, "{name}: terraform init through the site failed:\n{out}");
        assert!(
            ws.installed(source, "1.1.0", "linux_amd64").exists(),
            "{name}: {out}"
        );
        daemon.signal("TERM");
        let (status, log) = daemon.wait().await;
        assert!(status.success(), "{log}");
    }
}

/// `tfmirror lock` and the lock endpoint give a superset of the hashes
/// `terraform providers lock -net-mirror` records for the same platforms,
/// and `terraform init` accepts the result.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tfmirror_lock_covers_terraform_providers_lock() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let platforms = ["darwin_arm64", "linux_amd64", "windows_amd64"];
    origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    origin.publish(
        "acme",
        "gadget",
        "0.4.0-beta1",
        &platforms,
        &signer,
        &[&signer],
    );
    let mirror = RunningMirror::start(setup.config(&origin, &[], &["registry.origin.test"])).await;
    let source = "registry.origin.test/acme/gadget";
    let dir = setup.dir.path();
    let config = config_file(&setup, &origin, "");
    let mut args = vec!["lock", "--config", s(&config)];
    for p in platforms {
        args.extend(["--platform", p]);
    }
    args.push(source);
    let lock = run_ok(dir, &args).await;
    // The newest release: pre-releases only when named.
    assert!(
        lock.stdout.contains("version = \"0.3.1\""),
        "{}",
        lock.stdout
    );
    let ours = lock_hashes(&lock.stdout);

    let theirs_ws = Workspace::new(&tf, &mirror, &[("gadget", source, "0.3.1")]);
    let net_mirror = format!("-net-mirror={}", mirror.url("/"));
    let mut tf_args = vec!["providers", "lock", "-no-color", net_mirror.as_str()];
    let platform_args: Vec<String> = platforms.iter().map(|p| format!("-platform={p}")).collect();
    tf_args.extend(platform_args.iter().map(String::as_str));
    let (ok, out) = theirs_ws.run(&tf_args).await;
    assert!(ok, "terraform providers lock failed:\n{out}");
    let theirs = lock_hashes(&theirs_ws.lock_file());
    assert!(!theirs.is_empty());
    assert!(
        theirs.is_subset(&ours),
        "terraform recorded hashes tfmirror lock lacks: {:?}",
        theirs.difference(&ours).collect::<Vec<_>>()
    );

    let ws = Workspace::new(&tf, &mirror, &[("gadget", source, "0.3.1")]);
    std::fs::write(ws.dir.path().join(".terraform.lock.hcl"), &lock.stdout).unwrap();
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init refused tfmirror's lock file:\n{out}");

    // The same block over HTTP.
    let c = Client::trusting(&mirror.ca_file);
    let query: Vec<String> = platforms.iter().map(|p| format!("platform={p}")).collect();
    let url = mirror.url(&format!("/{source}/0.3.1.lock.hcl?{}", query.join("&")));
    let served = c.get(&url).await;
    assert_eq!(served.status, http::StatusCode::OK);
    assert_eq!(lock_hashes(&String::from_utf8_lossy(&served.body)), ours);
    let none = c
        .get(&mirror.url(&format!("/{source}/0.3.1.lock.hcl")))
        .await;
    assert_eq!(none.status, http::StatusCode::BAD_REQUEST);
    mirror.stop().await;
}

/// A directory written by `tfmirror export --static` is a mirror Terraform
/// installs from (here as a `filesystem_mirror`), with the same `h1:` the
/// mirror reports.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_from_a_static_export() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let dir = setup.dir.path();
    let config = config_file(&setup, &origin, "");
    let manifest = dir.join("m.toml");
    std::fs::write(
        &manifest,
        "platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"registry.origin.test/acme/widget\"\n",
    )
    .unwrap();
    let snapshot = dir.join("snapshot");
    for args in [
        vec!["sync", "--config", s(&config), "--manifest", s(&manifest)],
        vec!["export", "--config", s(&config), "--static", s(&snapshot)],
    ] {
        run_ok(dir, &args).await;
    }
    origin.stop();
    let installation = format!(
        "  filesystem_mirror {{\n    path = \"{}\"\n  }}\n",
        snapshot.display()
    );
    let source = "registry.origin.test/acme/widget";
    let ws = Workspace::with(
        &tf,
        &installation,
        &setup.dir.path().join("origin-ca.pem"),
        &[("widget", source, "1.1.0")],
    );
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init from the static export failed:\n{out}");
    // The h1: recorded for the fixture by a real Terraform.
    assert!(
        ws.lock_file()
            .contains("h1:sOTXWnXSxY+hmLoQsMc+YUZZUMEIs+hKVrGB0OLMNVo="),
        "{}",
        ws.lock_file()
    );
}

/// The line in which `terraform init` says how it authenticated a provider.
fn installed_line(output: &str, provider: &str) -> String {
    output
        .lines()
        .find(|l| l.contains(&format!("- Installed {provider} ")))
        .unwrap_or_else(|| panic!("no install line for {provider} in\n{output}"))
        .trim()
        .to_string()
}

/// One file trusting both the origin's authority and the mirror's.
fn bundle(setup: &Setup, mirror: &RunningMirror) -> std::path::PathBuf {
    let path = setup.dir.path().join("bundle.pem");
    let mut pem = setup.ca.ca_pem.clone();
    if !mirror.ca_file.as_os_str().is_empty() {
        pem.push_str(&std::fs::read_to_string(&mirror.ca_file).unwrap());
    }
    std::fs::write(&path, pem).unwrap();
    path
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_block_on_the_facade_locks_every_platform_as_a_direct_install_would() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::rsa("acme");
    let platforms = ["darwin_arm64", "linux_amd64", "windows_amd64"];
    let archives = origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    let config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    let mirror = RunningMirror::start(config.clone()).await;
    let ca = bundle(&setup, &mirror);
    let source = format!("{PROVIDER_HOST}/acme/gadget");
    let providers = [("gadget", source.as_str(), "0.3.1")];

    // Straight from the origin, for comparison.
    let direct =
        Workspace::through_host_block(&tf, PROVIDER_HOST, &origin.providers_url(), &ca, &providers);
    let (ok, direct_out) = direct.init().await;
    assert!(ok, "direct install failed:\n{direct_out}");

    // The recipe the status page gives.
    let via = Workspace::from_status_page(&tf, &mirror, PROVIDER_HOST, &ca, &providers).await;
    let (ok, out) = via.init().await;
    assert!(ok, "install through the facade failed:\n{out}");
    // Terraform checked the origin's signature itself, and says so as it
    // does for a direct install.
    let line = installed_line(&out, &source);
    assert!(line.contains("self-signed, key ID"), "{line}");
    assert_eq!(line, installed_line(&direct_out, &source));
    // The lock file holds every platform's zh: from the signed SHA256SUMS
    // and the installed one's h1:, exactly as the direct install's does.
    let lock = via.lock_file();
    for p in platforms {
        let zh = format!("zh:{}", sha256_hex(&archives[p]));
        assert!(lock.contains(&zh), "{p}: {zh} not in\n{lock}");
    }
    assert!(lock.contains("\"h1:"), "{lock}");
    assert_eq!(lock, direct.lock_file());
    assert!(via
        .installed(&source, "0.3.1", "linux_amd64")
        .join("terraform-provider-gadget_v0.3.1")
        .is_file());

    // The origin goes away and the mirror restarts on its cache: a new
    // workspace still installs, with the same lock file.
    origin.stop();
    mirror.stop().await;
    let mirror = RunningMirror::start(config).await;
    let again = Workspace::from_status_page(&tf, &mirror, PROVIDER_HOST, &ca, &providers).await;
    let (ok, out) = again.init().await;
    assert!(ok, "install with the origin down failed:\n{out}");
    assert_eq!(again.lock_file(), lock);
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_every_registry_shape_directly_and_through_the_mirror() {
    let tf = terraform();
    for shape in all_shapes() {
        let name = shape.name.as_str();
        let discovery = shape.json("discovery.json", &Vars::new(), &NoLists);
        if discovery.get("providers.v1").is_none() {
            continue;
        }
        let setup = Setup::new();
        let origin = FakeOrigin::start(&setup.ca).await;
        origin.use_shape(name);
        // Terraform v1.0.3 reads RSA keys, not EdDSA ones.
        let signer = Signer::rsa("acme");
        let platforms = ["darwin_arm64", "linux_amd64"];
        let archives = origin.publish("acme", "widget", "2.0.0", &platforms, &signer, &[&signer]);
        let config = setup.config(&origin, &[], &[PROVIDER_HOST]);
        let mirror = RunningMirror::start(config).await;
        let ca = bundle(&setup, &mirror);
        let source = format!("{PROVIDER_HOST}/acme/widget");
        let providers = [("widget", source.as_str(), "2.0.0")];

        // The real client accepts the shape as the registry sends it...
        let direct = Workspace::through_host_block(
            &tf,
            PROVIDER_HOST,
            &origin.providers_url(),
            &ca,
            &providers,
        );
        let (ok, direct_out) = direct.init().await;
        assert!(ok, "{name}: direct install failed:\n{direct_out}");
        // ...and what the mirror makes of it, through the facade and the
        // network mirror alike.
        let facade =
            Workspace::from_status_page(&tf, &mirror, PROVIDER_HOST, &ca, &providers).await;
        let (ok, out) = facade.init().await;
        assert!(ok, "{name}: install through the facade failed:\n{out}");
        assert_eq!(
            installed_line(&out, &source),
            installed_line(&direct_out, &source),
            "{name}"
        );
        assert_eq!(facade.lock_file(), direct.lock_file(), "{name}");
        let mirrored = Workspace::new(&tf, &mirror, &providers);
        let (ok, out) = mirrored.init().await;
        assert!(
            ok,
            "{name}: install through the network mirror failed:\n{out}"
        );
        // The archive installed is the one the direct install hashed.
        let h1 = lock_hashes(&mirrored.lock_file());
        assert!(
            !h1.is_empty() && h1.is_subset(&lock_hashes(&direct.lock_file())),
            "{name}: {h1:?}"
        );
        let zh = format!("zh:{}", sha256_hex(&archives["linux_amd64"]));
        assert!(direct.lock_file().contains(&zh), "{name}");
        mirror.stop().await;
    }
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_plain_http_sidecar_serves_a_host_block() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::rsa("acme");
    let platforms = ["linux_amd64", "windows_amd64"];
    let archives = origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    let mut config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    config.server.tls = false;
    let sidecar = RunningMirror::start(config).await;
    let facade = sidecar.url(&format!("/v1/providers/{PROVIDER_HOST}/"));
    assert!(facade.starts_with("http://127.0.0.1:"), "{facade}");
    let source = format!("{PROVIDER_HOST}/acme/gadget");
    let ws = Workspace::through_host_block(
        &tf,
        PROVIDER_HOST,
        &facade,
        &bundle(&setup, &sidecar),
        &[("gadget", source.as_str(), "0.3.1")],
    );
    let (ok, out) = ws.init().await;
    assert!(ok, "install through the sidecar failed:\n{out}");
    let lock = ws.lock_file();
    for p in platforms {
        assert!(
            lock.contains(&format!("zh:{}", sha256_hex(&archives[p]))),
            "{p}:\n{lock}"
        );
    }
    sidecar.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_through_the_facade_fails_cleanly_on_what_does_not_verify() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::rsa("acme");
    let stranger = Signer::new("stranger");
    origin.publish_unverifiable(&signer, &stranger, "0.3.1");
    let mirror = RunningMirror::start(setup.config(&origin, &[], &[PROVIDER_HOST])).await;
    let ca = bundle(&setup, &mirror);
    let facade = mirror.url(&format!("/v1/providers/{PROVIDER_HOST}/"));
    for (kind, version) in [("gadget", "0.3.1"), ("widget", "1.0.0")] {
        let source = format!("{PROVIDER_HOST}/acme/{kind}");
        let ws = Workspace::through_host_block(
            &tf,
            PROVIDER_HOST,
            &facade,
            &ca,
            &[(kind, source.as_str(), version)],
        );
        let (ok, out) = ws.init().await;
        assert!(!ok, "{kind}: init should fail:\n{out}");
        // Terraform v1.0.3 shows the status of these answers (502), not
        // their body; the mirror's reason is in its log.
        assert!(
            out.contains("502 Bad Gateway") || out.contains(": 502\n"),
            "{kind}: the mirror's refusal is not shown:\n{out}"
        );
        assert!(
            !ws.installed(&source, version, "linux_amd64").exists(),
            "{kind} was installed"
        );
    }
    let stored = files_below(&setup.cache_dir());
    assert!(!stored.iter().any(|f| f.ends_with(".zip")), "{stored:?}");
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_passes_over_a_denied_version_through_both_protocols() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::rsa("acme");
    for v in ["1.0.0", "1.1.0"] {
        origin.publish("acme", "widget", v, &["linux_amd64"], &signer, &[&signer]);
    }
    let mut config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    config.policy.rules.push(tfmirror::policy::RuleConfig {
        verification: None,
        advisories: None,
        source: format!("{PROVIDER_HOST}/acme/widget"),
        versions: Some("1.1.0".into()),
        action: tfmirror::policy::Action::Deny,
        reason: "withdrawn by the security team".into(),
    });
    let mirror = RunningMirror::start(config).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let wanted = [("widget", source.as_str(), "~> 1.0")];

    // Network mirror: `~> 1.0` resolves to the allowed 1.0.0.
    let ws = Workspace::new(&tf, &mirror, &wanted);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init failed:\n{out}");
    assert!(
        ws.installed(&source, "1.0.0", "linux_amd64").exists(),
        "{out}"
    );
    assert!(
        !ws.installed(&source, "1.1.0", "linux_amd64").exists(),
        "{out}"
    );

    // Facade: the same, and Terraform shows the registry's warning.
    let ca = bundle(&setup, &mirror);
    let facade = mirror.url(&format!("/v1/providers/{PROVIDER_HOST}/"));
    let ws = Workspace::through_host_block(&tf, PROVIDER_HOST, &facade, &ca, &wanted);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init through the facade failed:\n{out}");
    assert!(
        ws.installed(&source, "1.0.0", "linux_amd64").exists(),
        "{out}"
    );
    assert!(out.contains("withdrawn by the security team"), "{out}");

    // Asking for the denied version exactly fails; the mirror's answer
    // says why.
    let ws = Workspace::new(&tf, &mirror, &[("widget", source.as_str(), "1.1.0")]);
    let (ok, out) = ws.init().await;
    assert!(!ok, "the denied version was installed:\n{out}");
    assert!(!ws.installed(&source, "1.1.0", "linux_amd64").exists());
    let client = Client::trusting(&mirror.ca_file);
    let answer = client
        .get(&mirror.url(&format!("/{PROVIDER_HOST}/acme/widget/1.1.0.json")))
        .await;
    assert_eq!(answer.status, http::StatusCode::FORBIDDEN);
    assert!(
        answer
            .error_text()
            .contains("withdrawn by the security team"),
        "{}",
        answer.error_text()
    );
    mirror.stop().await;
}

/// The module registry host of the module tests.
const MODULE_HOST: &str = "registry.origin.test";

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_registry_modules_from_git_through_the_mirror_and_offline() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let modules = publish_net_and_sub(&setup, &origin);
    let config = setup.module_config(&origin, MODULE_HOST);
    let mirror = RunningMirror::start(config.clone()).await;

    let workspace =
        |mirror: &RunningMirror| module_workspace(&tf, &mirror.url(""), &mirror.ca_file);
    let check = |ws: &Workspace, when: &str| modules.check(ws, when);
    let fetches = |repo: &str| origin.hits(&format!("/git/{repo}.git/info/refs"));

    // Cold: the mirror fetches both repositories once.
    let ws = workspace(&mirror);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init failed:\n{out}");
    check(&ws, "cold");
    assert_eq!((fetches("net"), fetches("sub")), (1, 1));

    // Warm, with `terraform get` as well: no fetch from the git host.
    let ws = workspace(&mirror);
    let (ok, out) = ws.run(&["get", "-no-color"]).await;
    assert!(ok, "terraform get failed:\n{out}");
    let (ok, out) = ws.init().await;
    assert!(ok, "warm terraform init failed:\n{out}");
    check(&ws, "warm");
    assert_eq!((fetches("net"), fetches("sub")), (1, 1));

    // The origin and the git host go away and the mirror restarts.
    origin.stop();
    mirror.stop().await;
    let mirror = RunningMirror::start(config).await;
    let ws = workspace(&mirror);
    let (ok, out) = ws.init().await;
    assert!(
        ok,
        "terraform init with the origin and git host down failed:\n{out}"
    );
    check(&ws, "offline");
    mirror.stop().await;
}

impl NetAndSub {
    /// Checks what Terraform installed: `net` is its git tree at the tag,
    /// and the nested call's directory is the subdirectory of `sub`.
    fn check(&self, ws: &Workspace, when: &str) {
        let mut want: Vec<(String, String)> = self
            .net_files
            .iter()
            .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
            .collect();
        want.sort();
        assert_eq!(tree_files(&ws.module_dir("net")), want, "{when}");
        assert!(ws.module_dir("net.sub").ends_with("modules/sub"), "{when}");
        assert_eq!(
            tree_files(&ws.module_dir("net.sub")),
            vec![("main.tf".to_owned(), self.sub_module.to_owned())],
            "{when}"
        );
    }
}

/// A workspace calling `acme/net/aws` 1.0.0 and requiring `acme/widget`,
/// with providers through the network mirror at `base` and modules through
/// a `host` block naming its module registry.
fn module_workspace(tf: &Path, base: &str, ca_file: &Path) -> Workspace {
    let base = base.trim_end_matches('/');
    let cli_config = format!(
        "provider_installation {{\n  network_mirror {{\n    url = \"{base}/\"\n  }}\n}}\n\nhost \"{MODULE_HOST}\" {{\n  services = {{\n    \"modules.v1\" = \"{base}/v1/modules/{MODULE_HOST}/\"\n  }}\n}}\n"
    );
    let provider = format!("{MODULE_HOST}/acme/widget");
    let ws = Workspace::configured(
        tf,
        &cli_config,
        ca_file,
        &[("widget", provider.as_str(), "1.0.0")],
    );
    ws.add_modules(&[("net", "registry.origin.test/acme/net/aws", "1.0.0")]);
    ws
}

/// The README's air-gapped walkthrough with modules: `sync` (a manifest
/// with a `[[module]]`, and `--from` a configuration), whose nested module
/// calls are followed; `export`; `import` inside the site; an offline
/// mirror; and Terraform initialising modules and providers with the origin
/// and the git host gone.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_registry_modules_through_an_air_gapped_site() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let modules = publish_net_and_sub(&setup, &origin);
    let dir = setup.dir.path();
    let connected = dir.join("connected.toml");
    std::fs::rename(config_file(&setup, &origin, ""), &connected).unwrap();
    let manifest = dir.join("site.toml");
    std::fs::write(
        &manifest,
        "platforms = [\"linux_amd64\"]\n\n[[provider]]\nsource = \"registry.origin.test/acme/widget\"\nversions = \"~> 1.0\"\n\n[[module]]\nsource = \"registry.origin.test/acme/net/aws\"\nversions = \"~> 1.0\"\n",
    )
    .unwrap();
    let synced = run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--manifest",
            s(&manifest),
        ],
    )
    .await;
    // `net` and the `sub` it calls.
    assert!(
        synced
            .stdout
            .contains("module versions: 2 (2 packaged, 0 already cached)"),
        "{}",
        synced.stdout
    );
    // From a configuration directory: the same modules, already cached.
    let ws = module_workspace(
        &tf,
        "https://127.0.0.1:1",
        &setup.dir.path().join("origin-ca.pem"),
    );
    let from = run_ok(
        dir,
        &[
            "sync",
            "--config",
            s(&connected),
            "--from",
            s(ws.dir.path()),
            "--platform",
            "linux_amd64",
        ],
    )
    .await;
    assert!(
        from.stdout
            .contains("module versions: 2 (0 packaged, 2 already cached)"),
        "{}",
        from.stdout
    );
    let bundle = dir.join("site.bundle");
    run_ok(
        dir,
        &["export", "--config", s(&connected), "--output", s(&bundle)],
    )
    .await;

    // The gap: the origin and the git host are gone.
    origin.stop();
    let site = site_config(dir, "site", "");
    let imported = run_ok(dir, &["import", "--config", s(&site), s(&bundle)]).await;
    assert!(
        imported
            .stdout
            .contains("2 module versions checked against their pins"),
        "{}",
        imported.stdout
    );
    let mut serve = tfmirror(dir);
    serve.args(["serve", "--config", s(&site), "--offline"]);
    let daemon = Daemon::start(serve);
    let ca = dir.join("site-data/tls/ca.pem");
    let ws = module_workspace(&tf, &daemon.url, &ca);
    let (ok, out) = ws.init().await;
    assert!(
        ok,
        "terraform init through the air-gapped site failed:\n{out}"
    );
    modules.check(&ws, "air-gapped site");
    assert!(ws
        .installed("registry.origin.test/acme/widget", "1.0.0", "linux_amd64")
        .exists());
}

#[cfg_attr(
    any(tfmirror_no_terraform, tfmirror_no_seaweedfs),
    ignore = "needs TERRAFORM_BIN (Terraform v1.0.3) and WEED_BIN (SeaweedFS); scripts/test installs both"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_through_either_of_two_instances_on_one_bucket() {
    use common::seaweed::Seaweed;
    let tf = terraform();
    let weed = Seaweed::start().await;
    weed.create_bucket("terraform").await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let home = setup.dir.path();
    // Two `tfmirror serve` processes with the same configuration but their
    // own local directories.
    let first_file = config_file(&setup, &origin, &weed.storage_toml("terraform", home));
    let second_file = second_instance(home, &first_file);
    let serve = |file: &Path| {
        let mut cmd = tfmirror(home);
        cmd.args(["serve", "--config"]).arg(file);
        Daemon::start(cmd)
    };
    let network_mirror =
        |d: &Daemon| format!("  network_mirror {{\n    url = \"{}\"\n  }}\n", d.url);
    let source = "registry.origin.test/acme/widget";
    let providers = [("widget", source, "1.1.0")];

    // Through the first instance, with the origin up.
    let first = serve(&first_file);
    let ws = Workspace::with(
        &tf,
        &network_mirror(&first),
        &home.join("data/tls/ca.pem"),
        &providers,
    );
    let (ok, out) = ws.init().await;
    assert!(
        ok,
        "terraform init through the first instance failed:\n{out}"
    );

    // The origin goes away; a second instance that has never seen the
    // provider installs it from the bucket alone.
    origin.stop();
    let second = serve(&second_file);
    let ca = home.join("second-data/tls/ca.pem");
    let ws2 = Workspace::with(&tf, &network_mirror(&second), &ca, &providers);
    let (ok, out) = ws2.init().await;
    assert!(
        ok,
        "terraform init through the second instance failed:\n{out}"
    );
    assert_widget_installed(&ws2, source);
    assert_eq!(ws2.lock_file(), ws.lock_file());
    // Nothing of the provider is kept on the instances' own disks.
    for dir in [setup.cache_dir(), home.join("second-cache")] {
        let kept = files_below(&dir);
        assert!(
            !kept
                .iter()
                .any(|f| f.ends_with(".zip") || f.ends_with(".json")),
            "{kept:?}"
        );
    }
    drop((first, second));
}

#[cfg_attr(
    any(tfmirror_no_terraform, tfmirror_no_seaweedfs),
    ignore = "needs TERRAFORM_BIN (Terraform v1.0.3) and WEED_BIN (SeaweedFS); scripts/test installs both"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_follows_redirects_to_the_bucket() {
    use common::seaweed::{use_bucket, Seaweed};
    let tf = terraform();
    let weed = Seaweed::start().await;
    weed.create_bucket("redirect").await;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish_gnupg_widget(&origin, "acme", "signer.asc", "SHA256SUMS.sig");
    let mut config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    let mut s3 = weed.s3_config("redirect", setup.dir.path());
    s3.redirect = true;
    use_bucket(&mut config, s3);
    let mirror = RunningMirror::start(config).await;
    let source = format!("{PROVIDER_HOST}/acme/widget");
    let providers = [("widget", source.as_str(), "1.1.0")];

    let ws = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init through redirects failed:\n{out}");
    assert_widget_installed(&ws, &source);
    // The archive went from the bucket: the mirror answered with a
    // presigned link and sent none of its bytes.
    let client = Client::trusting(&mirror.ca_file);
    let zip =
        format!("/{PROVIDER_HOST}/acme/widget/terraform-provider-widget_1.1.0_linux_amd64.zip");
    let answer = client.get(&mirror.url(&zip)).await;
    assert_eq!(answer.status, http::StatusCode::TEMPORARY_REDIRECT);
    let location = answer.headers["location"].to_str().unwrap().to_owned();
    assert!(location.starts_with(&weed.endpoint()), "{location}");
    assert!(location.contains("X-Amz-Signature="), "{location}");
    let metrics = mirror.mirror.metrics().render();
    assert!(
        metrics.contains("tfmirror_served_bytes_total 0\n"),
        "{metrics}"
    );
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_a_keyless_opentofu_registry_provider_checked_through_the_network_mirror(
) {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    origin.use_shape("opentofu-registry");
    origin.use_download_answer("provider-download-keyless-null.json");
    let author = Signer::new("Widget Author");
    let platforms = ["linux_amd64", "darwin_arm64"];
    let archives = origin.publish("acme", "widget", "1.0.0", &platforms, &author, &[]);
    let host = "registry.opentofu.org";
    let source = format!("{host}/acme/widget");
    let providers = [("widget", source.as_str(), "1.0.0")];

    // Refused by default: init fails, saying why.
    let mut config = setup.config(&origin, &[], &[host]);
    let mirror = RunningMirror::start(config.clone()).await;
    let ws = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws.init().await;
    assert!(
        !ok,
        "a keyless provider installed without the opt-in:\n{out}"
    );
    assert!(out.contains("502"), "{out}");
    assert!(!ws.installed(&source, "1.0.0", "linux_amd64").exists());
    mirror.stop().await;

    // Opted in: installed, and the lock file holds the hashes tfmirror
    // checked.
    config
        .upstream
        .hosts
        .get_mut(&host.parse().unwrap())
        .unwrap()
        .unsigned = tfmirror::verify::Unsigned::Checked;
    let mirror = RunningMirror::start(config).await;
    let ws = Workspace::new(&tf, &mirror, &providers);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init failed:\n{out}");
    assert!(ws.installed(&source, "1.0.0", "linux_amd64").is_dir());
    let lock = ws.lock_file();
    let doc = Client::trusting(&mirror.ca_file)
        .get(&mirror.url(&format!("/{host}/acme/widget/1.0.0.json")))
        .await
        .json();
    let linux = doc["archives"]["linux_amd64"]["hashes"].as_array().unwrap();
    let h1 = linux[0].as_str().unwrap();
    assert!(h1.starts_with("h1:"), "{linux:?}");
    assert!(lock.contains(h1), "{h1} not in\n{lock}");
    let zh = format!("zh:{}", sha256_hex(&archives["linux_amd64"]));
    assert_eq!(linux[1], zh.as_str());
    // Through a network mirror Terraform records the h1: it computed,
    // which is the one tfmirror checked and pinned.
    let pin = widget_pin(&setup.cache_dir(), "1.0.0");
    assert_eq!(pin["packages"]["linux_amd64"]["h1"], h1);
    mirror.stop().await;
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_through_two_tiers_and_from_the_lower_one_alone() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::rsa("acme");
    let platforms = ["linux_amd64", "darwin_arm64"];
    let archives = origin.publish("acme", "gadget", "0.3.1", &platforms, &signer, &[&signer]);
    let token = "between-the-tiers-0123456789abcdef";
    let source = format!("{PROVIDER_HOST}/acme/gadget");
    let providers = [("gadget", source.as_str(), "0.3.1")];

    // The upper tier reaches the origin; only the token opens it.
    let mut upper_config = setup.config(&origin, &[], &[PROVIDER_HOST]);
    upper_config.auth.tokens = vec![token.to_owned()];
    let upper = RunningMirror::start(upper_config).await;

    // The lower tier's only upstream is the upper tier's registry facade,
    // as docs/tiers.md configures it.
    let lower_config = |with_token: bool| {
        let mut c = setup.config(&origin, &[], &[PROVIDER_HOST]);
        c.cache.dir = setup.dir.path().join("lower-cache");
        c.server.data_dir = setup.dir.path().join("lower-data");
        c.upstream.ca_file = Some(upper.ca_file.clone());
        let host = c
            .upstream
            .hosts
            .get_mut(&PROVIDER_HOST.parse().unwrap())
            .unwrap();
        host.services.insert(
            "providers.v1".into(),
            upper
                .url(&format!("/v1/providers/{PROVIDER_HOST}/"))
                .parse()
                .unwrap(),
        );
        host.token = with_token.then(|| token.to_owned());
        c
    };
    // Without the token, the upper tier refuses the lower one.
    let lower = RunningMirror::start(lower_config(false)).await;
    let ws = Workspace::new(&tf, &lower, &providers);
    let (ok, out) = ws.init().await;
    assert!(!ok, "the upper tier answered without its token:\n{out}");
    assert!(out.contains("502"), "{out}");
    lower.stop().await;

    let lower = RunningMirror::start(lower_config(true)).await;
    let ws = Workspace::new(&tf, &lower, &providers);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init through two tiers failed:\n{out}");
    assert!(ws
        .installed(&source, "0.3.1", "linux_amd64")
        .join("terraform-provider-gadget_v0.3.1")
        .is_file());
    // One download from the origin (and, as for any facade answer, one
    // request for each archive's size, its body left unread); each tier
    // keeps the archive, and the lower one checked the origin's signature
    // itself.
    let zip = "terraform-provider-gadget_0.3.1_linux_amd64.zip";
    assert_eq!(origin.hits(&format!("/files/{zip}")), 2);
    assert_eq!(
        origin.hits("/files/terraform-provider-gadget_0.3.1_darwin_arm64.zip"),
        1
    );
    assert!(files_below(&setup.cache_dir())
        .iter()
        .any(|f| f.ends_with(zip)));
    let lower_cache = setup.dir.path().join("lower-cache");
    assert!(files_below(&lower_cache).iter().any(|f| f.ends_with(zip)));
    let record = lower
        .mirror
        .store()
        .read_version(
            &tfmirror::address::Provider::from_source(&source).unwrap(),
            &tfmirror::address::Version::parse("0.3.1").unwrap(),
        )
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.signed_by(), signer.key_id());
    assert_eq!(record.packages.len(), archives.len());

    // The upper tier goes away: the lower one serves what it holds.
    upper.stop().await;
    origin.stop();
    let again = Workspace::new(&tf, &lower, &providers);
    let (ok, out) = again.init().await;
    assert!(ok, "terraform init with the upper tier down failed:\n{out}");
    assert_eq!(again.lock_file(), ws.lock_file());
    lower.stop().await;
}

/// Modules through two tiers: the lower tier's only module registry is the
/// upper tier's module proxy (with the token between them); Terraform
/// installs the module, its nested call and its provider from the lower
/// tier, each repository is fetched once by the upper tier, and the lower
/// tier serves them alone once the upper one and the origin are gone.
#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_modules_through_two_tiers_and_from_the_lower_one_alone() {
    let tf = terraform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let modules = publish_net_and_sub(&setup, &origin);
    let token = "between-the-tiers-0123456789abcdef";
    let mut upper_config = setup.module_config(&origin, MODULE_HOST);
    upper_config.auth.tokens = vec![token.to_owned()];
    let upper = RunningMirror::start(upper_config).await;

    let mut lower_config = setup.module_config(&origin, MODULE_HOST);
    lower_config.cache.dir = setup.dir.path().join("lower-cache");
    lower_config.server.data_dir = setup.dir.path().join("lower-data");
    lower_config.upstream.ca_file = Some(upper.ca_file.clone());
    let host = lower_config
        .upstream
        .hosts
        .get_mut(&MODULE_HOST.parse().unwrap())
        .unwrap();
    for (service, path) in [("providers.v1", "providers"), ("modules.v1", "modules")] {
        let url = upper.url(&format!("/v1/{path}/{MODULE_HOST}/"));
        host.services.insert(service.into(), url.parse().unwrap());
    }
    host.token = Some(token.to_owned());
    let lower = RunningMirror::start(lower_config.clone()).await;

    let ws = module_workspace(&tf, &lower.url(""), &lower.ca_file);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init through two tiers failed:\n{out}");
    modules.check(&ws, "through two tiers");
    let fetches = |repo: &str| origin.hits(&format!("/git/{repo}.git/info/refs"));
    assert_eq!((fetches("net"), fetches("sub")), (1, 1));
    // Each tier keeps the packages; the lower one got them from the upper.
    for cache in [setup.cache_dir(), setup.dir.path().join("lower-cache")] {
        let held = files_below(&cache);
        for name in ["acme/net/aws/1.0.0", "acme/sub/aws/1.0.0"] {
            assert!(held.iter().any(|f| f.contains(name)), "{name}: {held:?}");
        }
    }

    upper.stop().await;
    origin.stop();
    lower.stop().await;
    let lower = RunningMirror::start(lower_config).await;
    let ws = module_workspace(&tf, &lower.url(""), &lower.ca_file);
    let (ok, out) = ws.init().await;
    assert!(ok, "terraform init with the upper tier down failed:\n{out}");
    modules.check(&ws, "from the lower tier alone");
    lower.stop().await;
}
