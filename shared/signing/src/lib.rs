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

pub use a2a_protocol::paths::JWKS_PATH;

/// A key argument `[KID=]VALUE` (a PEM path, a KMS key id): the kid when given, and the value.
pub fn kid_and_value(arg: &str) -> (Option<&str>, &str) {
    match arg.split_once('=') {
        Some((kid, value)) => (Some(kid), value),
        None => (None, arg),
    }
}

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
    /// Every PEM private key in `pem` (one or more blocks, kids their thumbprints): how a Lambda
    /// function reads `CARD_SIGNING_KEYS_PEM`.
    pub fn from_pem_blocks(pem: &str, jku: Option<String>) -> Result<Self, String> {
        let mut signers: Vec<Arc<dyn Signer>> = Vec::new();
        for block in pem.split("-----BEGIN ").skip(1) {
            signers.push(Arc::new(PemKey::from_pem(&format!("-----BEGIN {block}"), None)?));
        }
        if signers.is_empty() {
            return Err("no PEM private key".into());
        }
        Ok(Self { signers, jku })
    }

    /// With `jku` defaulted to the JWKS of the agent at `public_url`.
    pub fn for_agent(mut self, public_url: &str) -> Self {
        if self.jku.is_none() {
            self.jku = Some(format!("{}{JWKS_PATH}", public_url.trim_end_matches('/')));
        }
        self
    }

    /// The signer of push notifications: the first key, issued by the agent at `public_url`.
    pub fn webhook_signer(&self, public_url: &str) -> Option<webhook::WebhookSigner> {
        self.signers.first().map(|signer| webhook::WebhookSigner {
            signer: signer.clone(),
            issuer: public_url.trim_end_matches('/').to_string(),
            jku: self.jku.clone(),
        })
    }

    /// The JWKS document (RFC 7517 §5) of the signing keys.
    pub fn jwks(&self) -> Value {
        json!({"keys": self.signers.iter().map(|s| s.public_jwk()).collect::<Vec<_>>()})
    }
}
