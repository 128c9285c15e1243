//! The Kustomize base and overlays of `deploy/kubernetes/`: rendered with
//! `kubectl kustomize` as `kubectl apply -k` renders them (or, where
//! kubectl's Kustomize is older than 4.1, with the standalone Kustomize
//! `KUSTOMIZE_BIN` names: scripts/install-kustomize), every container
//! hardened as the guide says, the overlays' promises kept (a claim for
//! one instance; for several, the bucket's Secret, a disruption budget,
//! spread and surge), the monitoring files generated from their one
//! source, and the single-instance overlay's pod run for real by
//! `podman kube play` with the image under test.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::podman::{build_image, podman, printed};
use common::*;
use serde_norway::Value;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Renders a kustomization directory; the documents it gives.
fn render(dir: &Path) -> Vec<Value> {
    let standalone = std::env::var_os("KUSTOMIZE_BIN").filter(|p| !p.is_empty());
    let mut cmd = if let Some(bin) = &standalone {
        let mut cmd = Command::new(bin);
        cmd.arg("build");
        cmd
    } else {
        let mut cmd = Command::new("kubectl");
        cmd.arg("kustomize");
        cmd
    };
    let out = cmd
        .arg(dir)
        .output()
        .expect("kubectl, or KUSTOMIZE_BIN (scripts/test provides one)");
    // Which Kustomize it was, for the message when it fails.
    let version = match &standalone {
        Some(bin) => Command::new(bin).arg("version").output(),
        None => Command::new("kubectl")
            .args(["version", "--client"])
            .output(),
    }
    .map(|o| String::from_utf8_lossy(&o.stdout).into_owned())
    .unwrap_or_default();
    assert!(
        out.status.success(),
        "{cmd:?} failed (the overlays need Kustomize 4.1 or newer; this is {version}):\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    serde_norway::Deserializer::from_str(&text)
        .map(|d| serde::Deserialize::deserialize(d).unwrap())
        .collect()
}

fn of_kind<'a>(docs: &'a [Value], kind: &str) -> Vec<&'a Value> {
    docs.iter().filter(|d| d["kind"] == kind).collect()
}

fn one<'a>(docs: &'a [Value], kind: &str) -> &'a Value {
    let found = of_kind(docs, kind);
    assert_eq!(found.len(), 1, "one {kind} in {docs:?}");
    found[0]
}

/// Every container of a pod template runs unprivileged and read-only,
/// with limits and probes on the daemon's real paths.
fn assert_hardened(deployment: &Value, name: &str) {
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["automountServiceAccountToken"], false, "{name}");
    let security = &pod["securityContext"];
    assert_eq!(security["runAsNonRoot"], true, "{name}");
    assert_eq!(
        security["seccompProfile"]["type"], "RuntimeDefault",
        "{name}"
    );
    for c in pod["containers"].as_sequence().unwrap() {
        let sc = &c["securityContext"];
        assert_eq!(sc["runAsNonRoot"], true, "{name}");
        assert_eq!(sc["runAsUser"], 65532, "{name}");
        assert_eq!(sc["readOnlyRootFilesystem"], true, "{name}");
        assert_eq!(sc["allowPrivilegeEscalation"], false, "{name}");
        assert_eq!(sc["capabilities"]["drop"][0], "ALL", "{name}");
        assert_eq!(sc["seccompProfile"]["type"], "RuntimeDefault", "{name}");
        for kind in ["requests", "limits"] {
            for what in ["cpu", "memory"] {
                assert!(
                    c["resources"][kind][what].is_string(),
                    "{name}: no {kind}.{what}"
                );
            }
        }
        assert_eq!(c["livenessProbe"]["httpGet"]["path"], "/healthz", "{name}");
        assert_eq!(c["readinessProbe"]["httpGet"]["path"], "/readyz", "{name}");
        // Every path the daemon writes is a volume.
        let mounts: Vec<&str> = c["volumeMounts"]
            .as_sequence()
            .unwrap()
            .iter()
            .map(|m| m["mountPath"].as_str().unwrap())
            .collect();
        for path in [
            "/var/lib/tfmirror",
            "/var/cache/tfmirror",
            "/tmp",
            "/etc/tfmirror",
        ] {
            assert!(
                mounts.contains(&path),
                "{name}: {path} not mounted: {mounts:?}"
            );
        }
    }
}

/// The configuration a rendered `ConfigMap` holds is one tfmirror accepts,
/// with the environment its Deployment gives (`env`).
fn assert_accepted(docs: &[Value], env: &[(&str, &str)], name: &str) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("tfmirror.toml");
    let text = one(docs, "ConfigMap")["data"]["tfmirror.toml"]
        .as_str()
        .unwrap();
    std::fs::write(&file, text).unwrap();
    let mut cmd = common::daemon::tfmirror(dir.path());
    cmd.args(["check-config", "--config"]).arg(&file);
    cmd.envs(env.iter().copied());
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{name}: {}", printed(&out));
}

#[cfg_attr(
    tfmirror_no_kustomize,
    ignore = "needs Kustomize 4.1 or newer (kubectl's, or KUSTOMIZE_BIN); scripts/test provides it"
)]
#[test]
fn every_overlay_renders_with_hardened_containers_and_keeps_its_promises() {
    let k = repo().join("deploy/kubernetes");

    let single = render(&k.join("overlays/single"));
    let deployment = one(&single, "Deployment");
    assert_hardened(deployment, "single");
    assert_eq!(deployment["spec"]["strategy"]["type"], "Recreate");
    let claim = one(&single, "PersistentVolumeClaim");
    let volumes = deployment["spec"]["template"]["spec"]["volumes"]
        .as_sequence()
        .unwrap();
    assert!(volumes
        .iter()
        .any(|v| v["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]));
    assert_accepted(&single, &[], "single");
    let policy = one(&single, "NetworkPolicy");
    assert_eq!(
        policy["spec"]["podSelector"]["matchLabels"],
        deployment["spec"]["selector"]["matchLabels"]
    );
    // The Service reaches the pods by their labels, on the named port.
    let service = one(&single, "Service");
    assert_eq!(
        service["spec"]["selector"],
        deployment["spec"]["selector"]["matchLabels"]
    );

    let several = render(&k.join("overlays/several"));
    let deployment = one(&several, "Deployment");
    assert_hardened(deployment, "several");
    let spec = &deployment["spec"];
    assert!(spec["replicas"].as_u64().unwrap() >= 2);
    assert_eq!(spec["strategy"]["rollingUpdate"]["maxUnavailable"], 0);
    assert!(
        spec["template"]["spec"]["topologySpreadConstraints"]
            .as_sequence()
            .unwrap()
            .len()
            >= 2
    );
    let budget = one(&several, "PodDisruptionBudget");
    assert_eq!(budget["spec"]["minAvailable"], 1);
    assert_eq!(
        budget["spec"]["selector"]["matchLabels"],
        spec["selector"]["matchLabels"]
    );
    // The bucket's credentials come from the Secret, never from the
    // manifests, and the configuration reads the file it mounts.
    assert!(of_kind(&several, "Secret").is_empty());
    let container = &spec["template"]["spec"]["containers"][0];
    assert_eq!(
        container["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "tfmirror-s3"
    );
    let config = one(&several, "ConfigMap")["data"]["tfmirror.toml"]
        .as_str()
        .unwrap();
    let parsed: toml::Value = toml::from_str(config).unwrap();
    let secret_file = parsed["storage"]["s3"]["secret_access_key_file"]
        .as_str()
        .unwrap();
    let mounted = container["volumeMounts"]
        .as_sequence()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "s3")
        .unwrap()["mountPath"]
        .as_str()
        .unwrap();
    assert!(
        secret_file.starts_with(mounted),
        "{secret_file} outside {mounted}"
    );
    assert_accepted(
        &several,
        &[("TFMIRROR_STORAGE__S3__ACCESS_KEY_ID", "from-the-secret")],
        "several",
    );

    let monitoring = render(&k.join("monitoring"));
    let monitor = one(&monitoring, "ServiceMonitor");
    assert_eq!(monitor["spec"]["endpoints"][0]["path"], "/metrics");
    assert_eq!(
        monitor["spec"]["selector"]["matchLabels"],
        single.iter().find(|d| d["kind"] == "Service").unwrap()["metadata"]["labels"]
    );
    // The rule file's groups, as they are.
    let rules: Value = serde_norway::from_str(
        &std::fs::read_to_string(repo().join("deploy/prometheus/tfmirror-rules.yml")).unwrap(),
    )
    .unwrap();
    assert_eq!(
        one(&monitoring, "PrometheusRule")["spec"]["groups"],
        rules["groups"]
    );
    let dashboard = one(&monitoring, "ConfigMap");
    assert_eq!(dashboard["metadata"]["labels"]["grafana_dashboard"], "1");
    assert_eq!(
        dashboard["data"]["tfmirror-dashboard.json"]
            .as_str()
            .unwrap(),
        std::fs::read_to_string(repo().join("deploy/grafana/tfmirror.json")).unwrap()
    );
}

/// The monitoring kustomization's generated files are what their one
/// source gives: running the generator changes nothing.
#[test]
fn the_monitoring_files_are_their_sources_as_they_are() {
    let out = tempfile::tempdir().unwrap();
    let ran = Command::new(repo().join("scripts/kubernetes-monitoring"))
        .arg(out.path())
        .output()
        .unwrap();
    assert!(ran.status.success(), "{}", printed(&ran));
    for file in ["prometheusrule.yaml", "tfmirror-dashboard.json"] {
        assert!(
            std::fs::read(out.path().join(file)).unwrap()
                == std::fs::read(repo().join("deploy/kubernetes/monitoring").join(file)).unwrap(),
            "deploy/kubernetes/monitoring/{file} differs from its source: run scripts/kubernetes-monitoring"
        );
    }
}

/// A copy of `deploy/kubernetes` with a test overlay on the single
/// instance: the image under test, listening on `port` of the host's
/// network (no container ports to map there).
fn test_overlay(image: &str, port: u16) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let copy = Command::new("cp")
        .arg("-r")
        .arg(repo().join("deploy/kubernetes"))
        .arg(dir.path())
        .status()
        .unwrap();
    assert!(copy.success());
    let (name, tag) = image.rsplit_once(':').unwrap();
    let overlay = dir.path().join("test");
    std::fs::create_dir(&overlay).unwrap();
    std::fs::write(
        overlay.join("kustomization.yaml"),
        format!(
            "resources:\n  - ../kubernetes/overlays/single\nimages:\n  - name: registry.example/tfmirror\n    newName: {name}\n    newTag: \"{tag}\"\npatches:\n  - patch: |-\n      - op: remove\n        path: /spec/template/spec/containers/0/ports\n      - op: add\n        path: /spec/template/spec/containers/0/env\n        value:\n          - name: TFMIRROR_SERVER__LISTEN\n            value: 127.0.0.1:{port}\n    target:\n      kind: Deployment\n      name: tfmirror\n"
        ),
    )
    .unwrap();
    (dir, overlay)
}

#[cfg_attr(
    any(tfmirror_no_kustomize, tfmirror_no_podman),
    ignore = "needs Kustomize 4.1 or newer, root, Podman and CONTAINER_BASE_IMAGE; scripts/test provides them"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_instance_pod_runs_unprivileged_and_read_only() {
    let image = build_image("kubernetes");
    let port = free_port();
    let (dir, overlay) = test_overlay(&image, port);
    let rendered = dir.path().join("rendered.yaml");
    let docs = render(&overlay);
    let text: Vec<String> = docs
        .iter()
        .map(|d| serde_norway::to_string(d).unwrap())
        .collect();
    std::fs::write(&rendered, text.join("---\n")).unwrap();
    let claim = one(&docs, "PersistentVolumeClaim")["metadata"]["name"]
        .as_str()
        .unwrap()
        .to_owned();
    let rendered_s = rendered.to_str().unwrap();
    let _ = podman(&["kube", "down", rendered_s]);
    let _ = podman(&["volume", "rm", "--force", &claim]);
    let played = podman(&["kube", "play", "--network", "host", rendered_s]);
    assert!(played.status.success(), "{}", printed(&played));
    let container = "tfmirror-pod-0-tfmirror";
    let ready =
        common::podman::becomes_ready(dir.path(), &format!("http://127.0.0.1:{port}")).await;
    // The daemon writes its lines in batches: the probe's line reaches the
    // container's log shortly after its answer. Looked for until a
    // deadline, the pod still up, and read once more whatever was found.
    let logged = "path=/readyz status=200";
    let give_up = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while ready
        && !printed(&podman(&["logs", container])).contains(logged)
        && std::time::Instant::now() < give_up
    {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    }
    let logs = printed(&podman(&["logs", container]));
    let inspect = printed(&podman(&[
        "inspect",
        "--format",
        "{{.State.Pid}} {{.HostConfig.ReadonlyRootfs}}",
        container,
    ]));
    let (pid, read_only) = inspect.trim().split_once(' ').unwrap_or_default();
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let down = podman(&["kube", "down", rendered_s]);
    let _ = podman(&["volume", "rm", "--force", &claim]);
    assert!(ready, "the pod never became ready:\n{logs}");
    assert!(down.status.success(), "{}", printed(&down));
    // As the manifests say: the unprivileged user, no capabilities, a
    // read-only root filesystem, a seccomp filter.
    assert_eq!(read_only, "true", "{inspect}");
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .map(|l| l[name.len()..].split_whitespace().collect::<Vec<_>>())
            .unwrap_or_default()
    };
    assert_eq!(field("Uid:"), ["65532"; 4], "{status}");
    assert_eq!(field("CapEff:"), ["0000000000000000"], "{status}");
    assert_eq!(field("Seccomp:"), ["2"], "{status}");
    assert!(logs.contains(logged), "{logs}");
}
