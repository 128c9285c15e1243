//! `tfmirror push-oci REGISTRY/PREFIX`: fills a site's OCI registry with
//! verified providers and module packages ([`crate::site::oci_push`]) from
//! a sync manifest, a configuration directory, or what the cache holds,
//! with a progress bar on a terminal.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;

use super::progress::Progress;
use crate::config::Config;
use crate::mirror::{Freshness, Mirror};
use crate::site::fill::Observer;
use crate::site::oci_push::{self, auth, client::Registry, Item, Target};
use crate::site::selection;

/// `tfmirror push-oci`'s arguments.
#[derive(Debug, clap::Args)]
pub struct PushOciArgs {
    /// Where to push: the registry's `host[:port]` and a path prefix, as
    /// `registry.example:5000/opentofu`. Providers go to
    /// `PREFIX/<hostname>/<namespace>/<type>`, modules to
    /// `PREFIX/<hostname>/<namespace>/<name>/<system>`.
    pub target: String,
    /// Configuration file (TOML).
    #[arg(long, short)]
    pub config: Option<PathBuf>,
    /// Push what this sync manifest (TOML) selects.
    #[arg(long, conflicts_with = "from")]
    pub manifest: Option<PathBuf>,
    /// Push what this Terraform/OpenTofu configuration directory requires.
    #[arg(long)]
    pub from: Option<PathBuf>,
    /// With --from: whose rules read the configuration.
    #[command(flatten)]
    pub client: super::ClientArg,
    /// The platforms to put in each provider version's index (repeatable;
    /// default: the manifest's, this machine's with --from, and the
    /// platforms the cache holds otherwise).
    #[arg(long = "platform")]
    pub platforms: Vec<String>,
    /// Extra CA certificates (PEM) to trust for the registry.
    #[arg(long)]
    pub ca_file: Option<PathBuf>,
    /// The username that goes with --token-file (without one, the token is
    /// sent as a bearer token).
    #[arg(long, requires = "token_file")]
    pub username: Option<String>,
    /// A file holding the registry token or password (default: the
    /// registry's entry in the Docker or Podman auth files).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
}

/// `tfmirror push-oci`.
pub fn command(config: Config, args: &PushOciArgs) -> anyhow::Result<()> {
    let target = Target::parse(&args.target)?;
    let platforms = selection::parse_platforms(&args.platforms, "--platform")?;
    let token = match &args.token_file {
        Some(path) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("reading --token-file {}", path.display()))?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    let (credential, from) = auth::resolve(
        &target.registry,
        &target.prefix,
        args.username.as_deref(),
        token,
    )?;
    println!("pushing to {target} (credentials: {from})");
    let registry = Registry::new(&target.registry, credential, args.ca_file.as_deref())?;
    let selection = match (&args.manifest, &args.from) {
        (Some(path), _) => Some(selection::from_manifest(path)?),
        (None, Some(dir)) => Some(selection::from_directory(
            dir,
            &super::platforms_or_current(&args.platforms)?,
            &args.client.options(),
        )?),
        (None, None) => None,
    };
    let pushed = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config).await?);
        let (items, mut failures): (Vec<Item>, Vec<String>) = match &selection {
            Some(s) => {
                oci_push::items_of_selection(&mirror, s, &platforms, Freshness::Cached).await
            }
            None => (
                oci_push::items_in_store(mirror.store(), &platforms)
                    .await
                    .context("listing what the cache holds")?,
                Vec::new(),
            ),
        };
        let progress = Versions(Progress::new());
        let mut pushed = oci_push::push(&mirror, &registry, &target, &items, &progress).await;
        mirror.close().await;
        failures.append(&mut pushed.failures);
        pushed.failures = failures;
        anyhow::Ok(pushed)
    })?;
    report(&pushed);
    if pushed.failures.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{} failures", pushed.failures.len())
    }
}

/// Pushes what `selection` selects to one registry, with a progress bar,
/// and prints the report; for `watch --once`.
pub fn push_selection(
    config: &Config,
    registry: &Registry,
    target: &Target,
    selection: &selection::Selection,
) -> anyhow::Result<oci_push::Pushed> {
    let pushed = super::runtime()?.block_on(async {
        let mirror = Arc::new(Mirror::beside_daemon(config.clone()).await?);
        let (items, _) =
            oci_push::items_of_selection(&mirror, selection, &[], Freshness::Cached).await;
        let progress = Versions(Progress::new());
        let pushed = oci_push::push(&mirror, registry, target, &items, &progress).await;
        mirror.close().await;
        anyhow::Ok(pushed)
    })?;
    report(&pushed);
    Ok(pushed)
}

fn report(pushed: &oci_push::Pushed) {
    for line in &pushed.pushed {
        println!("pushed {line}");
    }
    println!("{pushed}");
    for failure in &pushed.failures {
        println!("FAILED {failure}");
    }
}

/// The progress bar, counting versions.
struct Versions(Progress);

impl Observer for Versions {
    fn line(&self, text: &str) {
        self.0.line(text);
    }
    fn start(&self, total: u64) {
        self.0.start(total, "versions");
    }
    fn advance(&self, text: &str) {
        self.0.advance(text);
    }
    fn finish(&self) {
        self.0.finish();
    }
}
