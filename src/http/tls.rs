//! The server's TLS identity: the configured certificate and key, or one
//! generated on first start.
//!
//! The generated identity is a small local certificate authority plus a
//! server certificate it issued for `localhost`, `127.0.0.1`, `::1` and
//! `server.hostnames`. Both are kept under `<data_dir>/tls/` and reused on
//! restart; when the names change, a new server certificate is issued by the
//! same authority, so clients that trust `ca.pem` keep working.

use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use anyhow::{bail, Context};
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
    KeyUsagePurpose,
};
use rustls::server::{ClientHello, ResolvesServerCert};
use rustls::sign::CertifiedKey;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

use crate::config::ServerConfig;
use crate::store::atomic;

/// Where a generated identity lives.
#[derive(Debug, Clone)]
pub struct GeneratedPaths {
    /// The local authority's certificate: what clients must trust.
    pub ca_cert: PathBuf,
    /// The server certificate.
    pub cert: PathBuf,
    /// The server certificate's private key.
    pub key: PathBuf,
}

impl GeneratedPaths {
    fn new(data_dir: &Path) -> Self {
        let dir = data_dir.join("tls");
        GeneratedPaths {
            ca_cert: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }
    }
}

/// The server's TLS settings, with a certificate that can be reloaded from
/// its files while the server runs.
pub struct ServerTls {
    /// The rustls configuration to accept connections with.
    pub config: Arc<rustls::ServerConfig>,
    /// Where the generated identity is, when none was configured.
    pub generated: Option<GeneratedPaths>,
    resolver: Arc<CertResolver>,
}

impl ServerTls {
    /// When the certificate in use stops being valid, in seconds since the
    /// Unix epoch (`None` when it cannot be read).
    pub fn not_after(&self) -> Option<i64> {
        let current = self
            .resolver
            .current
            .read()
            .expect("certificate lock")
            .clone();
        let leaf = current.cert.first()?;
        let (_, parsed) = x509_parser::parse_x509_certificate(leaf.as_ref()).ok()?;
        Some(parsed.validity().not_after.timestamp())
    }

    /// Re-reads the certificate and key files. On any problem the
    /// certificate in use stays and the error is returned.
    pub fn reload(&self) -> anyhow::Result<()> {
        let fresh = load_certified_key(&self.resolver.cert, &self.resolver.key)?;
        *self.resolver.current.write().expect("certificate lock") = Arc::new(fresh);
        Ok(())
    }
}

/// Hands every handshake the certificate currently loaded.
#[derive(Debug)]
struct CertResolver {
    cert: PathBuf,
    key: PathBuf,
    current: RwLock<Arc<CertifiedKey>>,
}

impl ResolvesServerCert for CertResolver {
    fn resolve(&self, _hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        Some(self.current.read().expect("certificate lock").clone())
    }
}

/// Reads a certificate chain and its key, checking that they belong together.
fn load_certified_key(cert: &Path, key: &Path) -> anyhow::Result<CertifiedKey> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .with_context(|| format!("reading server.tls_cert {}", cert.display()))?
        .collect::<Result<_, _>>()
        .with_context(|| format!("parsing server.tls_cert {}", cert.display()))?;
    if chain.is_empty() {
        bail!("server.tls_cert {} holds no certificate", cert.display());
    }
    let key_der = PrivateKeyDer::from_pem_file(key)
        .with_context(|| format!("reading server.tls_key {}", key.display()))?;
    CertifiedKey::from_der(chain, key_der, &rustls::crypto::ring::default_provider())
        .context("server.tls_cert and server.tls_key do not form a usable pair")
}

/// Builds the server's TLS settings from `[server]`, generating an identity
/// when no certificate is configured.
pub fn server_tls(cfg: &ServerConfig) -> anyhow::Result<ServerTls> {
    let (cert, key, generated) = if let (Some(cert), Some(key)) = (&cfg.tls_cert, &cfg.tls_key) {
        (cert.clone(), key.clone(), None)
    } else {
        let paths = ensure_generated(&cfg.data_dir, &cfg.hostnames)?;
        (paths.cert.clone(), paths.key.clone(), Some(paths))
    };
    let first = load_certified_key(&cert, &key)?;
    let resolver = Arc::new(CertResolver {
        cert,
        key,
        current: RwLock::new(Arc::new(first)),
    });
    let mut config = rustls::ServerConfig::builder_with_provider(
        rustls::crypto::ring::default_provider().into(),
    )
    .with_safe_default_protocol_versions()
    .context("configuring server TLS")?
    .with_no_client_auth()
    .with_cert_resolver(resolver.clone());
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(ServerTls {
        config: Arc::new(config),
        generated,
        resolver,
    })
}

/// The names a generated server certificate covers.
fn names(extra: &[String]) -> Vec<String> {
    let mut names: Vec<String> = ["localhost", "127.0.0.1", "::1"]
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    for n in extra {
        if !names.contains(n) {
            names.push(n.clone());
        }
    }
    names
}

/// Makes sure a local authority and a server certificate for the configured
/// names exist under `data_dir`.
fn ensure_generated(data_dir: &Path, hostnames: &[String]) -> anyhow::Result<GeneratedPaths> {
    let paths = GeneratedPaths::new(data_dir);
    let dir = paths.ca_cert.parent().expect("tls dir");
    std::fs::create_dir_all(dir)
        .with_context(|| format!("creating {} for the generated certificate", dir.display()))?;
    restrict_dir(dir)?;
    let ca_key_path = dir.join("ca-key.pem");
    let names_path = dir.join("names");
    let wanted = names(hostnames).join("\n");

    let (ca_params, ca_key) = if ca_key_path.exists() && paths.ca_cert.exists() {
        let key = KeyPair::from_pem(&std::fs::read_to_string(&ca_key_path)?)
            .context("reading the generated authority's key")?;
        (ca_params()?, key)
    } else {
        let key = KeyPair::generate()?;
        let params = ca_params()?;
        let cert = params.self_signed(&key)?;
        atomic::write(dir, &ca_key_path, key.serialize_pem().as_bytes())?;
        atomic::write(dir, &paths.ca_cert, cert.pem().as_bytes())?;
        tracing::info!(path = %paths.ca_cert.display(), "generated a local certificate authority");
        // A new authority invalidates any earlier server certificate.
        let _ = std::fs::remove_file(&names_path);
        (params, key)
    };

    let current = std::fs::read_to_string(&names_path).unwrap_or_default();
    if current != wanted || !paths.cert.exists() || !paths.key.exists() {
        let issuer = Issuer::new(ca_params, ca_key);
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names(hostnames))?;
        params
            .distinguished_name
            .push(DnType::CommonName, "tfmirror");
        params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &issuer)?;
        atomic::write(dir, &paths.key, key.serialize_pem().as_bytes())?;
        atomic::write(dir, &paths.cert, cert.pem().as_bytes())?;
        atomic::write(dir, &names_path, wanted.as_bytes())?;
        tracing::info!(path = %paths.cert.display(), names = %wanted.replace('\n', ", "), "generated a server certificate");
    }
    Ok(paths)
}

/// The local authority's parameters. They are the same every time, so an
/// issuer rebuilt from them and the stored key signs certificates that chain
/// to the stored authority certificate.
fn ca_params() -> anyhow::Result<CertificateParams> {
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = IsCa::Ca(BasicConstraints::Constrained(0));
    params.key_usages = vec![KeyUsagePurpose::KeyCertSign, KeyUsagePurpose::CrlSign];
    params
        .distinguished_name
        .push(DnType::CommonName, "tfmirror local authority");
    Ok(params)
}

/// Keeps the generated private keys readable by the owner only.
fn restrict_dir(dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))
            .with_context(|| format!("restricting {}", dir.display()))?;
    }
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server_cfg(data_dir: &Path, hostnames: Vec<String>) -> ServerConfig {
        let mut cfg = crate::config::Config::default().server;
        cfg.data_dir = data_dir.to_path_buf();
        cfg.hostnames = hostnames;
        cfg
    }

    #[test]
    fn generated_identity_is_reused_and_reissued_for_new_names() {
        let dir = tempfile::tempdir().unwrap();
        let paths = server_tls(&server_cfg(dir.path(), vec![]))
            .unwrap()
            .generated
            .unwrap();
        let ca = std::fs::read(&paths.ca_cert).unwrap();
        let cert = std::fs::read(&paths.cert).unwrap();
        server_tls(&server_cfg(dir.path(), vec![])).unwrap();
        assert_eq!(
            std::fs::read(&paths.cert).unwrap(),
            cert,
            "restart reuses the certificate"
        );
        server_tls(&server_cfg(dir.path(), vec!["mirror.example".into()])).unwrap();
        assert_eq!(
            std::fs::read(&paths.ca_cert).unwrap(),
            ca,
            "the authority stays"
        );
        assert_ne!(
            std::fs::read(&paths.cert).unwrap(),
            cert,
            "new names, new certificate"
        );
    }

    #[test]
    fn half_configured_or_missing_files_are_errors() {
        let dir = tempfile::tempdir().unwrap();
        let mut cfg = server_cfg(dir.path(), vec![]);
        cfg.tls_cert = Some(dir.path().join("nope.pem"));
        cfg.tls_key = Some(dir.path().join("nope.key"));
        let e = server_tls(&cfg).err().unwrap().to_string();
        assert!(e.contains("server.tls_cert"), "{e}");
    }
}
