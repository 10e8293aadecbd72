//! Signing a card and verifying one (spec §8.4.2, §8.4.3): one JWS per key over the canonical
//! payload, detached (the card carries the protected header and the signature; the payload is the
//! card itself); a card verifies when one of its signatures checks with a key of the trusted set.

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

use super::canonical;
use super::keys::{self, Signer};
use a2a_protocol::types::AgentCardSignature;

/// Signatures of `card` (its 1.0 JSON, `signatures` ignored), one per key, each protected header
/// with `alg`, `typ: JOSE`, `kid` and `jku` when given.
pub async fn sign(
    card: &Value,
    signers: &[Arc<dyn Signer>],
    jku: Option<&str>,
) -> Result<Vec<AgentCardSignature>, String> {
    let payload = URL_SAFE_NO_PAD.encode(canonical::payload(card)?);
    let mut signatures = Vec::with_capacity(signers.len());
    for signer in signers {
        let mut header = json!({"alg": signer.alg(), "typ": "JOSE", "kid": signer.kid()});
        if let Some(jku) = jku {
            header["jku"] = json!(jku);
        }
        let protected = URL_SAFE_NO_PAD.encode(header.to_string());
        let signature = signer.sign(format!("{protected}.{payload}").as_bytes()).await?;
        signatures.push(AgentCardSignature { protected, signature: URL_SAFE_NO_PAD.encode(signature), header: None });
    }
    Ok(signatures)
}

/// A signature's protected header, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protected {
    pub alg: String,
    pub kid: Option<String>,
    pub jku: Option<String>,
}

/// The protected header of a signature; refused when it is not a JSON object, names no accepted
/// algorithm, or asks for extensions (`crit`) this verifier does not implement.
pub fn protected(signature: &Value) -> Result<Protected, String> {
    let encoded = signature.get("protected").and_then(Value::as_str).ok_or("no protected header")?;
    let bytes = URL_SAFE_NO_PAD.decode(encoded.trim_end_matches('=')).map_err(|e| format!("protected header: {e}"))?;
    let header: Value = serde_json::from_slice(&bytes).map_err(|e| format!("protected header is not JSON: {e}"))?;
    let text = |name: &str| header.get(name).and_then(Value::as_str).map(str::to_string);
    let alg = text("alg").ok_or("the protected header has no alg")?;
    if !keys::ALGORITHMS.contains(&alg.as_str()) {
        return Err(format!("alg {alg:?} is not accepted ({})", keys::ALGORITHMS.join(", ")));
    }
    if header.get("crit").is_some() {
        return Err("the protected header has crit extensions this verifier does not implement".into());
    }
    Ok(Protected { alg, kid: text("kid"), jku: text("jku") })
}

/// Which signature verified, with which key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    pub kid: String,
    pub alg: String,
}

/// Verifies `card` (JSON as received) against `jwks` (public JWKs): the first signature that checks
/// with the key its `kid` names; else every signature's reason.
pub fn verify(card: &Value, jwks: &[Value]) -> Result<Verified, String> {
    let signatures = card.get("signatures").and_then(Value::as_array).filter(|s| !s.is_empty());
    let signatures = signatures.ok_or("the card has no signatures")?;
    let payload = URL_SAFE_NO_PAD.encode(canonical::payload(card)?);
    let mut reasons = Vec::new();
    for (i, signature) in signatures.iter().enumerate() {
        match verify_one(signature, &payload, jwks) {
            Ok(verified) => return Ok(verified),
            Err(why) => reasons.push(format!("signature {}: {why}", i + 1)),
        }
    }
    Err(reasons.join("; "))
}

fn verify_one(signature: &Value, payload: &str, jwks: &[Value]) -> Result<Verified, String> {
    let header = protected(signature)?;
    let kid = header.kid.ok_or("the protected header has no kid")?;
    let jwk = jwks
        .iter()
        .find(|k| k.get("kid").and_then(Value::as_str) == Some(kid.as_str()))
        .ok_or_else(|| format!("no trusted key has kid {kid:?}"))?;
    let value = signature.get("signature").and_then(Value::as_str).ok_or("no signature value")?;
    let bytes = URL_SAFE_NO_PAD.decode(value.trim_end_matches('=')).map_err(|e| format!("signature: {e}"))?;
    let protected = signature.get("protected").and_then(Value::as_str).unwrap_or_default();
    keys::verify(jwk, &header.alg, format!("{protected}.{payload}").as_bytes(), &bytes)?;
    Ok(Verified { kid, alg: header.alg })
}
