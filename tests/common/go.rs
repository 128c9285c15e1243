//! Go programs as the tests read them: what Go's own reader (`go version
//! -m`, from Debian's golang-go) lists for a binary, and the pinned real
//! advisory entries with the findings read from them by hand.

use std::path::Path;
use std::process::Command;

/// The modules `go version -m` lists for a program (the replacement where
/// one was made), as `path@version`, and the toolchain.
pub fn go_modules(exe: &Path) -> (String, Vec<String>) {
    let out = Command::new("go")
        .args(["version", "-m"])
        .arg(exe)
        .output()
        .expect("go (Debian's golang-go) runs; the README's test command installs it");
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let toolchain = text
        .lines()
        .next()
        .unwrap()
        .rsplit_once(": ")
        .unwrap()
        .1
        .to_string();
    let mut modules: Vec<String> = Vec::new();
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.trim_start_matches('\t').split('\t').collect();
        match cols.as_slice() {
            ["dep", path, version, ..] => modules.push(format!("{path}@{version}")),
            ["=>", path, version, ..] => *modules.last_mut().unwrap() = format!("{path}@{version}"),
            _ => {}
        }
    }
    (toolchain, modules)
}

/// The Terraform v1.0.3 binary `TERRAFORM_BIN` names (the README's test
/// command installs it).
pub fn terraform_1_0_3() -> std::path::PathBuf {
    match std::env::var_os("TERRAFORM_BIN") {
        Some(p) if Path::new(&p).is_file() => std::path::PathBuf::from(p),
        other => panic!("TERRAFORM_BIN must name the Terraform v1.0.3 binary (got {other:?}); run the README's test command"),
    }
}

/// Copies the pinned real entries (the Go database's and GitHub's, in
/// `tests/fixtures/advisories`) into the directory `to`.
pub fn copy_advisory_fixtures(to: &Path) {
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/advisories");
    std::fs::create_dir_all(to).unwrap();
    for dir in ["go-vulndb/ID", "github"] {
        for e in std::fs::read_dir(fixtures.join(dir)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
}

/// The advisories of the pinned entries that Terraform v1.0.3 (go1.16.4,
/// its own module at 1.0.3) falls under, one per module affected, as
/// read by hand in `tests/advisories.rs` and `SOURCE.md`: eight
/// advisories, GO-2023-2102 for both the standard library and x/net.
pub const TERRAFORM_1_0_3_FINDINGS: [&str; 9] = [
    "GO-2021-0113",
    "GO-2021-0239",
    "GO-2021-0263",
    "GO-2021-0347",
    "GO-2022-0438",
    "GO-2023-2102",
    "GO-2023-2102",
    "GO-2023-2153",
    "GO-2024-2947",
];

/// A bill of materials' modules other than the standard library, as
/// `path@version` in the document's order: what `go version -m` lists.
pub fn bom_modules(doc: &serde_json::Value) -> Vec<String> {
    doc["components"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["name"] != "stdlib")
        .map(|c| {
            format!(
                "{}@{}",
                c["name"].as_str().unwrap(),
                c["version"].as_str().unwrap_or("")
            )
        })
        .collect()
}

/// A component's properties by name (the last of a name wins).
pub fn bom_properties(component: &serde_json::Value) -> std::collections::BTreeMap<String, String> {
    component["properties"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["name"].as_str().unwrap().to_string(),
                p["value"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// `tfmirror advisories import --config CONFIG PATHS…`, which must
/// succeed; returns what it printed.
pub async fn import_advisories(home: &Path, config: &Path, paths: &[&Path]) -> String {
    let mut args = vec!["advisories", "import", "--config", config.to_str().unwrap()];
    args.extend(paths.iter().map(|p| p.to_str().unwrap()));
    super::daemon::run_ok(home, &args).await.stdout
}

/// `tfmirror bom --config CONFIG --platform PLATFORM --output OUT WHAT
/// VERSION`, which must succeed; returns the document written.
pub async fn bom_command(
    home: &Path,
    config: &Path,
    platform: &str,
    what: &str,
    version: &str,
) -> serde_json::Value {
    let out = home.join(format!("bom-{}.json", what.replace('/', "-")));
    let args = [
        "bom",
        "--config",
        config.to_str().unwrap(),
        "--platform",
        platform,
        "--output",
        out.to_str().unwrap(),
        what,
        version,
    ];
    super::daemon::run_ok(home, &args).await;
    serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap()
}

/// A provider archive holding `exe` as the provider's executable, stored
/// uncompressed (the tests' build leaves compression unoptimised).
pub fn archive_of(kind: &str, version: &str, exe: &Path) -> Vec<u8> {
    use std::io::Write;
    let mut out = std::io::Cursor::new(Vec::new());
    let mut w = zip::ZipWriter::new(&mut out);
    let opts = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Stored)
        .unix_permissions(0o755);
    w.start_file(format!("terraform-provider-{kind}_v{version}"), opts)
        .unwrap();
    std::io::copy(&mut std::fs::File::open(exe).unwrap(), &mut w).unwrap();
    w.start_file("LICENSE", opts).unwrap();
    w.write_all(b"MPL-2.0\n").unwrap();
    w.finish().unwrap();
    out.into_inner()
}

/// Publishes `acme/KIND` `VERSION` at `origin` with `archives` by
/// platform, signed by `signer`.
pub fn publish_archives(
    origin: &super::FakeOrigin,
    signer: &super::Signer,
    (kind, version): (&str, &str),
    archives: &std::collections::BTreeMap<String, Vec<u8>>,
) {
    let sums = super::sums_document(kind, version, archives);
    let signature = signer.sign_binary(&sums);
    origin.publish_raw(
        "acme",
        kind,
        version,
        archives,
        sums,
        signature,
        vec![(signer.key_id(), signer.public_armored())],
    );
}

/// The origin with acme/tfcli 1.0.0 (a shell script) and 1.1.0 (the
/// Terraform v1.0.3 binary) for this machine's platform, and the advisory
/// fixtures in a directory of `setup`'s.
pub async fn publish_tfcli_pair(setup: &super::Setup) -> (super::FakeOrigin, std::path::PathBuf) {
    let origin = super::FakeOrigin::start(&setup.ca).await;
    // RSA: Terraform v1.0.3 reads no other key type.
    let signer = super::Signer::rsa("acme");
    let platform = super::terraform::platform();
    let script = setup.dir.path().join("provider.sh");
    std::fs::write(
        &script,
        "#!/bin/sh\necho 'a provider that is not a Go program'\n",
    )
    .unwrap();
    for (version, exe) in [("1.0.0", script.clone()), ("1.1.0", terraform_1_0_3())] {
        let archives = std::collections::BTreeMap::from([(
            platform.clone(),
            archive_of("tfcli", version, &exe),
        )]);
        publish_archives(&origin, &signer, ("tfcli", version), &archives);
    }
    let entries = setup.dir.path().join("osv");
    copy_advisory_fixtures(&entries);
    (origin, entries)
}

/// Builds the module in `src` for `(GOOS, GOARCH)` into `out`, offline,
/// its module cache in `work`; `stripped` as releases are (`-s -w`). The
/// build cache is kept below the test build's own scratch folder
/// (`target/tmp/go-build-cache`; in `work` for a benchmark, which has
/// none) and shared by every test and run: Go keys
/// it by the inputs, so a program comes out the same, and the standard
/// library is compiled once for each platform instead of once per test.
pub fn go_build(work: &Path, src: &Path, out: &Path, (os, arch): (&str, &str), stripped: bool) {
    let ldflags = if stripped {
        "-ldflags=-s -w"
    } else {
        "-ldflags="
    };
    let status = std::process::Command::new("go")
        .args(["build", "-trimpath", ldflags, "-o"])
        .arg(out)
        .arg(".")
        .current_dir(src)
        .env("GOOS", os)
        .env("GOARCH", arch)
        .env("CGO_ENABLED", "0")
        .env("GOFLAGS", "-mod=mod")
        .env("GOPROXY", "off")
        .env(
            "GOCACHE",
            option_env!("CARGO_TARGET_TMPDIR").map_or_else(
                || work.join("cache"),
                |t| Path::new(t).join("go-build-cache"),
            ),
        )
        .env("GOPATH", work.join("gopath"))
        .env("HOME", work)
        .status()
        .expect("go (Debian's golang-go) runs; the README's test command installs it");
    assert!(status.success(), "go build for {os}/{arch}");
}

/// A small Go program for linux/amd64 (Go 1.18's function table layout
/// under Debian's Go 1.19) that prints with `fmt`, stripped as releases
/// are, built into `dir` as `dir/hello`.
pub fn hello_program(dir: &Path) -> std::path::PathBuf {
    let src = dir.join("hello-src");
    std::fs::create_dir_all(&src).unwrap();
    std::fs::write(src.join("go.mod"), "module example.test/hello\n\ngo 1.19\n").unwrap();
    std::fs::write(
        src.join("main.go"),
        "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n",
    )
    .unwrap();
    let out = dir.join("hello");
    go_build(dir, &src, &out, ("linux", "amd64"), true);
    out
}
