//! Principals and the pluggable authenticator. Every task belongs to the principal that created it;
//! the default is one anonymous principal, the API-key mode maps keys to principals and declares
//! itself in the card's `securitySchemes`.

use std::collections::{BTreeMap, HashMap};

use http::HeaderMap;
use sha2::{Digest, Sha256};

use crate::error::{A2aError, Result};
use crate::types::{ApiKeySecurityScheme, SecurityRequirement, SecurityScheme, StringList};

/// Who is calling.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Principal {
    pub id: String,
    /// False for the anonymous principal.
    pub authenticated: bool,
}

impl Principal {
    pub fn anonymous() -> Self {
        Self { id: "anonymous".into(), authenticated: false }
    }

    pub fn user(id: impl Into<String>) -> Self {
        Self { id: id.into(), authenticated: true }
    }
}

/// Decides who a request comes from.
pub trait Authenticator: Send + Sync {
    /// `query` is the raw query string (API keys may travel there).
    fn authenticate(&self, headers: &HeaderMap, query: Option<&str>) -> Result<Principal>;

    /// True when the deployment asks for no credentials at all: every caller is the same
    /// anonymous principal, and what "authenticated" callers may see (the extended card) is open.
    fn is_open(&self) -> bool {
        false
    }

    /// What the card declares: `securitySchemes` and `securityRequirements`.
    fn card_security(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        (BTreeMap::new(), Vec::new())
    }
}

/// The authenticator a deployment asks for: API keys when `api_keys` (`principal:key,...`) is
/// given, else anonymous.
pub fn from_spec(api_keys: Option<&str>, header: &str) -> Result<std::sync::Arc<dyn Authenticator>> {
    Ok(match api_keys {
        Some(spec) => std::sync::Arc::new(ApiKeyAuth::new(header, ApiKeyAuth::parse_pairs(spec))?),
        None => std::sync::Arc::new(Anonymous),
    })
}

/// Everyone is the same anonymous principal.
#[derive(Debug, Default, Clone, Copy)]
pub struct Anonymous;

impl Authenticator for Anonymous {
    fn authenticate(&self, _: &HeaderMap, _: Option<&str>) -> Result<Principal> {
        Ok(Principal::anonymous())
    }

    fn is_open(&self) -> bool {
        true
    }
}

/// API keys in a header: each key belongs to one principal. Keys are kept only as SHA-256 digests,
/// so they never sit in memory or logs in clear after start-up.
pub struct ApiKeyAuth {
    header: http::HeaderName,
    /// The header as configured (HeaderName is lower-case), for the card.
    header_display: String,
    keys: HashMap<[u8; 32], String>,
}

pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";
const SCHEME_NAME: &str = "apiKey";

impl ApiKeyAuth {
    /// `pairs` are (principal id, key).
    pub fn new(header: &str, pairs: impl IntoIterator<Item = (String, String)>) -> Result<Self> {
        let header_display = header.to_string();
        let header = http::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| A2aError::invalid_params(format!("invalid API key header name {header:?}")))?;
        let keys = pairs.into_iter().map(|(principal, key)| (digest(&key), principal)).collect::<HashMap<_, _>>();
        if keys.is_empty() {
            return Err(A2aError::invalid_params("API-key mode needs at least one key"));
        }
        Ok(Self { header, header_display, keys })
    }

    /// Parses `principal:key,principal:key` (the `A2A_API_KEYS` format); a bare `key` belongs to a
    /// principal named after its position (`user1`, ...).
    pub fn parse_pairs(spec: &str) -> Vec<(String, String)> {
        spec.split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .enumerate()
            .map(|(i, item)| match item.split_once(':') {
                Some((p, k)) => (p.trim().to_string(), k.trim().to_string()),
                None => (format!("user{}", i + 1), item.to_string()),
            })
            .collect()
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}

impl Authenticator for ApiKeyAuth {
    fn authenticate(&self, headers: &HeaderMap, _query: Option<&str>) -> Result<Principal> {
        let presented = headers.get(&self.header).and_then(|v| v.to_str().ok()).ok_or_else(|| {
            A2aError::unauthenticated(format!("missing API key: send it in the {} header", self.header))
        })?;
        self.keys
            .get(&digest(presented.trim()))
            .map(|p| Principal::user(p.clone()))
            .ok_or_else(|| A2aError::unauthenticated("invalid API key"))
    }

    fn card_security(&self) -> (BTreeMap<String, SecurityScheme>, Vec<SecurityRequirement>) {
        let scheme = SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
            description: "API key issued by the agent's operator".into(),
            location: "header".into(),
            name: self.header_display.clone(),
        });
        let requirement =
            SecurityRequirement { schemes: BTreeMap::from([(SCHEME_NAME.to_string(), StringList::default())]) };
        (BTreeMap::from([(SCHEME_NAME.to_string(), scheme)]), vec![requirement])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn api_keys_map_to_principals() {
        let auth = ApiKeyAuth::new("X-API-Key", ApiKeyAuth::parse_pairs("alice:k1, bob:k2")).unwrap();
        let mut h = HeaderMap::new();
        assert_eq!(auth.authenticate(&h, None).unwrap_err().kind, crate::error::ErrorKind::Unauthenticated);
        h.insert("x-api-key", "k2".parse().unwrap());
        assert_eq!(auth.authenticate(&h, None).unwrap(), Principal::user("bob"));
        h.insert("x-api-key", "nope".parse().unwrap());
        assert!(auth.authenticate(&h, None).is_err());
    }
}
