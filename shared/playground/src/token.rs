//! `POST /playground/api/token` `{"tokenUrl", "form"}`: an OAuth 2.0 client-credentials request to a
//! token URL this host's own card names (its OAuth 2.0 client credentials flows), for the page
//! that has no credentials for this host yet (every other playground API needs them). Any other
//! token URL is refused: it goes through the relay, with this host's credentials. The form (the
//! client secret) is forwarded and never logged; the answer is bounded.

use std::time::Duration;

use bytes::Bytes;
use http::{header, Response, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use a2a_http::response::{rest_error, Body, HttpResponse};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::AgentCard;

/// Most bytes of a token answer.
const MAX_ANSWER: usize = 64 * 1024;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct Ask {
    token_url: String,
    form: String,
}

/// The token URLs of the card's OAuth 2.0 client credentials flows.
pub fn token_urls(card: &AgentCard) -> Vec<String> {
    let card = serde_json::to_value(card).unwrap_or_default();
    card["securitySchemes"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(_, scheme)| scheme["oauth2SecurityScheme"]["flows"]["clientCredentials"]["tokenUrl"].as_str())
        .map(str::to_string)
        .collect()
}

pub async fn forward(client: &reqwest::Client, allowed: &[String], body: &[u8]) -> HttpResponse {
    match ask(client, allowed, body).await {
        Ok(response) => response,
        Err(e) => rest_error(&e),
    }
}

async fn ask(client: &reqwest::Client, allowed: &[String], body: &[u8]) -> Result<HttpResponse> {
    let ask: Ask = crate::parse(body)?;
    if !allowed.contains(&ask.token_url) {
        return Err(A2aError::invalid_field(
            "tokenUrl",
            "is not a token URL of this host's card (ask other token URLs through the relay)",
        ));
    }
    let answer = client
        .post(&ask.token_url)
        .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded")
        .header(header::ACCEPT, "application/json")
        .body(ask.form)
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .map_err(|e| A2aError::internal(format!("the token URL could not be reached: {}", e.without_url())))?;
    let status = answer.status().as_u16();
    let bytes =
        answer.bytes().await.map_err(|e| A2aError::internal(format!("the token answer: {}", e.without_url())))?;
    if bytes.len() > MAX_ANSWER {
        return Err(A2aError::internal(format!("the token answer is over {MAX_ANSWER} bytes")));
    }
    // Only JSON goes back to the page.
    let json: Value = serde_json::from_slice(&bytes).unwrap_or_else(|_| serde_json::json!({"error": "not_json"}));
    Response::builder()
        .status(StatusCode::from_u16(status).unwrap_or(StatusCode::BAD_GATEWAY))
        .header(header::CONTENT_TYPE, "application/json")
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::Full(Bytes::from(json.to_string())))
        .map_err(|e| A2aError::internal(format!("token answer: {e}")))
}
