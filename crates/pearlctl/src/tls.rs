//! `--url https://…`: pearld's TCP API over TLS. The server's certificate is checked against
//! `--ca FILE` (PEM: the authority that issued it, or the very certificate pearld shows, taken
//! as pinned: `openssl req -x509` makes self-signed certificates that say they are authorities,
//! which webpki will not take as a server's own), or against the system's authorities when no
//! file is given.

use crate::failure::{Failure, DAEMON, USAGE};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::WebPkiServerVerifier;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// How pearlctl trusts the server: the authorities and the name the certificate must carry.
pub struct TlsTarget {
    config: Arc<rustls::ClientConfig>,
    name: ServerName<'static>,
}

impl TlsTarget {
    /// For `host` (a DNS name or an IP address), trusting `ca` or else the system's authorities.
    pub fn new(host: &str, ca: Option<&str>) -> Result<TlsTarget, Failure> {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = ServerName::try_from(host.to_string()).map_err(|_| Failure::usage(format!("--url: {host:?} is not a host name")))?;
        let mut roots = rustls::RootCertStore::empty();
        let mut pinned = Vec::new();
        match ca {
            Some(path) => {
                let bytes = std::fs::read(path).map_err(|e| Failure::new(USAGE, format!("--ca {path}: {e}")))?;
                let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(&bytes)
                    .collect::<Result<_, _>>()
                    .map_err(|e| Failure::usage(format!("--ca {path}: not PEM: {e}")))?;
                if certs.is_empty() {
                    return Err(Failure::usage(format!("--ca {path}: holds no certificate (expected PEM)")));
                }
                for c in certs {
                    roots.add(c.clone()).map_err(|e| Failure::usage(format!("--ca {path}: {e}")))?;
                    pinned.push(c);
                }
            }
            None => {
                for c in rustls_native_certs::load_native_certs().certs {
                    let _ = roots.add(c);
                }
            }
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls_error = |e: rustls::Error| Failure::new(DAEMON, format!("TLS: {e}"));
        let verifier = PinnedOrIssued {
            pinned,
            issued: WebPkiServerVerifier::builder_with_provider(Arc::new(roots), Arc::clone(&provider)).build().map_err(|e| {
                Failure::new(DAEMON, format!("TLS: no authority to check pearld's certificate against ({e}); give --ca FILE"))
            })?,
            provider: Arc::clone(&provider),
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(tls_error)?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(verifier))
            .with_no_client_auth();
        Ok(TlsTarget { config: Arc::new(config), name })
    }

    /// Runs the handshake on `tcp`: the certificate is checked here, before the token is sent.
    pub async fn open(&self, tcp: TcpStream) -> std::io::Result<TlsStream<TcpStream>> {
        TlsConnector::from(Arc::clone(&self.config)).connect(self.name.clone(), tcp).await
    }
}

/// A server certificate is good when it is one of `--ca`'s own certificates, byte for byte, or
/// when an authority vouches for it and it names the host. Either way the handshake's
/// signatures are checked, so the server holds the certificate's key.
#[derive(Debug)]
struct PinnedOrIssued {
    pinned: Vec<CertificateDer<'static>>,
    issued: Arc<WebPkiServerVerifier>,
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedOrIssued {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        name: &ServerName<'_>,
        ocsp: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if self.pinned.iter().any(|c| c.as_ref() == end_entity.as_ref()) {
            return Ok(ServerCertVerified::assertion());
        }
        self.issued.verify_server_cert(end_entity, intermediates, name, ocsp, now)
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.provider.signature_verification_algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider.signature_verification_algorithms.supported_schemes()
    }
}
