//! `check --from` against what the client really does. For every
//! configuration of `tests/fixtures/configurations/` read by Terraform's
//! rules: `sync --from` fills a mirror, `check --from` gives its verdict,
//! then the real Terraform CLI (v1.0.3 from `TERRAFORM_BIN`, and the
//! `terraform` on `PATH` where it is another version) runs `init` with
//! only that mirror, offline, to reach. `check` says "ready" exactly when
//! `init` succeeds, and `sync` fetched exactly the archives `init`
//! installed. For OpenTofu's configurations (no OpenTofu CLI can run
//! here) the addresses and versions `check` requires are OpenTofu's.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use common::daemon::*;
use common::*;
use serde_json::Value;

/// The platform `terraform init` installs for on this machine.
fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

/// One configuration of the corpus.
struct Case {
    name: String,
    root: PathBuf,
    expect: Value,
}

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/configurations")
}

fn cases() -> Vec<Case> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(corpus()).unwrap() {
        let dir = entry.unwrap().path();
        let Ok(text) = std::fs::read_to_string(dir.join("expect.json")) else {
            continue;
        };
        out.push(Case {
            name: dir.file_name().unwrap().to_string_lossy().into_owned(),
            root: dir.join("root"),
            expect: serde_json::from_str(&text).unwrap(),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    assert!(out.len() >= 10, "the corpus lost configurations");
    out
}

/// The registry module `acme/net/aws` of `_modules/net`, packaged.
fn net_module() -> Vec<u8> {
    let mut tgz = Vec::new();
    {
        let mut b = tar::Builder::new(flate2::write::GzEncoder::new(
            &mut tgz,
            flate2::Compression::default(),
        ));
        b.append_dir_all(".", corpus().join("_modules/net"))
            .unwrap();
        b.into_inner().unwrap().finish().unwrap();
    }
    tgz
}

/// What the origin publishes for the corpus (namespace `hashicorp`, on
/// every registry the mirror maps to it).
fn publish(origin: &FakeOrigin, platform: &str) {
    let signer = Signer::new("hashicorp");
    for (kind, version) in [
        ("alpha", "1.0.0"),
        ("alpha", "1.1.0"),
        ("beta", "2.0.0"),
        ("gamma", "0.1.0"),
        ("delta", "1.0.0"),
        ("omega", "1.0.0"),
    ] {
        origin.publish("hashicorp", kind, version, &[platform], &signer, &[&signer]);
    }
    origin.publish_archive_module(("acme", "net", "aws"), "1.0.0", net_module());
}

/// A configuration file whose mirror takes both public registries'
/// providers and modules from the fake origin, with its own cache.
fn mirror_config(setup: &Setup, origin: &FakeOrigin, name: &str) -> PathBuf {
    let dir = setup.dir.path();
    let mut hosts = String::new();
    for host in ["registry.terraform.io", "registry.opentofu.org"] {
        let _ = writeln!(
            hosts,
            "[upstream.hosts.\"{host}\"]\nservices = {{ \"providers.v1\" = \"{}\", \"modules.v1\" = \"{}\" }}",
            origin.providers_url(),
            origin.modules_url()
        );
    }
    let text = format!(
        "[server]\nlisten = \"127.0.0.1:0\"\ndata_dir = \"{data}\"\n[cache]\ndir = \"{cache}\"\n[modules]\ngit = \"{git}\"\n[upstream]\nallowed_hosts = []\nca_file = \"{ca}\"\nallow_private_addresses = true\n{hosts}",
        data = dir.join(format!("{name}-data")).display(),
        cache = dir.join(format!("{name}-cache")).display(),
        git = git_program().display(),
        ca = dir.join("origin-ca.pem").display(),
    );
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, text).unwrap();
    path
}

/// The provider archives the origin sent so far, by file name.
fn archives_sent(origin: &FakeOrigin) -> BTreeMap<String, usize> {
    origin
        .all_hits()
        .into_iter()
        .filter(|(path, _)| path.starts_with("/files/") && path.ends_with(".zip"))
        .map(|(path, n)| (path.trim_start_matches("/files/").to_owned(), n))
        .collect()
}

/// The archive names of `providers` (address → version) for `platform`.
fn archive_names(providers: &BTreeMap<String, String>, platform: &str) -> BTreeSet<String> {
    providers
        .iter()
        .map(|(address, version)| {
            let kind = address.rsplit('/').next().unwrap();
            format!("terraform-provider-{kind}_{version}_{platform}.zip")
        })
        .collect()
}

fn as_map(value: &Value) -> BTreeMap<String, String> {
    value
        .as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
                .collect()
        })
        .unwrap_or_default()
}

/// What `check --json` requires: providers and modules with the versions
/// it chose.
fn required_by_check(report: &Value, kind: &str) -> BTreeMap<String, String> {
    report["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["kind"] == kind && i["version"].is_string())
        .map(|i| {
            (
                i["source"].as_str().unwrap().to_owned(),
                i["version"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// What `terraform init` installed in `work`: providers (address →
/// version) and registry modules (address → version).
fn installed(work: &Path, platform: &str) -> (BTreeMap<String, String>, BTreeMap<String, String>) {
    let mut providers = BTreeMap::new();
    for file in files_below(&work.join(".terraform/providers")) {
        // <host>/<namespace>/<type>/<version>/<platform>/<binary>
        let parts: Vec<&str> = file.split('/').collect();
        if let Some(at) = parts.iter().position(|p| *p == platform) {
            if at >= 4 {
                providers.insert(parts[at - 4..at - 1].join("/"), parts[at - 1].to_owned());
            }
        }
    }
    let mut modules = BTreeMap::new();
    if let Ok(bytes) = std::fs::read(work.join(".terraform/modules/modules.json")) {
        let manifest: Value = serde_json::from_slice(&bytes).unwrap();
        for m in manifest["Modules"].as_array().unwrap() {
            if let (Some(source), Some(version)) = (m["Source"].as_str(), m["Version"].as_str()) {
                let source = source.split("//").next().unwrap();
                let source = if source.split('/').count() == 3 {
                    format!("registry.terraform.io/{source}")
                } else {
                    source.to_owned()
                };
                modules.insert(source, version.to_owned());
            }
        }
    }
    (providers, modules)
}

/// The provider archives the mirror was asked for, by file name, with
/// the status of each answer, read from its access lines; waits (up to a
/// deadline) until every one of `want` is among them.
fn archives_asked(daemon: &mut Daemon, want: &BTreeSet<String>) -> BTreeMap<String, String> {
    let field = |line: &str, name: &str| -> Option<String> {
        let rest = line.split_once(&format!(" {name}="))?.1;
        Some(rest.split_whitespace().next()?.to_owned())
    };
    let mut asked = BTreeMap::new();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let patience = if want.iter().all(|w| asked.contains_key(w)) {
            // Everything wanted is in; take what else is already there.
            std::time::Duration::ZERO
        } else {
            deadline.saturating_duration_since(std::time::Instant::now())
        };
        let Ok(line) = daemon.lines.recv_timeout(patience) else {
            return asked;
        };
        if !line.contains("tfmirror::access") {
            continue;
        }
        if let (Some(path), Some(status)) = (field(&line, "path"), field(&line, "status")) {
            if let Some(file) = path.rsplit('/').next().filter(|f| f.ends_with(".zip")) {
                asked.insert(file.to_owned(), status);
            }
        }
    }
}

/// Runs `terraform init` in a fresh copy of `root` through the mirror at
/// `url` alone; returns whether it succeeded and its output.
fn terraform_init(bin: &Path, root: &Path, url: &str, ca: &Path, work: &Path) -> (bool, String) {
    copy_tree(root, work, &[]);
    let url = url.trim_end_matches('/');
    let cli_config = format!(
        "{}\nhost \"registry.terraform.io\" {{\n  services = {{\n    \"modules.v1\" = \"{url}/v1/modules/registry.terraform.io/\"\n  }}\n}}\n",
        common::terraform::network_mirror(url)
    );
    common::terraform::init(bin, work, &cli_config, ca)
}

#[cfg_attr(
    tfmirror_no_terraform,
    ignore = "needs TERRAFORM_BIN naming Terraform v1.0.3; scripts/test installs it"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_says_ready_exactly_when_the_clients_init_succeeds_offline() {
    let clis = common::terraform::clis();
    let platform = common::terraform::platform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish(&origin, &platform);
    let dir = setup.dir.path();
    let mut compared = 0;
    for case in cases() {
        let name = &case.name;
        let client = case.expect["client"].as_str().unwrap();
        let config = mirror_config(&setup, &origin, name);
        let before = archives_sent(&origin);
        // `sync` or `check` of this configuration, on this case's mirror.
        let on_case = |verb: &'static str, extra: &'static [&'static str]| {
            let mut args = vec![
                verb,
                "--config",
                s(&config),
                "--from",
                s(&case.root),
                "--platform",
                &platform,
            ];
            args.extend_from_slice(extra);
            let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
            async move {
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                run_tfmirror(dir, &args).await
            }
        };
        let synced = on_case("sync", &[]).await;
        let fetched: BTreeSet<String> = archives_sent(&origin)
            .into_iter()
            .filter(|(file, n)| before.get(file) != Some(n))
            .map(|(file, _)| file)
            .collect();
        let title = if client == "opentofu" {
            "OpenTofu"
        } else {
            "Terraform"
        };
        assert!(
            synced.stdout.contains(&format!("read by {title}'s rules")),
            "{name}: {}",
            synced.stdout
        );
        for unserved in case.expect["reads"]["unserved"].as_array().unwrap() {
            let source = unserved.as_str().unwrap().split(' ').next().unwrap();
            assert!(
                synced
                    .stdout
                    .contains(&format!("skipped module source {source}")),
                "{name}: {}",
                synced.stdout
            );
        }
        let checked = on_case("check", &["--json"]).await;
        let report: Value = serde_json::from_str(&checked.stdout)
            .unwrap_or_else(|e| panic!("{name}: {e}: {}{}", checked.stdout, checked.stderr));
        assert_eq!(report["ready"], checked.ok, "{name}");
        let rules_client = if client == "opentofu" {
            "tofu"
        } else {
            "terraform"
        };
        assert_eq!(
            report["configurations"][0]["client"], rules_client,
            "{name}"
        );
        let installs = &case.expect["installs"];
        assert_eq!(
            checked.ok,
            !installs.is_null(),
            "{name}: {}",
            checked.stdout
        );
        if checked.ok {
            // `check` requires what the client installs, on its registry.
            assert_eq!(
                required_by_check(&report, "provider"),
                as_map(&installs["providers"]),
                "{name}"
            );
            assert_eq!(
                required_by_check(&report, "module"),
                as_map(&installs["modules"]),
                "{name}"
            );
            assert_eq!(
                fetched,
                archive_names(&as_map(&installs["providers"]), &platform),
                "{name}"
            );
        }
        if client != "terraform" {
            continue;
        }
        // The real client, with only the offline mirror to reach.
        let mut serve = tfmirror(dir);
        serve.args(["serve", "--config", s(&config), "--offline"]);
        let mut daemon = Daemon::start(serve);
        let ca = dir.join(format!("{name}-data/tls/ca.pem"));
        for (version, bin) in &clis {
            let work = dir.join(format!("{name}-work-{compared}"));
            compared += 1;
            let (ok, out) = terraform_init(bin, &case.root, &daemon.url, &ca, &work);
            // `check` by the rules of this very release of the client.
            let release = version.trim_start_matches("Terraform v");
            let this = run_tfmirror(
                dir,
                &[
                    "check",
                    "--config",
                    s(&config),
                    "--from",
                    s(&case.root),
                    "--platform",
                    &platform,
                    "--json",
                    "--client-version",
                    release,
                ],
            )
            .await;
            assert_eq!(
                ok,
                this.ok,
                "{name}: {version} init {} but check said {}\ninit:\n{out}\ncheck:\n{}",
                if ok { "succeeded" } else { "failed" },
                if this.ok { "ready" } else { "not ready" },
                this.stdout
            );
            let mut numbers = release.split('.').map(|n| n.parse::<u64>().unwrap_or(0));
            let older = (numbers.next().unwrap_or(0), numbers.next().unwrap_or(0)) < (1, 6);
            let installs = match case.expect.get("installs_before_1_6") {
                Some(before) if older => before,
                _ => installs,
            };
            if ok {
                let (providers, modules) = installed(&work, &platform);
                assert_eq!(
                    providers,
                    as_map(&installs["providers"]),
                    "{name}: {version}"
                );
                assert_eq!(modules, as_map(&installs["modules"]), "{name}: {version}");
                let report: Value = serde_json::from_str(&this.stdout).unwrap();
                assert_eq!(
                    required_by_check(&report, "provider"),
                    providers,
                    "{name}: check --client-version {release}"
                );
                // Everything init asked the mirror for, sync fetched, and
                // nothing else (sync reads by the newest rules).
                let took = archive_names(&providers, &platform);
                if installs == &case.expect["installs"] {
                    assert_eq!(fetched, took, "{name}: {version}");
                } else {
                    assert!(took.is_subset(&fetched), "{name}: {version}");
                }
                let asked = archives_asked(&mut daemon, &took);
                let answered: BTreeSet<String> = asked.keys().cloned().collect();
                assert_eq!(answered, took, "{name}: {version} asked for {asked:?}");
                assert!(
                    asked.values().all(|s| s == "200"),
                    "{name}: {version}: {asked:?}"
                );
            }
        }
        drop(daemon);
    }
    eprintln!("compared {compared} init runs with {clis:?}");
    assert!(compared >= 8, "compared {compared} init runs");
}

/// An origin publishing the corpus's providers and modules for this
/// machine's platform, and a mirror's configuration file on it.
async fn published_mirror() -> (Setup, FakeOrigin, String, PathBuf) {
    let platform = common::terraform::platform();
    let setup = Setup::new();
    let origin = FakeOrigin::start(&setup.ca).await;
    publish(&origin, &platform);
    let config = mirror_config(&setup, &origin, "mirror");
    (setup, origin, platform, config)
}

/// What no mirror can install is named by `check`, with where it is
/// written: a provider on a registry this mirror does not serve, a module
/// the client fetches from git itself; `sync` fetches the rest and says
/// what it skipped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_names_what_this_mirror_cannot_serve() {
    let (setup, _origin, platform, config) = published_mirror().await;
    let dir = setup.dir.path();
    let conf = dir.join("conf");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("main.tf"),
        "terraform {\n  required_providers {\n    thing = {\n      source = \"registry.example.net/acme/thing\"\n    }\n  }\n}\n\nresource \"alpha_x\" \"a\" {}\n\nmodule \"shared\" {\n  source = \"github.com/acme/shared\"\n}\n",
    )
    .unwrap();
    let args = |verb: &'static str| {
        [
            verb,
            "--config",
            s(&config),
            "--from",
            s(&conf),
            "--platform",
            &platform,
        ]
        .map(str::to_owned)
    };
    let synced = run_tfmirror(dir, &args("sync").each_ref().map(String::as_str)).await;
    assert!(!synced.ok, "the provider on another registry cannot be had");
    assert!(
        synced
            .stdout
            .contains("skipped module source github.com/acme/shared (")
            && synced.stdout.contains("main.tf:11): a git repository"),
        "{}",
        synced.stdout
    );
    let checked = run_tfmirror(dir, &args("check").each_ref().map(String::as_str)).await;
    assert!(!checked.ok);
    let out = &checked.stdout;
    assert!(
        out.contains("read by Terraform's rules (the default"),
        "{out}"
    );
    assert!(
        out.contains("MISSING  provider registry.example.net/acme/thing: this mirror does not serve the registry registry.example.net"),
        "{out}"
    );
    assert!(
        out.contains("MISSING  module github.com/acme/shared: a git repository, which the client fetches itself, not through this mirror (")
            && out.contains("main.tf:11)"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "HELD     provider registry.terraform.io/hashicorp/alpha 1.1.0 {platform}"
        )),
        "{out}"
    );
    // OpenTofu's rules, asked for: the implied provider is on its registry.
    let mut tofu = args("check").to_vec();
    tofu.extend(["--client".to_owned(), "opentofu".to_owned()]);
    let tofu: Vec<&str> = tofu.iter().map(String::as_str).collect();
    let as_tofu = run_tfmirror(dir, &tofu).await;
    assert!(
        as_tofu
            .stdout
            .contains("read by OpenTofu's rules (as given")
            && as_tofu
                .stdout
                .contains("provider registry.opentofu.org/hashicorp/alpha"),
        "{}",
        as_tofu.stdout
    );
}

/// Each `--from` gets its own verdict: one that cannot be read is named
/// with its error while the others are still checked; a configuration that
/// needs nothing is ready and says so; one the client refuses says where.
/// The exit status fails when any is not ready or unreadable.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn several_configurations_each_get_their_own_verdict() {
    let (setup, _origin, platform, config) = published_mirror().await;
    let dir = setup.dir.path();
    let broken = dir.join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("main.tf"), "resource \"alpha_x\" {\n").unwrap();
    let nothing = corpus().join("needs-nothing/root");
    let refused = corpus().join("duplicate-blocks/root");
    let implied = corpus().join("implied/root");
    let run = |froms: Vec<&Path>, json: bool| {
        let mut args = vec!["check", "--config", s(&config), "--platform", &platform];
        for from in froms {
            args.extend(["--from", s(from)]);
        }
        if json {
            args.push("--json");
        }
        let args: Vec<String> = args.into_iter().map(str::to_owned).collect();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            run_tfmirror(dir, &args).await
        }
    };
    let alone = run(vec![&nothing], false).await;
    assert!(alone.ok, "{}{}", alone.stdout, alone.stderr);
    assert!(
        alone
            .stdout
            .contains("ready: it needs no provider, module or CLI release"),
        "{}",
        alone.stdout
    );
    // Fetch what `implied` needs, so that it is ready beside the others.
    let synced = run_tfmirror(
        dir,
        &[
            "sync",
            "--config",
            s(&config),
            "--from",
            s(&implied),
            "--platform",
            &platform,
        ],
    )
    .await;
    assert!(synced.ok, "{}{}", synced.stdout, synced.stderr);
    let all = run(vec![&broken, &nothing, &refused, &implied], false).await;
    assert!(!all.ok);
    let out = &all.stdout;
    assert!(
        out.contains(&format!("{}:\n  unreadable: ", broken.display())),
        "{out}"
    );
    assert!(out.contains("is not valid HCL"), "{out}");
    assert!(
        out.contains("REFUSED  the client refuses this configuration: duplicate resource \"alpha_thing\" alpha_thing.a: already declared at ")
            && out.contains("main.tf:1)"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "HELD     provider registry.terraform.io/hashicorp/gamma 0.1.0 {platform}"
        )),
        "{out}"
    );
    assert!(
        out.contains("2 of 4 configurations ready, 1 not ready, 1 unreadable"),
        "{out}"
    );
    assert!(
        all.stderr
            .contains("2 of 4 configurations would not install"),
        "{}",
        all.stderr
    );
    let json = run(vec![&broken, &nothing, &refused, &implied], true).await;
    assert!(!json.ok);
    let report: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(report["ready"], false);
    let verdicts: Vec<&str> = report["configurations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["verdict"].as_str().unwrap())
        .collect();
    assert_eq!(verdicts, ["unreadable", "ready", "not ready", "ready"]);
    let configurations = report["configurations"].as_array().unwrap();
    assert!(configurations[0]["error"]
        .as_str()
        .unwrap()
        .contains("broken"));
    assert_eq!(configurations[1]["needs_nothing"], true);
    assert_eq!(configurations[1]["items"], serde_json::json!([]));
    let refusals: Vec<&Value> = configurations[2]["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["why"] == "refused")
        .collect();
    assert_eq!(refusals.len(), 2, "{}", configurations[2]);
    assert!(refusals[0]["at"].as_str().unwrap().ends_with("main.tf:1"));
    assert_eq!(configurations[3]["items"].as_array().unwrap().len(), 3);
    let rule = configurations[3]["tests"]["rule"].as_str().unwrap();
    assert!(rule.contains("1.6 and later"), "{rule}");
}

/// A registry module the client would refuse (a variable declared twice
/// in its package) makes the configuration calling it not ready, named
/// with the module version and the file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_registry_module_the_client_refuses_is_named() {
    let (setup, origin, platform, config) = published_mirror().await;
    origin.publish_archive_module(
        ("acme", "twice", "aws"),
        "1.0.0",
        common::pages::tar_gz(&[
            ("a.tf", b"variable \"region\" {}\n"),
            ("b.tf", b"variable \"region\" {}\n"),
        ]),
    );
    let dir = setup.dir.path();
    let conf = dir.join("calls-twice");
    std::fs::create_dir_all(&conf).unwrap();
    std::fs::write(
        conf.join("main.tf"),
        "module \"twice\" {\n  source  = \"acme/twice/aws\"\n  version = \"1.0.0\"\n}\n",
    )
    .unwrap();
    let args = |verb: &'static str| {
        [
            verb,
            "--config",
            s(&config),
            "--from",
            s(&conf),
            "--platform",
            &platform,
        ]
        .map(str::to_owned)
    };
    let synced = run_tfmirror(dir, &args("sync").each_ref().map(String::as_str)).await;
    assert!(synced.ok, "{}{}", synced.stdout, synced.stderr);
    let checked = run_tfmirror(dir, &args("check").each_ref().map(String::as_str)).await;
    assert!(!checked.ok, "{}", checked.stdout);
    assert!(
        checked.stdout.contains("REFUSED  the client refuses this configuration: duplicate variable region: already declared at a.tf:1 (module registry.terraform.io/acme/twice/aws 1.0.0: b.tf:1)"),
        "{}",
        checked.stdout
    );
}
