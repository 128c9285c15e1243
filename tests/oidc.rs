//! Identities from a real OpenID provider (npm's oidc-provider, on
//! loopback with TLS): CI jobs' tokens open the mirror when the issuer's
//! rules admit them, every misuse of a token is refused with a 401 whose
//! reason is counted and logged but never answered, a key rotation at the
//! issuer is taken up while the mirror runs, and the audit trail names
//! who was served.

mod common;

use std::time::Duration;

use base64::Engine as _;
use common::oidc::{issuer_config, Provider, AUDIENCE};
use common::*;
use http::StatusCode;
use serde_json::{json, Value};
use tfmirror::config::Config;

fn b64(v: &Value) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string())
}

fn part(token: &str, n: usize) -> Value {
    let text = token.split('.').nth(n).unwrap();
    serde_json::from_slice(
        &base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(text)
            .unwrap(),
    )
    .unwrap()
}

/// How many tokens the mirror's metrics count for `outcome`: under the
/// issuer `ci`, or `unknown` for a token that names no configured issuer.
async fn counted(c: &Client, m: &RunningMirror, outcome: &str) -> u64 {
    let text = c.get(&m.url("/metrics")).await.page_text();
    ["ci", "unknown"]
        .iter()
        .map(|issuer| {
            let prefix = format!(
                "tfmirror_oidc_signins_total{{issuer=\"{issuer}\",outcome=\"{outcome}\"}} "
            );
            text.lines()
                .find_map(|l| l.strip_prefix(&prefix))
                .map_or(0, |n| n.trim().parse::<u64>().unwrap())
        })
        .sum()
}

#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_from_a_real_provider_open_the_mirror_and_every_misuse_is_refused() {
    let (setup, origin, signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let mut provider =
        Provider::start(&setup.ca, "https://127.0.0.1/-/signin/callback", "k1").await;
    let issuer = provider.issuer.clone();
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.auth.oidc = vec![issuer_config(&issuer)];
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let index = m.url("/registry.origin.test/acme/widget/index.json");
    let get = |token: String| {
        let index = index.clone();
        async move {
            c.get_with_header(&index, "authorization", &format!("Bearer {token}"))
                .await
        }
    };

    // A job of acme's main branch gets in.
    let good = provider.ci_token("acme-infra-main", AUDIENCE).await;
    let answer = get(good.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    assert_eq!(counted(c, m, "accepted").await, 1);
    // Remembered: the next requests verify nothing again.
    for _ in 0..3 {
        assert_eq!(get(good.clone()).await.status, StatusCode::OK);
    }
    assert_eq!(counted(c, m, "accepted").await, 1);
    // Without a token, nothing.
    assert_eq!(c.get(&index).await.status, StatusCode::UNAUTHORIZED);

    // Tokens this issuer signs, as a job's would be, with a header of the
    // test's choosing: what the provider itself would never mint.
    let claims = part(&good, 1);
    let ec = provider.signing_key("k1-ec");
    let rsa = provider.signing_key("k1-rsa");
    let mint = |header: Value, claims: &Value, key: &jsonwebtoken::EncodingKey| {
        sign_raw(&header, claims, key)
    };
    let es256 = |extra: Value| {
        let mut header = json!({"alg": "ES256", "typ": "JWT", "kid": "k1-ec"});
        header
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        header
    };
    // Without a key ID, an RS256 job token, and the provider's own RS256
    // token: all in.
    let with_sub = |sub: &str| {
        let mut c = claims.clone();
        c["sub"] = json!(sub);
        c
    };
    let kidless = mint(
        json!({"alg": "ES256", "typ": "JWT"}),
        &with_sub("kidless"),
        &ec,
    );
    let rs256 = mint(
        json!({"alg": "RS256", "kid": "k1-rsa"}),
        &with_sub("rs256"),
        &rsa,
    );
    let minted_rs256 = provider.ci_token("acme-infra-rs256", AUDIENCE).await;
    assert_eq!(part(&minted_rs256, 0)["alg"], "RS256");
    for token in [kidless, rs256, minted_rs256] {
        let answer = get(token).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    }
    assert_eq!(counted(c, m, "accepted").await, 4);

    // Every misuse, each refused for its own reason, each with a token of
    // its own. Where a check is about the header, the token is otherwise
    // whole (signed by the issuer's key), so it is that check alone that
    // refuses it.
    let elsewhere = common::browser::Elsewhere::start().await;
    let away = format!("https://{}", elsewhere.addr);
    let jwks = provider.jwks().await;
    let public_ec = (jwks["keys"].as_array().unwrap().iter())
        .find(|k| k["kty"] == "EC")
        .unwrap()
        .clone();
    let header = part(&good, 0);
    let signature = good.split('.').nth(2).unwrap().to_owned();
    let mut cases: Vec<(&str, String)> = vec![
        ("no_rule", provider.ci_token("other-owner", AUDIENCE).await),
        (
            "audience",
            provider
                .ci_token("acme-infra-main", "https://other-mirror.tfmirror.test")
                .await,
        ),
        // alg none: no signature at all, and one of noise.
        (
            "algorithm",
            format!(
                "{}.{}.",
                b64(&json!({"alg": "none"})),
                b64(&with_sub("none-1"))
            ),
        ),
        (
            "algorithm",
            format!(
                "{}.{}.eA",
                b64(&json!({"alg": "none", "kid": "k1-ec"})),
                b64(&with_sub("none-2"))
            ),
        ),
        (
            "header_key",
            mint(
                es256(json!({"jku": format!("{away}/jwks")})),
                &with_sub("jku"),
                &ec,
            ),
        ),
        (
            "header_key",
            mint(
                es256(json!({"x5u": format!("{away}/cert.pem")})),
                &with_sub("x5u"),
                &ec,
            ),
        ),
        (
            "header_key",
            mint(es256(json!({"jwk": public_ec})), &with_sub("jwk"), &ec),
        ),
        (
            "header_key",
            mint(
                es256(json!({"x5c": ["MIIBszCCAVmgAwIBAgIU"]})),
                &with_sub("x5c"),
                &ec,
            ),
        ),
        (
            "crit",
            mint(es256(json!({"crit": ["exp"]})), &with_sub("crit"), &ec),
        ),
        // A header naming the other family's key: an ES256 signature
        // under the RSA key's ID, and an RS256 one under the EC key's.
        (
            "unknown_key",
            mint(
                json!({"alg": "ES256", "kid": "k1-rsa"}),
                &with_sub("cross-1"),
                &ec,
            ),
        ),
        (
            "unknown_key",
            mint(
                json!({"alg": "RS256", "kid": "k1-ec"}),
                &with_sub("cross-2"),
                &rsa,
            ),
        ),
        ("oversized", "e".repeat(9000)),
        ("malformed", "not-a-token".into()),
        ("malformed", format!("{}.{}", b64(&header), b64(&claims))),
    ];
    // HS256 keyed with the issuer's own public key.
    for (n, secret) in [
        public_ec.to_string(),
        public_ec["x"].as_str().unwrap().to_owned(),
    ]
    .into_iter()
    .enumerate()
    {
        let key = jsonwebtoken::EncodingKey::from_secret(secret.as_bytes());
        let token = sign_raw(
            &json!({"alg": "HS256", "kid": "k1-ec"}),
            &with_sub(&format!("hs-{n}")),
            &key,
        );
        cases.push(("algorithm", token));
    }
    // The payload changed under the issuer's signature.
    let mut forged = claims.clone();
    forged["sub"] = json!("someone-else");
    cases.push((
        "signature",
        format!("{}.{}.{signature}", b64(&header), b64(&forged)),
    ));
    // Another issuer claimed.
    let mut other = claims.clone();
    other["iss"] = json!("https://token.actions.githubusercontent.com");
    cases.push(("issuer", mint(es256(json!({})), &other, &ec)));
    // A key ID the issuer never published, even after fetching its keys again.
    let stranger = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
    let key = jsonwebtoken::EncodingKey::from_ec_der(&stranger.serialize_der());
    cases.push((
        "unknown_key",
        sign_raw(
            &json!({"alg": "ES256", "kid": "k9-ec"}),
            &with_sub("stranger"),
            &key,
        ),
    ));

    for (reason, token) in &cases {
        let before = counted(c, m, reason).await;
        let answer = get(token.clone()).await;
        assert_eq!(
            answer.status,
            StatusCode::UNAUTHORIZED,
            "{reason}: {}",
            answer.error_text()
        );
        // The reason is counted (and logged), never told.
        assert_eq!(
            answer.json()["errors"][0],
            "the token is not valid for this mirror",
            "{reason}"
        );
        assert_eq!(
            counted(c, m, reason).await,
            before + 1,
            "{reason} was not counted"
        );
    }
    assert_eq!(
        elsewhere.connections(),
        0,
        "a key URL in a header was followed"
    );

    // The issuer rotates its keys. A token under the new key is refused
    // while the mirror may not fetch the keys again (one fetch a minute),
    // and counted; a minute on, by the mirror's clock, it gets in.
    provider.rotate("k2").await;
    let rotated = provider.ci_token("acme-infra-main", AUDIENCE).await;
    assert_eq!(part(&rotated, 0)["kid"], "k2-ec");
    let unknown = counted(c, m, "unknown_key").await;
    assert_eq!(get(rotated.clone()).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(counted(c, m, "unknown_key").await, unknown + 1);
    m.clock.advance(Duration::from_secs(60));
    let answer = get(rotated.clone()).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    assert_eq!(counted(c, m, "accepted").await, 5);
    // The retired key's token, remembered, holds until it expires.
    assert_eq!(get(good).await.status, StatusCode::OK);

    // Past its expiry (300 s) and the skew allowance (60 s), by the
    // mirror's clock, the token that got in is refused.
    m.clock.advance(Duration::from_secs(300 + 60 + 5));
    assert_eq!(get(rotated).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(counted(c, m, "expired").await, 1);
}

/// A JWS of `claims` under `header` exactly as given (fields the JWT
/// crate's header type lacks, such as `crit`, included), signed with `key`
/// by the header's `alg`.
fn sign_raw(header: &Value, claims: &Value, key: &jsonwebtoken::EncodingKey) -> String {
    let alg: jsonwebtoken::Algorithm = header["alg"].as_str().unwrap().parse().unwrap();
    let message = format!("{}.{}", b64(header), b64(claims));
    let signature = jsonwebtoken::crypto::sign(message.as_bytes(), key, alg).unwrap();
    format!("{message}.{signature}")
}

/// The module registry host the origin serves, whose modules the mirror
/// proxies.
const MODULE_HOST: &str = "registry.origin.test";

/// Runs `terraform init` in a fresh workspace calling `acme/net/aws` and
/// requiring `acme/widget`, with providers through the network mirror at
/// `https://127.0.0.1/` and modules through the mirror's module routes;
/// `credentials` is the rest of the CLI configuration, `env` added to
/// Terraform's environment. Returns success, the output and the workspace.
async fn init_with(
    tf: &std::path::Path,
    home: &std::path::Path,
    ca_file: &std::path::Path,
    credentials: &str,
    env: &[(String, String)],
) -> (bool, String) {
    let work = home.join("work");
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(
        work.join("main.tf"),
        format!("terraform {{\n  required_providers {{\n    widget = {{\n      source  = \"{MODULE_HOST}/acme/widget\"\n      version = \"1.0.0\"\n    }}\n  }}\n}}\n\nmodule \"net\" {{\n  source  = \"{MODULE_HOST}/acme/net/aws\"\n  version = \"1.0.0\"\n}}\n"),
    )
    .unwrap();
    let cli_config = home.join("cli.tfrc");
    std::fs::write(
        &cli_config,
        format!("provider_installation {{\n  network_mirror {{\n    url = \"https://127.0.0.1/\"\n  }}\n}}\n\nhost \"{MODULE_HOST}\" {{\n  services = {{\n    \"modules.v1\" = \"https://127.0.0.1/v1/modules/{MODULE_HOST}/\"\n  }}\n}}\n\n{credentials}"),
    )
    .unwrap();
    let mut cmd = common::terraform::command(tf, &work, &cli_config, ca_file);
    // The plugin directory the CLI looks for credentials helpers in.
    cmd.env("HOME", home);
    cmd.args(["init", "-input=false", "-no-color"]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = tokio::task::spawn_blocking(move || cmd.output().unwrap())
        .await
        .unwrap();
    let (ok, text) = common::terraform::outcome(&out);
    if ok {
        let modules =
            std::fs::read_to_string(work.join(".terraform/modules/modules.json")).unwrap();
        assert!(modules.contains("\"net.sub\""), "{modules}");
        let provider = work.join(format!(
            ".terraform/providers/{MODULE_HOST}/acme/widget/1.0.0"
        ));
        assert!(provider.is_dir(), "{text}");
    }
    (ok, text)
}

/// Terraform v1.0.3 and the newer CLI on `PATH` install providers and
/// modules through the mirror with an issuer's token: in a `credentials`
/// block (1.0.3) or `TF_TOKEN_…` (the newer CLI, which reads it), and
/// through `tfmirror credentials-helper` reading a token file that is
/// rotated between two runs. A token no rule admits gets a 401.
#[cfg_attr(
    any(tfmirror_no_oidc_provider, tfmirror_no_terraform),
    ignore = "needs node, OIDC_PROVIDER_DIR (scripts/install-oidc-provider) and TERRAFORM_BIN naming Terraform v1.0.3; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terraform_installs_with_an_issuers_token_and_the_credentials_helper() {
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    let _modules = publish_net_and_sub(&setup, &origin);
    let provider = Provider::start(&setup.ca, "https://127.0.0.1/-/signin/callback", "k1").await;
    let mut config = setup.module_config(&origin, MODULE_HOST);
    config.auth.oidc = vec![issuer_config(&provider.issuer)];
    // On the HTTPS port: `TF_TOKEN_…` names a host, never a port.
    config.server.listen = "127.0.0.1:443".parse().unwrap();
    let m = RunningMirror::start(config).await;
    let c = Client::trusting(&m.ca_file);

    let home = tempfile::tempdir().unwrap();
    let plugins = home.path().join(".terraform.d/plugins");
    std::fs::create_dir_all(&plugins).unwrap();
    std::os::unix::fs::symlink(
        env!("CARGO_BIN_EXE_tfmirror"),
        plugins.join("terraform-credentials-tfmirror"),
    )
    .unwrap();
    let token_file = home.path().join("token");
    let helper = format!(
        "credentials_helper \"tfmirror\" {{\n  args = [\"--token-file\", \"{}\"]\n}}\n",
        token_file.display()
    );

    for (name, tf) in common::terraform::clis() {
        let newer = !name.contains("v1.0.3");
        // The token as the CLI configuration carries it.
        let token = provider.ci_token("acme-infra-main", AUDIENCE).await;
        let (ok, out) = if newer {
            let env = [
                ("TF_TOKEN_127_0_0_1".to_owned(), token.clone()),
                (
                    format!("TF_TOKEN_{}", MODULE_HOST.replace('.', "_")),
                    token.clone(),
                ),
            ];
            init_with(&tf, home.path(), &m.ca_file, "", &env).await
        } else {
            let blocks = format!(
                "credentials \"127.0.0.1\" {{\n  token = \"{token}\"\n}}\ncredentials \"{MODULE_HOST}\" {{\n  token = \"{token}\"\n}}\n"
            );
            init_with(&tf, home.path(), &m.ca_file, &blocks, &[]).await
        };
        assert!(ok, "{name} with the token in its configuration:\n{out}");

        // The credentials helper, reading the file a rotation replaces.
        let before = counted(&c, &m, "accepted").await;
        std::fs::write(
            &token_file,
            provider.ci_token("acme-infra-main", AUDIENCE).await,
        )
        .unwrap();
        let (ok, out) = init_with(&tf, home.path(), &m.ca_file, &helper, &[]).await;
        assert!(ok, "{name} through the credentials helper:\n{out}");
        std::fs::write(
            &token_file,
            provider.ci_token("acme-infra-main", AUDIENCE).await,
        )
        .unwrap();
        let (ok, out) = init_with(&tf, home.path(), &m.ca_file, &helper, &[]).await;
        assert!(
            ok,
            "{name} through the credentials helper, after the rotation:\n{out}"
        );
        // Each run presented the token the file held then.
        assert_eq!(counted(&c, &m, "accepted").await, before + 2, "{name}");

        // A job of another owner's repository gets nothing.
        std::fs::write(
            &token_file,
            provider.ci_token("other-owner", AUDIENCE).await,
        )
        .unwrap();
        let (ok, out) = init_with(&tf, home.path(), &m.ca_file, &helper, &[]).await;
        assert!(!ok, "{name} installed with a token no rule admits:\n{out}");
        assert!(out.contains("401"), "{name}:\n{out}");
    }
    m.stop().await;
}

/// The daemon as `tfmirror serve` runs it: a refused token's reason is in
/// its log (and not in the answer), and the audit trail names the CI job a
/// package went to, by issuer, subject and the claims its rule read, even
/// for the archive the CLI fetches through a signed link with no
/// credentials.
#[cfg_attr(
    tfmirror_no_oidc_provider,
    ignore = "needs node and OIDC_PROVIDER_DIR (scripts/install-oidc-provider); scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_log_says_why_a_token_was_refused_and_the_audit_trail_names_the_job() {
    use common::daemon::{config_file, tfmirror, Daemon};
    let (setup, origin, _signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    let provider = Provider::start(&setup.ca, "https://127.0.0.1/-/signin/callback", "k1").await;
    let audit = setup.dir.path().join("audit.jsonl");
    let config = config_file(
        &setup,
        &origin,
        &format!(
            "[log]\nformat = \"json\"\naudit_file = \"{audit}\"\n[[auth.oidc]]\nname = \"ci\"\nissuer = \"{issuer}\"\naudience = \"{AUDIENCE}\"\n[[auth.oidc.rules]]\nclaims = {{ repository_owner = \"acme\", ref = \"refs/heads/main\" }}\ngrant = \"read\"\n",
            audit = audit.display(),
            issuer = provider.issuer,
        ),
    );
    let mut cmd = tfmirror(setup.dir.path());
    cmd.args(["serve", "--config"])
        .arg(&config)
        .env_remove("RUST_LOG");
    let mut d = Daemon::start(cmd);
    d.wait_for("SSL_CERT_FILE=");
    let c = Client::trusting(&setup.dir.path().join("data/tls/ca.pem"));
    let doc_url = format!("{}registry.origin.test/acme/widget/1.0.0.json", d.url);

    let stranger = provider.ci_token("other-owner", AUDIENCE).await;
    let refused = c
        .get_with_header(&doc_url, "authorization", &format!("Bearer {stranger}"))
        .await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(
        !refused.error_text().contains("rule"),
        "{}",
        refused.error_text()
    );

    let token = provider.ci_token("acme-infra-main", AUDIENCE).await;
    let doc = c
        .get_with_header(&doc_url, "authorization", &format!("Bearer {token}"))
        .await;
    assert_eq!(doc.status, StatusCode::OK, "{}", doc.error_text());
    let link = doc.json()["archives"]["linux_amd64"]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    // Followed as the CLI follows it: no credentials.
    let archive = c.get(&resolve(&doc_url, &link)).await;
    assert_eq!(archive.status, StatusCode::OK, "{}", archive.error_text());
    assert_eq!(&archive.body[..], &archives["linux_amd64"][..]);

    d.wait_for("\"reason\":\"no_rule\"");
    d.signal("TERM");
    let (status, log) = d.wait().await;
    assert!(status.success(), "{log}");
    assert!(
        !log.contains(&token) && !log.contains(&stranger),
        "a token was logged"
    );

    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    let f = &lines[0]["fields"];
    assert_eq!(f["identity"], "oidc", "{f}");
    assert_eq!(f["issuer"], "ci");
    assert_eq!(f["subject"], "acme-infra-main");
    assert_eq!(f["claims"], "ref=refs/heads/main repository_owner=acme");
    assert_eq!(f["token"], "-");
    assert_eq!(f["platform"], "linux_amd64");
}

/// A person signs in through the provider's own login and consent pages in
/// real Chromium, sees the pages under their name, approves a version the
/// policy held back (installable at once, the decision naming them), and
/// signs out; a person whose grant is `read` may not decide.
#[cfg_attr(
    any(tfmirror_no_oidc_provider, tfmirror_no_chromium),
    ignore = "needs node, OIDC_PROVIDER_DIR, Debian's chromium and chromium-driver and axe-core; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_signs_in_with_the_sites_provider_and_approves_a_version() {
    use common::browser::{accessible, axe_js, text, Browser, Elsewhere};
    use fantoccini::Locator;

    let (setup, origin, signer, archives) = published("widget", "1.0.0", &["linux_amd64"]).await;
    origin.publish(
        "acme",
        "widget",
        "2.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    let port = free_port();
    let redirect = format!("https://127.0.0.1:{port}/-/signin/callback");
    let provider = Provider::start(&setup.ca, &redirect, "k1").await;
    let issuer = provider.issuer.clone();
    let sc = Scene::on(setup, origin, signer, archives, |config: &mut Config| {
        config.server.listen = format!("127.0.0.1:{port}").parse().unwrap();
        config.auth.oidc = vec![issuer_config(&issuer)];
        config.policy = toml::from_str(
            "[[rule]]\nsource = \"registry.origin.test/acme/widget\"\nversions = \"= 2.0.0\"\naction = \"deny\"\nreason = \"under review\"\n",
        )
        .unwrap();
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let job = format!(
        "Bearer {}",
        provider.ci_token("acme-infra-main", AUDIENCE).await
    );
    let v2 = m.url("/registry.origin.test/acme/widget/2.0.0.json");
    let index = m.url("/registry.origin.test/acme/widget/index.json");
    assert_eq!(
        c.get_with_header(&index, "authorization", &job)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        c.get_with_header(&v2, "authorization", &job).await.status,
        StatusCode::FORBIDDEN
    );

    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    let axe = axe_js();
    let provider_page = m.url("/-/providers/registry.origin.test/acme/widget");
    sign_in(&b, &provider_page, "alice").await;
    accessible(&b, &axe, "provider page, signed in").await;
    b.follow("Approve or deny 2.0.0").await;
    assert!(text(&b, "#policy").await.contains("under review"));
    accessible(&b, &axe, "decision page").await;
    b.client
        .find(Locator::Id("approve"))
        .await
        .unwrap()
        .click()
        .await
        .unwrap();
    b.fill("reason", "reviewed in CHG-1234").await;
    b.click("form.stacked button[type=submit]").await;
    assert_eq!(text(&b, "#policy").await, "allowed");
    let decided = text(&b, "#decided").await;
    assert!(
        decided.contains("approved by person ci alice (groups=platform-approvers)"),
        "{decided}"
    );
    assert!(decided.contains("reviewed in CHG-1234"), "{decided}");
    // Installable at once.
    let answer = c.get_with_header(&v2, "authorization", &job).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    // Kept in the store as `tfmirror approve` keeps its decisions.
    let decisions = m.mirror.store().read_decisions().await.unwrap().unwrap();
    let kept = decisions
        .get(
            "registry.origin.test/acme/widget",
            &tfmirror::address::Version::parse("2.0.0").unwrap(),
        )
        .unwrap();
    assert!(
        kept.approved && kept.by.starts_with("person ci alice"),
        "{kept:?}"
    );

    // Signing out ends the session.
    b.client.goto(&provider_page).await.unwrap();
    b.click("form.inline button[type=submit]").await;
    b.client.goto(&provider_page).await.unwrap();
    assert!(b
        .client
        .current_url()
        .await
        .unwrap()
        .as_str()
        .contains("/-/signin"));

    // bob reads, and may not decide. (A browser of his own: this one is
    // still signed in to the provider as alice, which would sign her in
    // again at once.)
    b.stop().await;
    let b = Browser::start(true, &elsewhere).await;
    sign_in(&b, &provider_page, "bob").await;
    assert!(
        b.client.find(Locator::Css("a.decide")).await.is_err(),
        "bob is offered a decision"
    );
    b.client
        .goto(&m.url("/-/decide/providers/registry.origin.test/acme/widget/2.0.0"))
        .await
        .unwrap();
    assert!(text(&b, "#error").await.contains("approve grant"));
    b.stop().await;
}

/// Signs `person` in through the provider's own login and consent pages,
/// starting at `page` (which sends the browser to sign in), and checks
/// they are back on it under their name.
async fn sign_in(b: &common::browser::Browser, page: &str, person: &str) {
    sign_in_at(
        b,
        page,
        "/-/providers/registry.origin.test/acme/widget",
        person,
    )
    .await;
}

/// [`sign_in`], landing on the page at `path`.
async fn sign_in_at(b: &common::browser::Browser, page: &str, path: &str, person: &str) {
    use common::browser::text;
    use fantoccini::Locator;
    b.client.goto(page).await.unwrap();
    b.follow("Sign in with ci").await;
    let login = b
        .client
        .wait()
        .for_element(Locator::Css("input[name=login]"))
        .await
        .unwrap();
    login.send_keys(person).await.unwrap();
    let password = b
        .client
        .find(Locator::Css("input[name=password]"))
        .await
        .unwrap();
    password.send_keys("any").await.unwrap();
    b.click("button[type=submit]").await;
    b.client
        .wait()
        .for_element(Locator::Css("button[type=submit]"))
        .await
        .unwrap();
    b.click("button[type=submit]").await;
    assert_eq!(text(b, "#who").await, person);
    let at = b.client.current_url().await.unwrap();
    assert_eq!(at.path(), path);
}

/// A person with `approve` accepts an advisory from a version's decision
/// page, with a reason, and the version is installable at once, the
/// acceptance naming them; a person without it may not. The version's
/// executable is the real Terraform v1.0.3 binary, refused by a rule on
/// advisories rated high (GO-2023-2102, rated by its GHSA alias).
#[cfg_attr(
    any(tfmirror_no_oidc_provider, tfmirror_no_chromium, tfmirror_no_terraform),
    ignore = "needs node, OIDC_PROVIDER_DIR, Debian's chromium and chromium-driver, axe-core and TERRAFORM_BIN; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_with_approve_accepts_an_advisory_from_the_page() {
    use common::browser::{accessible, axe_js, text, Browser, Elsewhere};
    use common::go::{import_advisories, publish_tfcli_pair};

    let setup = Setup::new();
    let (origin, entries) = publish_tfcli_pair(&setup).await;
    let cli_config = common::daemon::config_file(&setup, &origin, "");
    import_advisories(setup.dir.path(), &cli_config, &[&entries]).await;
    let port = free_port();
    let redirect = format!("https://127.0.0.1:{port}/-/signin/callback");
    let provider = Provider::start(&setup.ca, &redirect, "k1").await;
    let issuer = provider.issuer.clone();
    let signer = Signer::rsa("acme");
    let sc = Scene::on(setup, origin, signer, std::collections::BTreeMap::new(), |config: &mut Config| {
        config.server.listen = format!("127.0.0.1:{port}").parse().unwrap();
        config.auth.oidc = vec![issuer_config(&issuer)];
        config.policy = toml::from_str(
            "[[rule]]\nsource = \"registry.origin.test/acme/*\"\naction = \"deny\"\n[rule.advisories]\nseverity = \"high\"\nunrated = \"ignored\"\n",
        )
        .unwrap();
    })
    .await;
    let (m, c) = (&sc.mirror, &sc.client);
    let job = format!(
        "Bearer {}",
        provider.ci_token("acme-infra-main", AUDIENCE).await
    );
    let doc = m.url("/registry.origin.test/acme/tfcli/1.1.0.json");
    // Not read yet: offered, with a signed link, which the first download
    // follows (as the CLIs do, without credentials) and is refused.
    let offered = c.get_with_header(&doc, "authorization", &job).await;
    assert_eq!(offered.status, StatusCode::OK, "{}", offered.error_text());
    let link = offered.json()["archives"][common::terraform::platform()]["url"]
        .as_str()
        .unwrap()
        .to_owned();
    let refused = c.get(&resolve(&doc, &link)).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert!(
        refused.error_text().contains("GO-2023-2102"),
        "{}",
        refused.error_text()
    );

    let elsewhere = Elsewhere::start().await;
    let b = Browser::start(true, &elsewhere).await;
    let axe = axe_js();
    let page_path = "/-/providers/registry.origin.test/acme/tfcli";
    sign_in_at(&b, &m.url(page_path), page_path, "alice").await;
    // The held version's link (1.0.0, not held, follows it).
    b.click("a.decide").await;
    let policy = text(&b, "#policy").await;
    assert!(policy.contains("advisory GO-2023-2102 (high"), "{policy}");
    accessible(&b, &axe, "decision page with advisories").await;
    b.fill("accept-reason", "HTTP/2 is not served by this provider")
        .await;
    b.fill("days", "7").await;
    b.click("#accept button[type=submit]").await;
    assert_eq!(text(&b, "#policy").await, "allowed");
    let row = text(&b, "td.accepted").await;
    assert!(
        row.contains("accepted for 1.1.0 until ")
            && row.contains("by person ci alice (groups=platform-approvers)")
            && row.contains("HTTP/2 is not served by this provider"),
        "{row}"
    );
    accessible(&b, &axe, "decision page with an acceptance").await;
    // Installable at once.
    let answer = c.get_with_header(&doc, "authorization", &job).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.error_text());
    // Kept in the store as `tfmirror accept` keeps its acceptances.
    let decisions = m.mirror.store().read_decisions().await.unwrap().unwrap();
    let kept = &decisions.acceptances[0];
    assert_eq!(kept.advisory, "GO-2023-2102");
    assert_eq!(kept.subject, "registry.origin.test/acme/tfcli");
    assert!(kept.by.starts_with("person ci alice"), "{kept:?}");
    assert_eq!(kept.expires_ms - kept.at_ms, 7 * 86_400_000);
    b.stop().await;

    // bob reads, and may not accept.
    let b = Browser::start(true, &elsewhere).await;
    sign_in_at(&b, &m.url(page_path), page_path, "bob").await;
    b.client
        .goto(&m.url("/-/decide/providers/registry.origin.test/acme/tfcli/1.1.0"))
        .await
        .unwrap();
    assert!(text(&b, "#error").await.contains("approve grant"));
    b.stop().await;
}
