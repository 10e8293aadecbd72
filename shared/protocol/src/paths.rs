//! The well-known paths of an agent (the card, the legacy card, the JWKS of its signatures) and the
//! default header of API keys.

pub const WELL_KNOWN_PATH: &str = "/.well-known/agent-card.json";
/// The 0.3 (and earlier) location of the card.
pub const LEGACY_WELL_KNOWN_PATH: &str = "/.well-known/agent.json";
/// The JWKS with the public keys of the card's signatures (see [`a2a_signing`]).
pub const JWKS_PATH: &str = "/.well-known/jwks.json";

/// The card's paths and the JWKS: public, served without credentials.
pub fn is_public_path(path: &str) -> bool {
    path == WELL_KNOWN_PATH || path == LEGACY_WELL_KNOWN_PATH || path == JWKS_PATH
}

/// The header that carries an API key unless the card's `apiKey` scheme names another.
pub const DEFAULT_API_KEY_HEADER: &str = "X-API-Key";
