//! `tfmirror credentials-helper`: a credentials helper for Terraform and
//! OpenTofu (their `credentials_helper` protocol) that hands the CLI the
//! token in a file, read afresh at every run. It is meant for workers whose
//! token file rotates under them, such as a Kubernetes projected
//! service-account token: no secret is stored, and each `init` presents
//! the token the file holds then.
//!
//! The CLIs look for a program called `terraform-credentials-<name>` among
//! their plugins; tfmirror acts as this helper when it is run under such a
//! name (a symbolic link to it called `terraform-credentials-tfmirror`),
//! with the CLI configuration's `args` first and then the verb:
//!
//! ```hcl
//! credentials_helper "tfmirror" {
//!   args = ["--token-file", "/var/run/secrets/tfmirror/token"]
//! }
//! ```
//!
//! `get <host>` prints `{"token": "…"}` (or `{}` for a host `--host` does
//! not name); `store` and `forget` are refused, since the file is the
//! source of the token.

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;

/// The prefix of the names the CLIs give credentials helpers.
const HELPER_PREFIX: &str = "terraform-credentials-";

/// The largest token file read.
const MAX_TOKEN_FILE: u64 = 64 * 1024;

/// `tfmirror credentials-helper`'s arguments.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The file holding the token (a projected service-account token, a
    /// CI job's token written by a step).
    #[arg(long)]
    pub token_file: PathBuf,
    /// A host the token is for (`mirror.example.com`, or `host:port`);
    /// repeat for several. Without any, the token goes to every host the
    /// CLI asks about.
    #[arg(long = "host")]
    pub hosts: Vec<String>,
    /// What the CLI asks: `get`, `store` or `forget`.
    pub verb: String,
    /// The host the CLI asks about.
    pub host: String,
}

/// The command line as clap should read it: run under a helper's name
/// (`terraform-credentials-…`), tfmirror is `tfmirror credentials-helper`.
pub fn as_helper(args: Vec<OsString>) -> Vec<OsString> {
    let called = args
        .first()
        .and_then(|a| std::path::Path::new(a).file_name())
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(HELPER_PREFIX));
    if !called {
        return args;
    }
    let mut out = vec![
        OsString::from("tfmirror"),
        OsString::from("credentials-helper"),
    ];
    out.extend(args.into_iter().skip(1));
    out
}

/// Answers the CLI: the token for `get`, a refusal for the rest.
pub fn command(args: &Args) -> anyhow::Result<()> {
    println!("{}", answer(args)?);
    Ok(())
}

/// What `command` prints.
pub fn answer(args: &Args) -> anyhow::Result<String> {
    match args.verb.as_str() {
        "get" => {}
        "store" | "forget" => anyhow::bail!(
            "tfmirror's credentials helper reads its token from {} and keeps nothing: it cannot {} credentials",
            args.token_file.display(),
            args.verb
        ),
        other => anyhow::bail!("unknown verb {other:?}: the CLI asks get, store or forget"),
    }
    let wanted = args.hosts.is_empty()
        || args
            .hosts
            .iter()
            .any(|h| h.eq_ignore_ascii_case(&args.host));
    if !wanted {
        return Ok("{}".into());
    }
    let file = std::fs::File::open(&args.token_file)
        .with_context(|| format!("opening the token file {}", args.token_file.display()))?;
    let mut text = String::new();
    std::io::Read::read_to_string(
        &mut std::io::Read::take(file, MAX_TOKEN_FILE + 1),
        &mut text,
    )
    .with_context(|| format!("reading the token file {}", args.token_file.display()))?;
    if text.len() as u64 > MAX_TOKEN_FILE {
        anyhow::bail!(
            "the token file {} is larger than {MAX_TOKEN_FILE} bytes",
            args.token_file.display()
        );
    }
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        anyhow::bail!(
            "the token file {} holds no token (it is empty, or holds more than one word)",
            args.token_file.display()
        );
    }
    Ok(serde_json::json!({ "token": token }).to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(file: &std::path::Path, hosts: &[&str], verb: &str, host: &str) -> Args {
        Args {
            token_file: file.into(),
            hosts: hosts.iter().map(|h| (*h).to_owned()).collect(),
            verb: verb.into(),
            host: host.into(),
        }
    }

    #[test]
    fn the_token_of_the_file_goes_to_the_hosts_named() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("token");
        std::fs::write(&file, "eyJ.a.b\n").unwrap();
        let got = answer(&args(&file, &[], "get", "mirror.example")).unwrap();
        assert_eq!(got, r#"{"token":"eyJ.a.b"}"#);
        let got = answer(&args(
            &file,
            &["mirror.example:8443"],
            "get",
            "MIRROR.example:8443",
        ))
        .unwrap();
        assert_eq!(got, r#"{"token":"eyJ.a.b"}"#);
        assert_eq!(
            answer(&args(
                &file,
                &["mirror.example"],
                "get",
                "registry.terraform.io"
            ))
            .unwrap(),
            "{}"
        );
        // Rotated under it: the next run reads the new token.
        std::fs::write(&file, "eyJ.c.d").unwrap();
        assert_eq!(
            answer(&args(&file, &[], "get", "m")).unwrap(),
            r#"{"token":"eyJ.c.d"}"#
        );
        for verb in ["store", "forget", "list"] {
            assert!(answer(&args(&file, &[], verb, "m")).is_err(), "{verb}");
        }
        std::fs::write(&file, " \n").unwrap();
        assert!(answer(&args(&file, &[], "get", "m")).is_err());
        assert!(answer(&args(&dir.path().join("none"), &[], "get", "m")).is_err());
    }

    #[test]
    fn run_under_a_helpers_name_tfmirror_is_the_helper() {
        let os = |v: &[&str]| v.iter().map(OsString::from).collect::<Vec<_>>();
        let called = as_helper(os(&[
            "/home/u/.terraform.d/plugins/terraform-credentials-tfmirror",
            "--token-file",
            "f",
            "get",
            "h",
        ]));
        assert_eq!(
            called,
            os(&[
                "tfmirror",
                "credentials-helper",
                "--token-file",
                "f",
                "get",
                "h"
            ])
        );
        let plain = os(&["/usr/bin/tfmirror", "serve"]);
        assert_eq!(as_helper(plain.clone()), plain);
    }
}
