//! Keys: a private key that signs (ES256 on P-256, RS256, EdDSA on Ed25519; read from PEM, or a
//! key held elsewhere such as AWS KMS behind the same trait), its public half as a JWK (RFC 7517)
//! with a `kid` (by default its RFC 7638 thumbprint), and verification against a JWK. Only these
//! three algorithms are accepted: never `none`, never an HMAC.

use async_trait::async_trait;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{
    self, EcdsaKeyPair, Ed25519KeyPair, KeyPair, RsaKeyPair, RsaPublicKeyComponents, UnparsedPublicKey,
};
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

/// The algorithms signatures here use and verification accepts.
pub const ALGORITHMS: [&str; 3] = ["ES256", "RS256", "EdDSA"];

/// A key that signs: its id, algorithm and public JWK, and the signing itself (which may happen
/// elsewhere, e.g. in KMS).
#[async_trait]
pub trait Signer: Send + Sync {
    fn kid(&self) -> &str;
    fn alg(&self) -> &'static str;
    /// The public key as a JWK with `kid`, `alg` and `use: sig`.
    fn public_jwk(&self) -> Value;
    /// The JWS signature of `input` (ES256: r‖s, 64 bytes).
    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String>;
}

enum Pair {
    Es256(EcdsaKeyPair),
    Rs256(RsaKeyPair),
    EdDsa(Ed25519KeyPair),
}

/// A private key held by this process.
pub struct PemKey {
    kid: String,
    pair: Pair,
}

impl std::fmt::Debug for PemKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PemKey").field("kid", &self.kid).field("alg", &self.alg()).finish_non_exhaustive()
    }
}

impl PemKey {
    /// A PEM private key (`PRIVATE KEY` PKCS#8 of P-256, RSA or Ed25519; `EC PRIVATE KEY`;
    /// `RSA PRIVATE KEY`), with `kid` or else its JWK thumbprint as key id.
    pub fn from_pem(pem: &str, kid: Option<&str>) -> Result<Self, String> {
        let (label, der) = pem_block(pem)?;
        let pair = match label.as_str() {
            "PRIVATE KEY" => Ed25519KeyPair::from_pkcs8_maybe_unchecked(&der)
                .map(Pair::EdDsa)
                .or_else(|_| {
                    EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der).map(Pair::Es256)
                })
                .or_else(|_| RsaKeyPair::from_pkcs8(&der).map(Pair::Rs256))
                .map_err(|_| "the key is not an Ed25519, P-256 or RSA (2048 bits or more) PKCS#8 key".to_string())?,
            "EC PRIVATE KEY" => EcdsaKeyPair::from_private_key_der(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der)
                .map(Pair::Es256)
                .map_err(|e| format!("not a P-256 key: {e}"))?,
            "RSA PRIVATE KEY" => RsaKeyPair::from_der(&der).map(Pair::Rs256).map_err(|e| format!("RSA key: {e}"))?,
            other => return Err(format!("a PEM block of {other:?} is not a private key")),
        };
        let mut key = Self { kid: String::new(), pair };
        key.kid = kid.map_or_else(|| thumbprint(&key.public_jwk()), str::to_string);
        Ok(key)
    }
}

#[async_trait]
impl Signer for PemKey {
    fn kid(&self) -> &str {
        &self.kid
    }

    fn alg(&self) -> &'static str {
        match self.pair {
            Pair::Es256(_) => "ES256",
            Pair::Rs256(_) => "RS256",
            Pair::EdDsa(_) => "EdDSA",
        }
    }

    fn public_jwk(&self) -> Value {
        let b64 = |bytes: &[u8]| URL_SAFE_NO_PAD.encode(bytes);
        let mut jwk = match &self.pair {
            Pair::Es256(k) => {
                let point = k.public_key().as_ref(); // 0x04 ‖ x ‖ y
                let (x, y) = point.get(1..).unwrap_or_default().split_at(32.min(point.len().saturating_sub(1)));
                json!({"kty": "EC", "crv": "P-256", "x": b64(x), "y": b64(y)})
            }
            Pair::Rs256(k) => {
                let public = k.public_key();
                json!({"kty": "RSA", "n": b64(public.modulus().big_endian_without_leading_zero()),
                       "e": b64(public.exponent().big_endian_without_leading_zero())})
            }
            Pair::EdDsa(k) => json!({"kty": "OKP", "crv": "Ed25519", "x": b64(k.public_key().as_ref())}),
        };
        if !self.kid.is_empty() {
            jwk["kid"] = json!(self.kid);
        }
        jwk["alg"] = json!(self.alg());
        jwk["use"] = json!("sig");
        jwk
    }

    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        let rng = SystemRandom::new();
        match &self.pair {
            Pair::Es256(k) => k.sign(&rng, input).map(|s| s.as_ref().to_vec()).map_err(|e| format!("ES256: {e}")),
            Pair::Rs256(k) => {
                let mut out = vec![0; k.public_modulus_len()];
                k.sign(&signature::RSA_PKCS1_SHA256, &rng, input, &mut out).map_err(|e| format!("RS256: {e}"))?;
                Ok(out)
            }
            Pair::EdDsa(k) => Ok(k.sign(input).as_ref().to_vec()),
        }
    }
}

/// The first PEM block of `pem`: its label and DER bytes.
fn pem_block(pem: &str) -> Result<(String, Vec<u8>), String> {
    let begin = pem.find("-----BEGIN ").ok_or("no PEM block (-----BEGIN ...-----)")?;
    let rest = &pem[begin + 11..];
    let (label, rest) = rest.split_once("-----").ok_or("an unterminated PEM header")?;
    let end = rest.find("-----END ").ok_or("no PEM footer (-----END ...-----)")?;
    let body: String = rest[..end].chars().filter(|c| !c.is_whitespace()).collect();
    let der = STANDARD.decode(body).map_err(|e| format!("the PEM body is not base64: {e}"))?;
    Ok((label.to_string(), der))
}

/// The RFC 7638 thumbprint of a public JWK (SHA-256 of its required members, base64url).
pub fn thumbprint(jwk: &Value) -> String {
    let members: &[&str] = match jwk.get("kty").and_then(Value::as_str) {
        Some("EC") => &["crv", "kty", "x", "y"],
        Some("RSA") => &["e", "kty", "n"],
        _ => &["crv", "kty", "x"],
    };
    let required: serde_json::Map<String, Value> =
        members.iter().map(|m| (m.to_string(), jwk.get(*m).cloned().unwrap_or(Value::Null))).collect();
    let canonical = super::jcs::canonicalize(&Value::Object(required)).unwrap_or_default();
    URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
}

/// Checks `signature` over `input` with the public `jwk` and `alg` (which must be the JWK's).
pub fn verify(jwk: &Value, alg: &str, input: &[u8], signature: &[u8]) -> Result<(), String> {
    let field = |name: &str| -> Result<Vec<u8>, String> {
        let text = jwk.get(name).and_then(Value::as_str).ok_or_else(|| format!("the JWK has no {name}"))?;
        URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).map_err(|e| format!("the JWK's {name}: {e}"))
    };
    if let Some(declared) = jwk.get("alg").and_then(Value::as_str) {
        if declared != alg {
            return Err(format!("the key is for {declared}, the signature says {alg}"));
        }
    }
    let kty = jwk.get("kty").and_then(Value::as_str).unwrap_or_default();
    let crv = jwk.get("crv").and_then(Value::as_str).unwrap_or_default();
    let checked = match (alg, kty, crv) {
        ("ES256", "EC", "P-256") => {
            let point = [vec![4u8], field("x")?, field("y")?].concat();
            UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point).verify(input, signature)
        }
        ("RS256", "RSA", _) => {
            let key = RsaPublicKeyComponents { n: field("n")?, e: field("e")? };
            key.verify(&signature::RSA_PKCS1_2048_8192_SHA256, input, signature)
        }
        ("EdDSA", "OKP", "Ed25519") => {
            UnparsedPublicKey::new(&signature::ED25519, field("x")?).verify(input, signature)
        }
        (alg, _, _) if !ALGORITHMS.contains(&alg) => {
            return Err(format!("the algorithm {alg:?} is not accepted ({})", ALGORITHMS.join(", ")))
        }
        _ => return Err(format!("a {kty} {crv} key cannot check an {alg} signature")),
    };
    checked.map_err(|_| "the signature does not match".to_string())
}
