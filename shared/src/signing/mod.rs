//! Signatures (feature `signing`): signed agent cards (spec §8.4: a detached JWS over the RFC 8785
//! canonical form of the card), signed push notifications (a JWT per POST), the keys that sign them
//! (PEM; any [`Signer`]), and the JWKS document that publishes their public halves.
//!
//! - [`jcs`]: RFC 8785 canonical JSON.
//! - [`canonical`]: the payload a card signature covers (§8.4.1 field presence, `signatures` out).
//! - [`keys`]: signing keys, JWKs, verification (ES256, RS256, EdDSA only).
//! - [`card`]: signing a card, verifying one.
//! - [`webhook`]: the JWT each push notification carries.

pub mod canonical;
pub mod card;
pub mod jcs;
pub mod keys;
pub mod webhook;

use std::sync::Arc;

use serde_json::{json, Value};

pub use keys::{PemKey, Signer};

/// The JWKS document's path on the agent's base URL.
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// How the served cards are signed: the keys (each signs; all are published) and the `jku` the
/// protected headers name (default: the agent's [`JWKS_PATH`]).
#[derive(Clone, Default)]
pub struct CardSigning {
    pub signers: Vec<Arc<dyn Signer>>,
    pub jku: Option<String>,
}

impl std::fmt::Debug for CardSigning {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kids: Vec<&str> = self.signers.iter().map(|s| s.kid()).collect();
        f.debug_struct("CardSigning").field("kids", &kids).field("jku", &self.jku).finish()
    }
}

impl CardSigning {
    /// The JWKS document (RFC 7517 §5) of the signing keys.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.signers.iter().map(|s| s.public_jwk()).collect::<Vec<_>>()})
    }
}
