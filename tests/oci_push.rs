//! `tfmirror push-oci` into a real OCI registry (Debian's
//! `docker-registry`, over TLS with Basic authentication from a Docker
//! auth file): OpenTofu's client, replayed from its code, installs the
//! pushed provider for two platforms and the pushed module package, and
//! `PyPI`'s oras SDK pulls both and checks every digest; the digests are the
//! same as those of the mirror's own `/v2/`; a second push sends nothing;
//! a tag is never overwritten with other content; a registry that wants
//! credentials and gets none is named in the failure.

mod common;

use common::daemon::{config_file, run_tfmirror};
use common::oci::*;
use common::*;

const HOST: &str = "registry.origin.test";
const PLATFORMS: [&str; 2] = ["linux_amd64", "darwin_arm64"];
const NET: &[(&str, &str)] = &[
    ("main.tf", "variable \"name\" {\n  default = \"net\"\n}\n"),
    ("modules/sub/main.tf", "output \"sub\" {\n  value = 1\n}\n"),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    tfmirror_no_oci_tools,
    ignore = "needs Debian's docker-registry and ORAS_PY (the README's test command installs both)"
)]
async fn push_oci_fills_a_real_registry_that_opentofu_and_oras_install_from() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let git_root = setup.dir.path().join("git");
    let net = Repo::new(&git_root, "net");
    net.commit(NET, "v1");
    net.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
    let registry = DockerRegistry::start(&setup.ca).await;
    let config = config_file(&setup, &origin, "");
    let home = setup.dir.path().join("home");
    registry.write_docker_config(&home);
    let manifest = setup.dir.path().join("site.toml");
    std::fs::write(
        &manifest,
        format!(
            "[[provider]]\nsource = \"{HOST}/acme/widget\"\nversions = \"1.0.0\"\nplatforms = [\"linux_amd64\", \"darwin_arm64\"]\n\n[[module]]\nsource = \"{HOST}/acme/net/aws\"\nversions = \"1.0.0\"\n"
        ),
    )
    .unwrap();
    let target = format!("{}/site", registry.host);
    let ca = registry.ca_file();
    let push = |extra: &'static [&'static str]| {
        let (home, config, manifest, target, ca) = (
            home.clone(),
            config.clone(),
            manifest.clone(),
            target.clone(),
            ca.clone(),
        );
        async move {
            let mut args = vec![
                "push-oci".to_owned(),
                target,
                "--config".into(),
                config.display().to_string(),
                "--manifest".into(),
                manifest.display().to_string(),
                "--ca-file".into(),
                ca.display().to_string(),
            ];
            args.extend(extra.iter().map(|s| (*s).to_owned()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_tfmirror(&home, &args).await
        }
    };

    let first = push(&[]).await;
    assert!(first.ok, "{}{}", first.stdout, first.stderr);
    assert!(first.stdout.contains("credentials: "), "{}", first.stdout);
    assert!(
        first.stdout.contains(".docker/config.json"),
        "{}",
        first.stdout
    );
    assert!(
        first
            .stdout
            .contains("tags pushed: 2, already there: 0, blobs sent: 5"),
        "{}",
        first.stdout
    );

    // OpenTofu installs from the site's registry.
    let client = Client::trusting(&ca);
    let tofu = Tofu {
        client: &client,
        base: format!("https://{}", registry.host),
        authorization: Some(DockerRegistry::basic()),
    };
    let provider_repo = format!("site/{HOST}/acme/widget");
    let module_repo = format!("site/{HOST}/acme/net/aws");
    let mut index = String::new();
    for platform in PLATFORMS {
        let (zip, digest) = tofu.install(&provider_repo, "1.0.0", platform).await;
        assert_eq!(zip, archives[platform], "{platform}: the origin's archive");
        index = digest;
    }
    let (module_zip, module_digest) = tofu.module(&module_repo, "1.0.0").await;
    let files = zip_files(&module_zip);
    for (name, text) in NET {
        assert_eq!(files.get(*name).map(String::as_str), Some(*text), "{name}");
    }
    assert_eq!(files.len(), NET.len(), "{files:?}");

    // An independent client agrees on every digest.
    let basic = Some((REGISTRY_USER, REGISTRY_PASSWORD));
    let pulled = oras_pull(
        &registry.host,
        &provider_repo,
        "1.0.0",
        "provider",
        &ca,
        basic,
    );
    assert_eq!(pulled["digest"], index.as_str());
    assert_eq!(pulled["tags"], serde_json::json!(["1.0.0"]));
    for platform in PLATFORMS {
        let layer = &pulled["layers"][platform];
        assert_eq!(
            layer["sha256"],
            digest_of(&archives[platform]).as_str(),
            "{platform}"
        );
        assert_eq!(layer["digest"], layer["sha256"]);
    }
    let pulled = oras_pull(&registry.host, &module_repo, "1.0.0", "module", &ca, basic);
    assert_eq!(pulled["digest"], module_digest.as_str());
    assert_eq!(
        pulled["layers"]["module"]["sha256"],
        digest_of(&module_zip).as_str()
    );

    // The mirror's own /v2/ hands out the same digests for the same content.
    let m = RunningMirror::start(setup.module_config(&origin, HOST)).await;
    let mirror_client = Client::trusting(&m.ca_file);
    let at_mirror = Tofu::at_mirror(&mirror_client, &m);
    let (zip, digest) = at_mirror
        .install(&format!("{HOST}/acme/widget"), "1.0.0", "darwin_arm64")
        .await;
    assert_eq!(digest, index);
    assert_eq!(zip, archives["darwin_arm64"]);
    let (zip, digest) = at_mirror
        .module(&format!("{HOST}/acme/net/aws"), "1.0.0")
        .await;
    assert_eq!(digest, module_digest);
    assert_eq!(zip, module_zip);
    // And the independent client pulls the same from the mirror.
    let mirror_host = m
        .url("")
        .trim_start_matches("https://")
        .trim_end_matches('/')
        .to_owned();
    let pulled = oras_pull(
        &mirror_host,
        &format!("{HOST}/acme/widget"),
        "1.0.0",
        "provider",
        &m.ca_file,
        None,
    );
    assert_eq!(pulled["digest"], index.as_str());
    for platform in PLATFORMS {
        assert_eq!(
            pulled["layers"][platform]["sha256"],
            digest_of(&archives[platform]).as_str()
        );
    }
    let pulled = oras_pull(
        &mirror_host,
        &format!("{HOST}/acme/net/aws"),
        "1.0.0",
        "module",
        &m.ca_file,
        None,
    );
    assert_eq!(pulled["digest"], module_digest.as_str());
    m.stop().await;

    // From what the cache holds, under another prefix: the same content,
    // so the same digests, and the blobs already in the registry's
    // storage are still sent to the new repositories.
    let cached = run_tfmirror(
        &home,
        &[
            "push-oci",
            &format!("{}/from-cache", registry.host),
            "--config",
            &config.display().to_string(),
            "--ca-file",
            &ca.display().to_string(),
        ],
    )
    .await;
    assert!(cached.ok, "{}{}", cached.stdout, cached.stderr);
    assert!(
        cached
            .stdout
            .contains(&format!("from-cache/{HOST}/acme/widget:1.0.0 {index}")),
        "{}",
        cached.stdout
    );
    assert!(
        cached.stdout.contains(&format!(
            "from-cache/{HOST}/acme/net/aws:1.0.0 {module_digest}"
        )),
        "{}",
        cached.stdout
    );

    // Again: nothing is sent.
    let second = push(&[]).await;
    assert!(second.ok, "{}{}", second.stdout, second.stderr);
    assert!(
        second
            .stdout
            .contains("tags pushed: 0, already there: 2, blobs sent: 0"),
        "{}",
        second.stdout
    );

    // Other content for a pushed tag: refused, the tag left as it was.
    let narrower = push(&["--platform", "linux_amd64"]).await;
    assert!(!narrower.ok);
    assert!(
        narrower.stdout.contains(&format!(
            "FAILED {HOST}/acme/widget 1.0.0: {provider_repo}:1.0.0 holds {index}"
        )),
        "{}",
        narrower.stdout
    );
    assert!(
        narrower.stdout.contains("never overwritten"),
        "{}",
        narrower.stdout
    );
    let (_, digest) = tofu.install(&provider_repo, "1.0.0", "linux_amd64").await;
    assert_eq!(digest, index);

    // No credentials for a registry that wants them: said so.
    std::fs::remove_file(home.join(".docker/config.json")).unwrap();
    let anonymous = push(&[]).await;
    assert!(!anonymous.ok);
    assert!(
        anonymous.stdout.contains("credentials: none (anonymous)"),
        "{}",
        anonymous.stdout
    );
    assert!(
        anonymous
            .stdout
            .contains("asks for a username and password (Basic)"),
        "{}",
        anonymous.stdout
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    tfmirror_no_oci_tools,
    ignore = "needs Debian's docker-registry and ORAS_PY (the README's test command installs both)"
)]
async fn watch_passes_bring_new_versions_to_the_sites_registry() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let registry = DockerRegistry::start(&setup.ca).await;
    let extra = format!(
        "[watch]\nplatforms = [\"linux_amd64\"]\n[[watch.provider]]\nsource = \"{HOST}/acme/widget\"\nversions = \">= 1.0\"\n[[watch.oci]]\ntarget = \"{}/site\"\nusername = \"{REGISTRY_USER}\"\ntoken = \"{REGISTRY_PASSWORD}\"\nca_file = \"{}\"\n",
        registry.host,
        registry.ca_file().display()
    );
    let config = config_file(&setup, &origin, &extra);
    let home = setup.dir.path().join("home");
    let config_arg = config.display().to_string();
    let shown = run_tfmirror(&home, &["check-config", "--config", &config_arg]).await;
    assert!(shown.ok, "{}", shown.stderr);
    assert!(
        !shown.stdout.contains(REGISTRY_PASSWORD),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("(hidden)"), "{}", shown.stdout);

    let once = run_tfmirror(&home, &["watch", "--once", "--config", &config_arg]).await;
    assert!(once.ok, "{}{}", once.stdout, once.stderr);
    assert!(
        once.stdout.contains("tags pushed: 1, already there: 0"),
        "{}",
        once.stdout
    );

    let newer = origin.publish("acme", "widget", "1.1.0", &PLATFORMS, &signer, &[&signer]);
    let again = run_tfmirror(&home, &["watch", "--once", "--config", &config_arg]).await;
    assert!(again.ok, "{}{}", again.stdout, again.stderr);
    assert!(
        again.stdout.contains("tags pushed: 1, already there: 1"),
        "{}",
        again.stdout
    );

    let client = Client::trusting(&registry.ca_file());
    let tofu = Tofu {
        client: &client,
        base: format!("https://{}", registry.host),
        authorization: Some(DockerRegistry::basic()),
    };
    let repo = format!("site/{HOST}/acme/widget");
    let (zip, _) = tofu.install(&repo, "1.1.0", "linux_amd64").await;
    assert_eq!(zip, newer["linux_amd64"]);

    // A mistake in an entry is named at once.
    let bad = config_file(
        &setup,
        &origin,
        "[[watch.oci]]\ntarget = \"https://x.example/a\"\n",
    );
    let refused = run_tfmirror(
        &home,
        &["check-config", "--config", &bad.display().to_string()],
    )
    .await;
    assert!(!refused.ok);
    assert!(
        refused.stderr.contains("watch.oci 1 (https://x.example/a)"),
        "{}",
        refused.stderr
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(
    tfmirror_no_oci_tools,
    ignore = "needs Debian's docker-registry and ORAS_PY (the README's test command installs both)"
)]
async fn push_oci_asks_a_token_service_when_the_registry_names_one() {
    use common::token_gateway::TokenGateway;
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let signer = Signer::new("acme");
    let archives = origin.publish("acme", "widget", "1.0.0", &PLATFORMS, &signer, &[&signer]);
    let registry = DockerRegistry::start(&setup.ca).await;
    let gateway = TokenGateway::start(&setup.ca, &registry).await;
    let config = config_file(&setup, &origin, "");
    let home = setup.dir.path().join("home");
    // Podman's auth file, where `podman login` writes it.
    let pair = format!("{REGISTRY_USER}:{REGISTRY_PASSWORD}");
    let auth = {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(pair)
    };
    let file = home.join(".config/containers/auth.json");
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    let doc = serde_json::json!({ "auths": { gateway.host.clone(): { "auth": auth } } });
    std::fs::write(&file, doc.to_string()).unwrap();
    let manifest = setup.dir.path().join("site.toml");
    std::fs::write(
        &manifest,
        format!("platforms = [\"linux_amd64\"]\n[[provider]]\nsource = \"{HOST}/acme/widget\"\nversions = \"1.0.0\"\n"),
    )
    .unwrap();
    let s = |p: &std::path::Path| p.display().to_string();
    let target = format!("{}/site", gateway.host);
    let ran = run_tfmirror(
        &home,
        &[
            "push-oci",
            &target,
            "--config",
            &s(&config),
            "--manifest",
            &s(&manifest),
            "--ca-file",
            &s(&registry.ca_file()),
        ],
    )
    .await;
    assert!(ran.ok, "{}{}", ran.stdout, ran.stderr);
    assert!(
        ran.stdout.contains("containers/auth.json"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("tags pushed: 1"), "{}", ran.stdout);
    assert!(gateway.tokens.load(std::sync::atomic::Ordering::SeqCst) >= 1);

    // What went through the gateway is in the registry behind it.
    let client = Client::trusting(&registry.ca_file());
    let tofu = Tofu {
        client: &client,
        base: format!("https://{}", registry.host),
        authorization: Some(DockerRegistry::basic()),
    };
    let (zip, _) = tofu
        .install(&format!("site/{HOST}/acme/widget"), "1.0.0", "linux_amd64")
        .await;
    assert_eq!(zip, archives["linux_amd64"]);
}
