//! `tfmirror check-upstream HOST [ITEM…]`: asks an origin registry what
//! the mirror would ask it, step by step, and prints what each step found,
//! or exactly what is unusable and why (the field, the URL, the decoder's
//! message). Operators run it before users find out: after adding a
//! registry to `upstream.allowed_hosts`, or when installs through the
//! mirror fail. Nothing is stored.
//!
//! Steps: service discovery; for each provider (`namespace/type`), its
//! version list, the newest version's download answer, the signature over
//! its SHA256SUMS (by the configured trust rules) and the archive's
//! checksum there, and the first bytes of the archive; for each module
//! (`namespace/name/system`), its version list and the newest version's
//! download location.

use std::fmt::Display;

use http_body_util::BodyExt;
use url::Url;

use crate::address::{Hostname, Module, Platform, Provider, Version};
use crate::config::Config;
use crate::module_source::source;
use crate::upstream::{self, Client, Origin, UpstreamError};
use crate::verify::{Sha256Sums, TrustPolicy};

/// The bytes every zip archive starts with.
const ZIP_MAGIC: &[u8] = b"PK\x03\x04";

/// Runs the checks and prints them; fails when a step failed.
pub fn command(
    config: &Config,
    host: &str,
    items: &[String],
    platform: &Platform,
) -> anyhow::Result<()> {
    let host = Hostname::parse(host)?;
    let items = items
        .iter()
        .map(|item| Item::parse(&host, item))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let report = super::runtime()?.block_on(check(config, &host, &items, platform))?;
    if report.failed > 0 {
        anyhow::bail!(
            "{} of {} checks of {host} failed",
            report.failed,
            report.steps
        );
    }
    println!("all {} checks of {host} passed", report.steps);
    Ok(())
}

/// What to check besides discovery.
enum Item {
    Provider(Provider),
    Module(Module),
}

impl Item {
    /// `namespace/type` is a provider, `namespace/name/system` a module,
    /// both on `host`.
    fn parse(host: &Hostname, item: &str) -> anyhow::Result<Item> {
        match item.split('/').count() {
            2 => Ok(Item::Provider(Provider::from_source(&format!(
                "{host}/{item}"
            ))?)),
            3 => Ok(Item::Module(
                Module::from_source(&format!("{host}/{item}"))?.0,
            )),
            _ => anyhow::bail!(
                "{item:?}: expected a provider (namespace/type) or a module (namespace/name/system)"
            ),
        }
    }
}

/// The tally, and the printing of each step.
#[derive(Default)]
struct Report {
    steps: usize,
    failed: usize,
}

impl Report {
    /// Prints one step's outcome; the value when it passed.
    fn step<T, E: Display>(&mut self, name: &str, outcome: Result<(T, String), E>) -> Option<T> {
        self.steps += 1;
        match outcome {
            Ok((value, found)) => {
                println!("  {name:<10} ok      {found}");
                Some(value)
            }
            Err(e) => {
                self.failed += 1;
                println!("  {name:<10} FAILED  {e}");
                None
            }
        }
    }
}

async fn check(
    config: &Config,
    host: &Hostname,
    items: &[Item],
    platform: &Platform,
) -> anyhow::Result<Report> {
    let origin = Origin::new(config, std::sync::Arc::new(crate::metrics::Metrics::new()))?;
    let Origin {
        client,
        credentials,
        discovery,
    } = &origin;
    let trust = config.trust_policy()?;
    let token = credentials.token(host);
    let mut report = Report::default();
    if !config.upstream.allowed_hosts.contains(host) {
        println!("note: {host} is not in upstream.allowed_hosts; the mirror refuses its providers and modules until it is");
    }
    println!("{host}");
    // A service counts when an item needs it; with no items, when it is
    // offered (or when neither is).
    let needs = |service: &str| {
        items.iter().any(|i| match i {
            Item::Provider(_) => service == upstream::discovery::PROVIDERS_V1,
            Item::Module(_) => service == upstream::discovery::MODULES_V1,
        })
    };
    let found = [
        (
            upstream::discovery::PROVIDERS_V1,
            discovery.providers_base(host).await,
        ),
        (
            upstream::discovery::MODULES_V1,
            discovery.modules_base(host).await,
        ),
    ];
    let none_offered = found.iter().all(|(_, f)| f.is_err());
    let mut bases = Vec::new();
    for (service, base) in found {
        let counts = needs(service) || (items.is_empty() && (base.is_ok() || none_offered));
        let base = base.map(|b| ((*b).clone(), format!("{service} at {b}")));
        match base {
            Err(e) if !counts => println!("  discovery  -       {service}: not offered ({e})"),
            base => bases.push((service, report.step("discovery", base))),
        }
    }
    let base_of = |service: &str| {
        bases
            .iter()
            .find(|(s, _)| *s == service)
            .and_then(|(_, b)| b.clone())
    };
    for item in items {
        match item {
            Item::Provider(provider) => {
                println!("provider {}/{}", provider.namespace, provider.kind);
                if let Some(base) = base_of(upstream::discovery::PROVIDERS_V1) {
                    let checks = ProviderChecks {
                        client,
                        trust: &trust,
                        base: &base,
                        token,
                    };
                    checks.run(&mut report, provider, platform).await;
                }
            }
            Item::Module(module) => {
                println!(
                    "module {}/{}/{}",
                    module.namespace, module.name, module.system
                );
                if let Some(base) = base_of(upstream::discovery::MODULES_V1) {
                    check_module(&mut report, client, &base, token, module).await;
                }
            }
        }
    }
    Ok(report)
}

/// What the provider steps share.
struct ProviderChecks<'a> {
    client: &'a Client,
    trust: &'a TrustPolicy,
    base: &'a Url,
    token: Option<&'a str>,
}

impl ProviderChecks<'_> {
    async fn run(&self, report: &mut Report, provider: &Provider, platform: &Platform) {
        let listed = upstream::registry::versions(self.client, self.base, self.token, provider)
            .await
            .map(|listed| listed.usable(provider))
            .map_err(|e| e.to_string())
            .and_then(|usable| {
                let (version, platforms) = usable
                    .iter()
                    .next_back()
                    .ok_or_else(|| "the registry lists no usable version".to_owned())?;
                let found = format!(
                    "{} versions, newest {version} for {}",
                    usable.len(),
                    names(platforms)
                );
                Ok(((version.clone(), platforms.clone()), found))
            });
        let Some((version, platforms)) = report.step("versions", listed) else {
            return;
        };
        // The platform asked for, or the version's first.
        let platform = if platforms.is_empty() || platforms.contains(platform) {
            platform.clone()
        } else {
            platforms[0].clone()
        };
        let answer = upstream::registry::package(
            self.client,
            self.base,
            self.token,
            provider,
            &version,
            &platform,
        )
        .await
        .map(|(pkg, url)| {
            let found = format!("{url}: {} for {platform}", pkg.filename);
            ((pkg, url), found)
        });
        let Some((pkg, answer_url)) = report.step("download", answer) else {
            return;
        };
        let resolve = |field: &str, value: &str| {
            answer_url
                .join(value)
                .map_err(|e| format!("{answer_url}: field `{field}` {value:?} is not a URL: {e}"))
        };
        let signed = self.signature(provider, &pkg, &resolve).await;
        let Some(sums) = report.step("signature", signed) else {
            return;
        };
        let listed = match sums.get(&pkg.filename) {
            Some(sum) if sum.eq_ignore_ascii_case(&pkg.shasum) => Ok((
                (),
                format!(
                    "the signed SHA256SUMS lists {} with the registry's shasum",
                    pkg.filename
                ),
            )),
            Some(sum) => Err(format!(
                "the registry's shasum {} for {} differs from the signed SHA256SUMS ({sum})",
                pkg.shasum, pkg.filename
            )),
            None => Err(format!(
                "the signed SHA256SUMS has no entry for {}",
                pkg.filename
            )),
        };
        report.step("checksum", listed);
        let archive = match resolve("download_url", &pkg.download_url) {
            Ok(url) => first_bytes(self.client, &url).await,
            Err(e) => Err(e),
        };
        report.step("archive", archive);
    }

    /// Fetches SHA256SUMS and its signature and checks the signature by the
    /// trust rules; the parsed document when it holds.
    async fn signature(
        &self,
        provider: &Provider,
        pkg: &upstream::registry::PackageResponse,
        resolve: &dyn Fn(&str, &str) -> Result<Url, String>,
    ) -> Result<(Sha256Sums, String), String> {
        let sums_url = resolve("shasums_url", &pkg.shasums_url)?;
        let sig_url = resolve("shasums_signature_url", &pkg.shasums_signature_url)?;
        let (sums, sig) = tokio::join!(
            self.client.get_bytes(&sums_url, None),
            self.client.get_bytes(&sig_url, None)
        );
        let (sums, _) = sums.map_err(|e| e.to_string())?;
        let (sig, _) = sig.map_err(|e| e.to_string())?;
        let keys: Vec<String> = pkg
            .signing_keys
            .gpg_public_keys
            .iter()
            .map(|k| k.ascii_armor.clone())
            .collect();
        let vouched = self
            .trust
            .check(provider, &sums, &sig, &keys)
            .map_err(|e| {
                format!(
                    "{sums_url}: {e} (signature {sig_url}, {} key(s) listed)",
                    keys.len()
                )
            })?;
        let parsed = Sha256Sums::parse(&sums).map_err(|e| format!("{sums_url}: {e}"))?;
        Ok((
            parsed,
            format!(
                "{sums_url} {}",
                vouched.verification.describe(&vouched.key_id)
            ),
        ))
    }
}

/// The first bytes of an archive: a zip's signature, with the size the
/// download host announces. The rest is not fetched.
async fn first_bytes(client: &Client, url: &Url) -> Result<((), String), String> {
    let (resp, final_url) = client.get(url, None).await.map_err(|e| e.to_string())?;
    let announced = resp
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .map_or_else(
            || "no size announced".to_owned(),
            |n| format!("{n} bytes announced"),
        );
    let mut body = resp.into_body();
    let mut head: Vec<u8> = Vec::new();
    while head.len() < ZIP_MAGIC.len() {
        match body.frame().await {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    head.extend_from_slice(data);
                }
            }
            Some(Err(e)) => return Err(format!("{final_url}: reading the archive failed: {e}")),
            None => break,
        }
    }
    if head.starts_with(ZIP_MAGIC) {
        Ok(((), format!("{final_url}: a zip archive, {announced}")))
    } else {
        Err(format!(
            "{final_url}: not a zip archive: it begins {:?}",
            String::from_utf8_lossy(&head[..head.len().min(32)])
        ))
    }
}

async fn check_module(
    report: &mut Report,
    client: &Client,
    base: &Url,
    token: Option<&str>,
    module: &Module,
) {
    let listed = upstream::module_registry::versions(client, base, token, module)
        .await
        .map_err(|e| e.to_string())
        .and_then(|versions| {
            let newest: Version = versions
                .last()
                .cloned()
                .ok_or_else(|| "the registry lists no usable version".to_owned())?;
            let found = format!("{} versions, newest {newest}", versions.len());
            Ok((newest, found))
        });
    let Some(version) = report.step("versions", listed) else {
        return;
    };
    let located = upstream::module_registry::location(client, base, token, module, &version)
        .await
        .map_err(|e: UpstreamError| e.to_string())
        .and_then(|(given, at)| match source::parse(&given, &at) {
            Ok(location) => Ok((
                (),
                format!(
                    "{version}: {given} ({} source at {})",
                    location.source.kind(),
                    location.source.url()
                ),
            )),
            Err(e) => Err(format!("{at}: {e}")),
        });
    report.step("location", located);
}

/// Platform names, for a line.
fn names(platforms: &[Platform]) -> String {
    if platforms.is_empty() {
        return "no platforms listed".into();
    }
    let shown: Vec<String> = platforms.iter().take(6).map(ToString::to_string).collect();
    let more = platforms.len().saturating_sub(shown.len());
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}
