//! The command line: `tfmirror serve`, `sync`, `watch`, `check`, `lock`,
//! `export`, `import`, `push-oci`, `inventory`, `check-config`, `check-upstream`,
//! `ls`, `gc`, `verify`, `approve`, `deny`, `accept`, `policy ls`, `bom` and
//! `advisories`.

//!
//! Each command lives in its own module and prints its own report.

pub mod advised;
pub mod advisories;
pub mod bom;
pub mod bundle;
pub mod check;
pub mod check_upstream;
mod cli;
mod client_arg;
pub mod credentials_helper;
pub mod docs;
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
pub use cli::{AdvisoriesCommand, Cli, Command, DocsCommand};
pub use client_arg::ClientArg;

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;

use crate::config::Config;
use crate::store::DiskStore;

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
        Command::Inventory {
            config,
            output,
            no_docs,
        } => {
            logging::load(config.as_deref()).and_then(|c| inventory::command(&c, &output, no_docs))
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
            no_advisories,
            no_docs,
        } => logging::load(config.as_deref()).and_then(|c| {
            let delta = bundle::DeltaBase {
                missing_from,
                since,
            };
            bundle::export_command(
                &c,
                output,
                static_dir,
                &providers,
                &delta,
                (!no_advisories, !no_docs),
            )
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
        Command::Bom {
            config,
            platform,
            output,
            source,
            version,
        } => logging::load(config.as_deref()).and_then(|c| {
            let platform: Vec<String> = platform.into_iter().collect();
            bom::command(c, &source, &version, &platform, output.as_deref())
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
        Command::Accept {
            config,
            advisory,
            source,
            version,
            reason,
            expires,
        } => logging::load(config.as_deref()).and_then(|c| {
            policy::accept(
                &c,
                &advisory,
                (&source, version.as_deref()),
                &reason,
                &expires,
            )
        }),
        Command::Policy {
            action: policy::PolicyCommand::Ls { config },
        } => logging::load(config.as_deref()).and_then(|c| policy::list(&c)),
        Command::Docs {
            action: DocsCommand::Backfill { config },
        } => logging::load(config.as_deref()).and_then(docs::backfill),
        Command::Docs {
            action: DocsCommand::Sweep { config },
        } => logging::load(config.as_deref()).and_then(docs::sweep),
        Command::Advisories { action } => match action {
            AdvisoriesCommand::Import { config, paths } => {
                logging::load(config.as_deref()).and_then(|c| advisories::import(&c, &paths))
            }
            AdvisoriesCommand::Sync { config } => {
                logging::load(config.as_deref()).and_then(advisories::sync)
            }
            AdvisoriesCommand::Status { config } => {
                logging::load(config.as_deref()).and_then(|c| advisories::status(&c))
            }
            AdvisoriesCommand::Show {
                config,
                json,
                source,
                version,
            } => logging::load(config.as_deref())
                .and_then(|c| advisories::show(c, &source, &version, json)),
        },
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

/// How long a command that fetched waits, at most, for the work it started
/// in the background (build records of the archives it kept) to end.
const SETTLE: std::time::Duration = std::time::Duration::from_secs(600);

/// Waits for `mirror`'s background work, such as the build records of the
/// archives a fill kept (which `export` and the rules by advisory read),
/// before a command ends; says so when it did not end in time (what is
/// left is read when next asked for).
async fn settle(mirror: &crate::mirror::Mirror) {
    if !mirror.drain(SETTLE).await {
        eprintln!(
            "the build records of some archives were not read within {}; they are read when next asked for",
            humantime::format_duration(SETTLE)
        );
    }
}
