//! TLS for the synchronous `postgres` client, on rustls with the `ring` provider.
//!
//! Invariant: the URL's `sslmode` alone decides, with libpq's meaning: `disable` never
//! encrypts; `prefer` (the default) encrypts when the server offers TLS and goes on in clear
//! text when it does not; `require` encrypts or fails. Like libpq without a root certificate,
//! `prefer` and `require` do not verify the server's certificate (they still check that the
//! server holds the key of the certificate it shows): they protect against listening, not
//! against a man in the middle. Certificate verification (`verify-ca`, `verify-full`) is not
//! offered; the URL parser refuses those modes.

use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{DigitallySignedStruct, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// The connector every connection of this crate is made with; `Err` with rustls's reason
/// should the provider not support the default protocol versions (ring does).
pub fn connector() -> Result<MakeRustlsConnect, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let algorithms = provider.signature_verification_algorithms;
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Unverified { algorithms }))
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// Accepts whatever certificate the server shows, as libpq's `require` does without a root
/// certificate, but still checks the handshake's signatures against it.
#[derive(Debug)]
struct Unverified {
    algorithms: WebPkiSupportedAlgorithms,
}

impl ServerCertVerifier for Unverified {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}
