//! Signing keys held in AWS KMS (on moto): ES256 and RS256 keys sign cards that verify with their
//! published JWKs, a card whose signing input passes KMS's 4096-byte RAW limit is signed by digest,
//! notifications are signed too, and keys that cannot sign JWS here are refused with a reason.

use crate::common;

use std::sync::Arc;

use a2a::adapters::aws::kms::{load_all, KmsSigner};
use a2a::signing::card::{sign, verify};
use a2a::signing::webhook::{Notification, WebhookSigner};
use a2a::signing::{keys, Signer};
use aws_sdk_kms::types::{KeySpec, KeyUsageType};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

async fn kms() -> aws_sdk_kms::Client {
    aws_sdk_kms::Client::new(&a2a::adapters::aws::sdk_config().await)
}

async fn create_key(client: &aws_sdk_kms::Client, spec: KeySpec, usage: KeyUsageType) -> String {
    let out = client.create_key().key_spec(spec).key_usage(usage).send().await.unwrap();
    out.key_metadata().unwrap().key_id().to_string()
}

/// A card with `skills` skills (about 150 bytes each).
fn card(skills: usize) -> Value {
    let skills: Vec<Value> = (0..skills)
        .map(|i| json!({"id": format!("skill-{i}"), "name": format!("Skill {i}"), "description": "Does one thing, well, and says so at length", "tags": ["kms", "test"]}))
        .collect();
    json!({
        "name": "KMS-signed agent", "description": "Its keys never leave KMS",
        "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "version": "1.0.0", "capabilities": {"streaming": true},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"], "skills": skills
    })
}

#[tokio::test]
async fn kms_keys_sign_cards_that_verify_with_their_jwks() {
    if !common::aws_available() {
        return;
    }
    let client = kms().await;
    let es256 = create_key(&client, KeySpec::EccNistP256, KeyUsageType::SignVerify).await;
    let rs256 = create_key(&client, KeySpec::Rsa2048, KeyUsageType::SignVerify).await;
    let sdk = a2a::adapters::aws::sdk_config().await;
    let signers = load_all(&sdk, &[es256.clone(), format!("rotating-2026={rs256}")]).await.unwrap();
    assert_eq!(signers.iter().map(|s| s.alg()).collect::<Vec<_>>(), ["ES256", "RS256"]);
    // kid: the JWK thumbprint unless named; the JWK holds no private member.
    let jwks: Vec<Value> = signers.iter().map(|s| s.public_jwk()).collect();
    let mut bare = jwks[0].clone();
    for member in ["kid", "alg", "use"] {
        bare.as_object_mut().unwrap().remove(member);
    }
    assert_eq!(signers[0].kid(), keys::thumbprint(&bare));
    assert_eq!(signers[1].kid(), "rotating-2026");
    assert_eq!(
        (jwks[0]["kty"].as_str(), jwks[0]["crv"].as_str(), jwks[1]["kty"].as_str()),
        (Some("EC"), Some("P-256"), Some("RSA"))
    );
    assert!(jwks.iter().all(|k| k.get("d").is_none()));
    // Small (RAW) and large (DIGEST: the signing input is over 4096 bytes) cards.
    for skills in [1, 60] {
        let mut signed = card(skills);
        let signatures = sign(&signed, &signers, None).await.unwrap();
        assert!(skills == 1 || signatures[0].protected.len() + canonical_len(&signed) > 4096);
        signed["signatures"] = serde_json::to_value(&signatures).unwrap();
        for (i, jwk) in jwks.iter().enumerate() {
            // Each key alone verifies its own signature.
            let verified = verify(&signed, std::slice::from_ref(jwk)).unwrap();
            assert_eq!(verified.kid, signers[i].kid());
        }
        let mut tampered = signed.clone();
        tampered["skills"][0]["name"] = json!("Someone else");
        let why = verify(&tampered, &jwks).unwrap_err();
        assert!(why.contains("signature 1") && why.contains("signature 2"), "{why}");
    }
    // The ECDSA signatures are the JWS form (r‖s), not KMS's DER.
    let mut small = card(1);
    let signatures = sign(&small, &signers[..1], None).await.unwrap();
    assert_eq!(URL_SAFE_NO_PAD.decode(&signatures[0].signature).unwrap().len(), 64);
    small["signatures"] = serde_json::to_value(&signatures).unwrap();
    verify(&small, &jwks).unwrap();
}

fn canonical_len(card: &Value) -> usize {
    URL_SAFE_NO_PAD.encode(a2a::signing::canonical::payload(card).unwrap()).len()
}

#[tokio::test]
async fn kms_keys_sign_notifications() {
    if !common::aws_available() {
        return;
    }
    let client = kms().await;
    let key_id = create_key(&client, KeySpec::EccNistP256, KeyUsageType::SignVerify).await;
    let signer: Arc<dyn Signer> = Arc::new(KmsSigner::load(client, &key_id, None).await.unwrap());
    let webhook = WebhookSigner { signer: signer.clone(), issuer: "https://agent.example.com".into(), jku: None };
    let body = br#"{"task":{"id":"t1"}}"#;
    let n = Notification { url: "https://hooks.example.com/a2a", task_id: "t1", config_id: "c1", seq: 3, body };
    let token = webhook.token(n, 1_800_000_000).await.unwrap();
    let parts: Vec<&str> = token.split('.').collect();
    keys::verify(
        &signer.public_jwk(),
        "ES256",
        format!("{}.{}", parts[0], parts[1]).as_bytes(),
        &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
    )
    .unwrap();
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
    assert_eq!(claims["jti"], "t1/c1/3");
}

#[tokio::test]
async fn keys_that_cannot_sign_here_are_refused_with_a_reason() {
    if !common::aws_available() {
        return;
    }
    let client = kms().await;
    let p384 = create_key(&client, KeySpec::EccNistP384, KeyUsageType::SignVerify).await;
    let why = KmsSigner::load(client.clone(), &p384, None).await.unwrap_err();
    assert!(why.contains("ECDSA_SHA_384 only") && why.contains("ECC_NIST_P256"), "{why}");
    // Signs ECDSA_SHA_256 too, but on secp256k1: not ES256.
    let k1 = create_key(&client, KeySpec::EccSecgP256K1, KeyUsageType::SignVerify).await;
    let why = KmsSigner::load(client.clone(), &k1, None).await.unwrap_err();
    assert!(why.contains("ECDSA_SHA_256 only"), "{why}");
    let symmetric = create_key(&client, KeySpec::SymmetricDefault, KeyUsageType::EncryptDecrypt).await;
    let why = KmsSigner::load(client.clone(), &symmetric, None).await.unwrap_err();
    assert!(why.contains(&symmetric), "{why}");
    let why = KmsSigner::load(client, "alias/no-such-key", None).await.unwrap_err();
    assert!(why.contains("alias/no-such-key") && why.contains("GetPublicKey"), "{why}");
}
