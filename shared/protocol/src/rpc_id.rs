//! The JSON-RPC request id, kept as the exact JSON text the client sent (a string, or a number of
//! any length: a 40-digit id comes back as the same 40 digits, never as a float), and the two
//! response envelopes that carry it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::Value;

#[derive(Clone)]
pub struct RpcId(Box<RawValue>);

impl RpcId {
    /// `null`: the id of answers to requests whose id could not be read.
    pub fn null() -> Self {
        Self(raw("null"))
    }

    /// The id of a request, if it is a string or a number.
    pub fn from_raw(raw: &RawValue) -> Option<Self> {
        let text = raw.get();
        let is_string = text.starts_with('"');
        let is_number = text.starts_with(|c: char| c == '-' || c.is_ascii_digit());
        (is_string || is_number).then(|| Self(raw.to_owned()))
    }

    /// From a parsed id (which may have lost digits of a very long number).
    pub fn from_value(value: &Value) -> Option<Self> {
        if !(value.is_string() || value.is_number()) {
            return None;
        }
        RawValue::from_string(value.to_string()).ok().map(Self)
    }

    /// The JSON text of the id.
    pub fn as_json(&self) -> &str {
        self.0.get()
    }
}

#[derive(Serialize)]
struct Envelope<'a, T: Serialize> {
    jsonrpc: &'static str,
    id: &'a RpcId,
    #[serde(skip_serializing_if = "Option::is_none")]
    result: Option<&'a T>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a Value>,
}

/// `{"jsonrpc": "2.0", "id": id, "result": result}`.
pub fn result_body(id: &RpcId, result: &impl Serialize) -> Vec<u8> {
    // Room for a typical task up front: growing from empty copies the answer three or four times.
    result_body_into(Vec::with_capacity(1024), id, result)
}

/// [`result_body`] written into `body` (sized by the caller).
pub fn result_body_into(mut body: Vec<u8>, id: &RpcId, result: &impl Serialize) -> Vec<u8> {
    match serde_json::to_writer(&mut body, &Envelope { jsonrpc: "2.0", id, result: Some(result), error: None }) {
        Ok(()) => body,
        Err(_) => Vec::new(),
    }
}

/// [`result_body`] around a result already encoded as JSON (`result_json`): a stream's event shared
/// by many JSON-RPC streams is encoded once and wrapped with each stream's own id.
pub fn result_body_around(id: &RpcId, result_json: &str) -> String {
    let mut body = String::with_capacity(result_json.len() + 32 + id.as_json().len());
    body.push_str(r#"{"jsonrpc":"2.0","id":"#);
    body.push_str(id.as_json());
    body.push_str(r#","result":"#);
    body.push_str(result_json);
    body.push('}');
    body
}

/// `{"jsonrpc": "2.0", "id": id, "error": error}`.
pub fn error_body(id: &RpcId, error: &Value) -> Vec<u8> {
    serde_json::to_vec(&Envelope::<()> { jsonrpc: "2.0", id, result: None, error: Some(error) }).unwrap_or_default()
}

fn raw(text: &str) -> Box<RawValue> {
    RawValue::from_string(text.to_string()).unwrap_or_else(|_| RpcId::null().0)
}

impl PartialEq for RpcId {
    fn eq(&self, other: &Self) -> bool {
        self.as_json() == other.as_json()
    }
}

impl std::fmt::Debug for RpcId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_json())
    }
}

impl Serialize for RpcId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(s)
    }
}

/// Through a parsed value, so that it also works inside tagged enums (the request path reads the
/// raw text with [`RpcId::from_raw`] instead).
impl<'de> Deserialize<'de> for RpcId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Self::from_value(&value).ok_or_else(|| serde::de::Error::custom("a JSON-RPC id is a string or a number"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_body_around_an_encoded_result_is_the_body_of_the_result() {
        let result = serde_json::json!({"task": {"id": "t", "parts": ["a \"b\""]}});
        for id in [serde_json::json!("r-1"), serde_json::json!(7)] {
            let id = RpcId::from_value(&id).unwrap();
            let around = result_body_around(&id, &result.to_string());
            assert_eq!(around.as_bytes(), &result_body(&id, &result)[..]);
        }
    }

    #[test]
    fn long_numbers_keep_their_digits() {
        let raw: Box<RawValue> = serde_json::from_str("1234567890123456789012345678901234567890").unwrap();
        let id = RpcId::from_raw(&raw).unwrap();
        let out = String::from_utf8(result_body(&id, &serde_json::json!({}))).unwrap();
        assert_eq!(out, r#"{"jsonrpc":"2.0","id":1234567890123456789012345678901234567890,"result":{}}"#);
        assert!(RpcId::from_raw(&serde_json::from_str::<Box<RawValue>>("true").unwrap()).is_none());
        assert!(RpcId::from_raw(&serde_json::from_str::<Box<RawValue>>("null").unwrap()).is_none());
        assert_eq!(RpcId::null().as_json(), "null");
    }
}
