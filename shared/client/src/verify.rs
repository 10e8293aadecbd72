//! Verifying the card a client fetched (spec §8.4.3): when the caller trusts keys, only those keys
//! count (no `jku` is fetched: the card's host could re-sign a card it altered and publish the new
//! key beside it); otherwise each signature's key comes from the JWKS its `jku` names when that URL
//! is on the card's own origin (or an origin the caller allows: a key anyone can host proves
//! nothing). The card verifies when one signature checks. Failures say why, signature by signature.

use serde_json::Value;

use super::{Client, ClientError, ClientResult};
use a2a_signing::card::{self, Verified};

/// Which keys a card's signatures may be checked with.
#[derive(Debug, Clone, Default)]
pub struct Trust {
    /// Public JWKs trusted as they are, e.g. from a provider's published JWKS file. When any is
    /// given, only these count: no `jku` is fetched.
    pub keys: Vec<Value>,
    /// Origins (`https://keys.example.com`) besides the card's own whose `jku` may be fetched
    /// (only when no key is trusted as it is).
    pub jku_origins: Vec<String>,
}

impl Trust {
    /// The keys of a JWKS document (`{"keys": [...]}`) or of a single JWK.
    pub fn add_jwks(&mut self, jwks: &Value) {
        match jwks.get("keys").and_then(Value::as_array) {
            Some(keys) => self.keys.extend(keys.iter().cloned()),
            None => self.keys.push(jwks.clone()),
        }
    }
}

impl Client {
    /// Verifies the signatures of the card this client fetched.
    pub async fn verify_card(&self, trust: &Trust) -> ClientResult<Verified> {
        let source = self.card_source.clone().ok_or_else(|| {
            ClientError::Signature("this client was given its card; verify it with a2a::signing::card::verify".into())
        })?;
        let (card_url, card) = (&source.0, &source.1);
        if !trust.keys.is_empty() {
            return card::verify(card, &trust.keys).map_err(|why| {
                ClientError::Signature(format!("{why} (only the trusted keys count; no jku was fetched)"))
            });
        }
        let mut keys = Vec::new();
        let mut notes = Vec::new();
        let mut fetched = Vec::new();
        let signatures = card.get("signatures").and_then(Value::as_array).cloned().unwrap_or_default();
        for signature in &signatures {
            let Some(jku) = card::protected(signature).ok().and_then(|h| h.jku) else { continue };
            if fetched.contains(&jku) {
                continue;
            }
            fetched.push(jku.clone());
            let allowed =
                origin(&jku).is_some_and(|o| Some(&o) == origin(card_url).as_ref() || trust.jku_origins.contains(&o));
            if !allowed {
                notes.push(format!("jku {jku} is not on the card's origin nor an allowed one"));
                continue;
            }
            match self.jwks(&jku).await {
                Ok(jwks) => keys.extend(jwks),
                Err(why) => notes.push(format!("jku {jku}: {why}")),
            }
        }
        card::verify(card, &keys).map_err(|why| {
            let notes = if notes.is_empty() { String::new() } else { format!(" ({})", notes.join("; ")) };
            ClientError::Signature(format!("{why}{notes}"))
        })
    }

    /// The keys of the JWKS at `url` (fetched as the card is: JSON, bounded in size and time).
    async fn jwks(&self, url: &str) -> Result<Vec<Value>, String> {
        let limits =
            super::discovery::Limits { max_bytes: self.options.max_answer_bytes, timeout: self.options.timeout };
        let jwks = super::discovery::get(&self.http, url, limits).await.map_err(|e| e.to_string())?;
        let jwks = jwks.ok_or("not found")?;
        jwks.get("keys").and_then(Value::as_array).cloned().ok_or_else(|| "not a JWKS (no keys)".into())
    }
}

/// `scheme://host[:port]` of a URL.
fn origin(url: &str) -> Option<String> {
    let url = url::Url::parse(url).ok()?;
    Some(url.origin().ascii_serialization()).filter(|o| o != "null")
}
