//! What the HTTP+JSON bindings (1.0 in [`crate::rest`], 0.3 in [`crate::rest03`]) read from a
//! request: the body as a JSON object and the query string as one, before an operation decodes it.

use serde_json::{Map, Value};

use crate::response::require_json;
use a2a_protocol::error::{A2aError, Result};
use a2a_protocol::types::TaskState;

/// The JSON object of a POST body (an empty body is an empty object).
pub(crate) fn body_object(parts: &http::request::Parts, body: &[u8]) -> Result<Map<String, Value>> {
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    require_json(&parts.headers)?;
    match serde_json::from_slice(body) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(A2aError::invalid_request("the request body must be a JSON object")),
        Err(e) => Err(A2aError::parse(format!("invalid JSON: {e}"))),
    }
}

/// Query parameters per spec §11: camelCase names, numbers and booleans as strings, enums by name
/// or short form (`status=working`), timestamps as ISO 8601. Unknown parameters are ignored.
pub(crate) fn query_object(query: Option<&str>) -> Result<Map<String, Value>> {
    let mut out = Map::new();
    let Some(query) = query else { return Ok(out) };
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let decode =
            |s: &str| percent_encoding::percent_decode_str(&s.replace('+', " ")).decode_utf8_lossy().into_owned();
        let (key, raw) = (decode(k), decode(v));
        let value = match key.as_str() {
            "historyLength" | "history_length" | "pageSize" | "page_size" => {
                let n: i64 = raw
                    .trim()
                    .parse()
                    .map_err(|_| A2aError::invalid_field(&key, format!("{raw:?} is not an integer")))?;
                Value::from(n)
            }
            "includeArtifacts" | "include_artifacts" => match raw.trim() {
                "true" | "1" | "" => Value::Bool(true),
                "false" | "0" => Value::Bool(false),
                _ => return Err(A2aError::invalid_field(&key, format!("{raw:?} is not a boolean (true or false)"))),
            },
            "status" => {
                let state = TaskState::parse_lenient(&raw)
                    .ok_or_else(|| A2aError::invalid_field("status", format!("unknown task state {raw:?}")))?;
                Value::String(state.as_str().into())
            }
            "contextId"
            | "context_id"
            | "pageToken"
            | "page_token"
            | "statusTimestampAfter"
            | "status_timestamp_after"
            | "tenant" => Value::String(raw),
            _ => continue,
        };
        out.insert(key, value);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters() {
        let q = query_object(Some("status=input-required&pageSize=5&includeArtifacts=true&A2A-Version=1.0")).unwrap();
        assert_eq!(q["status"], "TASK_STATE_INPUT_REQUIRED");
        assert_eq!(q["pageSize"], 5);
        assert_eq!(q["includeArtifacts"], true);
        assert!(!q.contains_key("A2A-Version"));
        assert!(query_object(Some("pageSize=abc")).unwrap_err().message.contains("pageSize"));
        assert!(query_object(Some("status=TASK_STATE_WORKING")).is_ok());
        assert!(query_object(Some("status=bogus")).unwrap_err().message.contains("status"));
    }
}
