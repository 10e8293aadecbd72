//! Webhook catchers: URLs on this host (`/playground/hooks/{id}`) the page registers as a task's
//! push notification config. Each keeps its last [`KEPT`] deliveries and streams new ones to the
//! page (`GET /playground/api/catchers/{id}/deliveries`, SSE), each with its headers, its
//! notification token and its signature (`A2A-Notification-Signature`) checked against the JWKS of
//! the agent the catcher was made for: the key, `aud` (this URL), `exp`, the body's SHA-256 and the
//! event id.
//!
//! Bounded: at most [`MAX_CATCHERS`] (the oldest goes), [`KEPT`] deliveries each, a delivery's body
//! shown up to [`SHOWN_BODY`] bytes; a watch ends after [`LONGEST_WATCH`]. A catcher's id (128
//! random bits) is what lets an agent post to it, as webhook URLs usually are.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;
use bytes::Bytes;
use futures::StreamExt;
use http::{header, HeaderMap, Response, StatusCode};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};
use tokio::sync::broadcast;

use a2a_engine::ssrf::{check_literal, AllowList};
use a2a_http::response::{rest_error, Body, HttpResponse};
use a2a_protocol::error::{A2aError, ErrorKind};
use a2a_protocol::paths::JWKS_PATH;
use a2a_signing::webhook::SIGNATURE_HEADER;

/// Catchers kept; a new one past it replaces the oldest.
pub const MAX_CATCHERS: usize = 32;
/// Deliveries a catcher keeps.
pub const KEPT: usize = 100;
/// Bytes of a delivery's body shown.
pub const SHOWN_BODY: usize = 64 * 1024;
/// Longest a page watches a catcher in one request (it reconnects).
pub const LONGEST_WATCH: Duration = Duration::from_secs(30 * 60);
/// Leeway on the signature's `exp` and `iat`.
const LEEWAY_SECS: i64 = 60;

/// The headers of a delivery shown to the page (an `Authorization` the config asked for is shown
/// as present, not its value).
const SHOWN_HEADERS: &[&str] = &[
    "content-type",
    "a2a-notification-token",
    "x-a2a-notification-token",
    "a2a-event-id",
    "traceparent",
    "user-agent",
];

pub struct Catchers {
    all: Mutex<VecDeque<Arc<Catcher>>>,
    client: reqwest::Client,
    allow: AllowList,
}

struct Catcher {
    id: String,
    url: String,
    /// The agent whose JWKS checks signatures.
    agent: Option<url::Url>,
    kept: Mutex<VecDeque<Value>>,
    received: AtomicU64,
    new: broadcast::Sender<Value>,
    jwks: tokio::sync::Mutex<Option<Vec<Value>>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Create {
    /// The agent's base URL (its JWKS is at the well-known path there).
    #[serde(default)]
    agent: Option<String>,
}

impl Catchers {
    pub fn new(client: reqwest::Client, allow: AllowList) -> Self {
        Self { all: Mutex::new(VecDeque::new()), client, allow }
    }

    fn find(&self, id: &str) -> Option<Arc<Catcher>> {
        self.all.lock().iter().find(|c| c.id == id).cloned()
    }

    /// `POST /playground/api/catchers` `{"agent": url}`: a new catcher under `base`.
    pub fn create(&self, base: &str, body: &[u8]) -> HttpResponse {
        let made = (|| {
            let create: Create = if body.is_empty() { Create { agent: None } } else { crate::parse(body)? };
            let agent = create
                .agent
                .map(|a| check_literal(&a, &self.allow).map(|t| t.url))
                .transpose()
                .map_err(|e| A2aError::invalid_field("agent", crate::unprefixed(&e)))?;
            let id = uuid::Uuid::new_v4().simple().to_string();
            let url = format!("{base}/{id}");
            let catcher = Arc::new(Catcher {
                id: id.clone(),
                url: url.clone(),
                agent,
                kept: Mutex::new(VecDeque::new()),
                received: AtomicU64::new(0),
                new: broadcast::channel(KEPT).0,
                jwks: tokio::sync::Mutex::new(None),
            });
            let mut all = self.all.lock();
            if all.len() >= MAX_CATCHERS {
                all.pop_front();
            }
            all.push_back(catcher);
            Ok::<_, A2aError>(json!({"id": id, "url": url}))
        })();
        match made {
            Ok(made) => crate::json(StatusCode::CREATED, &made),
            Err(e) => rest_error(&e),
        }
    }

    /// `POST /playground/hooks/{id}`: a delivery.
    pub async fn receive(&self, id: &str, headers: &HeaderMap, body: Bytes) -> HttpResponse {
        let Some(catcher) = self.find(id) else {
            return rest_error(&A2aError::new(
                ErrorKind::MethodNotFound,
                "no such catcher (it was replaced or the host restarted)",
            ));
        };
        let signature = self.check_signature(&catcher, headers, &body).await;
        let n = catcher.received.fetch_add(1, Ordering::Relaxed) + 1;
        let shown: serde_json::Map<String, Value> = SHOWN_HEADERS
            .iter()
            .filter_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()).map(|v| (name.to_string(), json!(v))))
            .chain(
                headers.contains_key(header::AUTHORIZATION).then(|| ("authorization".to_string(), json!("(present)"))),
            )
            .collect();
        let text = String::from_utf8_lossy(&body[..body.len().min(SHOWN_BODY)]).into_owned();
        let payload = serde_json::from_slice::<Value>(&body).unwrap_or(Value::String(text));
        let delivery = json!({
            "n": n,
            "receivedAt": chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true),
            "headers": shown,
            "token": headers.get("a2a-notification-token").and_then(|v| v.to_str().ok()),
            "eventId": headers.get("a2a-event-id").and_then(|v| v.to_str().ok()),
            "bytes": body.len(),
            "body": payload,
            "signature": signature,
        });
        {
            let mut kept = catcher.kept.lock();
            if kept.len() >= KEPT {
                kept.pop_front();
            }
            kept.push_back(delivery.clone());
        }
        let _ = catcher.new.send(delivery);
        Response::builder()
            .status(StatusCode::NO_CONTENT)
            .body(Body::Full(Bytes::new()))
            .unwrap_or_else(|_| a2a_http::response::internal_response())
    }

    /// `GET /playground/api/catchers/{id}/deliveries`: the kept deliveries, then each new one (SSE,
    /// `event: delivery`).
    pub fn watch(&self, id: &str) -> HttpResponse {
        let Some(catcher) = self.find(id) else {
            return rest_error(&A2aError::new(ErrorKind::MethodNotFound, "no such catcher"));
        };
        // Subscribed before the kept ones are copied: nothing falls between (a delivery in both is
        // shown once, by its number).
        let live = catcher.new.subscribe();
        let kept: Vec<Value> = catcher.kept.lock().iter().cloned().collect();
        let last = kept.last().and_then(|d| d["n"].as_u64()).unwrap_or(0);
        let live = futures::stream::unfold(live, |mut rx| async move {
            loop {
                match rx.recv().await {
                    Ok(d) => return Some((d, rx)),
                    Err(broadcast::error::RecvError::Lagged(_)) => continue,
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        })
        .filter(move |d| futures::future::ready(d["n"].as_u64().unwrap_or(0) > last));
        let events =
            futures::stream::iter(kept).chain(live).map(|d| Bytes::from(format!("event: delivery\ndata: {d}\n\n")));
        let ticks = futures::stream::unfold((), |()| async {
            tokio::time::sleep(a2a_protocol::sse::KEEP_ALIVE_EVERY).await;
            Some((Bytes::from_static(b": keep-alive\n\n"), ()))
        });
        let stream = futures::stream::select(events, ticks).take_until(tokio::time::sleep(LONGEST_WATCH));
        Response::builder()
            .status(StatusCode::OK)
            .header(header::CONTENT_TYPE, "text/event-stream")
            .header(header::CACHE_CONTROL, "no-store")
            .body(Body::Sse(stream.boxed()))
            .unwrap_or_else(|_| a2a_http::response::internal_response())
    }

    /// The signature's check, as the page shows it.
    async fn check_signature(&self, catcher: &Catcher, headers: &HeaderMap, body: &[u8]) -> Value {
        let Some(token) = headers.get(SIGNATURE_HEADER).and_then(|v| v.to_str().ok()) else {
            return json!({"status": "unsigned", "detail": "no A2A-Notification-Signature header"});
        };
        match self.verify(catcher, token, headers, body).await {
            Ok((kid, checks)) => json!({"status": "verified", "kid": kid, "checks": checks}),
            Err(why) => json!({"status": "failed", "detail": why}),
        }
    }

    async fn verify(
        &self,
        catcher: &Catcher,
        token: &str,
        headers: &HeaderMap,
        body: &[u8],
    ) -> std::result::Result<(String, Vec<String>), String> {
        let mut parts = token.split('.');
        let (Some(head), Some(claims), Some(sig), None) = (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Err("not a compact JWS (three parts)".into());
        };
        let decode = |part: &str, what: &str| URL_SAFE_NO_PAD.decode(part).map_err(|e| format!("{what}: {e}"));
        let header: Value = serde_json::from_slice(&decode(head, "header")?).map_err(|e| format!("header: {e}"))?;
        let claims: Value = serde_json::from_slice(&decode(claims, "claims")?).map_err(|e| format!("claims: {e}"))?;
        let signature = decode(sig, "signature")?;
        let kid = header["kid"].as_str().ok_or("the header names no kid")?.to_string();
        let alg = header["alg"].as_str().ok_or("the header names no alg")?;
        let keys = self.jwks(catcher, false).await?;
        let jwk = match keys.iter().find(|k| k["kid"] == kid.as_str()) {
            Some(jwk) => jwk.clone(),
            // A key rotated since the JWKS was read: read it again once.
            None => self
                .jwks(catcher, true)
                .await?
                .into_iter()
                .find(|k| k["kid"] == kid.as_str())
                .ok_or_else(|| format!("the agent's JWKS has no key {kid:?}"))?,
        };
        let input = format!("{head}.{}", token.split('.').nth(1).unwrap_or_default());
        a2a_signing::keys::verify(&jwk, alg, input.as_bytes(), &signature)?;
        let mut checks = vec![format!("signed by {kid} ({alg})")];
        if claims["aud"] != catcher.url.as_str() {
            return Err(format!("aud is {}, not this catcher's URL", claims["aud"]));
        }
        checks.push("aud is this URL".into());
        let now = chrono::Utc::now().timestamp();
        match claims["exp"].as_i64() {
            Some(exp) if exp + LEEWAY_SECS >= now => checks.push("not expired".into()),
            Some(_) => return Err("expired (exp is past)".into()),
            None => return Err("no exp claim".into()),
        }
        if claims["body_sha256"] != URL_SAFE_NO_PAD.encode(Sha256::digest(body)).as_str() {
            return Err("body_sha256 does not match the body received".into());
        }
        checks.push("body_sha256 matches".into());
        if let Some(event) = headers.get("a2a-event-id").and_then(|v| v.to_str().ok()) {
            if claims["seq"].as_u64().map(|s| s.to_string()).as_deref() != Some(event) {
                return Err(format!("seq {} is not the A2A-Event-ID {event}", claims["seq"]));
            }
            checks.push("seq is the event id".into());
        }
        Ok((kid, checks))
    }

    /// The agent's public keys, read once (again when `fresh`).
    async fn jwks(&self, catcher: &Catcher, fresh: bool) -> std::result::Result<Vec<Value>, String> {
        let mut held = catcher.jwks.lock().await;
        if let (Some(keys), false) = (held.as_ref(), fresh) {
            return Ok(keys.clone());
        }
        let agent =
            catcher.agent.as_ref().ok_or("the catcher was made without the agent's URL: no JWKS to check with")?;
        let url = agent.join(JWKS_PATH).map_err(|e| e.to_string())?;
        let keys = fetch_jwks(&self.client, url.as_str()).await?;
        *held = Some(keys.clone());
        Ok(keys)
    }
}

/// The keys of the JWKS at `url`.
pub(crate) async fn fetch_jwks(client: &reqwest::Client, url: &str) -> std::result::Result<Vec<Value>, String> {
    let jwks = crate::fetch_json(client, url, &[]).await.map_err(|why| format!("the JWKS at {why}"))?;
    jwks["keys"].as_array().cloned().ok_or_else(|| format!("the JWKS at {url} has no keys"))
}
