//! Signed agent cards (spec §8.4): the canonicalization vectors checked in as fixtures, signing
//! with each algorithm and verifying with the published JWKS, tampering of any kind refused with a
//! reason, key rotation, keys this project does not accept, and a2a-local's served card and JWKS.

use std::sync::Arc;

use a2a::signing::card::{sign, verify};
use a2a::signing::{canonical, CardSigning, PemKey, Signer};
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::{json, Value};

const DIR: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/signing");

fn key(file: &str, kid: Option<&str>) -> Arc<dyn Signer> {
    let pem = std::fs::read_to_string(format!("{DIR}/{file}")).unwrap();
    Arc::new(PemKey::from_pem(&pem, kid).unwrap())
}

fn card() -> Value {
    json!({
        "name": "Signed agent", "description": "Signs its card — ünïcödé too",
        "supportedInterfaces": [{"url": "https://agent.example.com/a2a", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}],
        "version": "1.0.0", "capabilities": {"streaming": true, "pushNotifications": false, "extensions": []},
        "defaultInputModes": ["text/plain"], "defaultOutputModes": ["text/plain"],
        "skills": [{"id": "echo", "name": "Echo", "description": "Echoes", "tags": ["test"]}]
    })
}

fn jwks(signers: &[Arc<dyn Signer>]) -> Vec<Value> {
    signers.iter().map(|s| s.public_jwk()).collect()
}

async fn signed(signers: &[Arc<dyn Signer>]) -> Value {
    let mut card = card();
    card["signatures"] =
        serde_json::to_value(sign(&card, signers, Some("https://agent.example.com/jwks")).await.unwrap()).unwrap();
    card
}

#[test]
fn canonicalization_vectors() {
    let vectors: Vec<Value> =
        serde_json::from_str(&std::fs::read_to_string(format!("{DIR}/vectors.json")).unwrap()).unwrap();
    assert!(vectors.len() >= 4);
    for v in vectors {
        let got = String::from_utf8(canonical::payload(&v["card"]).unwrap()).unwrap();
        assert_eq!(got, v["canonical"].as_str().unwrap(), "{}", v["name"]);
    }
}

#[tokio::test]
async fn every_algorithm_signs_and_verifies_with_the_jwks() {
    for (file, alg) in
        [("es256.pem", "ES256"), ("es256-sec1.pem", "ES256"), ("rs256.pem", "RS256"), ("eddsa.pem", "EdDSA")]
    {
        let signer = key(file, None);
        assert_eq!(signer.alg(), alg);
        let card = signed(std::slice::from_ref(&signer)).await;
        let header: Value = serde_json::from_slice(
            &URL_SAFE_NO_PAD.decode(card["signatures"][0]["protected"].as_str().unwrap()).unwrap(),
        )
        .unwrap();
        assert_eq!(
            header,
            json!({"alg": alg, "typ": "JOSE", "kid": signer.kid(), "jku": "https://agent.example.com/jwks"})
        );
        assert_eq!(signer.kid(), a2a::signing::keys::thumbprint(&signer.public_jwk()), "kid: the RFC 7638 thumbprint");
        let verified = verify(&card, &jwks(std::slice::from_ref(&signer))).unwrap();
        assert_eq!((verified.kid.as_str(), verified.alg.as_str()), (signer.kid(), alg), "{file}");
    }
}

#[tokio::test]
async fn tampering_is_refused_with_a_reason() {
    let signer = key("es256.pem", Some("k1"));
    let keys = jwks(std::slice::from_ref(&signer));
    let card = signed(&[signer]).await;
    verify(&card, &keys).unwrap();
    let refused = |card: &Value, what: &str| {
        let why = verify(card, &keys).expect_err(what);
        assert!(!why.is_empty(), "{what}");
        why
    };
    // Any field, at any depth; a field added; a default made explicit where it counts.
    for (pointer, value) in [
        ("/name", json!("Evil agent")),
        ("/skills/0/tags/0", json!("evil")),
        ("/supportedInterfaces/0/url", json!("https://evil.example.com")),
        ("/capabilities/pushNotifications", json!(true)),
    ] {
        let mut t = card.clone();
        *t.pointer_mut(pointer).unwrap() = value;
        assert!(refused(&t, pointer).contains("does not match"), "{pointer}");
    }
    let mut t = card.clone();
    t["iconUrl"] = json!("https://evil.example.com/i.png");
    refused(&t, "an added field");
    // A member outside the 1.0 proto is not signed (as in both official SDKs): it changes nothing.
    let mut t = card.clone();
    t["notInTheProto"] = json!({"anything": 1});
    verify(&t, &keys).unwrap();
    // Dropping a default the canonical form omits anyway changes nothing.
    let mut same = card.clone();
    same["capabilities"].as_object_mut().unwrap().remove("extensions");
    verify(&same, &keys).unwrap();
    // The header: alg none, an HMAC, a wrong kid, crit; a swapped key under the same kid.
    let header_of = |h: Value| URL_SAFE_NO_PAD.encode(h.to_string());
    for (header, reason) in [
        (json!({"alg": "none", "typ": "JOSE", "kid": "k1"}), "not accepted"),
        (json!({"alg": "HS256", "typ": "JOSE", "kid": "k1"}), "not accepted"),
        (json!({"alg": "ES256", "typ": "JOSE", "kid": "k2"}), "no trusted key has kid"),
        (json!({"alg": "ES256", "typ": "JOSE", "kid": "k1", "crit": ["x"]}), "crit"),
        (json!({"alg": "RS256", "typ": "JOSE", "kid": "k1"}), "the key is for ES256"),
        (json!({"alg": "ES256", "typ": "JOSE", "kid": "k1", "jku": "https://evil"}), "does not match"),
    ] {
        let mut t = card.clone();
        t["signatures"][0]["protected"] = json!(header_of(header.clone()));
        assert!(refused(&t, reason).contains(reason), "{header}: {}", refused(&t, reason));
    }
    let other = key("eddsa.pem", Some("k1"));
    let mut swapped = jwks(&[other]);
    swapped[0]["alg"] = json!("ES256");
    assert!(verify(&card, &swapped).is_err(), "another key under the same kid");
    let mut t = card.clone();
    t["signatures"] = json!([]);
    assert!(refused(&t, "no signatures").contains("no signatures"));
}

#[tokio::test]
async fn rotation_old_signatures_verify_until_the_key_leaves_the_jwks() {
    let (old, new) = (key("rs256.pem", Some("2025")), key("eddsa.pem", Some("2026")));
    let both = signed(&[old.clone(), new.clone()]).await;
    assert_eq!(verify(&both, &jwks(&[old.clone(), new.clone()])).unwrap().kid, "2025");
    assert_eq!(verify(&both, &jwks(std::slice::from_ref(&new))).unwrap().kid, "2026", "the old key retired");
    let only_old = signed(std::slice::from_ref(&old)).await;
    assert!(verify(&only_old, &jwks(&[old])).is_ok());
    let why = verify(&only_old, &jwks(&[new])).unwrap_err();
    assert!(why.contains("no trusted key has kid \"2025\""), "{why}");
}

#[test]
fn keys_this_project_does_not_sign_with_are_refused() {
    let p384 = std::fs::read_to_string(format!("{DIR}/p384.pem")).unwrap();
    let why = PemKey::from_pem(&p384, None).unwrap_err();
    assert!(why.contains("Ed25519, P-256 or RSA"), "{why}");
    assert!(PemKey::from_pem("not a key", None).unwrap_err().contains("no PEM block"));
    let public = "-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n";
    assert!(PemKey::from_pem(public, None).unwrap_err().contains("not a private key"));
}

#[tokio::test]
async fn the_jwks_lists_every_signing_key() {
    let signing = CardSigning { signers: vec![key("es256.pem", Some("a")), key("rs256.pem", Some("b"))], jku: None };
    let jwks = signing.jwks();
    let kids: Vec<&str> = jwks["keys"].as_array().unwrap().iter().map(|k| k["kid"].as_str().unwrap()).collect();
    assert_eq!(kids, ["a", "b"]);
    for k in jwks["keys"].as_array().unwrap() {
        assert!(k.get("d").is_none() && k.get("p").is_none(), "no private part: {k}");
    }
}
