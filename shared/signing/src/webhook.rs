//! Signed push notifications: every POST to a webhook carries `A2A-Notification-Signature`, a JWT
//! (compact JWS, `typ: JWT`) signed with the agent's first card-signing key and verifiable with the
//! agent's JWKS. A JWT rather than a detached JWS over the body: every JOSE library verifies a JWT
//! and its `exp`, `aud` and `iss` in one call, while detached and unencoded payloads (RFC 7797) are
//! poorly supported; the exact body is bound by its SHA-256 in the `body_sha256` claim.
//!
//! Claims: `iss` (the agent's public URL), `aud` (the webhook URL), `iat`, `exp` (`iat` + 5 min),
//! `jti` (`{taskId}/{configId}/{seq}`: the same on every retry of one event, so a receiver can
//! deduplicate), `taskId`, `seq` (the event's sequence number, also `A2A-Event-ID`) and
//! `body_sha256` (base64url, unpadded).

use std::sync::Arc;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use serde_json::json;
use sha2::{Digest, Sha256};

use super::Signer;

/// The header that carries the JWT.
pub const SIGNATURE_HEADER: &str = "a2a-notification-signature";
/// How long a notification's JWT is valid.
pub const LIFETIME_SECS: i64 = 300;

/// Signs notifications for one agent.
#[derive(Clone)]
pub struct WebhookSigner {
    pub signer: Arc<dyn Signer>,
    /// `iss`: the agent's public URL.
    pub issuer: String,
    /// The JWKS URL named in the header (`jku`).
    pub jku: Option<String>,
}

impl std::fmt::Debug for WebhookSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebhookSigner").field("kid", &self.signer.kid()).field("issuer", &self.issuer).finish()
    }
}

/// What one notification is.
#[derive(Debug, Clone, Copy)]
pub struct Notification<'a> {
    pub url: &'a str,
    pub task_id: &'a str,
    pub config_id: &'a str,
    pub seq: u64,
    pub body: &'a [u8],
}

impl WebhookSigner {
    /// The JWT of one notification, issued at `now` (Unix seconds).
    pub async fn token(&self, n: Notification<'_>, now: i64) -> Result<String, String> {
        let mut header = json!({"alg": self.signer.alg(), "typ": "JWT", "kid": self.signer.kid()});
        if let Some(jku) = &self.jku {
            header["jku"] = json!(jku);
        }
        let claims = json!({
            "iss": self.issuer, "aud": n.url, "iat": now, "exp": now + LIFETIME_SECS,
            "jti": format!("{}/{}/{}", n.task_id, n.config_id, n.seq),
            "taskId": n.task_id, "seq": n.seq,
            "body_sha256": URL_SAFE_NO_PAD.encode(Sha256::digest(n.body)),
        });
        let input =
            format!("{}.{}", URL_SAFE_NO_PAD.encode(header.to_string()), URL_SAFE_NO_PAD.encode(claims.to_string()));
        let signature = self.signer.sign(input.as_bytes()).await?;
        Ok(format!("{input}.{}", URL_SAFE_NO_PAD.encode(signature)))
    }
}
