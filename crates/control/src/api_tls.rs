//! `api: {tls: {certificate, key}}`: the TCP API's certificate chain and private key (PEM
//! files). Checked with the rest of the configuration by building the server's TLS settings
//! from them, so a key that does not sign for the certificate is refused before pearld starts
//! or a change lands, naming the field.

use crate::at::At;
use crate::control_plane::os_text;
use crate::error::ConfigError;
use crate::grammar::TlsSpec;
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Where the TCP API's certificate and key are (absolute: relative names in the file are taken
/// from its directory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiTls {
    pub certificate: PathBuf,
    pub key: PathBuf,
}

pub(crate) fn parse_tls(t: &TlsSpec, at: At<'_>, base_dir: &Path) -> Result<ApiTls, ConfigError> {
    let tls = ApiTls { certificate: base_dir.join(&t.certificate), key: base_dir.join(&t.key) };
    tls.server_config().map_err(|(field, why)| at.key(field).err(why))?;
    Ok(tls)
}

impl ApiTls {
    /// The server's TLS settings from the files as they are now (HTTP/1.1 offered by ALPN).
    /// Refusals name the key (`certificate` or `key`) and say what is wrong with its file.
    pub fn server_config(&self) -> Result<Arc<rustls::ServerConfig>, (&'static str, String)> {
        let certificate = |why: String| ("certificate", format!("{}: {why}", self.certificate.display()));
        let key_file = |why: String| ("key", format!("{}: {why}", self.key.display()));
        let chain = read_chain(&self.certificate).map_err(certificate)?;
        let key = read_key(&self.key).map_err(key_file)?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let signer = provider.key_provider.load_private_key(key).map_err(|e| key_file(e.to_string()))?;
        let certified = rustls::sign::CertifiedKey::new(chain, signer);
        certified.keys_match().map_err(|_| key_file(format!("is not the key of {}", self.certificate.display())))?;
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| ("certificate", e.to_string()))?
            .with_no_client_auth()
            .with_cert_resolver(Arc::new(rustls::sign::SingleCertAndKey::from(certified)));
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Arc::new(config))
    }
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(path).map_err(|e| os_text(&e))?;
    let chain = CertificateDer::pem_slice_iter(&bytes).collect::<Result<Vec<_>, _>>().map_err(|e| format!("not PEM: {e}"))?;
    if chain.is_empty() {
        return Err("holds no certificate (expected PEM: -----BEGIN CERTIFICATE-----)".to_string());
    }
    Ok(chain)
}

fn read_key(path: &Path) -> Result<PrivateKeyDer<'static>, String> {
    let bytes = std::fs::read(path).map_err(|e| os_text(&e))?;
    PrivateKeyDer::from_pem_slice(&bytes).map_err(|e| match e {
        rustls::pki_types::pem::Error::NoItemsFound => "holds no private key (expected PEM: -----BEGIN PRIVATE KEY-----)".to_string(),
        e => format!("not a PEM private key: {e}"),
    })
}
