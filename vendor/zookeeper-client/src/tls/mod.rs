mod client;
mod options;
mod verifier;

pub(crate) use self::client::*;
pub use self::options::*;
use self::verifier::*;

/// The crypto provider chosen by feature: aws-lc-rs with `tls-aws-lc-rs`, otherwise ring
/// (`tls-ring`). Named here rather than taken from the process default, which rustls
/// cannot choose when both providers are compiled in.
#[cfg(feature = "tls-aws-lc-rs")]
pub(crate) fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

#[cfg(all(feature = "tls-ring", not(feature = "tls-aws-lc-rs")))]
pub(crate) fn crypto_provider() -> rustls::crypto::CryptoProvider {
    rustls::crypto::ring::default_provider()
}

#[cfg(not(any(feature = "tls-ring", feature = "tls-aws-lc-rs")))]
compile_error!("feature `tls` needs a crypto provider: enable `tls-ring` or `tls-aws-lc-rs`");

/// What a key the provider cannot load needs.
#[cfg(feature = "tls-aws-lc-rs")]
pub(crate) const KEY_ADVICE: &str = "the client private key cannot be used by the aws-lc-rs crypto provider";

/// What a key the provider cannot load needs: ring reads an EC key only with its public key.
#[cfg(all(feature = "tls-ring", not(feature = "tls-aws-lc-rs")))]
pub(crate) const KEY_ADVICE: &str = "the client private key cannot be used by the ring crypto provider (an EC key \
     must include its public key: `openssl ec -in key.pem -out key.pem` adds it; or build with feature \
     `tls-aws-lc-rs`)";
