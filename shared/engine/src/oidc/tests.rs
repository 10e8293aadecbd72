//! The verifier's edge cases, and key fetching against a tiny issuer on 127.0.0.1.

use super::*;
use aws_lc_rs::rand::SystemRandom;
use aws_lc_rs::signature::{EcdsaKeyPair, Ed25519KeyPair, KeyPair, ECDSA_P256_SHA256_FIXED_SIGNING};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use jsonwebtoken::{encode, EncodingKey, Header};
use serde_json::json;

struct Signer {
    kid: String,
    alg: Algorithm,
    key: EncodingKey,
    jwk: Value,
}

fn ed25519(kid: &str) -> Signer {
    let pkcs8 = Ed25519KeyPair::generate_pkcs8(&SystemRandom::new()).unwrap();
    let pair = Ed25519KeyPair::from_pkcs8(pkcs8.as_ref()).unwrap();
    let x = B64.encode(pair.public_key().as_ref());
    Signer {
        kid: kid.into(),
        alg: Algorithm::EdDSA,
        key: EncodingKey::from_ed_der(pkcs8.as_ref()),
        jwk: json!({"kty": "OKP", "crv": "Ed25519", "x": x, "kid": kid, "use": "sig", "alg": "EdDSA"}),
    }
}

fn p256(kid: &str) -> Signer {
    let rng = SystemRandom::new();
    let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
    let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref()).unwrap();
    let point = pair.public_key().as_ref();
    let (x, y) = (B64.encode(&point[1..33]), B64.encode(&point[33..65]));
    Signer {
        kid: kid.into(),
        alg: Algorithm::ES256,
        key: EncodingKey::from_ec_der(pkcs8.as_ref()),
        jwk: json!({"kty": "EC", "crv": "P-256", "x": x, "y": y, "kid": kid, "use": "sig", "alg": "ES256"}),
    }
}

const ISS: &str = "https://id.example/";
const AUD: &str = "https://agent.example/";

fn claims(extra: Value) -> Value {
    let now = jsonwebtoken::get_current_timestamp();
    let mut c = json!({"iss": ISS, "aud": AUD, "sub": "client-a", "azp": "client-a", "iat": now,
        "exp": now + 300, "scope": "a2a:send a2a:read"});
    for (k, v) in extra.as_object().unwrap() {
        if v.is_null() {
            c.as_object_mut().unwrap().remove(k);
        } else {
            c[k] = v.clone();
        }
    }
    c
}

fn sign(s: &Signer, claims: &Value) -> String {
    let mut header = Header::new(s.alg);
    header.kid = Some(s.kid.clone());
    encode(&header, claims, &s.key).unwrap()
}

fn verifier(signers: &[&Signer], tune: impl FnOnce(&mut OidcConfig)) -> BearerVerifier {
    let mut config = OidcConfig::new(ISS, vec![AUD.into()]);
    tune(&mut config);
    let jwks = json!({"keys": signers.iter().map(|s| s.jwk.clone()).collect::<Vec<_>>()});
    BearerVerifier::with_keys(config, &jwks).unwrap()
}

fn invalid(r: Result<Identity, Refusal>) -> String {
    match r {
        Err(Refusal::InvalidToken(why)) => why,
        other => panic!("expected invalid_token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_valid_token_names_its_principal_client_and_scopes() {
    for s in [ed25519("k1"), p256("k2")] {
        let v = verifier(&[&s], |_| {});
        let id = v.verify(&sign(&s, &claims(json!({}))), &["a2a:send"]).await.unwrap();
        assert_eq!(id.principal, "client-a");
        assert_eq!(id.client_id.as_deref(), Some("client-a"));
        assert_eq!(*id.scopes, ["a2a:read", "a2a:send"].map(String::from).into());
    }
    let s = ed25519("k1");
    let v = verifier(&[&s], |c| c.principal_claim = "client_id".into());
    let token = sign(&s, &claims(json!({"azp": null, "client_id": "svc", "scope": null, "scp": ["x"]})));
    let id = v.verify(&token, &["x"]).await.unwrap();
    assert_eq!((id.principal.as_str(), id.client_id.as_deref()), ("svc", Some("svc")));
}

#[tokio::test]
async fn every_bad_token_is_refused_with_its_reason() {
    let s = ed25519("k1");
    let v = verifier(&[&s], |c| c.client_ids = vec!["client-a".into()]);
    let now = jsonwebtoken::get_current_timestamp();
    let cases = [
        (json!({"iss": "https://other.example/"}), "another issuer"),
        (json!({"aud": "https://other-api.example/"}), "another audience"),
        (json!({"exp": now - 3600}), "expired"),
        (json!({"nbf": now + 3600}), "not valid yet"),
        (json!({"iat": now + 3600}), "in the future"),
        (json!({"exp": null}), "no exp claim"),
        (json!({"azp": "intruder"}), "not allowed"),
        (json!({"sub": null}), "no sub claim"),
    ];
    for (extra, why) in cases {
        let result = v.verify(&sign(&s, &claims(extra.clone())), &[]).await;
        assert!(matches!(result, Err(Refusal::InvalidToken(_))), "{extra}: {result:?}");
        let got = invalid(result);
        assert!(got.contains(why), "{extra}: {got}");
    }
    // Signed by a key the issuer does not publish, under a known kid.
    let forger = ed25519("k1");
    assert!(invalid(v.verify(&sign(&forger, &claims(json!({}))), &[]).await).contains("signature"));
    // An unknown kid.
    let other = ed25519("k9");
    assert!(invalid(v.verify(&sign(&other, &claims(json!({}))), &[]).await).contains("unknown"));
    // Garbage.
    assert!(invalid(v.verify("not.a.jwt", &[]).await).contains("well-formed"));
}

#[tokio::test]
async fn none_and_hmac_tokens_are_refused() {
    let s = p256("k1");
    let v = verifier(&[&s], |_| {});
    let body = B64.encode(claims(json!({})).to_string());
    let none = format!("{}.{body}.", B64.encode(r#"{"alg":"none","kid":"k1"}"#));
    assert_eq!(invalid(v.verify(&none, &[]).await), "tokens signed with none are not accepted");
    // HMAC keyed with the public key's bytes: the classic confusion.
    let public = s.jwk.to_string();
    let mut header = Header::new(Algorithm::HS256);
    header.kid = Some("k1".into());
    let hs = encode(&header, &claims(json!({})), &EncodingKey::from_secret(public.as_bytes())).unwrap();
    assert!(invalid(v.verify(&hs, &[]).await).contains("HS256"));
    // A key used with another algorithm than its own.
    let ed = ed25519("k1");
    let mut header = Header::new(Algorithm::EdDSA);
    header.kid = Some("k1".into());
    let cross = encode(&header, &claims(json!({})), &ed.key).unwrap();
    assert!(invalid(v.verify(&cross, &[]).await).contains("does not sign with"));
}

#[tokio::test]
async fn missing_scopes_are_named() {
    let s = ed25519("k1");
    let v = verifier(&[&s], |c| c.required_scopes = vec!["a2a:send".into()]);
    let token = sign(&s, &claims(json!({"scope": "a2a:read"})));
    assert_eq!(v.verify(&token, &[]).await, Err(Refusal::InsufficientScope("a2a:send".into())));
    let token = sign(&s, &claims(json!({})));
    assert_eq!(v.verify(&token, &["a2a:push"]).await, Err(Refusal::InsufficientScope("a2a:push".into())));
}

/// A token seen before is not verified again, but its scopes are checked on every request and
/// it stops working when it expires.
#[tokio::test]
async fn verified_tokens_are_cached_until_they_expire() {
    let s = p256("k1");
    let v = verifier(&[&s], |c| c.leeway = Duration::ZERO);
    let now = jsonwebtoken::get_current_timestamp();
    let token = sign(&s, &claims(json!({"exp": now + 2})));
    let first = v.verify(&token, &[]).await.unwrap();
    assert_eq!(v.verified.read().len(), 1);
    assert_eq!(v.verify(&token, &[]).await.unwrap(), first);
    assert_eq!(v.verify(&token, &["a2a:push"]).await, Err(Refusal::InsufficientScope("a2a:push".into())));
    tokio::time::sleep(Duration::from_millis(3100)).await;
    assert_eq!(invalid(v.verify(&token, &[]).await), "the token has expired");
}

#[test]
fn an_audience_or_a_client_is_required() {
    assert!(BearerVerifier::with_keys(OidcConfig::new(ISS, vec![]), &json!({"keys": []})).is_err());
    assert!(BearerVerifier::new(OidcConfig::new(ISS, vec![])).is_err());
}

/// Cognito access tokens carry no `aud`: the allowed client ties them to this API.
#[tokio::test]
async fn without_audiences_the_client_decides() {
    let s = p256("k1");
    let v = verifier(&[&s], |c| {
        c.audiences.clear();
        c.client_ids = vec!["client-a".into()];
    });
    let no_aud = json!({"aud": null, "azp": null, "client_id": "client-a"});
    assert_eq!(v.verify(&sign(&s, &claims(no_aud)), &[]).await.unwrap().client_id.as_deref(), Some("client-a"));
    let other = json!({"aud": null, "azp": null, "client_id": "client-b"});
    assert!(invalid(v.verify(&sign(&s, &claims(other)), &[]).await).contains("client"));
}

/// What the test issuer answers at its JWKS URL.
struct Jwks {
    doc: Value,
    cache_control: Option<&'static str>,
    status: u16,
    delay: Duration,
}

type Shared<T> = std::sync::Arc<parking_lot::Mutex<T>>;
type Count = std::sync::Arc<std::sync::atomic::AtomicUsize>;

/// A tiny issuer on 127.0.0.1: discovery and a JWKS that can be swapped (or made slow, or made to
/// fail), counting JWKS requests.
async fn issuer(doc: Value) -> (String, Shared<Jwks>, Count) {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let jwks = Jwks { doc, cache_control: None, status: 200, delay: Duration::ZERO };
    let (jwks, fetches) = (Arc::new(parking_lot::Mutex::new(jwks)), Arc::new(AtomicUsize::new(0)));
    let (j, f, b) = (jwks.clone(), fetches.clone(), base.clone());
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            let (j, f, b) = (j.clone(), f.clone(), b.clone());
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let (status, extra, body) = if head.starts_with("GET /.well-known/openid-configuration") {
                    (200, String::new(), json!({"issuer": b, "jwks_uri": format!("{b}/jwks")}).to_string())
                } else {
                    f.fetch_add(1, Ordering::SeqCst);
                    let (delay, status, cache, doc) = {
                        let j = j.lock();
                        (j.delay, j.status, j.cache_control, j.doc.to_string())
                    };
                    tokio::time::sleep(delay).await;
                    (status, cache.map(|c| format!("cache-control: {c}\r\n")).unwrap_or_default(), doc)
                };
                let resp = format!(
                    "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\n{extra}content-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(resp.as_bytes()).await;
            });
        }
    });
    (base, jwks, fetches)
}

/// Pretends the keys were fetched `secs` seconds ago.
fn age_keys(v: &BearerVerifier, secs: u64) {
    v.keys.write().fetched = Instant::now().checked_sub(Duration::from_secs(secs));
}

#[tokio::test]
async fn keys_come_from_discovery_and_rotate_with_bounded_refetches() {
    use std::sync::atomic::Ordering;
    let (k1, k2) = (ed25519("k1"), p256("k2"));
    let (base, keys, fetches) = issuer(json!({"keys": [k1.jwk.clone()]})).await;
    let mut config = OidcConfig::new(base.clone(), vec![AUD.into()]);
    config.refetch_interval = Duration::from_millis(300);
    let v = std::sync::Arc::new(BearerVerifier::new(config).unwrap());
    let token = |s: &Signer| sign(s, &claims(json!({"iss": base.clone()})));
    let before = token(&k1);
    v.verify(&before, &[]).await.unwrap();
    v.verify(&token(&k1), &[]).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "keys are cached");

    // The issuer rotates to k2. Within the interval an unknown kid causes no fetch.
    keys.lock().doc = json!({"keys": [k2.jwk.clone()]});
    assert!(invalid(v.verify(&token(&k2), &[]).await).contains("unknown"));
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    tokio::time::sleep(Duration::from_millis(350)).await;
    // After it, a burst of tokens with the new kid causes one fetch.
    let burst: Vec<_> = (0..16)
        .map(|_| {
            let (v, t) = (v.clone(), token(&k2));
            tokio::spawn(async move { v.verify(&t, &[]).await })
        })
        .collect();
    for task in burst {
        task.await.unwrap().unwrap();
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    // The retired key no longer verifies new tokens; a token verified before stays trusted for
    // at most VERIFIED_TTL.
    let fresh = sign(&k1, &claims(json!({"iss": base.clone(), "jti": "after-rotation"})));
    assert!(invalid(v.verify(&fresh, &[]).await).contains("unknown"));
    v.verify(&before, &[]).await.unwrap();
}

#[test]
fn keys_max_age_honours_cache_control_within_bounds() {
    let secs = |cc: Option<&str>| keys_max_age(cc).as_secs();
    assert_eq!(secs(None), KEYS_DEFAULT_AGE.as_secs());
    assert_eq!(secs(Some("public, max-age=120")), 120);
    assert_eq!(secs(Some("max-age=5")), 60, "at least a minute");
    assert_eq!(secs(Some("max-age=86400, must-revalidate")), 3600, "at most an hour");
    assert_eq!(secs(Some("no-store")), 60);
    assert_eq!(secs(Some("no-cache, max-age=600")), 60);
    assert_eq!(secs(Some("max-age=soon")), KEYS_DEFAULT_AGE.as_secs());
}

/// A key the issuer removes stops working when the cached keys reach their age: the JWKS
/// response's `max-age` (120 s here), or 5 minutes without one. Ages are simulated.
#[tokio::test]
async fn a_removed_key_stops_working_when_the_keys_age_out() {
    use std::sync::atomic::Ordering;
    let (k1, k2) = (ed25519("k1"), p256("k2"));
    let (base, jwks, fetches) = issuer(json!({"keys": [k1.jwk.clone(), k2.jwk.clone()]})).await;
    jwks.lock().cache_control = Some("public, max-age=120");
    let mut config = OidcConfig::new(base.clone(), vec![AUD.into()]);
    config.refetch_interval = Duration::from_millis(200);
    let v = BearerVerifier::new(config).unwrap();
    let jti = std::sync::atomic::AtomicUsize::new(0);
    let token = |s: &Signer| {
        let n = jti.fetch_add(1, Ordering::SeqCst);
        sign(s, &claims(json!({"iss": base.clone(), "jti": format!("t{n}")})))
    };
    v.verify(&token(&k1), &[]).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1);

    // The issuer removes k1 (and now serves its keys without Cache-Control).
    *jwks.lock() =
        Jwks { doc: json!({"keys": [k2.jwk.clone()]}), cache_control: None, status: 200, delay: Duration::ZERO };
    tokio::time::sleep(Duration::from_millis(250)).await;
    age_keys(&v, 119);
    v.verify(&token(&k1), &[]).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1, "within max-age the keys are used as fetched");
    age_keys(&v, 121);
    assert!(invalid(v.verify(&token(&k1), &[]).await).contains("unknown"), "past max-age k1 is gone");
    assert_eq!(fetches.load(Ordering::SeqCst), 2);

    // Without Cache-Control: five minutes.
    jwks.lock().doc = json!({"keys": [k1.jwk.clone()]});
    tokio::time::sleep(Duration::from_millis(250)).await;
    age_keys(&v, 299);
    v.verify(&token(&k2), &[]).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    age_keys(&v, 301);
    assert!(invalid(v.verify(&token(&k2), &[]).await).contains("unknown"));
    assert_eq!(fetches.load(Ordering::SeqCst), 3);
}

/// Tokens naming forged key ids, while the issuer fails or answers slowly: one fetch at a time,
/// and none sooner than the refetch interval after the last one, failed or not (the verifier used
/// to fetch once per forged kid while fetches failed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_or_slow_key_fetches_stay_one_at_a_time_and_spaced() {
    use std::sync::atomic::Ordering;
    let k1 = ed25519("k1");
    let (base, jwks, fetches) = issuer(json!({"keys": [k1.jwk.clone()]})).await;
    {
        let mut j = jwks.lock();
        j.status = 500;
        j.delay = Duration::from_millis(300);
    }
    let mut config = OidcConfig::new(base.clone(), vec![AUD.into()]);
    config.refetch_interval = Duration::from_secs(2);
    let v = std::sync::Arc::new(BearerVerifier::new(config).unwrap());
    let forged = |i: usize| sign(&ed25519(&format!("forged-{i}")), &claims(json!({"iss": base.clone()})));
    let burst = |range: std::ops::Range<usize>| {
        let tasks: Vec<_> = range
            .map(|i| {
                let (v, t) = (v.clone(), forged(i));
                tokio::spawn(async move { v.verify(&t, &[]).await })
            })
            .collect();
        async move {
            for task in tasks {
                assert!(matches!(task.await.unwrap(), Err(Refusal::InvalidToken(_))));
            }
        }
    };
    let bounded = |f| tokio::time::timeout(Duration::from_secs(20), f);

    // Failing and slow: 40 forged kids at once, then 20 one after another: one fetch.
    bounded(burst(0..40)).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 1);
    for i in 40..60 {
        assert_eq!(invalid(v.verify(&forged(i), &[]).await), "the issuer's keys are not available");
    }
    assert_eq!(fetches.load(Ordering::SeqCst), 1);

    // The issuer recovers but answers slowly: past the interval, a burst causes one fetch, and the
    // real key works.
    jwks.lock().status = 200;
    tokio::time::sleep(Duration::from_millis(2100)).await;
    bounded(burst(60..100)).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
    v.verify(&sign(&k1, &claims(json!({"iss": base.clone()}))), &[]).await.unwrap();
    assert_eq!(fetches.load(Ordering::SeqCst), 2);
}
