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
    let mut field = if path == "." || path.is_empty() {
        prefix.to_string()
    } else if prefix.is_empty() {
        path
    } else {
        format!("{prefix}.{path}")
    };
    let inner = e.inner().to_string();
    // serde reports a missing field at the object that lacks it: name the field itself.
    if let Some(missing) = inner.strip_prefix("missing field `").and_then(|rest| rest.split('`').next()) {
        field = if field.is_empty() { missing.to_string() } else { format!("{field}.{missing}") };
        return A2aError::invalid_field(&field, "is required");
    }
    A2aError::invalid_field(&field, inner)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        inner: Inner,
    }

    #[derive(Debug, serde::Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        id: String,
    }

    #[test]
    fn a_missing_field_is_named_by_its_own_path() {
        let err = decode_str::<Inner>("{}", "params").unwrap_err();
        assert_eq!(
            (err.message.as_str(), err.metadata.get("field").map(String::as_str)),
            ("params.id: is required", Some("params.id"))
        );
        let err = decode_str::<Outer>(r#"{"inner": {}}"#, "").unwrap_err();
        assert_eq!(err.metadata.get("field").map(String::as_str), Some("inner.id"), "{err}");
        let err = decode_str::<Inner>(r#"{"id": 7}"#, "params").unwrap_err();
        assert_eq!(err.metadata.get("field").map(String::as_str), Some("params.id"), "{err}");
    }
}
