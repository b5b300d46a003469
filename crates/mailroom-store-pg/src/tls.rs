//! TLS for the synchronous `postgres` client, on rustls with the `ring` provider.
//!
//! Invariant: the URL's `sslmode` and the root certificates found decide, with libpq's meaning:
//! - `disable` never encrypts;
//! - `prefer` (the default) encrypts when the server offers TLS and goes on in clear text when
//!   it does not; it never verifies the server's certificate (a man in the middle could simply
//!   decline TLS, so a check would protect nothing);
//! - `require` encrypts or fails. Without a root certificate file it does not verify the
//!   server's certificate (it still checks that the server holds the key of the certificate it
//!   shows): it protects against listening, not against a man in the middle. With a root file
//!   (as libpq does) it verifies like `verify-ca`;
//! - `verify-ca` encrypts and requires the server's chain to lead to a root of the root file;
//!   the host name is not checked;
//! - `verify-full` checks that too, and that the certificate names the URL's host (a name or
//!   an IP address).
//!
//! The roots are a PEM file (the URL's `sslrootcert`, else `PGSSLROOTCERT`, else
//! `~/.postgresql/root.crt`) or, with `sslrootcert=system`, the system's trusted authorities
//! (`rustls-native-certs`: where OpenSSL looks), which need `verify-full`, as in libpq.
//!
//! Verification is rustls's own [`WebPkiServerVerifier`]; `verify-ca` wraps it and forgives
//! only a name that does not match, which webpki reports after the chain and the validity
//! dates have passed. The root file is read once, when the URL is parsed (see
//! [`Tls::for_mode`]), so a missing or unreadable one is refused before any connection.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls::client::WebPkiServerVerifier;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{CertificateError, DigitallySignedStruct, RootCertStore, SignatureScheme};
use tokio_postgres_rustls::MakeRustlsConnect;

/// What the URL asks of the server's certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SslMode {
    Disable,
    Prefer,
    Require,
    VerifyCa,
    VerifyFull,
}

impl SslMode {
    /// The mode a URL's `sslmode` value names, `None` for one this crate does not know.
    pub(crate) fn parse(value: &str) -> Option<SslMode> {
        Some(match value {
            "disable" => SslMode::Disable,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return None,
        })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            SslMode::Disable => "disable",
            SslMode::Prefer => "prefer",
            SslMode::Require => "require",
            SslMode::VerifyCa => "verify-ca",
            SslMode::VerifyFull => "verify-full",
        }
    }

    /// The mode of a driver's `Config`, which knows no verifying mode.
    pub(crate) fn of_driver(config: &postgres::Config) -> SslMode {
        match config.get_ssl_mode() {
            postgres::config::SslMode::Disable => SslMode::Disable,
            postgres::config::SslMode::Require => SslMode::Require,
            _ => SslMode::Prefer,
        }
    }
}

/// Where the root certificates come from, in libpq's order: the URL's `sslrootcert`, else
/// `PGSSLROOTCERT`, else `~/.postgresql/root.crt`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RootSource {
    /// Named by the URL or `PGSSLROOTCERT`: it must exist when a mode verifies.
    Named(PathBuf),
    /// `system`: the system's trusted authorities (as OpenSSL finds them, `SSL_CERT_FILE` and
    /// `SSL_CERT_DIR` included), for `verify-full` only, as in libpq.
    System,
    /// libpq's default, used when it exists.
    Default(PathBuf),
    /// No name and no home directory to look in.
    Nowhere,
}

/// The TLS of one URL: its connector, and what it verifies (for the messages).
#[derive(Clone)]
pub(crate) struct Tls {
    mode: SslMode,
    connector: MakeRustlsConnect,
    /// What is verified: `None` (nothing), else the root file (`None`: the system's) and
    /// whether the name is checked.
    verified: Option<(Option<PathBuf>, bool)>,
}

impl std::fmt::Debug for Tls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tls")
            .field("mode", &self.mode)
            .field("verified", &self.verified)
            .finish_non_exhaustive()
    }
}

impl Tls {
    /// Encrypts as the driver's `sslmode` says and verifies nothing: the TLS of a `Config`
    /// built without a URL, and of `prefer` and `require` without a root file.
    pub(crate) fn unverified(mode: SslMode) -> Result<Tls, String> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let algorithms = provider.signature_verification_algorithms;
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(Unverified { algorithms }))
            .with_no_client_auth();
        Ok(Tls {
            mode,
            connector: MakeRustlsConnect::new(config),
            verified: None,
        })
    }

    /// The TLS for `mode` with roots from `roots`; `Err` is the sentence for a URL that cannot
    /// be served (a verifying mode without a root file, a file that holds no certificate).
    pub(crate) fn for_mode(mode: SslMode, roots: &RootSource) -> Result<Tls, String> {
        let path = match (mode, roots) {
            (SslMode::Disable | SslMode::Prefer, _) => return Tls::unverified(mode),
            (SslMode::VerifyFull, RootSource::System) => None,
            (_, RootSource::System) => {
                return Err(format!(
                    "sslrootcert=system trusts every authority of the system, so it needs sslmode=verify-full (a certificate any of them signed for another name would do otherwise); write sslmode=verify-full, or name the authority's file with sslrootcert=PATH for sslmode={}",
                    mode.name()
                ));
            }
            (_, RootSource::Named(path)) => {
                if !path.exists() {
                    return Err(format!(
                        "the root certificate file {} named for sslmode={} does not exist; give the file of the certificate authority that signed the server's certificate (sslrootcert=PATH in the URL, or PGSSLROOTCERT)",
                        path.display(),
                        mode.name()
                    ));
                }
                Some(path.clone())
            }
            // libpq's default file, when it is there, for every mode that reaches here
            // (`require` then verifies the chain, as in libpq).
            (_, RootSource::Default(path)) if path.exists() => Some(path.clone()),
            (SslMode::Require, _) => return Tls::unverified(mode),
            (_, RootSource::Default(path)) => {
                return Err(format!(
                    "sslmode={} needs the certificate of the authority that signed the server's certificate, and there is none at {}; put it there, or name its file with sslrootcert=PATH in the URL (or PGSSLROOTCERT)",
                    mode.name(),
                    path.display()
                ));
            }
            (_, RootSource::Nowhere) => {
                return Err(format!(
                    "sslmode={} needs the certificate of the authority that signed the server's certificate; name its file with sslrootcert=PATH in the URL (or PGSSLROOTCERT)",
                    mode.name()
                ));
            }
        };
        let store = match &path {
            Some(path) => read_roots(path)?,
            None => system_roots()?,
        };
        let named = path.as_ref().map_or_else(
            || "the system's trusted authorities".to_owned(),
            |p| p.display().to_string(),
        );
        let full = mode == SslMode::VerifyFull;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let webpki = WebPkiServerVerifier::builder_with_provider(Arc::new(store), provider.clone())
            .build()
            .map_err(|e| format!("the root certificates of {named} cannot be used: {e}"))?;
        let verifier: Arc<dyn ServerCertVerifier> = if full {
            webpki
        } else {
            Arc::new(ChainOnly { webpki })
        };
        let config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| e.to_string())?
            .dangerous()
            .with_custom_certificate_verifier(verifier)
            .with_no_client_auth();
        Ok(Tls {
            mode,
            connector: MakeRustlsConnect::new(config),
            verified: Some((path, full)),
        })
    }

    pub(crate) fn mode(&self) -> SslMode {
        self.mode
    }

    pub(crate) fn connector(&self) -> MakeRustlsConnect {
        self.connector.clone()
    }

    /// What the server's certificate is checked against: nothing, a root file or the system's
    /// authorities.
    pub(crate) fn roots(&self) -> Roots<'_> {
        match &self.verified {
            None => Roots::None,
            Some((Some(path), _)) => Roots::File(path),
            Some((None, _)) => Roots::System,
        }
    }
}

/// What a connection checks the server's certificate against, for the messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Roots<'a> {
    None,
    File(&'a Path),
    System,
}

/// The system's trusted authorities, as a root store; `Err` is the sentence when none is found.
fn system_roots() -> Result<RootCertStore, String> {
    // The bundle OpenSSL's variable names is read whole by the loader below: it must be a
    // regular file of bounded size, as a root file is (a FIFO would hang every command, and
    // /dev/zero abort it out of memory).
    if let Some(file) = std::env::var_os("SSL_CERT_FILE").filter(|f| !f.is_empty()) {
        let file = std::path::PathBuf::from(file);
        match std::fs::metadata(&file) {
            Ok(meta) if !meta.is_file() => {
                return Err(format!(
                    "SSL_CERT_FILE names {}, which is not a regular file; name the system's bundle of certificate authorities, or unset it",
                    file.display()
                ));
            }
            Ok(meta) if meta.len() > MAX_ROOTS => {
                return Err(format!(
                    "SSL_CERT_FILE names {}, which holds more than {} MiB, more than any bundle of certificate authorities; name the system's bundle, or unset it",
                    file.display(),
                    MAX_ROOTS / (1024 * 1024)
                ));
            }
            _ => {}
        }
    }
    let found = rustls_native_certs::load_native_certs();
    let mut store = RootCertStore::empty();
    let (added, _) = store.add_parsable_certificates(found.certs);
    if added == 0 {
        let why = found
            .errors
            .first()
            .map_or_else(|| "none was found".to_owned(), |e| e.to_string());
        return Err(format!(
            "sslrootcert=system found no trusted certificate authority on this system ({why}); install the system's CA certificates (Debian: ca-certificates) or name the authority's file with sslrootcert=PATH"
        ));
    }
    Ok(store)
}

/// The most a root file may hold: a system's whole bundle of authorities is a few hundred KiB.
const MAX_ROOTS: u64 = 4 * 1024 * 1024;

/// The certificates of a PEM file, as a root store; `Err` is the sentence when it holds none.
/// The file is opened without blocking and read only when it is a regular file of at most
/// [`MAX_ROOTS`] bytes: a FIFO with no writer would hang every command (the hooks and the MCP
/// server too), and `/dev/zero` would be read until memory runs out.
fn read_roots(path: &Path) -> Result<RootCertStore, String> {
    use std::io::Read as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let cannot = |e: std::io::Error| {
        format!(
            "the root certificate file {} cannot be read ({e}); make it readable or name another with sslrootcert=PATH",
            path.display()
        )
    };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(cannot)?;
    let meta = file.metadata().map_err(cannot)?;
    if !meta.is_file() {
        return Err(format!(
            "the root certificate file {} is not a regular file; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH",
            path.display()
        ));
    }
    let too_big = || {
        format!(
            "the root certificate file {} holds more than {} MiB, more than any set of root certificates; name the PEM file of the authority that signed the server's certificate with sslrootcert=PATH",
            path.display(),
            MAX_ROOTS / (1024 * 1024)
        )
    };
    if meta.len() > MAX_ROOTS {
        return Err(too_big());
    }
    let mut bytes = Vec::new();
    file.take(MAX_ROOTS + 1)
        .read_to_end(&mut bytes)
        .map_err(cannot)?;
    if bytes.len() as u64 > MAX_ROOTS {
        return Err(too_big());
    }
    let mut store = RootCertStore::empty();
    let mut rejected = 0usize;
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| {
            // The parser's own text shows byte arrays and debug forms: worded here instead.
            let why = match e {
                rustls::pki_types::pem::Error::MissingSectionEnd { .. } => {
                    "a block has no -----END CERTIFICATE----- line"
                }
                rustls::pki_types::pem::Error::IllegalSectionStart { .. } => {
                    "a -----BEGIN line is malformed"
                }
                rustls::pki_types::pem::Error::Base64Decode(_) => {
                    "a block holds characters that are not base64"
                }
                _ => "it cannot be read as PEM",
            };
            format!(
                "the root certificate file {} is not valid PEM ({why}); give a file of -----BEGIN CERTIFICATE----- blocks",
                path.display()
            )
        })?;
        if store.add(cert).is_err() {
            rejected += 1;
        }
    }
    if store.is_empty() {
        let why = if rejected > 0 {
            "none of its certificates can be read as a certificate authority"
        } else {
            "it holds no -----BEGIN CERTIFICATE----- block"
        };
        return Err(format!(
            "the root certificate file {} cannot serve as roots: {why}; give the PEM file of the authority that signed the server's certificate",
            path.display()
        ));
    }
    Ok(store)
}

/// `verify-ca`: webpki's verification, forgiving only a host name the certificate does not
/// name. webpki checks the name last, after the chain, the dates and the key usage: a name
/// error means all of those passed.
#[derive(Debug)]
struct ChainOnly {
    webpki: Arc<WebPkiServerVerifier>,
}

impl ServerCertVerifier for ChainOnly {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        match self.webpki.verify_server_cert(
            end_entity,
            intermediates,
            server_name,
            ocsp_response,
            now,
        ) {
            Err(rustls::Error::InvalidCertificate(
                CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. },
            )) => Ok(ServerCertVerified::assertion()),
            other => other,
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        self.webpki.verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.webpki.supported_verify_schemes()
    }
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

/// The sentence's middle and fix for a certificate rustls refused, `None` when `e` is not
/// about the certificate. `host` is the URL's host; `roots` the file checked against.
pub(crate) fn certificate_problem(
    e: &rustls::Error,
    host: &str,
    roots: Roots<'_>,
) -> Option<(String, String)> {
    let rustls::Error::InvalidCertificate(cert) = e else {
        return None;
    };
    let signers = match roots {
        Roots::File(p) => format!("no certificate in {} signed it", p.display()),
        Roots::System => "none of the system's trusted authorities signed it".to_owned(),
        Roots::None => "no known certificate signed it".to_owned(),
    };
    let give_root = "give the certificate of the authority that signed it with sslrootcert=PATH in the URL (or PGSSLROOTCERT)";
    Some(match cert {
        CertificateError::UnknownIssuer => (
            format!("its issuer is unknown ({signers})"),
            give_root.to_owned(),
        ),
        CertificateError::Expired | CertificateError::ExpiredContext { .. } => (
            "it has expired".to_owned(),
            "renew the server's certificate (or correct this machine's clock)".to_owned(),
        ),
        CertificateError::NotValidYet | CertificateError::NotValidYetContext { .. } => (
            "it is not valid yet".to_owned(),
            "correct the clock of this machine or of the machine that made the certificate"
                .to_owned(),
        ),
        CertificateError::NotValidForName | CertificateError::NotValidForNameContext { .. } => {
            let presented = match cert {
                CertificateError::NotValidForNameContext { presented, .. }
                    if !presented.is_empty() =>
                {
                    let names: Vec<&str> = presented.iter().map(|n| plain_name(n)).collect();
                    format!(" (it names {})", names.join(", "))
                }
                _ => String::new(),
            };
            (
                format!("its name does not match the host name '{host}'{presented}"),
                "connect with a host name the certificate names, or write sslmode=verify-ca to check the chain only".to_owned(),
            )
        }
        CertificateError::BadSignature => (
            "its signature is not valid".to_owned(),
            give_root.to_owned(),
        ),
        CertificateError::Revoked => (
            "it has been revoked".to_owned(),
            "give the server a new certificate".to_owned(),
        ),
        other => (
            format!("it was refused ({other})"),
            "check the server's certificate and the root file".to_owned(),
        ),
    })
}

/// A name webpki presents in its debug form (`DnsName("db.example")`) as the name alone.
fn plain_name(presented: &str) -> &str {
    presented
        .split_once("(\"")
        .and_then(|(_, rest)| rest.strip_suffix("\")"))
        .unwrap_or(presented)
}
