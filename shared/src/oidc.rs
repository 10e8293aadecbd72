//! Bearer tokens: OAuth 2.0 access tokens as JWTs from an OpenID provider. This module owns turning
//! a token into a verified [`Identity`]: the issuer's keys (OpenID discovery or an explicit JWKS URL,
//! cached; a token with an unknown `kid` triggers a refetch at most once per
//! [`OidcConfig::refetch_interval`],
//! and keys older than [`KEYS_MAX_AGE`] are refetched), the signature (asymmetric algorithms only:
//! RS*, PS*, ES256/ES384, EdDSA; `none` and HMAC are refused, and a key signs only with its own
//! family and declared `alg`), the registered claims (`iss`; `aud` among the allowed audiences; `exp`,
//! `nbf`, `iat` with [`OidcConfig::leeway`]), the allowed client ids (`azp` or `client_id`), the
//! scopes (a `scope` string or an `scp` array) and the principal (a configurable claim, `sub` by
//! default). Verified tokens are cached by their SHA-256 until they expire, at most
//! [`VERIFIED_TTL`]. Nothing here logs a token or a claim.
//!
//! [`crate::auth::bearer`] turns this into an authentication scheme.

use std::collections::{BTreeSet, HashMap};
use std::str::FromStr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{decode, decode_header, Algorithm, DecodingKey, Validation};
use parking_lot::RwLock;
use serde::Deserialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// The default least time between two key fetches caused by unknown key ids.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// Keys older than this are fetched again before use (removed keys stop working).
pub const KEYS_MAX_AGE: Duration = Duration::from_secs(3600);
/// How long a verified token is taken on trust (unless it expires sooner): a key removed from the
/// issuer's JWKS stops working for new tokens at once, for tokens seen before within this time.
pub const VERIFIED_TTL: Duration = Duration::from_secs(60);
/// Most verified tokens kept.
const VERIFIED_MAX: usize = 10_000;
/// Largest discovery document or JWKS accepted.
const MAX_DOCUMENT: usize = 256 * 1024;
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The algorithms a token may be signed with.
const ACCEPTED: &[Algorithm] = &[
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// What a deployment trusts.
#[derive(Debug, Clone)]
pub struct OidcConfig {
    /// The issuer, exactly as tokens carry it in `iss` (and as discovery must confirm it).
    pub issuer: String,
    /// The JWKS URL; `None`: from the issuer's OpenID discovery document.
    pub jwks_url: Option<String>,
    /// Audiences a token must name one of. May be empty only when `client_ids` is not: tokens
    /// without `aud` (Cognito access tokens) are then tied to this API by their client.
    pub audiences: Vec<String>,
    /// Client ids (`azp` / `client_id`) allowed; empty: any client of the issuer.
    pub client_ids: Vec<String>,
    /// Scopes every request needs.
    pub required_scopes: Vec<String>,
    /// The claim that names the principal.
    pub principal_claim: String,
    /// Clock skew tolerated on `exp`, `nbf` and `iat`.
    pub leeway: Duration,
    /// The least time between two key fetches (an unknown `kid` causes one).
    pub refetch_interval: Duration,
}

impl OidcConfig {
    pub fn new(issuer: impl Into<String>, audiences: Vec<String>) -> Self {
        Self {
            issuer: issuer.into(),
            jwks_url: None,
            audiences,
            client_ids: Vec::new(),
            required_scopes: Vec::new(),
            principal_claim: "sub".into(),
            leeway: Duration::from_secs(60),
            refetch_interval: REFETCH_INTERVAL,
        }
    }
}

/// Who a valid token speaks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub principal: String,
    pub client_id: Option<String>,
    pub scopes: Arc<BTreeSet<String>>,
}

/// Why a token was refused, in RFC 6750's terms (the reason never quotes the token).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// 401 `invalid_token`.
    InvalidToken(String),
    /// 403 `insufficient_scope`, naming the missing scope.
    InsufficientScope(String),
}

/// A published signing key, read once when the JWKS is fetched.
struct SigningKey {
    kid: Option<String>,
    /// The `alg` the JWKS declares for it, if any: it then signs with that one only.
    alg: Option<Algorithm>,
    key: DecodingKey,
}

impl SigningKey {
    fn signs_with(&self, alg: Algorithm) -> bool {
        self.key.family() == alg.family() && self.alg.is_none_or(|declared| declared == alg)
    }
}

struct Keys {
    keys: Vec<SigningKey>,
    fetched: Option<Instant>,
}

/// Verifies bearer tokens against one issuer; cheap to share (`Arc`) across requests.
pub struct BearerVerifier {
    config: OidcConfig,
    http: Option<reqwest::Client>,
    keys: RwLock<Keys>,
    /// Held while fetching, so that a burst of unknown key ids causes one fetch.
    fetching: tokio::sync::Mutex<()>,
    /// Verified tokens by their SHA-256.
    verified: RwLock<HashMap<[u8; 32], Verified>>,
}

struct Verified {
    identity: Identity,
    /// The token's `exp`.
    exp: u64,
    at: Instant,
}

impl BearerVerifier {
    /// A verifier that fetches the issuer's keys over HTTP(S).
    pub fn new(config: OidcConfig) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("oidc: HTTP client: {e}"))?;
        Self::build(config, Some(http), Vec::new())
    }

    /// A verifier with a fixed key set (no fetching).
    pub fn with_keys(config: OidcConfig, jwks: &Value) -> Result<Self, String> {
        Self::build(config, None, parse_jwks(jwks)?)
    }

    fn build(config: OidcConfig, http: Option<reqwest::Client>, keys: Vec<SigningKey>) -> Result<Self, String> {
        if config.audiences.is_empty() && config.client_ids.is_empty() {
            return Err(
                "oidc: an allowed audience or client id is required (a token for another API must be refused)".into()
            );
        }
        let fetched = http.is_none().then(Instant::now);
        Ok(Self {
            config,
            http,
            keys: RwLock::new(Keys { keys, fetched }),
            fetching: tokio::sync::Mutex::new(()),
            verified: RwLock::new(HashMap::new()),
        })
    }

    /// Verifies `token` and checks that it carries the configured scopes and `extra_scopes`. A token
    /// verified before is taken from the cache of verified tokens until it expires (at most
    /// [`VERIFIED_TTL`] after it was verified): clients send one token with many requests, and its
    /// signature check would cost more than the rest of a small request.
    pub async fn verify(&self, token: &str, extra_scopes: &[&str]) -> Result<Identity, Refusal> {
        let digest: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        let now = jsonwebtoken::get_current_timestamp();
        let cached = self
            .verified
            .read()
            .get(&digest)
            .filter(|v| now < v.exp && v.at.elapsed() < VERIFIED_TTL)
            .map(|v| v.identity.clone());
        let identity = match cached {
            Some(identity) => identity,
            None => {
                let (identity, exp) = self.verify_signed(token).await?;
                self.remember(digest, &identity, exp);
                identity
            }
        };
        let required = self.config.required_scopes.iter().map(String::as_str).chain(extra_scopes.iter().copied());
        for scope in required {
            if !identity.scopes.contains(scope) {
                return Err(Refusal::InsufficientScope(scope.to_string()));
            }
        }
        Ok(identity)
    }

    /// Keeps a verified token's identity until `exp`; a full cache first drops what expired, then
    /// everything (bounded memory; a dropped entry only costs one more verification).
    fn remember(&self, digest: [u8; 32], identity: &Identity, exp: u64) {
        let mut verified = self.verified.write();
        if verified.len() >= VERIFIED_MAX {
            let now = jsonwebtoken::get_current_timestamp();
            verified.retain(|_, v| now < v.exp && v.at.elapsed() < VERIFIED_TTL);
            if verified.len() >= VERIFIED_MAX {
                verified.clear();
            }
        }
        verified.insert(digest, Verified { identity: identity.clone(), exp, at: Instant::now() });
    }

    /// The signature and claims of `token`; its identity and `exp`.
    async fn verify_signed(&self, token: &str) -> Result<(Identity, u64), Refusal> {
        let invalid = |why: &str| Refusal::InvalidToken(why.to_string());
        let header = decode_header(token).map_err(|_| match declared_alg(token) {
            // `none` and algorithms the library does not know are not `Algorithm`s at all.
            Some(alg) => Refusal::InvalidToken(format!("tokens signed with {alg} are not accepted")),
            None => invalid("the token is not a well-formed JWT"),
        })?;
        let alg = header.alg;
        if !ACCEPTED.contains(&alg) {
            return Err(Refusal::InvalidToken(format!("tokens signed with {alg:?} are not accepted")));
        }
        let key = self.key_for(header.kid.as_deref(), alg).await?;
        let mut validation = Validation::new(alg);
        validation.leeway = self.config.leeway.as_secs();
        validation.validate_nbf = true;
        validation.set_issuer(&[&self.config.issuer]);
        if self.config.audiences.is_empty() {
            validation.validate_aud = false;
            validation.set_required_spec_claims(&["exp", "iss"]);
        } else {
            validation.set_audience(&self.config.audiences);
            validation.set_required_spec_claims(&["exp", "iss", "aud"]);
        }
        let claims = decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| refusal(e.kind()))?.claims;

        let now = jsonwebtoken::get_current_timestamp();
        if claims.get("iat").and_then(Value::as_u64).is_some_and(|iat| iat > now + validation.leeway) {
            return Err(invalid("the token was issued in the future (iat)"));
        }
        let client_id =
            ["azp", "client_id"].iter().find_map(|c| claims.get(*c).and_then(Value::as_str)).map(String::from);
        if !self.config.client_ids.is_empty()
            && !client_id.as_ref().is_some_and(|c| self.config.client_ids.iter().any(|a| a == c))
        {
            return Err(invalid("the token's client (azp / client_id) is not allowed"));
        }
        let principal =
            claims.get(&self.config.principal_claim).and_then(Value::as_str).filter(|p| !p.is_empty()).ok_or_else(
                || Refusal::InvalidToken(format!("the token has no {} claim", self.config.principal_claim)),
            )?;
        let exp = claims.get("exp").and_then(Value::as_u64).unwrap_or(now);
        Ok((Identity { principal: principal.to_string(), client_id, scopes: Arc::new(scopes(&claims)) }, exp))
    }

    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let stale = self.keys.read().fetched.is_none_or(|t| t.elapsed() >= KEYS_MAX_AGE);
        if !stale {
            if let Some(key) = self.lookup(kid, alg)? {
                return Ok(key);
            }
        }
        if let Some(http) = &self.http {
            let _one = self.fetching.lock().await;
            // Another request may have fetched while this one waited.
            let fetched = self.keys.read().fetched;
            let found = self.lookup(kid, alg)?;
            let fresh = fetched.is_some_and(|t| t.elapsed() < KEYS_MAX_AGE);
            match found {
                Some(key) if fresh => return Ok(key),
                _ if fetched.is_none_or(|t| t.elapsed() >= self.config.refetch_interval) => {
                    match self.fetch(http).await {
                        Ok(keys) => {
                            tracing::info!(issuer = %self.config.issuer, keys = keys.len(), "oidc: signing keys fetched");
                            *self.keys.write() = Keys { keys, fetched: Some(Instant::now()) };
                        }
                        Err(why) => {
                            tracing::warn!(issuer = %self.config.issuer, "oidc: fetching the keys failed: {why}");
                            if let Some(key) = found {
                                return Ok(key); // keep using known keys while the issuer is unreachable
                            }
                            return Err(Refusal::InvalidToken("the issuer's keys are not available".into()));
                        }
                    }
                }
                Some(key) => return Ok(key),
                None => {}
            }
        }
        self.lookup(kid, alg)?.ok_or_else(|| Refusal::InvalidToken("the token's signing key is unknown".into()))
    }

    /// The key for `kid` (or the one key that fits `alg` when the token names none).
    fn lookup(&self, kid: Option<&str>, alg: Algorithm) -> Result<Option<DecodingKey>, Refusal> {
        let keys = self.keys.read();
        let found: Vec<&SigningKey> = match kid {
            Some(kid) => keys.keys.iter().filter(|k| k.kid.as_deref() == Some(kid)).collect(),
            None => keys.keys.iter().filter(|k| k.signs_with(alg)).collect(),
        };
        match found.as_slice() {
            [] => Ok(None),
            [k] if k.signs_with(alg) => Ok(Some(k.key.clone())),
            [_] => Err(Refusal::InvalidToken(format!("the signing key does not sign with {alg:?}"))),
            _ => Err(Refusal::InvalidToken("the token names no key and several fit".into())),
        }
    }

    async fn fetch(&self, http: &reqwest::Client) -> Result<Vec<SigningKey>, String> {
        let jwks_url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => {
                let base = self.config.issuer.trim_end_matches('/');
                let doc = get_json(http, &format!("{base}/.well-known/openid-configuration")).await?;
                if doc.get("issuer").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
                    return Err("the discovery document names another issuer".into());
                }
                doc.get("jwks_uri").and_then(Value::as_str).ok_or("the discovery document has no jwks_uri")?.to_string()
            }
        };
        parse_jwks(&get_json(http, &jwks_url).await?)
    }
}

async fn get_json(http: &reqwest::Client, url: &str) -> Result<Value, String> {
    let mut resp = http.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("{url}: {}", resp.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))
}

/// The signing keys of a JWKS document; keys this verifier cannot use (encryption keys, unknown
/// types, symmetric keys, keys declared for a non-signature algorithm) are left out.
fn parse_jwks(doc: &Value) -> Result<Vec<SigningKey>, String> {
    let keys = doc.get("keys").and_then(Value::as_array).ok_or("the JWKS has no keys array")?;
    Ok(keys
        .iter()
        .filter_map(|k| Jwk::deserialize(k).ok())
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter_map(|jwk| {
            let alg = match jwk.common.key_algorithm {
                // KeyAlgorithm also names encryption algorithms; only signature ones parse.
                Some(declared) => Some(Algorithm::from_str(&format!("{declared:?}")).ok()?),
                None => None,
            };
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            (key.family() != jsonwebtoken::AlgorithmFamily::Hmac).then(|| SigningKey {
                kid: jwk.common.key_id,
                alg,
                key,
            })
        })
        .collect())
}

/// The `alg` a token's header declares, when the header is JSON with a string `alg`.
fn declared_alg(token: &str) -> Option<String> {
    use base64::Engine;
    let header = token.split('.').next()?;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(header.trim_end_matches('=')).ok()?;
    let alg = serde_json::from_slice::<Value>(&raw).ok()?.get("alg")?.as_str()?.chars().take(16).collect();
    Some(alg)
}

fn scopes(claims: &Map<String, Value>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for claim in ["scope", "scp"] {
        match claims.get(claim) {
            Some(Value::String(s)) => out.extend(s.split_whitespace().map(String::from)),
            Some(Value::Array(items)) => out.extend(items.iter().filter_map(Value::as_str).map(String::from)),
            _ => {}
        }
    }
    out
}

fn refusal(kind: &jsonwebtoken::errors::ErrorKind) -> Refusal {
    use jsonwebtoken::errors::ErrorKind as K;
    let why = match kind {
        K::ExpiredSignature => "the token has expired".to_string(),
        K::ImmatureSignature => "the token is not valid yet (nbf)".to_string(),
        K::InvalidIssuer => "the token is from another issuer".to_string(),
        K::InvalidAudience => "the token is for another audience".to_string(),
        K::InvalidSignature => "the token's signature does not verify".to_string(),
        K::MissingRequiredClaim(c) => format!("the token has no {c} claim"),
        K::InvalidClaimFormat(c) => format!("the token's {c} claim is malformed"),
        _ => "the token is not valid".to_string(),
    };
    Refusal::InvalidToken(why)
}

#[cfg(test)]
mod tests {
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

    /// A tiny issuer on 127.0.0.1: discovery and a JWKS that can be swapped, counting JWKS fetches.
    async fn issuer(
        jwks: Value,
    ) -> (String, std::sync::Arc<parking_lot::Mutex<Value>>, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        use std::sync::Arc;
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (keys, fetches) = (Arc::new(parking_lot::Mutex::new(jwks)), Arc::new(AtomicUsize::new(0)));
        let (k, f, b) = (keys.clone(), fetches.clone(), base.clone());
        tokio::spawn(async move {
            while let Ok((mut conn, _)) = listener.accept().await {
                let mut buf = vec![0u8; 4096];
                let n = conn.read(&mut buf).await.unwrap_or(0);
                let head = String::from_utf8_lossy(&buf[..n]).to_string();
                let body = if head.starts_with("GET /.well-known/openid-configuration") {
                    json!({"issuer": b, "jwks_uri": format!("{b}/jwks")}).to_string()
                } else {
                    f.fetch_add(1, Ordering::SeqCst);
                    k.lock().to_string()
                };
                let resp = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = conn.write_all(resp.as_bytes()).await;
            }
        });
        (base, keys, fetches)
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
        *keys.lock() = json!({"keys": [k2.jwk.clone()]});
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
}
