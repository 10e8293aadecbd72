//! The agent card: fetched from `/.well-known/agent-card.json` (asking for 1.0) or, for 0.3 agents,
//! `/.well-known/agent.json`, read into the 1.0 model; and the interface a client uses, the first one
//! in the card's order whose binding and version it speaks.

use std::time::Duration;

use serde_json::Value;

use super::{ClientError, ClientResult};
use a2a_protocol::paths::{LEGACY_WELL_KNOWN_PATH, WELL_KNOWN_PATH};
use a2a_protocol::types::{AgentCard, AgentInterface};

/// The bindings this client speaks: A2A 1.0 JSON-RPC, HTTP+JSON and gRPC (feature `client-grpc`),
/// and 0.3 JSON-RPC for agents that speak nothing newer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Binding {
    JsonRpc,
    HttpJson,
    Grpc,
    JsonRpc03,
}

impl Binding {
    pub fn name(self) -> &'static str {
        match self {
            Self::JsonRpc => "JSONRPC",
            Self::HttpJson => "HTTP+JSON",
            Self::Grpc => "GRPC",
            Self::JsonRpc03 => "JSONRPC 0.3",
        }
    }

    fn of(interface: &AgentInterface) -> Option<Self> {
        // An interface without a version is taken as 1.0 (the card is a 1.0 card).
        let v1 = interface.protocol_version.is_empty() || interface.protocol_version.starts_with("1.");
        let v03 = interface.protocol_version.starts_with("0.3");
        match interface.protocol_binding.to_ascii_uppercase().as_str() {
            "JSONRPC" if v1 => Some(Self::JsonRpc),
            "HTTP+JSON" | "REST" if v1 => Some(Self::HttpJson),
            "GRPC" if v1 && cfg!(feature = "grpc") => Some(Self::Grpc),
            "JSONRPC" if v03 => Some(Self::JsonRpc03),
            _ => None,
        }
    }
}

impl std::str::FromStr for Binding {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "JSONRPC" | "JSON-RPC" => Ok(Self::JsonRpc),
            "HTTP+JSON" | "REST" | "HTTP" => Ok(Self::HttpJson),
            "GRPC" => Ok(Self::Grpc),
            "JSONRPC-0.3" | "JSONRPC03" | "0.3" => Ok(Self::JsonRpc03),
            other => Err(format!("unknown binding {other:?} (JSONRPC, HTTP+JSON, GRPC or JSONRPC-0.3)")),
        }
    }
}

/// Bounds of one document fetched (a card, a JWKS): its size, and the time to get it whole.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub max_bytes: usize,
    /// At most [`CARD_TIMEOUT`] is waited whatever this says.
    pub timeout: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self { max_bytes: super::DEFAULT_MAX_ANSWER_BYTES, timeout: CARD_TIMEOUT }
    }
}

/// The longest a card or JWKS fetch may take, body included.
pub const CARD_TIMEOUT: Duration = Duration::from_secs(30);

/// The card at `base`: a URL that is the card itself, or an agent's base URL.
pub async fn fetch_card(http: &reqwest::Client, base: &str, limits: Limits) -> ClientResult<AgentCard> {
    read_card(fetch_card_json(http, base, limits).await?.1)
}

/// The card at `base` as received, and the URL it came from.
pub async fn fetch_card_json(http: &reqwest::Client, base: &str, limits: Limits) -> ClientResult<(String, Value)> {
    let base = base.trim_end_matches('/');
    if base.ends_with(".json") {
        let card = get(http, base, limits).await?.ok_or_else(|| ClientError::Card(format!("{base}: not found")))?;
        return Ok((base.to_string(), card));
    }
    for path in [WELL_KNOWN_PATH, LEGACY_WELL_KNOWN_PATH] {
        let url = format!("{base}{path}");
        if let Some(card) = get(http, &url, limits).await? {
            return Ok((url, card));
        }
    }
    Err(ClientError::Card(format!("{base} serves no agent card ({WELL_KNOWN_PATH} or {LEGACY_WELL_KNOWN_PATH})")))
}

/// The JSON at `url`; `None` on 404. Only a 200's body is read (up to `limits`).
pub(crate) async fn get(http: &reqwest::Client, url: &str, limits: Limits) -> ClientResult<Option<Value>> {
    let timeout = limits.timeout.min(CARD_TIMEOUT);
    let resp = http.get(url).header("A2A-Version", "1.0").timeout(timeout).send().await?;
    let status = resp.status().as_u16();
    if status == 404 {
        return Ok(None);
    }
    if status != 200 {
        return Err(ClientError::Card(format!("{url}: HTTP {status}")));
    }
    let body = super::body::read(resp, limits.max_bytes, timeout).await?;
    serde_json::from_slice(&body).map(Some).map_err(|e| ClientError::Card(format!("{url}: not JSON: {e}")))
}

/// A 1.0 card as is; a 0.3 card (no `supportedInterfaces`, a `url`) through the 0.3 reading.
pub(crate) fn read_card(card: Value) -> ClientResult<AgentCard> {
    if card.get("supportedInterfaces").is_none() && card.get("url").is_some() {
        return a2a_protocol::v03::card_from_wire(card).map_err(|e| ClientError::Card(e.message));
    }
    serde_json::from_value(card).map_err(|e| ClientError::Card(format!("not an agent card: {e}")))
}

/// The interface to use: the first of `prefer`'s binding, else the first 1.0 one this client
/// speaks, else 0.3 JSON-RPC.
pub fn choose(card: &AgentCard, prefer: Option<Binding>) -> ClientResult<(Binding, &AgentInterface)> {
    let spoken = || card.supported_interfaces.iter().filter_map(|i| Binding::of(i).map(|b| (b, i)));
    let chosen = prefer
        .and_then(|want| spoken().find(|(b, _)| *b == want))
        .or_else(|| spoken().find(|(b, _)| *b != Binding::JsonRpc03))
        .or_else(|| spoken().next());
    chosen.ok_or_else(|| {
        let offered: Vec<String> = card
            .supported_interfaces
            .iter()
            .map(|i| format!("{} {}", i.protocol_binding, i.protocol_version))
            .collect();
        ClientError::Card(format!(
            "the agent offers no A2A 1.0 interface this client speaks, nor 0.3 JSON-RPC (it offers: {})",
            if offered.is_empty() { "none".to_string() } else { offered.join(", ") }
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn iface(binding: &str, version: &str, url: &str) -> AgentInterface {
        AgentInterface {
            url: url.into(),
            protocol_binding: binding.into(),
            tenant: String::new(),
            protocol_version: version.into(),
        }
    }

    #[test]
    fn the_cards_order_decides_unless_a_binding_is_preferred() {
        let mut card = a2a_protocol::card_file::default_card();
        card.supported_interfaces = vec![
            iface("GRPC", "0.3", "grpc://old-grpc"),
            iface("JSONRPC", "0.3", "http://old"),
            iface("HTTP+JSON", "1.0", "http://rest"),
            iface("JSONRPC", "1.0", "http://rpc"),
            iface("GRPC", "1.0", "127.0.0.1:50051"),
            iface("HTTP+JSON", "0.3", "http://old-rest"),
        ];
        let (b, i) = choose(&card, None).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::HttpJson, "http://rest"), "1.0 before 0.3");
        let (b, i) = choose(&card, Some(Binding::JsonRpc)).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::JsonRpc, "http://rpc"));
        let (b, i) = choose(&card, Some(Binding::Grpc)).unwrap();
        if cfg!(feature = "grpc") {
            assert_eq!((b, i.url.as_str()), (Binding::Grpc, "127.0.0.1:50051"));
        } else {
            assert_eq!(b, Binding::HttpJson, "a build without gRPC takes the card's first it speaks");
        }
        card.supported_interfaces.truncate(2);
        let (b, i) = choose(&card, None).unwrap();
        assert_eq!((b, i.url.as_str()), (Binding::JsonRpc03, "http://old"), "a 0.3-only agent");
        card.supported_interfaces.truncate(1);
        let err = choose(&card, None).unwrap_err().to_string();
        assert!(err.contains("it offers: GRPC 0.3"), "{err}");
    }
}
