//! An issuer's signing keys: from its discovery document and JSON Web Key
//! Set, fetched through the upstream client, kept, and fetched again when
//! they are old or a token names a key ID not among them; the last good
//! keys stay in force while the issuer is unreachable. Or from a file
//! (`keys_file`), re-read on SIGHUP.
//!
//! Every fetch, whatever asked for it (a token naming an unknown key, old
//! keys, a sign-in that needs the issuer's endpoints), is one at a time and
//! at most once per `keys_refetch_interval`: while an issuer is
//! unreachable, no caller can make the mirror ask it more often than that.
//!
//! Only public keys for signatures are taken: a symmetric (`oct`) key or a
//! key marked for encryption is left out, whatever the set holds.

use std::path::PathBuf;
use std::sync::{Arc, RwLock};

use anyhow::Context;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk};
use jsonwebtoken::DecodingKey;
use serde_json::Value;
use url::Url;

use crate::clock::SharedClock;
use crate::config::OidcIssuerConfig;
use crate::metrics::Metrics;
use crate::upstream::Client;

/// One public key of an issuer.
pub struct Key {
    /// Its `kid`, when the set names one.
    pub kid: Option<String>,
    /// The algorithm the set ties it to (`alg`), if any.
    pub alg: Option<String>,
    /// The algorithms a key of its type and curve can verify.
    pub fits: &'static [&'static str],
    /// The key, ready to verify with.
    pub key: DecodingKey,
}

impl Key {
    /// Whether this key may verify a signature made with `alg`.
    pub fn verifies(&self, alg: &str) -> bool {
        self.fits.contains(&alg) && self.alg.as_deref().is_none_or(|a| a == alg)
    }
}

/// Where an issuer's endpoints are, from its discovery document.
#[derive(Debug, Clone, Default)]
pub struct Endpoints {
    /// Whether they were read from a discovery document (else: not yet).
    pub read: bool,
    /// `jwks_uri`.
    pub jwks: Option<Url>,
    /// `authorization_endpoint`, for people signing in.
    pub authorization: Option<Url>,
    /// `token_endpoint`, for people signing in.
    pub token: Option<Url>,
    /// `userinfo_endpoint`: the claims of a person the ID token lacks.
    pub userinfo: Option<Url>,
    /// `claims_parameter_supported`: whether the issuer takes the
    /// `claims` request parameter.
    pub claims_parameter: bool,
}

/// The keys in force and when they were taken.
#[derive(Default)]
struct Held {
    keys: Arc<Vec<Key>>,
    /// When the keys were last fetched or read (seconds, by the clock).
    taken_at: Option<u64>,
    /// When a fetch was last begun, for the refetch limit.
    tried_at: Option<u64>,
    endpoints: Endpoints,
}

/// What a lookup of keys found.
pub enum Lookup {
    /// Keys that may verify the token.
    Found(Vec<usize>, Arc<Vec<Key>>),
    /// The keys must be fetched first (none yet, too old, or the key ID is
    /// unknown and a refetch is allowed).
    Fetch,
    /// No key fits, and no refetch is allowed now.
    Unknown,
}

/// An issuer's keys.
pub struct Keys {
    /// The issuer's name, for the metrics.
    name: String,
    issuer: Url,
    file: Option<PathBuf>,
    max_age: u64,
    refetch_every: u64,
    client: Option<Client>,
    clock: SharedClock,
    metrics: Option<Arc<Metrics>>,
    held: RwLock<Held>,
    /// One fetch at a time: requests that need keys wait for it.
    fetching: tokio::sync::Mutex<()>,
}

impl Keys {
    /// The keys of `config`'s issuer, read now from its file if it has
    /// one; fetched on first use otherwise, through `client`, each fetch
    /// counted in `metrics`.
    pub fn new(
        config: &OidcIssuerConfig,
        client: Option<Client>,
        clock: SharedClock,
        metrics: Option<Arc<Metrics>>,
    ) -> anyhow::Result<Keys> {
        if config.keys_file.is_none() && client.is_none() {
            anyhow::bail!(
                "auth.oidc \"{}\": no upstream client to fetch keys with; set keys_file",
                config.name
            );
        }
        let keys = Keys {
            name: config.name.clone(),
            issuer: config.issuer.clone(),
            file: config.keys_file.clone(),
            max_age: config.keys_max_age.as_secs(),
            refetch_every: config.keys_refetch_interval.as_secs(),
            client,
            clock,
            metrics,
            held: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
        };
        keys.reload_file()?;
        Ok(keys)
    }

    /// Re-reads the keys file, if the issuer has one; on error the keys in
    /// force stay.
    pub fn reload_file(&self) -> anyhow::Result<usize> {
        let Some(path) = &self.file else {
            return Ok(0);
        };
        let text = std::fs::read(path)
            .with_context(|| format!("reading the keys file {}", path.display()))?;
        let set: Value = serde_json::from_slice(&text)
            .with_context(|| format!("the keys file {} is not JSON", path.display()))?;
        let keys =
            read_set(&set).with_context(|| format!("reading the keys file {}", path.display()))?;
        let n = keys.len();
        let mut held = self.held.write().expect("keys lock");
        held.keys = Arc::new(keys);
        held.taken_at = Some(self.clock.unix_secs());
        Ok(n)
    }

    /// The keys that may verify a token signed with `alg` under `kid`.
    pub fn lookup(&self, kid: Option<&str>, alg: &str) -> Lookup {
        let now = self.clock.unix_secs();
        let held = self.held.read().expect("keys lock");
        let from_file = self.file.is_some();
        let fresh = held
            .taken_at
            .is_some_and(|t| from_file || now.saturating_sub(t) < self.max_age);
        let may_refetch = !from_file
            && held
                .tried_at
                .is_none_or(|t| now.saturating_sub(t) >= self.refetch_every);
        if !fresh && may_refetch {
            return Lookup::Fetch;
        }
        let found: Vec<usize> = (held.keys.iter().enumerate())
            .filter(|(_, k)| k.verifies(alg) && (kid.is_none() || k.kid.as_deref() == kid))
            .map(|(i, _)| i)
            .collect();
        match (found.is_empty(), may_refetch) {
            (false, _) => Lookup::Found(found, held.keys.clone()),
            (true, true) => Lookup::Fetch,
            (true, false) => Lookup::Unknown,
        }
    }

    /// Whether any key is held (none: the issuer was never reached and has
    /// no keys file).
    pub fn held_any(&self) -> bool {
        !self.held.read().expect("keys lock").keys.is_empty()
    }

    /// The issuer's endpoints, fetching its discovery document (and its
    /// keys) if they are not known yet: at most once per
    /// `keys_refetch_interval`, like every fetch, so that sign-ins begun
    /// while the issuer is unreachable do not each ask it.
    pub async fn endpoints(&self) -> anyhow::Result<Endpoints> {
        if let Some(known) = self.known_endpoints() {
            return Ok(known);
        }
        if self.client.is_none() {
            anyhow::bail!(
                "the issuer's endpoints are not known: it has a keys_file and no upstream client"
            );
        }
        let fetched = self.refetch().await;
        if let Some(known) = self.known_endpoints() {
            return Ok(known);
        }
        fetched?;
        let tried = self.held.read().expect("keys lock").tried_at;
        let ago = tried.map_or(0, |t| self.clock.unix_secs().saturating_sub(t));
        anyhow::bail!(
            "the issuer could not be reached {ago} s ago; it is asked again {} s after that",
            self.refetch_every
        )
    }

    /// The endpoints, once a discovery document was read.
    fn known_endpoints(&self) -> Option<Endpoints> {
        let held = self.held.read().expect("keys lock");
        held.endpoints.read.then(|| held.endpoints.clone())
    }

    /// Fetches the keys again, unless another request just did or the
    /// refetch limit holds. The keys in force stay when the fetch fails.
    pub async fn refetch(&self) -> anyhow::Result<()> {
        let _one = self.fetching.lock().await;
        let now = self.clock.unix_secs();
        {
            let mut held = self.held.write().expect("keys lock");
            if held
                .tried_at
                .is_some_and(|t| now.saturating_sub(t) < self.refetch_every)
            {
                self.count("backed_off");
                return Ok(());
            }
            held.tried_at = Some(now);
        }
        let (keys, endpoints) = match self.fetch().await {
            Ok(fetched) => fetched,
            Err(e) => {
                self.count("failed");
                let kept = self.held.read().expect("keys lock").keys.len();
                tracing::warn!(issuer = %self.issuer, kept, error = %format!("{e:#}"), "the issuer's keys could not be fetched; the last good keys stay in force");
                return Err(e);
            }
        };
        self.count("fetched");
        let mut held = self.held.write().expect("keys lock");
        if let Some(keys) = keys {
            tracing::info!(issuer = %self.issuer, keys = keys.len(), "fetched the issuer's keys");
            held.keys = Arc::new(keys);
            held.taken_at = Some(now);
        }
        held.endpoints = endpoints;
        Ok(())
    }

    fn count(&self, outcome: &'static str) {
        if let Some(metrics) = &self.metrics {
            metrics.oidc_key_fetch(&self.name, outcome);
        }
    }

    async fn discover(&self) -> anyhow::Result<Endpoints> {
        let client = self.client.as_ref().context("no upstream client")?;
        let url = discovery_url(&self.issuer)?;
        let (doc, _, _) = client.get_document(&url, None).await?;
        let named = doc.get("issuer").and_then(Value::as_str).unwrap_or("");
        if !same_issuer(named, self.issuer.as_str()) {
            anyhow::bail!("{url}: issuer is {named:?}, not {}", self.issuer);
        }
        let endpoint = |field: &str| -> anyhow::Result<Option<Url>> {
            match doc.get(field).and_then(Value::as_str) {
                None | Some("") => Ok(None),
                Some(s) => Url::parse(s)
                    .map(Some)
                    .with_context(|| format!("{url}: {field} {s:?} is not a URL")),
            }
        };
        Ok(Endpoints {
            read: true,
            jwks: endpoint("jwks_uri")?,
            authorization: endpoint("authorization_endpoint")?,
            token: endpoint("token_endpoint")?,
            userinfo: endpoint("userinfo_endpoint")?,
            // Go's decoder would take a null as false; so does this.
            claims_parameter: doc.get("claims_parameter_supported") == Some(&Value::Bool(true)),
        })
    }

    /// The issuer's endpoints, and its keys unless they come from a file
    /// (whose keys stay in force: only the sign-in's endpoints are read).
    async fn fetch(&self) -> anyhow::Result<(Option<Vec<Key>>, Endpoints)> {
        let client = self.client.as_ref().context("no upstream client")?;
        let endpoints = self.discover().await?;
        if self.file.is_some() {
            return Ok((None, endpoints));
        }
        let jwks = endpoints
            .jwks
            .clone()
            .context("the discovery document names no jwks_uri")?;
        let (set, _, _) = client.get_document(&jwks, None).await?;
        let keys = read_set(&set).with_context(|| format!("reading {jwks}"))?;
        Ok((Some(keys), endpoints))
    }
}

/// `<issuer>/.well-known/openid-configuration`.
pub fn discovery_url(issuer: &Url) -> anyhow::Result<Url> {
    let base = issuer.as_str().trim_end_matches('/');
    Url::parse(&format!("{base}/.well-known/openid-configuration"))
        .with_context(|| format!("the issuer {issuer} gives no discovery URL"))
}

/// Whether two spellings name the same issuer (a trailing `/` aside,
/// which URL parsing adds to a bare host).
pub fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The signature keys of a JSON Web Key Set (`{"keys": [...]}`). Keys this
/// mirror cannot use (another type, for encryption, symmetric) are left
/// out; a set with none left is an error.
pub fn read_set(set: &Value) -> anyhow::Result<Vec<Key>> {
    let Some(listed) = set.get("keys").and_then(Value::as_array) else {
        anyhow::bail!("keys: not a JSON Web Key Set (no \"keys\" list)");
    };
    let mut keys = Vec::new();
    for entry in listed {
        let text = |f: &str| entry.get(f).and_then(Value::as_str).map(str::to_owned);
        if text("use").is_some_and(|u| u != "sig") || text("kty").as_deref() == Some("oct") {
            continue;
        }
        let Ok(jwk) = serde_json::from_value::<Jwk>(entry.clone()) else {
            tracing::debug!(kid = ?text("kid"), "left out a key this mirror cannot read");
            continue;
        };
        let fits: &'static [&'static str] = match &jwk.algorithm {
            AlgorithmParameters::RSA(_) => &["RS256", "RS384", "RS512", "PS256", "PS384", "PS512"],
            AlgorithmParameters::EllipticCurve(p) => match p.curve {
                EllipticCurve::P256 => &["ES256"],
                EllipticCurve::P384 => &["ES384"],
                _ => continue,
            },
            AlgorithmParameters::OctetKeyPair(p) if p.curve == EllipticCurve::Ed25519 => &["EdDSA"],
            _ => continue,
        };
        let Ok(key) = DecodingKey::from_jwk(&jwk) else {
            continue;
        };
        keys.push(Key {
            kid: text("kid"),
            alg: text("alg"),
            fits,
            key,
        });
    }
    if keys.is_empty() {
        anyhow::bail!("keys: the set holds no public key for signatures");
    }
    Ok(keys)
}
