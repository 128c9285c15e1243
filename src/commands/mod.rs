//! The command line: `tfmirror serve`, `sync`, `watch`, `check`, `lock`,
//! `export`, `import`, `push-oci`, `inventory`, `check-config`, `check-upstream`,
//! `ls`, `gc`, `verify`, `approve`, `deny` and `policy ls`.

//!
//! Each command lives in its own module and prints its own report.

pub mod bundle;
pub mod check;
pub mod check_upstream;
mod client_arg;
pub mod credentials_helper;
pub mod gc;
pub mod inventory;
pub mod keyless;
mod line_format;
pub mod loaded;
pub mod lock;
mod log_writer;
mod logging;
pub mod ls;
pub mod policy;
pub mod probe;
pub mod progress;
pub mod push_oci;
pub mod serve;
pub mod store;
pub mod sync;
pub mod verify;
pub mod watch;
pub use client_arg::ClientArg;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::{Parser, Subcommand};

use crate::config::Config;
use crate::store::DiskStore;

/// A caching, verifying provider network mirror for Terraform and OpenTofu.
#[derive(Debug, Parser)]
#[command(name = "tfmirror", version = env!("VERSION_LINE"), about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the mirror until SIGTERM or SIGINT; SIGHUP reloads the TLS certificate.
    Serve {
        /// Configuration file (TOML). Without one, the built-in defaults and
        /// TFMIRROR_* environment variables apply.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Never contact an origin: serve the cache, 404 for the rest
        /// (upstream.offline).
        #[arg(long)]
        offline: bool,
    },
    /// Fill the cache ahead of time: download, verify and cache the
    /// providers a manifest or a Terraform configuration asks for.
    Sync {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A manifest (TOML) listing providers, version constraints and
        /// platforms (see `docs/air-gap.md`).
        #[arg(long, required_unless_present = "from", conflicts_with = "from")]
        manifest: Option<PathBuf>,
        /// A configuration's root module directory, read as its client
        /// reads it: what it requires and its lock file say what to fetch.
        #[arg(long)]
        from: Option<PathBuf>,
        /// With --from: a platform to fetch (repeatable; default: this
        /// machine's).
        #[arg(long = "platform", requires = "from")]
        platforms: Vec<String>,
        /// With --from: whose rules read the configuration.
        #[command(flatten)]
        client: ClientArg,
        /// How many archives to download at once.
        #[arg(long, default_value_t = 4)]
        jobs: usize,
    },
    /// Run one pass of the configuration's [watch] now: list every watched
    /// provider and module afresh and fetch what the cache lacks.
    Watch {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// One pass, then exit (the daemon runs the passes on its own
        /// schedule).
        #[arg(long)]
        once: bool,
        /// How many archives to download at once (default: watch.jobs).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Say whether configurations will install from this mirror alone:
    /// every provider version, platform and module version they need, held
    /// or missing and why; exit non-zero unless everything is held.
    Check(check::CheckArgs),
    /// Write what this mirror's cache holds (providers with versions,
    /// platforms and hashes; module versions with pins), for the connected
    /// side's `export --missing-from`.
    Inventory {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The file to write.
        #[arg(long)]
        output: PathBuf,
    },
    /// Print .terraform.lock.hcl provider blocks with h1: and zh: hashes for
    /// every platform given (downloading and verifying archives as needed).
    Lock {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// A platform to lock (repeatable; default: this machine's).
        #[arg(long = "platform")]
        platforms: Vec<String>,
        /// A configuration's root module directory: lock what it
        /// requires, read as its client reads it.
        #[arg(long, conflicts_with = "sources")]
        from: Option<PathBuf>,
        /// With --from: whose rules read the configuration.
        #[command(flatten)]
        client: ClientArg,
        /// Providers to lock, as `[hostname/]namespace/type`, optionally
        /// followed by `@` and version constraints (`hashicorp/aws@~> 5.0`);
        /// the newest version that meets them is locked.
        #[arg(required_unless_present = "from")]
        sources: Vec<String>,
    },
    /// Write cached providers, with the evidence that verified them, to one
    /// bundle file; or (--static) as a static mirror directory.
    Export {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The bundle file to write.
        #[arg(
            long,
            required_unless_present = "static_dir",
            conflicts_with = "static_dir"
        )]
        output: Option<PathBuf>,
        /// Write the network mirror protocol as static files into this
        /// directory instead (the layout `terraform providers mirror` writes).
        #[arg(long = "static", value_name = "DIR")]
        static_dir: Option<PathBuf>,
        /// Only this provider, `[hostname/]namespace/type` (repeatable).
        #[arg(long = "provider")]
        providers: Vec<String>,
        /// Carry only what the site whose inventory this is (`tfmirror
        /// inventory` there) lacks.
        #[arg(long, value_name = "INVENTORY", conflicts_with_all = ["since", "static_dir"])]
        missing_from: Option<PathBuf>,
        /// Carry only what this earlier bundle (and those it built on) did
        /// not.
        #[arg(long, value_name = "BUNDLE", conflicts_with = "static_dir")]
        since: Option<PathBuf>,
    },
    /// Fill a site's OCI registry with verified providers and module
    /// packages, in the layouts OpenTofu's `oci_mirror` and `oci://` sources
    /// install from.
    PushOci(push_oci::PushOciArgs),
    /// Verify and import a bundle written by `export`; or (--static) a
    /// directory written by `terraform providers mirror`.
    Import {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The bundle file.
        #[arg(required_unless_present = "static_dir", conflicts_with = "static_dir")]
        bundle: Option<PathBuf>,
        /// Import this static mirror directory instead; its providers are
        /// marked unsigned (see `cache.allow_unsigned_imports`).
        #[arg(long = "static", value_name = "DIR")]
        static_dir: Option<PathBuf>,
    },
    /// Ask a running daemon whether it is alive (or, with --ready, ready
    /// to serve); exit 0 or 1. For container health checks and probes.
    Probe(probe::ProbeArgs),
    /// Validate the configuration and print the effective settings.
    CheckConfig {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Ask an origin registry what the mirror would ask it, step by step
    /// (discovery, version lists, download answers, the signature and
    /// checksum chain, the archive's first bytes, module locations), and
    /// say what each step found or exactly what is unusable; exit non-zero
    /// when a step failed. Nothing is stored.
    CheckUpstream {
        /// Configuration file (TOML): the upstream settings, credentials
        /// and trust rules to check with.
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The registry's hostname, e.g. registry.terraform.io.
        host: String,
        /// Providers (namespace/type) and modules (namespace/name/system)
        /// on that registry to check; the newest version of each.
        items: Vec<String>,
        /// The platform whose download answer and archive to check
        /// (default: this machine's, or the version's first).
        #[arg(long)]
        platform: Option<String>,
    },
    /// List the cached archives: provider, version, platform, size, last use.
    Ls {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Print JSON instead of a table.
        #[arg(long)]
        json: bool,
        /// List the pinned module versions instead of the archives.
        #[arg(long, conflicts_with = "releases")]
        modules: bool,
        /// List the CLI release files held (Terraform's and OpenTofu's
        /// own binaries) instead of the archives.
        #[arg(long)]
        releases: bool,
    },
    /// Re-check every cached archive against its signed SHA256SUMS; move
    /// failures to quarantine and exit non-zero when there were any.
    Verify {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Evict least recently used archives and module packages until the
    /// cache fits `cache.max_size`.
    Gc {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The size to shrink to, instead of `cache.max_size` (e.g. "10GiB").
        #[arg(long)]
        max_size: Option<bytesize::ByteSize>,
    },
    /// Make one provider or module version visible now, whatever the rules
    /// and the cooldown say; running instances take it up within seconds.
    Approve {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The provider (`[hostname/]namespace/type`) or module
        /// (`hostname/namespace/name/system`).
        source: String,
        /// The version.
        version: String,
        /// Why, kept with the decision.
        #[arg(long, default_value = "")]
        reason: String,
        /// Also let a keyless provider version be pinned anew: the next
        /// answer for it that differs from its pin (a documented
        /// re-publication) replaces the pin instead of being refused.
        /// Needs `--reason`.
        #[arg(long)]
        repin: bool,
    },
    /// Hide one provider or module version (a yanked release, a known-bad
    /// version) without editing the configuration.
    Deny {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The provider (`[hostname/]namespace/type`) or module
        /// (`hostname/namespace/name/system`).
        source: String,
        /// The version.
        version: String,
        /// Why, shown to users whom it refuses.
        #[arg(long)]
        reason: String,
    },
    /// Hand Terraform or OpenTofu the token in a file (their
    /// `credentials_helper` protocol; see docs/identities.md).
    CredentialsHelper(credentials_helper::Args),
    /// The policy: its rules, its cooldown and the versions decided by
    /// name.
    Policy {
        /// What to do.
        #[command(subcommand)]
        action: policy::PolicyCommand,
    },
}

/// Parses the command line and runs the command; the process's entry point.
pub fn main() -> ExitCode {
    let cli = Cli::parse_from(credentials_helper::as_helper(std::env::args_os().collect()));
    let result = match cli.command {
        Command::Serve { config, offline } => {
            logging::load_daemon(config.as_deref()).and_then(|(mut c, _written_at_exit)| {
                c.upstream.offline |= offline;
                serve::run(c)
            })
        }
        Command::Sync {
            config,
            manifest,
            from,
            platforms,
            client,
            jobs,
        } => logging::load(config.as_deref()).and_then(|c| {
            let from = from.map(|dir| (dir, client.client));
            sync::command(c, manifest, from, &platforms, jobs)
        }),
        Command::CredentialsHelper(args) => credentials_helper::command(&args),
        Command::PushOci(args) => {
            logging::load(args.config.as_deref()).and_then(|c| push_oci::command(c, &args))
        }
        Command::Watch { config, once, jobs } => {
            logging::load(config.as_deref()).and_then(|c| watch::command(&c, once, jobs))
        }
        Command::Check(args) => {
            logging::load(args.config.as_deref()).and_then(|c| check::command(c, &args))
        }
        Command::Inventory { config, output } => {
            logging::load(config.as_deref()).and_then(|c| inventory::command(&c, &output))
        }
        Command::Lock {
            config,
            platforms,
            from,
            client,
            sources,
        } => logging::load(config.as_deref()).and_then(|c| {
            let from = from.map(|dir| (dir, client.client));
            lock::command(c, &platforms, from, &sources)
        }),
        Command::Export {
            config,
            output,
            static_dir,
            providers,
            missing_from,
            since,
        } => logging::load(config.as_deref()).and_then(|c| {
            let delta = bundle::DeltaBase {
                missing_from,
                since,
            };
            bundle::export_command(&c, output, static_dir, &providers, &delta)
        }),
        Command::Import {
            config,
            bundle,
            static_dir,
        } => logging::load(config.as_deref())
            .and_then(|c| bundle::import_command(&c, bundle, static_dir)),
        Command::Probe(args) => {
            logging::load(args.config.as_deref()).and_then(|c| probe::command(&c, &args))
        }
        Command::CheckConfig { config } => logging::load(config.as_deref()).and_then(|c| {
            print!("{}", c.to_toml()?);
            Ok(())
        }),
        Command::CheckUpstream {
            config,
            host,
            items,
            platform,
        } => logging::load(config.as_deref()).and_then(|c| {
            let platform = platforms_or_current(&platform.into_iter().collect::<Vec<_>>())?;
            check_upstream::command(&c, &host, &items, &platform[0])
        }),
        Command::Ls {
            config,
            json,
            modules,
            releases,
        } => logging::load(config.as_deref()).and_then(|c| {
            if modules {
                ls::modules(&c, json)
            } else if releases {
                ls::releases(&c, json)
            } else {
                ls::command(&c, json)
            }
        }),
        Command::Gc { config, max_size } => {
            logging::load(config.as_deref()).and_then(|c| gc::command(&c, max_size))
        }
        Command::Verify { config } => {
            logging::load(config.as_deref()).and_then(|c| verify::command(&c))
        }
        Command::Approve {
            config,
            source,
            version,
            reason,
            repin,
        } => logging::load(config.as_deref()).and_then(|c| {
            let decision = if repin {
                policy::Decision::Repin
            } else {
                policy::Decision::Approve
            };
            policy::decide(&c, &source, &version, decision, &reason)
        }),
        Command::Deny {
            config,
            source,
            version,
            reason,
        } => logging::load(config.as_deref())
            .and_then(|c| policy::decide(&c, &source, &version, policy::Decision::Deny, &reason)),
        Command::Policy {
            action: policy::PolicyCommand::Ls { config },
        } => logging::load(config.as_deref()).and_then(|c| policy::list(&c)),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("tfmirror: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// The platforms given on the command line, or this machine's.
fn platforms_or_current(given: &[String]) -> anyhow::Result<Vec<crate::address::Platform>> {
    if given.is_empty() {
        Ok(vec![crate::address::Platform::current()])
    } else {
        crate::site::selection::parse_platforms(given, "--platform")
    }
}

/// A runtime for the commands that do network work.
fn runtime() -> anyhow::Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")
}

/// Why one item of an import or a check was refused: said in the
/// command's report, beside the item.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Refusal(String);

impl From<String> for Refusal {
    fn from(reason: String) -> Self {
        Refusal(reason)
    }
}

impl From<&str> for Refusal {
    fn from(reason: &str) -> Self {
        Refusal(reason.to_owned())
    }
}

impl From<crate::store::evidence::Rejected> for Refusal {
    fn from(e: crate::store::evidence::Rejected) -> Self {
        Refusal(e.to_string())
    }
}

/// Opens the local-disk cache under `cache.dir`, for the commands that
/// work on it directly; they refuse a bucket rather than act on the
/// unused directory.
fn open_store(config: &Config) -> anyhow::Result<DiskStore> {
    if config.storage.backend == crate::config::StorageBackend::S3 {
        anyhow::bail!(
            "this command works on the disk cache (storage.backend = \"disk\"); on a bucket, every other command works, and lifecycle rules rather than gc bound its size (docs/several-instances.md)"
        );
    }
    let store = DiskStore::open(&config.cache.dir)
        .with_context(|| format!("opening cache.dir {}", config.cache.dir.display()))?;
    runtime()?.block_on(crate::store::format::open_cache(&store))?;
    Ok(store)
}
