//! The command line: `tfmirror` and its subcommands, as clap reads them.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

use super::{check, credentials_helper, policy, probe, push_oci, ClientArg};

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
    /// Run one pass of the configuration's watch section now: list every
    /// watched provider and module afresh and fetch what the cache lacks.
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
        /// List no documentation: the inventory stays of format 2, which
        /// builds before documentation read (an export for it then carries
        /// the documentation of every version it carries, and no other).
        #[arg(long)]
        no_docs: bool,
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
        /// Leave the advisory database out, for a site whose tfmirror
        /// reads no bundle of format 3 (it is carried whenever one is
        /// kept).
        #[arg(long, conflicts_with = "static_dir")]
        no_advisories: bool,
        /// Leave provider documentation out, for a site whose tfmirror
        /// reads no bundle of format 4 (it is carried for every version
        /// whose documentation is kept whole).
        #[arg(long, conflicts_with = "static_dir")]
        no_docs: bool,
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
    /// Print a held provider package's or CLI release's bill of materials
    /// (CycloneDX 1.5 JSON): the archive's hashes and signing key, the Go
    /// toolchain, and every module its build information lists.
    Bom {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The package's platform (default: this machine's).
        #[arg(long)]
        platform: Option<String>,
        /// Write the document to this file instead of standard output.
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// The provider, as `[hostname/]namespace/type`, or a CLI
        /// release's product: `terraform` or `tofu`.
        source: String,
        /// The version.
        version: String,
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
    /// Accept one advisory against a provider, or one of its versions,
    /// until it expires: rules by advisory do not count it there
    /// meanwhile. Running instances take it up within seconds.
    Accept {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The advisory, by any of its IDs (`GO-…`, `GHSA-…`, `CVE-…`).
        advisory: String,
        /// The provider (`[hostname/]namespace/type`).
        source: String,
        /// The version; every version of the provider when absent.
        version: Option<String>,
        /// Why, kept with the acceptance and shown on the pages.
        #[arg(long)]
        reason: String,
        /// How long it holds (`30d`, `12h`), or until when (RFC 3339,
        /// `2027-01-31T00:00:00Z`).
        #[arg(long)]
        expires: String,
    },
    /// Hand Terraform or OpenTofu the token in a file (their
    /// `credentials_helper` protocol; see docs/identities.md).
    CredentialsHelper(credentials_helper::Args),
    /// The policy: its rules, its cooldown, the versions decided by name
    /// and the advisories accepted.
    Policy {
        /// What to do.
        #[command(subcommand)]
        action: policy::PolicyCommand,
    },
    /// The advisory database: import one (OSV entries), say what is kept,
    /// show a held provider version's advisories.
    Advisories {
        /// What to do.
        #[command(subcommand)]
        action: AdvisoriesCommand,
    },
    /// Provider documentation: fetch what the versions held lack, remove
    /// what no version held lists.
    Docs {
        /// What to do.
        #[command(subcommand)]
        action: DocsCommand,
    },
}

/// `tfmirror docs …`.
#[derive(Debug, Subcommand)]
pub enum DocsCommand {
    /// Fetch, now, the documentation of every provider version the cache
    /// holds an archive of and keeps none of (the daemon does it too,
    /// paced, once started); versions the policy denies are passed over.
    Backfill {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Sweep, now, the documentation the store keeps (the daemon does it
    /// too, every six hours): remove the lists of versions no longer held
    /// and the pages no list names that were written more than a day ago.
    Sweep {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
}

/// `tfmirror advisories …`.
#[derive(Debug, Subcommand)]
pub enum AdvisoriesCommand {
    /// Keep an advisory database in the store: the Go vulnerability
    /// database's bulk zip, an osv.dev zip or a directory of OSV entries;
    /// several are merged into one (an entry of a later one replaces an
    /// earlier one's of the same ID).
    Import {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// The zips or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
    },
    /// Fetch `[advisories] urls` through the upstream client and keep
    /// them as the database (what the daemon does every
    /// `advisories.sync_interval`).
    Sync {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// Say which database is kept: its source, entries and date.
    Status {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
    },
    /// The advisories a held provider version falls under, per platform.
    Show {
        /// Configuration file (TOML).
        #[arg(long, short)]
        config: Option<PathBuf>,
        /// Print JSON instead of lines.
        #[arg(long)]
        json: bool,
        /// The provider, as `[hostname/]namespace/type`.
        source: String,
        /// The version.
        version: String,
    },
}
