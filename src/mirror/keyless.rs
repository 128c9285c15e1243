//! Keyless provider versions (published without a signing key, accepted
//! where `registry.opentofu.org` is opted in): pinned on first sight,
//! every later answer held to the pin, archives checked against every
//! size and hash the registry reported, and each mismatch counted, logged
//! at error and listed on the status page. An operator's `tfmirror approve
//! --repin` lets the next differing answer replace the pin.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::held::VersionKey;
use super::Mirror;
use crate::address::{ArchiveKey, Provider, Version};
use crate::error::RequestError;
use crate::store::pins::{self, Mismatch, Pins, Settled};
use crate::store::{KeylessPin, PinnedPackage, PolicyDecisions, Repin, VersionRecord};
use crate::verify::Verification;

/// How many mismatches the status page keeps.
const INCIDENTS_KEPT: usize = 50;

/// An answer refused for differing from a keyless pin.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Incident {
    /// When, in milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What differed, naming the provider and version.
    pub what: String,
}

/// The keyless versions' pins as this instance knows them, and the
/// mismatches it saw.
#[derive(Debug, Default)]
pub(super) struct KeylessState {
    pins: Mutex<Pins>,
    incidents: Mutex<VecDeque<Incident>>,
    /// The newest re-pin decision this instance has acted on.
    repins_seen_ms: AtomicU64,
}

impl KeylessState {
    /// The pins the store held at start.
    pub(super) fn new(pins: Vec<KeylessPin>) -> KeylessState {
        let pins = pins
            .into_iter()
            .map(|p| ((p.provider.clone(), p.version.clone()), p))
            .collect();
        KeylessState {
            pins: Mutex::new(pins),
            ..KeylessState::default()
        }
    }

    fn known(&self, provider: &Provider, version: &Version) -> Option<KeylessPin> {
        let pins = self.pins.lock().expect("pins lock");
        pins.get(&(provider.clone(), version.clone())).cloned()
    }

    fn remember(&self, pin: KeylessPin) -> usize {
        let mut pins = self.pins.lock().expect("pins lock");
        pins.insert((pin.provider.clone(), pin.version.clone()), pin);
        pins.len()
    }
}

impl Mirror {
    /// The keyless versions this mirror holds pins for.
    pub fn keyless_versions(&self) -> Vec<KeylessPin> {
        let pins = self.keyless.pins.lock().expect("pins lock");
        pins.values().cloned().collect()
    }

    /// The answers refused for differing from a keyless pin since start,
    /// oldest first.
    pub fn pin_incidents(&self) -> Vec<Incident> {
        let incidents = self.keyless.incidents.lock().expect("incidents lock");
        incidents.iter().cloned().collect()
    }

    /// How a version whose record is in memory was verified.
    pub async fn held_verification(
        &self,
        provider: &Provider,
        version: &Version,
    ) -> Option<Verification> {
        let key = VersionKey(provider, version);
        let held = self.providers.versions.get(&key).await?;
        Some(held.value.verification())
    }

    /// The keyless versions of `provider` this mirror holds pins for.
    pub(super) fn keyless_of(&self, provider: &Provider) -> Vec<Version> {
        let pins = self.keyless.pins.lock().expect("pins lock");
        pins.keys()
            .filter(|(p, _)| p == provider)
            .map(|(_, v)| v.clone())
            .collect()
    }

    /// Whether an operator allowed a re-pin of `record`'s keyless version
    /// that has not happened yet.
    pub(super) fn repin_pending(&self, record: &VersionRecord) -> bool {
        record.verification() == Verification::Keyless
            && self
                .keyless
                .known(&record.provider, &record.version)
                .is_some_and(|p| p.repin.is_some())
    }

    /// Pins a keyless version on first sight (with one warning), or holds
    /// it to its pin: an answer that differs is refused, unless an
    /// operator allowed a re-pin, which it then carries out.
    pub(super) async fn pin_keyless(&self, record: &VersionRecord) -> Result<(), RequestError> {
        let now = self.clock.unix_ms();
        let Some(seen) = pins::of_record(record, now) else {
            return Ok(());
        };
        let stored = pins::read(self.store.as_ref(), &record.provider, &record.version)
            .await
            .map_err(|e| self.store_failed("reading a keyless pin", &e))?;
        let settled = match pins::settle(stored, seen) {
            Ok(settled) => settled,
            Err(mismatch) => return Err(self.pin_mismatch(&mismatch)),
        };
        match &settled {
            Settled::Same(_) => {
                self.keyless.remember(settled.pin().clone());
                return Ok(());
            }
            Settled::First(pin) => {
                tracing::warn!(provider = %pin.provider, version = %pin.version, sums_sha256 = %pin.sums_sha256, "Signature validation was skipped due to the registry not containing GPG keys for this provider; tfmirror checked its SHA256SUMS, shasum, sizes, hashes and signature file instead, and pinned this version on first sight (keyless)");
            }
            Settled::Extended(_) => {}
            Settled::Repinned { old, new } => self.repinned(old, new).await,
        }
        pins::write(self.store.as_ref(), settled.pin())
            .await
            .map_err(|e| self.store_failed("storing a keyless pin", &e))?;
        let count = self.keyless.remember(settled.pin().clone());
        self.metrics.set_keyless_versions(count);
        Ok(())
    }

    /// Carries out an approved re-pin: the archives the new pin no longer
    /// vouches for leave the cache.
    async fn repinned(&self, old: &KeylessPin, new: &KeylessPin) {
        tracing::warn!(provider = %old.provider, version = %old.version, old = %old.sums_sha256, new = %new.sums_sha256, reason = ?new.replaced.last().map(|r| &r.reason), "keyless version re-pinned, as an operator approved");
        for (platform, was) in &old.packages {
            if new
                .packages
                .get(platform)
                .is_some_and(|now| now.sha256 == was.sha256)
            {
                continue;
            }
            let key = ArchiveKey::new(&old.provider, &old.version, platform);
            if let Err(e) = self.store.remove_archive(&key).await {
                tracing::warn!(archive = %key, error = %e, "could not remove an archive the re-pin replaced");
            }
            self.residency.forget(&key);
            self.providers.forget_archive(&key).await;
        }
    }

    /// Counts, logs and lists an answer that differs from a keyless pin;
    /// returns the refusal.
    pub(super) fn pin_mismatch(&self, mismatch: &Mismatch) -> RequestError {
        self.metrics.keyless_pin_mismatch();
        tracing::error!(provider = %mismatch.provider, version = %mismatch.version, what = %mismatch.what, "a keyless provider version differs from its pin; refused");
        let mut incidents = self.keyless.incidents.lock().expect("incidents lock");
        if incidents.len() == INCIDENTS_KEPT {
            incidents.pop_front();
        }
        incidents.push_back(Incident {
            at_ms: self.clock.unix_ms(),
            what: mismatch.to_string(),
        });
        RequestError::PinMismatch(format!("{mismatch}; nothing was stored"))
    }

    /// Checks an archive of a keyless version, downloaded to `staged`
    /// with this SHA-256 and size, against its pinned checksum, then
    /// against every size and hash its record and pin hold.
    pub(super) async fn check_keyless_download(
        &self,
        record: &VersionRecord,
        key: &ArchiveKey,
        staged: &std::path::Path,
        sha256: &str,
        size: u64,
    ) -> Result<(), RequestError> {
        let pinned = record
            .packages
            .get(&key.platform)
            .map(|p| p.sha256.as_str());
        if pinned != Some(sha256) {
            return Err(self.pin_mismatch(&Mismatch {
                provider: key.provider.to_string(),
                version: key.version.to_string(),
                what: format!(
                    "{}: the downloaded archive's SHA-256 {sha256} is not the pinned {}",
                    key.platform,
                    pinned.unwrap_or("(none)")
                ),
            }));
        }
        let path = staged.to_path_buf();
        let h1 = tokio::task::spawn_blocking(move || crate::store::h1_of_file(&path))
            .await
            .map_err(|e| RequestError::Internal(format!("hashing an archive: {e}")))?
            .map_err(|e| {
                RequestError::VerificationFailed(format!("{key}: {e}; nothing was stored"))
            })?;
        self.check_keyless_archive(record, key, size, &h1).await
    }

    /// Checks an archive of a keyless version against every size and hash
    /// its record holds (the registry's `packages` report) and its pin
    /// (first sight, or another instance's download); the pin learns the
    /// size and `h1:` it lacked.
    async fn check_keyless_archive(
        &self,
        record: &VersionRecord,
        key: &ArchiveKey,
        size: u64,
        h1: &str,
    ) -> Result<(), RequestError> {
        let Some(pkg) = record.packages.get(&key.platform) else {
            return Ok(());
        };
        let now = PinnedPackage {
            filename: pkg.filename.clone(),
            sha256: pkg.sha256.clone(),
            size: Some(size),
            h1: Some(h1.to_owned()),
        };
        let reported = PinnedPackage {
            size: pkg.size,
            h1: pkg.reported_h1.clone(),
            ..now.clone()
        };
        // What the registry reported with this very answer first: a
        // contradiction there is the registry's, not a re-publication.
        if let Err(what) = pins::check_package(&key.platform, &reported, &now) {
            return Err(RequestError::VerificationFailed(format!(
                "{key}: keyless, and the registry's packages field does not match the archive ({what}); nothing was stored"
            )));
        }
        let pinned = pins::read(self.store.as_ref(), &key.provider, &key.version)
            .await
            .map_err(|e| self.store_failed("reading a keyless pin", &e))?;
        if let Some(was) = pinned.as_ref().and_then(|p| p.packages.get(&key.platform)) {
            if let Err(what) = pins::check_package(&key.platform, was, &now) {
                return Err(self.pin_mismatch(&Mismatch {
                    provider: key.provider.to_string(),
                    version: key.version.to_string(),
                    what,
                }));
            }
        }
        if let Some(mut pin) = pinned {
            let entry = pin.packages.entry(key.platform.clone()).or_insert(now);
            if entry.size.is_none() || entry.h1.is_none() {
                entry.size = Some(size);
                entry.h1 = Some(h1.to_owned());
                if let Err(e) = pins::write(self.store.as_ref(), &pin).await {
                    tracing::warn!(archive = %key, error = %e, "could not add the archive's size and h1: to its keyless pin");
                }
                self.keyless.remember(pin);
            }
        }
        Ok(())
    }

    /// Acts on re-pins approved since this instance last looked
    /// (`tfmirror approve --repin` writes one with its decision): the pin
    /// is read again, and the version's record and archives are no longer
    /// taken from memory.
    pub(super) async fn take_up_repins(&self, decisions: &PolicyDecisions) {
        let seen = self.keyless.repins_seen_ms.load(Ordering::Relaxed);
        let mut newest = seen;
        for decided in decisions
            .decisions
            .iter()
            .filter(|d| d.repin && d.at_ms > seen)
        {
            newest = newest.max(decided.at_ms);
            let Ok(provider) = Provider::from_source(&decided.subject) else {
                continue;
            };
            match pins::read(self.store.as_ref(), &provider, &decided.version).await {
                Ok(Some(pin)) => {
                    self.keyless.remember(pin);
                }
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(%provider, version = %decided.version, error = %e, "cannot read the keyless pin of an approved re-pin");
                    continue;
                }
            }
            let key = (provider, decided.version.clone());
            self.providers.versions.invalidate(&key).await;
            self.providers.rendered_versions.invalidate(&key).await;
        }
        self.keyless.repins_seen_ms.store(newest, Ordering::Relaxed);
    }
}

/// A re-pin an operator allows now.
pub fn repin_now(reason: &str, at_ms: u64) -> Repin {
    Repin {
        reason: reason.to_owned(),
        at_ms,
        replaced_sums_sha256: String::new(),
    }
}
