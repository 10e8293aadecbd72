//! API keys in a header: each key belongs to one principal. Keys are kept only as SHA-256 digests,
//! so they never sit in memory or logs in clear after start-up. An API key carries every scope.

use std::collections::HashMap;

use http::HeaderMap;
use sha2::{Digest, Sha256};

use super::{requirement, CardSecurity, Principal};
use a2a_protocol::error::{A2aError, Result};
pub use a2a_protocol::paths::DEFAULT_API_KEY_HEADER;
use a2a_protocol::types::{ApiKeySecurityScheme, SecurityScheme};
const SCHEME_NAME: &str = "apiKey";

pub struct ApiKeyAuth {
    header: http::HeaderName,
    /// The header as configured (HeaderName is lower-case), for the card and the challenge.
    header_display: String,
    keys: HashMap<[u8; 32], String>,
}

impl ApiKeyAuth {
    /// `pairs` are (principal id, key).
    pub fn new(header: &str, pairs: impl IntoIterator<Item = (String, String)>) -> Result<Self> {
        let header_display = header.to_string();
        let header = http::HeaderName::from_bytes(header.as_bytes())
            .map_err(|_| A2aError::invalid_params(format!("invalid API key header name {header:?}")))?;
        let pairs: Vec<(String, String)> = pairs.into_iter().collect();
        if pairs.iter().any(|(_, key)| key.contains(',')) {
            // A comma in a presented key marks two headers folded into one (see `authenticate`).
            return Err(A2aError::invalid_params("an API key must not contain a comma"));
        }
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

    pub(crate) fn header_name(&self) -> &str {
        &self.header_display
    }

    pub(crate) fn challenge(&self) -> String {
        format!("ApiKey header=\"{}\"", self.header_display)
    }

    /// The principal of the key the request presents; `None` when it presents none. A request
    /// presents one key: the header twice, or a value that is a list (what a proxy makes of two
    /// headers; keys never hold a comma, `--api-keys` is split on them), is refused, as it is not
    /// clear which key speaks for it, and picking one would let whatever sits in front of this
    /// host and reads the other disagree about who is calling.
    pub(crate) fn authenticate(&self, headers: &HeaderMap) -> Option<Result<Principal>> {
        let mut values = headers.get_all(&self.header).iter();
        let presented = values.next()?;
        if values.next().is_some() || presented.as_bytes().contains(&b',') {
            let why = format!("the {} header must be sent once, with one API key", self.header_display);
            return Some(Err(A2aError::unauthenticated(why).challenged(vec![self.challenge()])));
        }
        let known = presented.to_str().ok().and_then(|key| self.keys.get(&digest(key.trim())));
        Some(
            known
                .map(|p| Principal::user(p.clone()))
                .ok_or_else(|| A2aError::unauthenticated("invalid API key").challenged(vec![self.challenge()])),
        )
    }

    pub(crate) fn declare(&self, card: &mut CardSecurity) {
        let scheme = SecurityScheme::ApiKeySecurityScheme(ApiKeySecurityScheme {
            description: "API key issued by the agent's operator".into(),
            location: "header".into(),
            name: self.header_display.clone(),
        });
        card.schemes.insert(SCHEME_NAME.into(), scheme);
        card.requirements.push(requirement(SCHEME_NAME, &[]));
    }
}

fn digest(key: &str) -> [u8; 32] {
    Sha256::digest(key.as_bytes()).into()
}
