//! The card report (`POST /playground/api/card` `{"url": base}`): the card at the well-known path
//! (the 0.3 path as a fallback) as a 1.0 client asks for it (`A2A-Version: 1.0`) and as a 0.3 client
//! does, which protocol version it is written for, what each lacks for its version, its interfaces and security schemes, and its signatures verified with the JWKS of
//! the card's own origin (the `jku` of a signature when it is on that origin, else the well-known
//! JWKS path): a key anyone could host proves nothing.

use http::StatusCode;
use serde::Deserialize;
use serde_json::{json, Value};

use crate::relay::Relay;
use crate::schema;
use a2a_http::response::{rest_error, HttpResponse};
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::paths::{JWKS_PATH, LEGACY_WELL_KNOWN_PATH, WELL_KNOWN_PATH};

/// Members a 1.0 card carries (spec §4.4.1; the proto marks them REQUIRED, which the JSON schema
/// generated from it does not say).
const REQUIRED_V1: &[&str] = &[
    "name",
    "description",
    "supportedInterfaces",
    "version",
    "capabilities",
    "defaultInputModes",
    "defaultOutputModes",
    "skills",
];
/// Members a skill carries (both versions).
const REQUIRED_SKILL: &[&str] = &["id", "name", "description", "tags"];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Ask {
    url: String,
}

/// `POST /playground/api/card`.
pub async fn card(relay: &Relay, body: &[u8]) -> HttpResponse {
    match report(relay, body).await {
        Ok(report) => crate::json(StatusCode::OK, &report),
        Err(e) => rest_error(&e),
    }
}

/// Where an agent at `base` may have its card: under `base`'s own path first when it has one (an
/// agent behind a path prefix, such as an API Gateway stage; the SDKs' card resolvers look there),
/// then at its origin's root (RFC 8615).
fn card_urls(base: &url::Url) -> Result<Vec<url::Url>> {
    let prefix = base.path().trim_end_matches('/');
    let mut urls = Vec::new();
    for path in [WELL_KNOWN_PATH, LEGACY_WELL_KNOWN_PATH] {
        if !prefix.is_empty() {
            let mut under = base.clone();
            under.set_path(&format!("{prefix}{path}"));
            under.set_query(None);
            urls.push(under);
        }
    }
    for path in [WELL_KNOWN_PATH, LEGACY_WELL_KNOWN_PATH] {
        urls.push(base.join(path).map_err(|e| A2aError::invalid_field("url", e))?);
    }
    Ok(urls)
}

async fn report(relay: &Relay, body: &[u8]) -> Result<Value> {
    let ask: Ask = crate::parse(body)?;
    let base = relay.check(&ask.url, "url")?;
    let mut tried = Vec::new();
    let mut found = None;
    for url in card_urls(&base)? {
        match crate::fetch_json(relay.client(), url.as_str(), &[("a2a-version", "1.0")]).await {
            Ok(card) => {
                found = Some((url, card));
                break;
            }
            Err(why) => tried.push(why),
        }
    }
    let Some((card_url, card)) = found else {
        return Err(A2aError::invalid_field("url", format!("no agent card there: {}", tried.join("; "))));
    };
    let mut v1 = missing(&card, REQUIRED_V1);
    v1.extend(schema::v1().check(schema::V1_CARD, &card));
    // What a 0.3 client reads there (a host that serves both versions negotiates by the header).
    let card03 = crate::fetch_json(relay.client(), card_url.as_str(), &[("a2a-version", "0.3")])
        .await
        .unwrap_or_else(|_| card.clone());
    let v03 = schema::v03().check(schema::V03_CARD, &card03);
    let written_for = if card.get("supportedInterfaces").is_some() {
        "1.0"
    } else if card.get("protocolVersion").is_some() {
        "0.3"
    } else {
        "unknown"
    };
    let interfaces = interfaces(&card);
    let schemes: Vec<Value> = card["securitySchemes"]
        .as_object()
        .map(|all| {
            all.iter()
                .map(|(name, scheme)| {
                    let kind = scheme.as_object().and_then(|o| o.keys().next().cloned()).unwrap_or_default();
                    json!({"name": name, "kind": scheme.get("type").cloned().unwrap_or(json!(kind)), "scheme": scheme})
                })
                .collect()
        })
        .unwrap_or_default();
    let signature = signature(relay.client(), &card_url, &card).await;
    Ok(json!({
        "cardUrl": card_url.as_str(),
        "card": card,
        "writtenFor": written_for,
        "v1": {"ok": v1.is_empty(), "problems": v1},
        "v03": {"ok": v03.is_empty(), "problems": v03},
        "interfaces": interfaces,
        "securitySchemes": schemes,
        "signature": signature,
    }))
}

/// What `card` lacks of `required`, and what its skills lack.
fn missing(card: &Value, required: &[&str]) -> Vec<String> {
    let mut problems: Vec<String> = required
        .iter()
        .filter(|m| card.get(**m).is_none_or(Value::is_null))
        .map(|m| format!("{m} is missing"))
        .collect();
    if let Some(skills) = card["skills"].as_array() {
        for (i, skill) in skills.iter().enumerate() {
            for m in REQUIRED_SKILL {
                if skill.get(*m).is_none() {
                    problems.push(format!("skills[{i}].{m} is missing"));
                }
            }
        }
    } else if card.get("skills").is_some() {
        problems.push("skills is not an array".into());
    }
    problems
}

/// The interfaces a client may use: 1.0's `supportedInterfaces`, or 0.3's `url` with
/// `preferredTransport` and `additionalInterfaces`.
fn interfaces(card: &Value) -> Vec<Value> {
    if let Some(all) = card["supportedInterfaces"].as_array() {
        return all
            .iter()
            .map(|i| json!({"url": i["url"], "binding": i["protocolBinding"], "version": i["protocolVersion"]}))
            .collect();
    }
    let mut out = Vec::new();
    if let Some(url) = card["url"].as_str() {
        let binding = card["preferredTransport"].as_str().unwrap_or("JSONRPC");
        out.push(json!({"url": url, "binding": binding, "version": card["protocolVersion"]}));
    }
    for i in card["additionalInterfaces"].as_array().into_iter().flatten() {
        out.push(json!({"url": i["url"], "binding": i["transport"], "version": card["protocolVersion"]}));
    }
    out
}

/// The card's signatures checked with the keys of its own origin.
async fn signature(client: &reqwest::Client, card_url: &url::Url, card: &Value) -> Value {
    let signatures = card["signatures"].as_array().filter(|s| !s.is_empty());
    let Some(signatures) = signatures else {
        return json!({"status": "unsigned", "detail": "the card carries no signatures"});
    };
    let same_origin = |u: &url::Url| u.origin() == card_url.origin();
    let jku = signatures
        .iter()
        .filter_map(|s| a2a_signing::card::protected(s).ok()?.jku)
        .filter_map(|j| url::Url::parse(&j).ok())
        .find(same_origin);
    let jwks_url = match jku {
        Some(jku) => jku,
        // Beside the card: at the root, or under the path prefix the card was found under.
        None => match card_url.join(JWKS_PATH.trim_start_matches("/.well-known/")) {
            Ok(url) => url,
            Err(e) => return json!({"status": "failed", "detail": e.to_string()}),
        },
    };
    let keys = match crate::catcher::fetch_jwks(client, jwks_url.as_str()).await {
        Ok(keys) => keys,
        Err(why) => return json!({"status": "failed", "jwksUrl": jwks_url.as_str(), "detail": why}),
    };
    match a2a_signing::card::verify(card, &keys) {
        Ok(v) => json!({"status": "verified", "jwksUrl": jwks_url.as_str(), "kid": v.kid, "alg": v.alg}),
        Err(why) => json!({"status": "failed", "jwksUrl": jwks_url.as_str(), "detail": why}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_card_is_looked_for_under_the_base_path_first_then_at_the_root() {
        let urls = |base: &str| -> Vec<String> {
            card_urls(&url::Url::parse(base).unwrap()).unwrap().iter().map(|u| u.to_string()).collect()
        };
        assert_eq!(
            urls("https://agent.example/"),
            ["https://agent.example/.well-known/agent-card.json", "https://agent.example/.well-known/agent.json"]
        );
        assert_eq!(
            urls("https://api.example/a2a/?x=1"),
            [
                "https://api.example/a2a/.well-known/agent-card.json",
                "https://api.example/a2a/.well-known/agent.json",
                "https://api.example/.well-known/agent-card.json",
                "https://api.example/.well-known/agent.json",
            ]
        );
        let card = url::Url::parse("https://api.example/a2a/.well-known/agent-card.json").unwrap();
        let jwks = card.join(JWKS_PATH.trim_start_matches("/.well-known/")).unwrap();
        assert_eq!(jwks.as_str(), "https://api.example/a2a/.well-known/jwks.json", "the keys beside the card");
    }
}
