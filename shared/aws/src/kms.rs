//! [`KmsSigner`]: a card and notification signing key held in AWS KMS. The private key never
//! leaves KMS: each signature is one `Sign` call, and the public JWK comes from `GetPublicKey` once,
//! when the signer is loaded.
//!
//! Keys: `ECC_NIST_P256` signs ES256 (`ECDSA_SHA_256`; KMS answers DER, the JWS wants r‖s) and
//! `RSA_2048`/`RSA_3072`/`RSA_4096` sign RS256 (`RSASSA_PKCS1_V1_5_SHA_256`). The message goes as
//! `RAW` while it fits KMS's 4096-byte limit and as its SHA-256 `DIGEST` beyond (a large card), which
//! gives the same signature. Other specs are refused when the signer loads.

use std::sync::Arc;

use async_trait::async_trait;
use aws_sdk_kms::primitives::Blob;
use aws_sdk_kms::types::{KeyUsageType, MessageType, SigningAlgorithmSpec};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use a2a_signing::keys::thumbprint;
use a2a_signing::Signer;

/// The largest message KMS signs as `RAW`.
const RAW_LIMIT: usize = 4096;

/// A signing key in KMS (by key id, ARN or alias).
pub struct KmsSigner {
    client: aws_sdk_kms::Client,
    key_id: String,
    kid: String,
    alg: &'static str,
    spec: SigningAlgorithmSpec,
    jwk: Value,
}

impl std::fmt::Debug for KmsSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KmsSigner")
            .field("key_id", &self.key_id)
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish()
    }
}

impl KmsSigner {
    /// Reads the public key of `key_id` (`GetPublicKey`); `kid` defaults to the JWK's RFC 7638
    /// thumbprint, like a PEM key's.
    pub async fn load(client: aws_sdk_kms::Client, key_id: &str, kid: Option<&str>) -> Result<Self, String> {
        let out =
            client.get_public_key().key_id(key_id).send().await.map_err(|e| {
                format!("KMS key {key_id}: GetPublicKey: {}", aws_sdk_kms::error::DisplayErrorContext(&e))
            })?;
        if out.key_usage() != Some(&KeyUsageType::SignVerify) {
            return Err(format!("KMS key {key_id}: its key usage is not SIGN_VERIFY"));
        }
        let spki = out.public_key().ok_or_else(|| format!("KMS key {key_id}: no public key"))?.as_ref();
        // The signing algorithms and the key itself decide (moto answers only the older
        // CustomerMasterKeySpec; ECC_SECG_P256K1 also signs ECDSA_SHA_256, on another curve).
        let algorithms = out.signing_algorithms();
        let (alg, spec, mut jwk) = if algorithms.contains(&SigningAlgorithmSpec::EcdsaSha256) && ec_p256(spki) {
            ("ES256", SigningAlgorithmSpec::EcdsaSha256, ec_jwk(spki).map_err(|e| format!("KMS key {key_id}: {e}"))?)
        } else if algorithms.contains(&SigningAlgorithmSpec::RsassaPkcs1V15Sha256) {
            (
                "RS256",
                SigningAlgorithmSpec::RsassaPkcs1V15Sha256,
                rsa_jwk(spki).map_err(|e| format!("KMS key {key_id}: {e}"))?,
            )
        } else {
            let names: Vec<&str> = algorithms.iter().map(SigningAlgorithmSpec::as_str).collect();
            return Err(format!(
                "KMS key {key_id} signs with {} only: ES256 needs an ECC_NIST_P256 key, RS256 an RSA_2048/3072/4096 key",
                names.join(", ")
            ));
        };
        let kid = kid.map_or_else(|| thumbprint(&jwk), str::to_string);
        if let Value::Object(members) = &mut jwk {
            members.insert("kid".into(), json!(kid));
            members.insert("alg".into(), json!(alg));
            members.insert("use".into(), json!("sig"));
        }
        Ok(Self { client, key_id: key_id.to_string(), kid, alg, spec, jwk })
    }
}

#[async_trait]
impl Signer for KmsSigner {
    fn kid(&self) -> &str {
        &self.kid
    }

    fn alg(&self) -> &'static str {
        self.alg
    }

    fn public_jwk(&self) -> Value {
        self.jwk.clone()
    }

    async fn sign(&self, input: &[u8]) -> Result<Vec<u8>, String> {
        let (message, kind) = if input.len() <= RAW_LIMIT {
            (input.to_vec(), MessageType::Raw)
        } else {
            (Sha256::digest(input).to_vec(), MessageType::Digest)
        };
        let out = self
            .client
            .sign()
            .key_id(&self.key_id)
            .message(Blob::new(message))
            .message_type(kind)
            .signing_algorithm(self.spec.clone())
            .send()
            .await
            .map_err(|e| format!("KMS key {}: Sign: {}", self.key_id, aws_sdk_kms::error::DisplayErrorContext(&e)))?;
        let signature =
            out.signature().ok_or_else(|| format!("KMS key {}: Sign returned no signature", self.key_id))?;
        match self.spec {
            SigningAlgorithmSpec::EcdsaSha256 => ecdsa_der_to_fixed(signature.as_ref()),
            _ => Ok(signature.as_ref().to_vec()),
        }
    }
}

/// The signers of `keys`, each `[KID=]KEY_ID` (a key id, ARN or `alias/...`; KMS ids never hold
/// `=`), loaded one after the other.
pub async fn load_all(sdk: &aws_config::SdkConfig, keys: &[String]) -> Result<Vec<Arc<dyn Signer>>, String> {
    let client = aws_sdk_kms::Client::new(sdk);
    let mut signers: Vec<Arc<dyn Signer>> = Vec::new();
    for arg in keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
        let (kid, key_id) = a2a_signing::kid_and_value(arg);
        let signer = KmsSigner::load(client.clone(), key_id, kid).await?;
        tracing::info!(key_id, kid = %signer.kid, alg = signer.alg, "card signing key in KMS");
        signers.push(Arc::new(signer));
    }
    Ok(signers)
}

/// A DER reader for the few structures KMS answers with: SubjectPublicKeyInfo and ECDSA-Sig-Value.
struct Der<'a>(&'a [u8]);

impl<'a> Der<'a> {
    /// The next element's tag and contents.
    fn next(&mut self) -> Result<(u8, &'a [u8]), String> {
        let truncated = || "truncated DER".to_string();
        let (&tag, rest) = self.0.split_first().ok_or_else(truncated)?;
        let (&first, mut rest) = rest.split_first().ok_or_else(truncated)?;
        let len = if first < 0x80 {
            usize::from(first)
        } else {
            let n = usize::from(first & 0x7f);
            if n == 0 || n > 4 || rest.len() < n {
                return Err("a DER length out of range".into());
            }
            let (bytes, tail) = rest.split_at(n);
            rest = tail;
            bytes.iter().fold(0usize, |acc, b| (acc << 8) | usize::from(*b))
        };
        if rest.len() < len {
            return Err(truncated());
        }
        let (contents, tail) = rest.split_at(len);
        self.0 = tail;
        Ok((tag, contents))
    }

    fn expect(&mut self, tag: u8, what: &str) -> Result<&'a [u8], String> {
        match self.next()? {
            (t, contents) if t == tag => Ok(contents),
            (t, _) => Err(format!("{what}: DER tag {t:#04x}, expected {tag:#04x}")),
        }
    }
}

const SEQUENCE: u8 = 0x30;
const INTEGER: u8 = 0x02;
const BIT_STRING: u8 = 0x03;

/// The key bits of a SubjectPublicKeyInfo (the BIT STRING without its unused-bits byte).
fn spki_key(spki: &[u8]) -> Result<&[u8], String> {
    let mut info = Der(Der(spki).expect(SEQUENCE, "SubjectPublicKeyInfo")?);
    info.expect(SEQUENCE, "AlgorithmIdentifier")?;
    match info.expect(BIT_STRING, "subjectPublicKey")? {
        [0, key @ ..] => Ok(key),
        _ => Err("subjectPublicKey: unused bits".into()),
    }
}

/// The DER of the named-curve OID of P-256 (1.2.840.10045.3.1.7).
const P256_OID: [u8; 8] = [0x2a, 0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07];
const OID: u8 = 0x06;

/// Whether a SubjectPublicKeyInfo is an EC key on P-256 (its AlgorithmIdentifier's parameter).
fn ec_p256(spki: &[u8]) -> bool {
    let algorithm = Der(spki)
        .expect(SEQUENCE, "SubjectPublicKeyInfo")
        .and_then(|info| Der(info).expect(SEQUENCE, "AlgorithmIdentifier"));
    let mut algorithm = match algorithm {
        Ok(algorithm) => Der(algorithm),
        Err(_) => return false,
    };
    let _ec_public_key = algorithm.expect(OID, "algorithm");
    algorithm.expect(OID, "namedCurve").is_ok_and(|curve| curve == P256_OID)
}

/// A P-256 public key's JWK (the key is the uncompressed point 04‖x‖y).
fn ec_jwk(spki: &[u8]) -> Result<Value, String> {
    match spki_key(spki)? {
        [4, point @ ..] if point.len() == 64 => Ok(json!({
            "kty": "EC", "crv": "P-256",
            "x": URL_SAFE_NO_PAD.encode(&point[..32]), "y": URL_SAFE_NO_PAD.encode(&point[32..]),
        })),
        _ => Err("not an uncompressed P-256 point".into()),
    }
}

/// An RSA public key's JWK (RSAPublicKey: SEQUENCE { n INTEGER, e INTEGER }).
fn rsa_jwk(spki: &[u8]) -> Result<Value, String> {
    let mut key = Der(Der(spki_key(spki)?).expect(SEQUENCE, "RSAPublicKey")?);
    let n = unsigned(key.expect(INTEGER, "modulus")?);
    let e = unsigned(key.expect(INTEGER, "publicExponent")?);
    Ok(json!({"kty": "RSA", "n": URL_SAFE_NO_PAD.encode(n), "e": URL_SAFE_NO_PAD.encode(e)}))
}

/// A DER INTEGER's magnitude without leading zero bytes.
fn unsigned(integer: &[u8]) -> &[u8] {
    let start = integer.iter().position(|b| *b != 0).unwrap_or(integer.len());
    &integer[start..]
}

/// ECDSA-Sig-Value (SEQUENCE { r INTEGER, s INTEGER }) → the JWS form r‖s, 32 bytes each.
fn ecdsa_der_to_fixed(der: &[u8]) -> Result<Vec<u8>, String> {
    let mut sig = Der(Der(der).expect(SEQUENCE, "ECDSA signature")?);
    let mut out = Vec::with_capacity(64);
    for what in ["r", "s"] {
        let value = unsigned(sig.expect(INTEGER, what)?);
        if value.len() > 32 {
            return Err(format!("ECDSA signature: {what} is longer than 32 bytes"));
        }
        out.extend(std::iter::repeat_n(0, 32 - value.len()));
        out.extend_from_slice(value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn der_signatures_become_fixed_width() {
        // r with a leading zero (high bit set), s short (leading zero bytes dropped by DER).
        let r = [[0u8].as_slice(), &[0x80; 32]].concat();
        let s = vec![0x01; 31];
        let der = [&[SEQUENCE, 2 + 33 + 2 + 31][..], &[INTEGER, 33], &r, &[INTEGER, 31], &s].concat();
        let fixed = ecdsa_der_to_fixed(&der).unwrap();
        assert_eq!(&fixed[..32], &[0x80; 32]);
        assert_eq!(fixed[32], 0);
        assert_eq!(&fixed[33..], &[0x01; 31]);
        assert!(ecdsa_der_to_fixed(&der[..10]).is_err());
        assert!(ecdsa_der_to_fixed(&[SEQUENCE, 0x85, 1, 1, 1, 1, 1]).is_err());
    }
}
