//! A certificate authority made for one test, and TLS client set-up
//! that trusts it.

use std::path::Path;
use std::sync::Arc;

use rcgen::{BasicConstraints, CertificateParams, IsCa, Issuer, KeyPair, KeyUsagePurpose};

/// A certificate authority made for one test, and a server certificate for
/// `localhost` and `127.0.0.1` issued by it.
#[allow(clippy::struct_field_names)] // three PEM texts
pub struct TestCa {
    pub ca_pem: String,
    pub cert_pem: String,
    pub key_pem: String,
}

impl TestCa {
    pub fn new() -> TestCa {
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        // Names of their own, so that OpenSSL-based clients (the oras SDK)
        // do not take the leaf, whose issuer would otherwise equal its
        // empty subject, for a self-signed certificate.
        ca.distinguished_name
            .push(rcgen::DnType::CommonName, "tfmirror test CA");
        ca.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        ca.key_usages = vec![KeyUsagePurpose::KeyCertSign];
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut leaf =
            CertificateParams::new(vec!["localhost".into(), "127.0.0.1".into()]).unwrap();
        leaf.distinguished_name
            .push(rcgen::DnType::CommonName, "localhost");
        let cert = leaf.signed_by(&key, &issuer).unwrap();
        TestCa {
            ca_pem: ca_cert.pem(),
            cert_pem: cert.pem(),
            key_pem: key.serialize_pem(),
        }
    }

    pub fn server_config(&self) -> Arc<rustls::ServerConfig> {
        use rustls_pki_types::pem::PemObject;
        let certs = rustls_pki_types::CertificateDer::pem_slice_iter(self.cert_pem.as_bytes())
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(self.key_pem.as_bytes()).unwrap();
        let mut cfg = rustls::ServerConfig::builder_with_provider(
            rustls::crypto::ring::default_provider().into(),
        )
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
        cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        Arc::new(cfg)
    }
}

/// A TLS client configuration that trusts one authority.
pub fn tls_client_config(ca_file: &Path) -> rustls::ClientConfig {
    use rustls_pki_types::pem::PemObject;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_pki_types::CertificateDer::pem_file_iter(ca_file).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    rustls::ClientConfig::builder_with_provider(rustls::crypto::ring::default_provider().into())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth()
}
