//! Security: identities, ACLs, TLS and SASL, against real ZooKeeper
//! servers; one module per behaviour.
//!
//! - `identities`: digest identities sharing a lock whose nodes only their
//!   creator may read; a recycled directory keeps its ACL for the others; a
//!   creator-only lock with an open directory. No feature needed.
//! - `credentials` (features `tls` and `sasl`): digest credentials and
//!   ACLs through the async and blocking APIs, TLS with a CA and with a
//!   client certificate, SASL DIGEST-MD5, and what goes wrong when a piece
//!   is missing, on secured servers started once for this binary.

#[cfg(all(feature = "tls", feature = "sasl"))]
mod credentials;
mod identities;
