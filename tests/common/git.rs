//! Git repositories made at test time with Debian's `git` (`/usr/bin/git`,
//! or `TFMIRROR_TEST_GIT`), kept as bare repositories that the fake origin
//! serves over HTTPS with `git http-backend`.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::{FakeOrigin, ModuleAnswer, Setup, Signer};

/// The git program the tests use.
pub fn git_program() -> PathBuf {
    std::env::var_os("TFMIRROR_TEST_GIT")
        .map_or_else(|| PathBuf::from("/usr/bin/git"), PathBuf::from)
}

/// `git http-backend`, beside the git program.
pub fn git_http_backend() -> PathBuf {
    let exec_path = Command::new(git_program())
        .arg("--exec-path")
        .output()
        .expect("git runs");
    PathBuf::from(String::from_utf8(exec_path.stdout).unwrap().trim()).join("git-http-backend")
}

/// Runs git in `dir` with no user or system configuration; returns stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new(git_program())
        .args([
            "-c",
            "user.name=Test",
            "-c",
            "user.email=test@example.invalid",
        ])
        .args(["-c", "init.defaultBranch=main", "-c", "tag.gpgSign=false"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .expect("git runs");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// A working repository and the bare repository it pushes to.
pub struct Repo {
    pub work: PathBuf,
    pub bare: PathBuf,
}

impl Repo {
    /// A new repository `name` under `root` (`root/<name>.git` is the bare
    /// one the origin serves).
    pub fn new(root: &Path, name: &str) -> Repo {
        let work = root.join("work").join(name);
        let bare = root.join(format!("{name}.git"));
        std::fs::create_dir_all(&work).unwrap();
        git(&work, &["init", "--quiet", "."]);
        git(root, &["init", "--quiet", "--bare", bare.to_str().unwrap()]);
        git(&bare, &["config", "http.receivepack", "false"]);
        Repo { work, bare }
    }

    /// Replaces the working tree's files with `files` (path, content),
    /// commits, pushes `main`, and returns the commit.
    pub fn commit(&self, files: &[(&str, &str)], message: &str) -> String {
        for entry in std::fs::read_dir(&self.work).unwrap().flatten() {
            if entry.file_name() != ".git" {
                let p = entry.path();
                if p.is_dir() {
                    std::fs::remove_dir_all(p).unwrap();
                } else {
                    std::fs::remove_file(p).unwrap();
                }
            }
        }
        for (path, body) in files {
            let p = self.work.join(path);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(p, body).unwrap();
        }
        git(&self.work, &["add", "--all"]);
        git(
            &self.work,
            &["commit", "--quiet", "--allow-empty", "-m", message],
        );
        git(
            &self.work,
            &[
                "push",
                "--quiet",
                "--force",
                self.bare.to_str().unwrap(),
                "HEAD:refs/heads/main",
            ],
        );
        git(&self.work, &["rev-parse", "HEAD"]).trim().to_owned()
    }

    /// Tags the current commit (moving the tag if it exists) and pushes it.
    pub fn tag(&self, tag: &str) {
        git(&self.work, &["tag", "--force", "-a", "-m", tag, tag]);
        git(
            &self.work,
            &[
                "push",
                "--quiet",
                "--force",
                self.bare.to_str().unwrap(),
                &format!("refs/tags/{tag}"),
            ],
        );
    }
}

/// The files of a directory tree, relative and sorted, with contents
/// (`.terraform`-style metadata and `.git` left out).
pub fn tree_files(dir: &Path) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if e.file_name() == ".git" {
                continue;
            }
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((
                    p.strip_prefix(dir).unwrap().display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                ));
            }
        }
    }
    out.sort();
    out
}

/// The module tests' origin content: git repositories `net` (which calls
/// the registry module `sub`) and `sub` (whose module is in a
/// subdirectory), published as `acme/net/aws` and `acme/sub/aws` 1.0.0, and
/// the provider `acme/widget` 1.0.0.
pub struct NetAndSub {
    pub net_files: Vec<(&'static str, &'static str)>,
    pub sub_module: &'static str,
}

/// Publishes the module tests' origin content ([`NetAndSub`]).
pub fn publish_net_and_sub(setup: &Setup, origin: &FakeOrigin) -> NetAndSub {
    let git_root = setup.dir.path().join("git");
    let net = Repo::new(&git_root, "net");
    let net_files = vec![
        (
            "main.tf",
            "module \"sub\" {\n  source  = \"registry.origin.test/acme/sub/aws\"\n  version = \"~> 1.0\"\n}\n\noutput \"answer\" {\n  value = module.sub.answer\n}\n",
        ),
        ("README.md", "net\n"),
    ];
    net.commit(&net_files, "net v1");
    net.tag("v1.0.0");
    let sub = Repo::new(&git_root, "sub");
    let sub_module = "output \"answer\" {\n  value = 42\n}\n";
    sub.commit(
        &[("modules/sub/main.tf", sub_module), ("LICENSE", "sub\n")],
        "sub v1",
    );
    sub.tag("v1.0.0");
    origin.serve_git(&git_root);
    origin.publish_git_module("net", "1.0.0", "net", "v1.0.0");
    origin.publish_module(
        "acme",
        "sub",
        "aws",
        "1.0.0",
        ModuleAnswer::Json(format!(
            "git::{}//modules/sub?ref=v1.0.0",
            origin.git_url("sub")
        )),
    );
    let signer = Signer::new("acme");
    origin.publish(
        "acme",
        "widget",
        "1.0.0",
        &["linux_amd64"],
        &signer,
        &[&signer],
    );
    NetAndSub {
        net_files,
        sub_module,
    }
}
