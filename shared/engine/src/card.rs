//! The agent card: loaded from a JSON file (every field optional, sensible defaults), completed with
//! what the server knows for certain (its interfaces at the public URL, its real capabilities, the
//! authenticator's security schemes), and served with `Cache-Control`, `ETag` and `Last-Modified`.

use bytes::Bytes;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::auth::Authenticator;
pub use a2a_protocol::card_file::{default_card, parse_card_file};
use a2a_protocol::error::{A2aError, Result};
pub use a2a_protocol::paths::{is_public_path, JWKS_PATH, LEGACY_WELL_KNOWN_PATH, WELL_KNOWN_PATH};
use a2a_protocol::types::{AgentCard, AgentInterface};
use a2a_protocol::v03;
use a2a_protocol::version::Version;

/// What the server can actually do, so the card never claims more.
#[derive(Debug, Clone)]
pub struct ServerAbilities {
    pub streaming: bool,
    pub push_notifications: bool,
    /// The gRPC binding's `host:port`, when it is served.
    pub grpc_address: Option<String>,
}

/// Reads and parses a card file (see [`parse_card_file`]); errors name the file.
pub fn read_card_file(path: &str) -> Result<AgentCard> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| A2aError::invalid_params(format!("cannot read card file {path}: {e}")))?;
    parse_card_file(&text).map_err(|e| A2aError::invalid_params(format!("{path}: {}", e.message)))
}

/// A card rendered once, ready to serve.
#[derive(Debug, Clone)]
pub struct ServedCard {
    pub body: Bytes,
    /// Strong validator over the body.
    pub etag: String,
}

impl ServedCard {
    fn new(value: &Value) -> Self {
        let body = Bytes::from(serde_json::to_vec(value).unwrap_or_default());
        let digest = Sha256::digest(&body);
        let etag = format!("\"{}\"", digest[..12].iter().map(|b| format!("{b:02x}")).collect::<String>());
        Self { body, etag }
    }

    /// RFC 9110 §13.1.2: `*` or any listed tag matches (weak comparison).
    pub fn matches(&self, if_none_match: &str) -> bool {
        if_none_match.split(',').map(str::trim).any(|t| t == "*" || t.trim_start_matches("W/") == self.etag)
    }
}

/// The public card in both protocol versions, and the extended card.
pub struct CardService {
    pub card: AgentCard,
    v1: ServedCard,
    v03: ServedCard,
    extended: Option<AgentCard>,
    /// The JWKS of the signing keys, when the cards are signed.
    jwks: Option<ServedCard>,
    pub max_age: u32,
    pub last_modified: DateTime<Utc>,
    /// `last_modified` as an HTTP date, formatted once.
    pub last_modified_http: String,
}

impl CardService {
    /// `public_url` is where clients reach this server (no trailing slash needed).
    pub fn new(
        mut card: AgentCard,
        extended: Option<AgentCard>,
        public_url: &str,
        abilities: ServerAbilities,
        auth: &dyn Authenticator,
        last_modified: DateTime<Utc>,
    ) -> Self {
        let url = public_url.trim_end_matches('/').to_string();
        // Signatures of a card file are stale once the card is completed here; see `sign`.
        card.signatures.clear();
        let interface = |binding: &str, version: &str| AgentInterface {
            url: url.clone(),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: version.into(),
        };
        // 1.0 first (clients take the first interface they speak); 0.3 HTTP+JSON lives under `/v1/`
        // of the same base URL, as 0.3 clients expect.
        card.supported_interfaces = vec![interface("JSONRPC", "1.0"), interface("HTTP+JSON", "1.0")];
        if let Some(address) = &abilities.grpc_address {
            card.supported_interfaces.push(AgentInterface {
                url: address.clone(),
                protocol_binding: "GRPC".into(),
                tenant: String::new(),
                protocol_version: "1.0".into(),
            });
        }
        card.supported_interfaces.extend([interface("JSONRPC", "0.3"), interface("HTTP+JSON", "0.3")]);
        let caps = &mut card.capabilities;
        caps.streaming = Some(abilities.streaming && caps.streaming.unwrap_or(true));
        caps.push_notifications = Some(abilities.push_notifications && caps.push_notifications.unwrap_or(true));
        caps.extended_agent_card = Some(caps.extended_agent_card.unwrap_or(extended.is_some()));
        let security = auth.card_security();
        if !security.schemes.is_empty() {
            card.security_schemes.extend(security.schemes);
            card.security_requirements.extend(security.requirements);
        }
        for (skill_id, requirements) in security.skills {
            match card.skills.iter_mut().find(|s| s.id == skill_id) {
                Some(skill) => skill.security_requirements = requirements,
                None => tracing::warn!(skill = %skill_id, "skill scopes name a skill the card does not have"),
            }
        }
        let extended = extended.map(|mut ext| {
            ext.supported_interfaces.clone_from(&card.supported_interfaces);
            ext.capabilities = card.capabilities.clone();
            ext.security_schemes.clone_from(&card.security_schemes);
            ext.security_requirements.clone_from(&card.security_requirements);
            ext
        });
        let v1 = ServedCard::new(&serde_json::to_value(&card).unwrap_or_default());
        let v03 = ServedCard::new(&v03::card_to_wire(&card));
        let last_modified_http = last_modified.format("%a, %d %b %Y %H:%M:%S GMT").to_string();
        Self { card, v1, v03, extended, jwks: None, max_age: 300, last_modified, last_modified_http }
    }

    /// Signs the 1.0 card and the extended card with every key of `signing` (spec §8.4) and
    /// publishes the keys' JWKS; the ETag follows the signed bytes. The 0.3 card stays unsigned:
    /// 0.3 clients would canonicalize other bytes.
    #[cfg(feature = "signing")]
    pub async fn sign(&mut self, signing: &a2a_signing::CardSigning) -> std::result::Result<(), String> {
        if signing.signers.is_empty() {
            return Ok(());
        }
        let jku = signing.jku.as_deref();
        let json = |card: &AgentCard| serde_json::to_value(card).map_err(|e| e.to_string());
        self.card.signatures = a2a_signing::card::sign(&json(&self.card)?, &signing.signers, jku).await?;
        self.v1 = ServedCard::new(&json(&self.card)?);
        if let Some(extended) = self.extended.as_mut() {
            extended.signatures = a2a_signing::card::sign(&json(extended)?, &signing.signers, jku).await?;
        }
        self.jwks = Some(ServedCard::new(&signing.jwks()));
        Ok(())
    }

    /// The JWKS document, when the cards are signed.
    pub fn jwks(&self) -> Option<&ServedCard> {
        self.jwks.as_ref()
    }

    pub fn served(&self, version: Version) -> &ServedCard {
        match version {
            Version::V1_0 => &self.v1,
            Version::V0_3 => &self.v03,
        }
    }

    pub fn extended(&self) -> Option<&AgentCard> {
        self.extended.as_ref()
    }

    pub fn streaming(&self) -> bool {
        self.card.capabilities.streaming == Some(true)
    }

    pub fn push_notifications(&self) -> bool {
        self.card.capabilities.push_notifications == Some(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn card_file_overlays_defaults_and_names_bad_fields() {
        let card = parse_card_file(r#"{"name": "Mine", "capabilities": {"streaming": false}}"#).unwrap();
        assert_eq!(card.name, "Mine");
        assert_eq!(card.skills[0].id, "echo");
        assert_eq!(card.capabilities.streaming, Some(false));
        let err = parse_card_file(r#"{"skills": [{"id": 3}]}"#).unwrap_err();
        assert!(err.message.contains("card.skills[0].id"), "{}", err.message);
    }

    #[test]
    fn security_schemes_in_both_versions() {
        let card = parse_card_file(
            r#"{"securitySchemes": {
                "oauth": {"oauth2SecurityScheme": {"flows": {"authorizationCode": {"authorizationUrl": "https://a.example/auth",
                    "tokenUrl": "https://a.example/token", "scopes": {"read": "Read"}, "pkceRequired": true}}}},
                "bearer": {"httpAuthSecurityScheme": {"scheme": "Bearer", "bearerFormat": "JWT"}}},
               "securityRequirements": [{"schemes": {"oauth": {"list": ["read"]}}}]}"#,
        )
        .unwrap();
        let v1 = serde_json::to_value(&card).unwrap();
        assert_eq!(
            v1["securitySchemes"]["oauth"]["oauth2SecurityScheme"]["flows"]["authorizationCode"]["pkceRequired"],
            true
        );
        let old = a2a_protocol::v03::card_to_wire(&card);
        assert_eq!(old["securitySchemes"]["oauth"]["type"], "oauth2");
        assert_eq!(
            old["securitySchemes"]["oauth"]["flows"]["authorizationCode"]["tokenUrl"],
            "https://a.example/token"
        );
        assert_eq!(
            old["securitySchemes"]["bearer"],
            serde_json::json!({"type": "http", "scheme": "Bearer", "bearerFormat": "JWT"})
        );
        assert_eq!(old["security"], serde_json::json!([{"oauth": ["read"]}]));
        let back = a2a_protocol::v03::card_from_wire(old).unwrap();
        assert_eq!(back.security_schemes, card.security_schemes);
        assert_eq!(back.security_requirements, card.security_requirements);
    }

    #[test]
    fn etag_matching() {
        let c = ServedCard::new(&serde_json::json!({"a": 1}));
        assert!(c.matches(&c.etag));
        assert!(c.matches(&format!("W/{}", c.etag)));
        assert!(c.matches("\"x\", *"));
        assert!(!c.matches("\"other\""));
    }
}
