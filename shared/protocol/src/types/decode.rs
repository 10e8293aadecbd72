//! JSON into typed requests, with serde's complaints turned into InvalidParams naming the field path
//! (`params.message.parts[0]`).

use crate::error::{A2aError, Result};

/// Decodes JSON into `T`, turning serde's complaint into InvalidParams naming the field path
/// (`prefix.message.parts[0]`).
pub fn decode<T: serde::de::DeserializeOwned>(value: serde_json::Value, prefix: &str) -> Result<T> {
    serde_path_to_error::deserialize(value).map_err(|e| path_error(&e, prefix))
}

/// [`decode`] from JSON text, without building a `Value` first.
pub fn decode_str<T: serde::de::DeserializeOwned>(json: &str, prefix: &str) -> Result<T> {
    let mut de = serde_json::Deserializer::from_str(json);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|e| path_error(&e, prefix))?;
    de.end().map_err(|e| A2aError::invalid_field(prefix, e))?;
    Ok(value)
}

fn path_error<E: std::fmt::Display>(e: &serde_path_to_error::Error<E>, prefix: &str) -> A2aError {
    let path = e.path().to_string();
    let field = if path == "." || path.is_empty() {
        prefix.to_string()
    } else if prefix.is_empty() {
        path
    } else {
        format!("{prefix}.{path}")
    };
    A2aError::invalid_field(&field, e.inner())
}
