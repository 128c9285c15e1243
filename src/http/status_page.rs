//! The status page at `/`, the base URL that Terraform never fetches: what
//! this server is, the exact CLI configuration to use it (the
//! `network_mirror` block, and a `host` block per registry host for
//! modules and the registry facade), how full and how effective the cache
//! is, which providers it holds, a page of [`PROVIDERS_PER_PAGE`] at a
//! time (`/?page=2`), and the first [`MODULES_SHOWN`] module versions. Server-rendered HTML with
//! inline styles and no external assets, so it works inside an air-gapped
//! site. It is built from the cache's index in memory, never from a walk
//! of the store, so its cost does not depend on the cache's size on disk.

use std::fmt::Write;

use http::{Response, StatusCode};

use super::html::escape;
use super::respond::with_type;
use super::{App, Body};

/// How many providers one page lists.
pub const PROVIDERS_PER_PAGE: usize = 100;

/// How many module versions the page lists (`tfmirror ls --modules` lists
/// them all).
pub const MODULES_SHOWN: usize = 200;

/// The scheme and authority clients reach this mirror at:
/// `server.public_url`, else the scheme a trusted proxy forwarded (or the
/// listener's) and the `Host` the client used (or the listen address).
pub fn public_address(app: &App, scheme: Option<&str>, host: Option<&str>) -> (String, String) {
    let cfg = app.mirror.config();
    let public = cfg.server.public_url.as_ref().and_then(|url| {
        let host = url.host_str()?;
        let authority = match url.port() {
            Some(port) => format!("{host}:{port}"),
            None => host.to_owned(),
        };
        Some((url.scheme().to_owned(), authority))
    });
    public.unwrap_or_else(|| {
        let served = if cfg.server.tls { "https" } else { "http" };
        let listen = cfg.server.listen.to_string();
        let authority = host
            .filter(|h| h.len() < 300 && h.bytes().all(|b| b.is_ascii_graphic()))
            .map_or(listen, str::to_owned);
        (scheme.unwrap_or(served).to_owned(), authority)
    })
}

/// Renders the page. `host` is the `Host` the client used, so the CLI
/// block names the server the way this client reaches it.
/// With auth on, the table of cached providers is shown only to a request
/// that carries a valid token (`authorized`). `query` may name a `page`
/// of the table (from 1; out of range means the nearest page).
pub fn page(
    app: &App,
    scheme: Option<&str>,
    host: Option<&str>,
    authorized: bool,
    query: Option<&str>,
) -> Response<Body> {
    let mirror = &app.mirror;
    let (scheme, authority) = public_address(app, scheme, host);
    let (scheme, authority) = (scheme.as_str(), authority.as_str());
    let url = format!("{scheme}://{authority}/");
    let auth_on = app.auth.enabled();
    let wanted = url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .find(|(k, _)| k == "page")
        .and_then(|(_, v)| v.parse::<usize>().ok())
        .unwrap_or(1);
    let table = if auth_on && !authorized {
        crate::mirror::residency::HeldPage::default()
    } else {
        mirror.held_page(wanted, PROVIDERS_PER_PAGE)
    };
    let credentials = if auth_on {
        format!(
            "\n<p>This mirror requires a token. Add a credentials block for its host \
             (with the port, if it is not 443):</p>\n<pre id=\"credentials\">credentials \"{}\" {{\n  token = \"&lt;your token&gt;\"\n}}</pre>\n",
            escape(authority.trim_end_matches(":443"))
        )
    } else {
        String::new()
    };
    let host_blocks = host_blocks(app, scheme, authority);
    let release_lines = release_lines(app, &url, auth_on && !authorized);
    let (bytes, count) = mirror.usage();
    let (hits, lookups) = mirror.metrics().hit_rate();

    let (versions, pages, shown) = (table.versions, table.pages.max(1), table.page.max(1));
    let summary = if auth_on && !authorized {
        String::new()
    } else {
        format!(
            "{} providers, {versions} versions{}",
            table.providers,
            if pages > 1 {
                format!(
                    "; page {shown} of {pages}{}{}",
                    if shown > 1 {
                        format!(" <a href=\"?page={}\" rel=\"prev\">previous</a>", shown - 1)
                    } else {
                        String::new()
                    },
                    if shown < pages {
                        format!(" <a href=\"?page={}\" rel=\"next\">next</a>", shown + 1)
                    } else {
                        String::new()
                    }
                )
            } else {
                String::new()
            }
        )
    };

    let mut html = String::with_capacity(4096);
    let _ = write!(
        html,
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>tfmirror at {host}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<style>
body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#1d2330}}
pre{{background:#f3f4f7;padding:1rem;border-radius:6px;overflow-x:auto}}
table{{border-collapse:collapse;width:100%}}th,td{{text-align:left;padding:.35rem .6rem;border-bottom:1px solid #dde}}
.figures span{{display:inline-block;margin-right:2rem}}
</style></head><body>
<h1>tfmirror</h1>
<p>This server is a caching <strong>provider network mirror</strong> for Terraform and OpenTofu
(version {version}). It fetches providers from their origin registries on first use, checks each
package against its registry's signed SHA256SUMS, and serves it from its cache from then on.</p>
<h2>Use it</h2>
<p>Add this to your CLI configuration (<code>~/.terraformrc</code>, <code>terraform.rc</code> on
Windows, or the file named by <code>TF_CLI_CONFIG_FILE</code>; OpenTofu also reads <code>~/.tofurc</code>):</p>
<pre id="cli-config">provider_installation {{
  network_mirror {{
    url = "{url}"
  }}
}}</pre>{credentials}
{host_blocks}{release_lines}
<h2>Cache</h2>
<p class="figures"><span id="cache-size">{size} in {count} archives</span>
<span id="hit-rate">hit rate {rate} ({hits} of {lookups} lookups since start)</span>
<span id="free-space">{free}</span>
<span id="index-state">{index}</span></p>
<p id="summary">{summary}</p>
<table id="providers"><thead><tr><th>Provider</th><th>Version</th><th>Platforms</th></tr></thead><tbody>
"#,
        host = escape(authority),
        version = env!("CARGO_PKG_VERSION"),
        url = escape(&url),
        size = bytesize::ByteSize(bytes).display().iec(),
        free = free_space(mirror),
        index = index_state(mirror),
        rate = if lookups == 0 {
            "n/a".to_string()
        } else {
            #[allow(clippy::cast_precision_loss)] // a rounded percentage
            let percent = hits as f64 * 100.0 / lookups as f64;
            format!("{percent:.0}%")
        },
    );
    if auth_on && !authorized {
        html.push_str("<tr><td colspan=\"3\">The list of cached providers is shown to requests with a token.</td></tr>\n");
    } else if table.providers == 0 {
        html.push_str("<tr><td colspan=\"3\">Nothing cached yet.</td></tr>\n");
    }
    for (provider, versions) in &table.rows {
        for (version, platforms) in versions {
            let _ = writeln!(
                html,
                "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
                escape(provider),
                escape(version.as_str()),
                escape(&platforms.join(", "))
            );
        }
    }
    html.push_str("</tbody></table>\n");
    modules_table(&mut html, app, auth_on && !authorized);
    held_back_table(&mut html, app, auth_on && !authorized);
    super::keyless_section::keyless_section(&mut html, app, auth_on && !authorized);
    watch_section(&mut html, app, auth_on && !authorized);
    html.push_str("</body></html>\n");
    with_type(
        StatusCode::OK,
        html.into_bytes(),
        "text/html; charset=utf-8",
    )
}

/// What the policy holds back (rules, decisions, the cooldown), and why;
/// a version in its cooldown says when it becomes visible.
fn held_back_table(html: &mut String, app: &App, hidden: bool) {
    html.push_str("<h2>Held back by the policy</h2>\n<table id=\"held-back\"><thead><tr><th>Provider or module</th><th>Version</th><th>Rule</th><th>Why</th></tr></thead><tbody>\n");
    let held = if hidden {
        Vec::new()
    } else {
        app.mirror.held_back()
    };
    if hidden {
        html.push_str("<tr><td colspan=\"4\">What the policy holds back is shown to requests with a token.</td></tr>\n");
    } else if held.is_empty() {
        html.push_str("<tr><td colspan=\"4\">Nothing is held back.</td></tr>\n");
    }
    for denied in held.iter().take(MODULES_SHOWN) {
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&denied.subject),
            escape(&denied.version),
            escape(&denied.rule),
            escape(&denied.reason)
        );
    }
    html.push_str("</tbody></table>\n");
}

/// How many items of a watch pass's stored list and failures the page
/// shows.
pub const WATCH_ITEMS_SHOWN: usize = 50;

/// The watch (`[watch]`): what it watches, when it last ran and what that
/// pass fetched or could not, and when it runs next.
fn watch_section(html: &mut String, app: &App, hidden: bool) {
    html.push_str("<h2>Watch</h2>\n");
    let Some(watch) = &app.watch else {
        html.push_str("<p id=\"watch\">Nothing is watched. A <code>[watch]</code> section in the configuration lists providers, modules and CLI releases whose new versions the mirror fetches before anyone asks.</p>\n");
        return;
    };
    let (providers, modules, releases) = watch.watched();
    let releases = if releases == 0 {
        String::new()
    } else {
        format!(" and {releases} CLI release entries")
    };
    let _ = writeln!(
        html,
        "<p id=\"watch\">{providers} providers and {modules} modules{releases} are watched: their origins are asked for new versions every {}.</p>",
        humantime::format_duration(watch.interval())
    );
    if app.mirror.offline() {
        html.push_str("<p id=\"watch-last\">This mirror is offline: nothing is watched.</p>\n");
        return;
    }
    if hidden {
        html.push_str(
            "<p id=\"watch-last\">What the watch fetched is shown to requests with a token.</p>\n",
        );
        return;
    }
    let status = watch.status();
    let at = |ms: u64| {
        escape(&humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(ms)).to_string())
    };
    let last = match &status.last {
        None => "No pass has finished yet.".to_owned(),
        Some(pass) => format!(
            "Last pass {}: {} stored, {} already cached, {} failed{}.",
            at(pass.finished_ms),
            pass.stored.len(),
            pass.cached,
            pass.failures.len(),
            if pass.failures.is_empty() {
                String::new()
            } else {
                format!(
                    " (tried again sooner; {} failed passes in a row)",
                    status.failed_in_a_row
                )
            }
        ),
    };
    let running = status
        .running_since_ms
        .map(|ms| format!(" A pass is running since {}.", at(ms)))
        .unwrap_or_default();
    let next = status
        .next_ms
        .map(|ms| format!(" Next pass {}.", at(ms)))
        .unwrap_or_default();
    let success = status
        .last_success_ms
        .map(|ms| format!(" Last pass without a failure {}.", at(ms)))
        .unwrap_or_default();
    let _ = writeln!(
        html,
        "<p id=\"watch-last\">{last}{running}{next}{success}</p>"
    );
    let Some(pass) = status.last else { return };
    html.push_str(
        "<table id=\"watch-pass\"><thead><tr><th>Outcome</th><th>What</th></tr></thead><tbody>\n",
    );
    for failure in pass.failures.iter().take(WATCH_ITEMS_SHOWN) {
        let _ = writeln!(html, "<tr><td>failed</td><td>{}</td></tr>", escape(failure));
    }
    for stored in pass.stored.iter().take(WATCH_ITEMS_SHOWN) {
        let _ = writeln!(html, "<tr><td>stored</td><td>{}</td></tr>", escape(stored));
    }
    if pass.failures.is_empty() && pass.stored.is_empty() {
        html.push_str(
            "<tr><td colspan=\"2\">Nothing new: everything watched was cached already.</td></tr>\n",
        );
    }
    html.push_str("</tbody></table>\n");
}

/// The free space of the cache's file system, and whether it is below
/// `cache.min_free_space`.
fn free_space(mirror: &crate::mirror::Mirror) -> String {
    let Some(free) = mirror.free_space() else {
        return String::new();
    };
    let free_text = bytesize::ByteSize(free).display().iec();
    match mirror.room_for(0) {
        Ok(()) => format!("{free_text} free on disk"),
        Err(_) => format!(
            "<strong>{free_text} free on disk, below cache.min_free_space: new archives are refused</strong>"
        ),
    }
}

/// Whether the counts above are the store's: a reconciliation under way,
/// or when the last one ended and what it corrected.
fn index_state(mirror: &crate::mirror::Mirror) -> String {
    let at =
        |ms: u64| humantime::format_rfc3339_seconds(crate::clock::from_unix_ms(ms)).to_string();
    let status = mirror.index_status();
    if let Some((reason, since)) = status.reconciling {
        return format!(
            "index: reconciling with the store since {} ({reason}); nothing is evicted meanwhile",
            at(since)
        );
    }
    match status.last {
        Some(last) if last.corrections.none() => {
            format!("index: agreed with the store at {}", at(last.ended_ms))
        }
        Some(last) => format!(
            "index: reconciled with the store at {} ({} added, {} dropped, {} resized)",
            at(last.ended_ms),
            last.corrections.added,
            last.corrections.dropped,
            last.corrections.resized
        ),
        None => String::new(),
    }
}

/// The cached module versions, with the source each was packaged from.
fn modules_table(html: &mut String, app: &App, hidden: bool) {
    html.push_str("<h2>Modules</h2>\n<table id=\"modules\"><thead><tr><th>Module</th><th>Version</th><th>Source</th></tr></thead><tbody>\n");
    let held = if hidden {
        Vec::new()
    } else {
        app.mirror.held_modules()
    };
    if hidden {
        html.push_str("<tr><td colspan=\"3\">The list of cached modules is shown to requests with a token.</td></tr>\n");
    } else if held.is_empty() {
        html.push_str("<tr><td colspan=\"3\">No module cached yet.</td></tr>\n");
    }
    for pin in held.iter().take(MODULES_SHOWN) {
        let source = match &pin.commit {
            Some(commit) => format!("git {}", commit.get(..12).unwrap_or(commit)),
            None => pin.source_kind.clone(),
        };
        let _ = writeln!(
            html,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            escape(&pin.module.to_string()),
            escape(pin.version.as_str()),
            escape(&source)
        );
    }
    html.push_str("</tbody></table>\n");
    if held.len() > MODULES_SHOWN {
        let _ = writeln!(
            html,
            "<p id=\"modules-more\">and {} more module versions (<code>tfmirror ls --modules</code> lists them all)</p>",
            held.len() - MODULES_SHOWN
        );
    }
}

/// The CLI releases section: ready-to-paste settings for the version
/// managers, for each product `[releases]` serves, and (unless `hidden`)
/// the releases held; empty when none is served.
fn release_lines(app: &App, url: &str, hidden: bool) -> String {
    use crate::address::Product;
    let products = app.mirror.release_state().products();
    if products.is_empty() {
        return String::new();
    }
    let base = url.trim_end_matches('/');
    let mut lines = String::new();
    if products.contains(&Product::Terraform) {
        let _ = writeln!(
            lines,
            "export TFENV_REMOTE={base}   # tenv and tfenv\ntfswitch --mirror {base}/terraform/index.json --mirror-download {base}/terraform\n# hc-install: ApiBaseURL = \"{base}\""
        );
    }
    if products.contains(&Product::Tofu) {
        let _ = writeln!(
            lines,
            "export TOFUENV_REMOTE={base}   # tenv, direct mode\nexport TOFUENV_LIST_MODE=mirror TOFUENV_LIST_URL={base}/tofu/api.json\ntfswitch --product opentofu --mirror {base}/tofu/api.json --mirror-download {base}/opentofu/opentofu/releases/download"
        );
    }
    let held = if hidden {
        String::new()
    } else {
        let releases = app.mirror.held_releases();
        let named: Vec<String> = releases
            .iter()
            .map(|((product, version), files)| {
                let s = if *files == 1 { "" } else { "s" };
                format!("{} {version} ({files} file{s})", product.title())
            })
            .collect();
        format!(
            "<p id=\"releases-held\">Held: {}</p>\n",
            if named.is_empty() {
                "none yet".to_owned()
            } else {
                escape(&named.join(", "))
            }
        )
    };
    format!(
        "\n<h2>CLI releases</h2>\n<p>Version managers install Terraform and OpenTofu from this mirror, each release checked against the vendor's signing key:</p>\n<pre id=\"releases\">{}</pre>\n{held}",
        escape(lines.trim_end())
    )
}

/// The second recipe: a `host` block per registry host the mirror serves,
/// pointing the host's `modules.v1` service at the module registry proxy
/// and its `providers.v1` service at the registry facade.
fn host_blocks(app: &App, scheme: &str, authority: &str) -> String {
    let up = &app.mirror.config().upstream;
    let mut hosts: Vec<String> = up
        .allowed_hosts
        .iter()
        .chain(up.hosts.keys())
        .map(ToString::to_string)
        .collect();
    hosts.sort();
    hosts.dedup();
    let mut out = String::from(
        "<h2>Modules, and complete lock files through the registry protocol</h2>\n\
         <p>Registry modules come through this mirror with a <code>host</code> block that points \
         the registry host's <code>modules.v1</code> service here: the mirror fetches each module's \
         source (git or an archive) once, packages and pins it, and serves it also when the source \
         is unreachable. Add the block below for each registry host your configurations call \
         modules from, beside the <code>provider_installation</code> block above.</p>\n\
         <p>Through the network mirror, Terraform records the hashes of the one platform it \
         installed, and a lock file written on Linux fails on a Mac until \
         <code>tfmirror lock</code> or <code>terraform providers lock</code> completes it. \
         A <code>host</code> block instead points a registry host's <code>providers.v1</code> \
         service at this mirror, which passes the origin's signed checksums through: \
         <code>terraform init</code> checks the signature itself, shows who signed the provider, \
         and writes every platform's hashes. Use one block per registry host. Where the CLI configuration also has a \
         <code>provider_installation</code> block, that block decides: a host block serves \
         only the providers it installs with <code>direct {}</code>.</p>\n",
    );
    if app.auth.enabled() {
        out.push_str(
            "<p>Clients send the credentials they hold for the registry host itself: give \
             this mirror's token as <code>credentials \"&lt;registry host&gt;\"</code>.</p>\n",
        );
    }
    for host in hosts {
        let _ = write!(
            out,
            "<pre id=\"host-{id}\">host \"{host}\" {{\n  services = {{\n    \"modules.v1\"   = \"{modules}\"\n    \"providers.v1\" = \"{providers}\"\n  }}\n}}</pre>\n",
            id = escape(&host),
            host = escape(&host),
            modules = escape(&format!("{scheme}://{authority}/v1/modules/{host}/")),
            providers = escape(&format!("{scheme}://{authority}/v1/providers/{host}/")),
        );
    }
    out
}
