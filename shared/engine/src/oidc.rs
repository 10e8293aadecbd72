//! Bearer tokens: OAuth 2.0 access tokens as JWTs from an OpenID provider. This module owns turning
//! a token into a verified [`Identity`]: the issuer's keys (OpenID discovery or an explicit JWKS URL,
//! cached for the JWKS response's `Cache-Control: max-age` within [`KEYS_MIN_AGE`] and
//! [`KEYS_MAX_AGE`], [`KEYS_DEFAULT_AGE`] without one; a token with an unknown `kid` triggers a
//! refetch; fetches are one at a time and at least [`OidcConfig::refetch_interval`] apart, failed
//! ones included), the signature (asymmetric algorithms only:
//! RS*, PS*, ES256/ES384, EdDSA; `none` and HMAC are refused, and a key signs only with its own
//! family and declared `alg`), the registered claims (`iss`; `aud` among the allowed audiences; `exp`,
//! `nbf`, `iat` with [`OidcConfig::leeway`]), the allowed client ids (`azp` or `client_id`), the
//! scopes (a `scope` string or an `scp` array) and the principal (a configurable claim, `sub` by
//! default). Verified tokens are cached by their SHA-256 until they expire, at most
//! [`VERIFIED_TTL`]. Nothing here logs a token or a claim. Behind a proxy that checked the signature
//! already ([`OidcConfig::signature_checked_upstream`]: AgentCore Runtime's JWT authorizer) the
//! claims are checked the same way and no keys are fetched.
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

/// The default least time between two key fetches (also after a failed one).
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(5);
/// How long fetched keys are used before they are fetched again, when the JWKS response does not
/// say (`Cache-Control: max-age`): a key the issuer removes stops working within this time.
pub const KEYS_DEFAULT_AGE: Duration = Duration::from_secs(300);
/// The least and the most time keys are kept, whatever the JWKS response's `max-age` says: at most
/// one fetch a minute for a well-behaved issuer, and a removed key accepted for an hour at worst.
pub const KEYS_MIN_AGE: Duration = Duration::from_secs(60);
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
    /// The least time between two key fetches, whatever caused them (an unknown `kid`, keys past
    /// their age) and whether they succeeded.
    pub refetch_interval: Duration,
    /// A proxy in front checked the token's signature (and the audience it was minted for) and
    /// forwards it: the claims are checked here, the signature is not, and no keys are fetched. Only
    /// where nothing else reaches the server.
    pub signature_checked_upstream: bool,
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
            signature_checked_upstream: false,
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
    /// When `keys` were fetched (`None`: never).
    fetched: Option<Instant>,
    /// How long `keys` are used before fetching again.
    max_age: Duration,
    /// When the last fetch started, whether it succeeded or not: the next waits
    /// [`OidcConfig::refetch_interval`] (a burst of forged key ids, or an issuer that fails or
    /// answers slowly, cannot make this host fetch more often).
    attempted: Option<Instant>,
}

impl Keys {
    fn fresh(&self) -> bool {
        self.fetched.is_some_and(|t| t.elapsed() < self.max_age)
    }
}

/// Verifies bearer tokens against one issuer; cheap to share (`Arc`) across requests.
pub struct BearerVerifier {
    config: OidcConfig,
    http: Option<reqwest::Client>,
    keys: RwLock<Keys>,
    /// Held while fetching, so that a burst of unknown key ids causes one fetch (single flight:
    /// the others wait for it and use what it brought).
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
        if config.signature_checked_upstream {
            return Self::build(config, None, Vec::new());
        }
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
        // (Behind a checking proxy the audience was its to check.)
        if config.audiences.is_empty() && config.client_ids.is_empty() && !config.signature_checked_upstream {
            return Err(
                "oidc: an allowed audience or client id is required (a token for another API must be refused)".into()
            );
        }
        let fetched = http.is_none().then(Instant::now);
        Ok(Self {
            config,
            http,
            keys: RwLock::new(Keys { keys, fetched, max_age: KEYS_MAX_AGE, attempted: None }),
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
                let claims = match self.config.signature_checked_upstream {
                    true => self.checked_upstream(token)?,
                    false => self.verify_signed(token).await?,
                };
                let (identity, exp) = self.identity(&claims)?;
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

    /// The claims of `token`, its signature and registered claims verified.
    async fn verify_signed(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
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
        Ok(decode::<Map<String, Value>>(token, &key, &validation).map_err(|e| refusal(e.kind()))?.claims)
    }

    /// The claims of a token whose signature the proxy in front checked: its registered claims
    /// checked as [`BearerVerifier::verify_signed`] does (`exp` only when present: the proxy required
    /// it; an issuer with or without its trailing slash).
    fn checked_upstream(&self, token: &str) -> Result<Map<String, Value>, Refusal> {
        use jsonwebtoken::errors::ErrorKind as K;
        let invalid = |why: &str| Refusal::InvalidToken(why.to_string());
        let claims: Map<String, Value> =
            jsonwebtoken::dangerous::insecure_decode_claims(token).map_err(|e| match e.kind() {
                K::Base64(_) => invalid("the token's payload is not base64url"),
                K::Json(_) | K::Utf8(_) => invalid("the token's payload is not a JSON object"),
                _ => invalid("the token is not a JWT"),
            })?;
        let now = jsonwebtoken::get_current_timestamp();
        let leeway = self.config.leeway.as_secs();
        let issuer = |i: &str| i.trim_end_matches('/').to_string();
        if claims.get("iss").and_then(Value::as_str).map(issuer) != Some(issuer(&self.config.issuer)) {
            return Err(invalid("the token is from another issuer"));
        }
        if claims.get("exp").and_then(Value::as_u64).is_some_and(|exp| exp.saturating_add(leeway) < now) {
            return Err(invalid("the token has expired"));
        }
        if claims.get("nbf").and_then(Value::as_u64).is_some_and(|nbf| nbf > now + leeway) {
            return Err(invalid("the token is not valid yet (nbf)"));
        }
        let named = |aud: &str| self.config.audiences.iter().any(|a| a == aud);
        let for_us = match claims.get("aud") {
            Some(Value::String(aud)) => named(aud),
            Some(Value::Array(auds)) => auds.iter().filter_map(Value::as_str).any(named),
            _ => false,
        };
        if !self.config.audiences.is_empty() && !for_us {
            return Err(invalid("the token is for another audience (aud)"));
        }
        Ok(claims)
    }

    /// Who verified `claims` speak for (their `iat`, client and principal checked), and their `exp`.
    fn identity(&self, claims: &Map<String, Value>) -> Result<(Identity, u64), Refusal> {
        let invalid = |why: &str| Refusal::InvalidToken(why.to_string());
        let now = jsonwebtoken::get_current_timestamp();
        if claims.get("iat").and_then(Value::as_u64).is_some_and(|iat| iat > now + self.config.leeway.as_secs()) {
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
        Ok((Identity { principal: principal.to_string(), client_id, scopes: Arc::new(scopes(claims)) }, exp))
    }

    async fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Result<DecodingKey, Refusal> {
        let unknown = || Refusal::InvalidToken("the token's signing key is unknown".into());
        let fresh = self.keys.read().fresh();
        if fresh {
            if let Some(key) = self.lookup(kid, alg)? {
                return Ok(key);
            }
        }
        let Some(http) = &self.http else { return self.lookup(kid, alg)?.ok_or_else(unknown) };
        let _one = self.fetching.lock().await;
        // What the fetch this request may have waited for brought.
        let found = self.lookup(kid, alg)?;
        let (fresh, may_fetch, ever_fetched) = {
            let keys = self.keys.read();
            let may_fetch = keys.attempted.is_none_or(|t| t.elapsed() >= self.config.refetch_interval);
            (keys.fresh(), may_fetch, keys.fetched.is_some())
        };
        match found {
            Some(key) if fresh => return Ok(key),
            // Stale keys while fetches are paused: better than refusing every token.
            Some(key) if !may_fetch => return Ok(key),
            None if !may_fetch => {
                return Err(if ever_fetched { unknown() } else { not_available() });
            }
            _ => {}
        }
        self.keys.write().attempted = Some(Instant::now());
        match self.fetch(http).await {
            Ok((keys, max_age)) => {
                tracing::info!(
                    issuer = %self.config.issuer, keys = keys.len(), max_age_secs = max_age.as_secs(),
                    "oidc: signing keys fetched"
                );
                let mut held = self.keys.write();
                held.keys = keys;
                held.fetched = Some(Instant::now());
                held.max_age = max_age;
            }
            Err(why) => {
                tracing::warn!(issuer = %self.config.issuer, "oidc: fetching the keys failed: {why}");
                // Keep using known keys while the issuer is unreachable.
                return found.ok_or_else(not_available);
            }
        }
        self.lookup(kid, alg)?.ok_or_else(unknown)
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

    /// The issuer's signing keys, and how long to use them.
    async fn fetch(&self, http: &reqwest::Client) -> Result<(Vec<SigningKey>, Duration), String> {
        let jwks_url = match &self.config.jwks_url {
            Some(url) => url.clone(),
            None => {
                let base = self.config.issuer.trim_end_matches('/');
                let (doc, _) = get_json(http, &format!("{base}/.well-known/openid-configuration")).await?;
                if doc.get("issuer").and_then(Value::as_str) != Some(self.config.issuer.as_str()) {
                    return Err("the discovery document names another issuer".into());
                }
                doc.get("jwks_uri").and_then(Value::as_str).ok_or("the discovery document has no jwks_uri")?.to_string()
            }
        };
        let (jwks, cache_control) = get_json(http, &jwks_url).await?;
        Ok((parse_jwks(&jwks)?, keys_max_age(cache_control.as_deref())))
    }
}

fn not_available() -> Refusal {
    Refusal::InvalidToken("the issuer's keys are not available".into())
}

/// How long to use keys served with `cache_control`: its `max-age` (`no-cache` and `no-store` mean
/// 0) within [`KEYS_MIN_AGE`] and [`KEYS_MAX_AGE`]; [`KEYS_DEFAULT_AGE`] when it says nothing usable.
fn keys_max_age(cache_control: Option<&str>) -> Duration {
    let mut age = None;
    for directive in cache_control.unwrap_or("").split(',').map(str::trim) {
        let (name, value) = directive.split_once('=').unwrap_or((directive, ""));
        if name.eq_ignore_ascii_case("max-age") {
            age = value.trim().trim_matches('"').parse::<u64>().ok().or(age);
        } else if name.eq_ignore_ascii_case("no-cache") || name.eq_ignore_ascii_case("no-store") {
            age = Some(0);
            break;
        }
    }
    age.map_or(KEYS_DEFAULT_AGE, |secs| Duration::from_secs(secs).clamp(KEYS_MIN_AGE, KEYS_MAX_AGE))
}

/// A JSON document and its `Cache-Control` header.
async fn get_json(http: &reqwest::Client, url: &str) -> Result<(Value, Option<String>), String> {
    let mut resp = http.get(url).send().await.map_err(|e| format!("{url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("{url}: {}", resp.status()));
    }
    let cache_control =
        resp.headers().get(reqwest::header::CACHE_CONTROL).and_then(|v| v.to_str().ok()).map(String::from);
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("{url}: {e}"))? {
        if body.len() + chunk.len() > MAX_DOCUMENT {
            return Err(format!("{url}: larger than {MAX_DOCUMENT} bytes"));
        }
        body.extend_from_slice(&chunk);
    }
    let doc = serde_json::from_slice(&body).map_err(|e| format!("{url}: not JSON: {e}"))?;
    Ok((doc, cache_control))
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
mod tests;
