//! What one request (or one agent event) may make the server build: at most [`MAX_PARTS`] parts in
//! a message or an artifact (checked by the decoder as it reads them), and a JSON document at most
//! [`MAX_DEPTH`] levels deep holding at most [`MAX_VALUES`] values (checked by [`json_shape`], a
//! scan of the text that allocates nothing, before anything is decoded). So what decoding builds is
//! bounded by what a caller may send, whatever its shape: about [`DECODED_PER_VALUE`] bytes per
//! value at most, which the server holds against its budget of request bytes in flight.

use std::fmt;
use std::marker::PhantomData;

use serde::de::{Deserializer, SeqAccess, Visitor};
use serde::Deserialize;

use crate::error::{A2aError, Result};

/// Most parts one message or one artifact may hold.
pub const MAX_PARTS: usize = 1024;
/// Deepest nesting of a JSON document (the envelope's own levels included).
pub const MAX_DEPTH: usize = 64;
/// Most JSON values (objects, arrays, strings, numbers, literals; member names count too) in one
/// document.
pub const MAX_VALUES: usize = 200_000;
/// About what one decoded JSON value costs in memory at most (a `serde_json::Value` in an ordered
/// map, or a part), for the budget of requests in flight.
pub const DECODED_PER_VALUE: usize = 160;

/// The shape of a JSON document: how many values it holds and how deep it nests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Shape {
    pub values: usize,
    pub depth: usize,
}

impl Shape {
    /// About what decoding this document builds, in bytes.
    pub fn decoded_bytes(&self) -> usize {
        self.values.saturating_mul(DECODED_PER_VALUE)
    }

    /// Refuses a document past the limits, saying which (`what` names it: "the request").
    pub fn check(&self, what: &str) -> Result<()> {
        if self.depth > MAX_DEPTH {
            return Err(A2aError::invalid_request(format!(
                "{what} nests {} levels deep; the limit is {MAX_DEPTH}",
                self.depth
            )));
        }
        if self.values > MAX_VALUES {
            return Err(A2aError::invalid_request(format!(
                "{what} holds more than {MAX_VALUES} JSON values (the limit per document)"
            )));
        }
        Ok(())
    }
}

/// Counts the values of a JSON document and its depth, in one pass that allocates nothing. The
/// text need not be valid JSON (the decoder judges that afterwards); the scan stops counting once
/// the limits are passed, so it costs O(length) whatever the input.
pub fn json_shape(text: &[u8]) -> Shape {
    let (mut values, mut depth, mut deepest) = (0usize, 0usize, 0usize);
    let mut in_scalar = false;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            b'"' => {
                values += 1;
                in_scalar = false;
                i += 1;
                while i < text.len() {
                    match text[i] {
                        b'\\' => i += 2,
                        b'"' => break,
                        _ => i += 1,
                    }
                }
            }
            b'{' | b'[' => {
                values += 1;
                depth += 1;
                deepest = deepest.max(depth);
                in_scalar = false;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                in_scalar = false;
            }
            b',' | b':' | b' ' | b'\n' | b'\r' | b'\t' => in_scalar = false,
            _ if !in_scalar => {
                values += 1;
                in_scalar = true;
            }
            _ => {}
        }
        if values > MAX_VALUES || deepest > MAX_DEPTH {
            break;
        }
        i += 1;
    }
    Shape { values, depth: deepest }
}

/// Deserializes a list of parts, refusing the one past [`MAX_PARTS`] as soon as it is reached
/// (nothing past it is decoded). For `#[serde(deserialize_with)]` on `parts` fields.
pub fn bounded_parts<'de, D, T>(d: D) -> std::result::Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Bounded<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for Bounded<T> {
        type Value = Vec<T>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            write!(f, "a list of at most {MAX_PARTS} parts")
        }

        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> std::result::Result<Vec<T>, A::Error> {
            let mut parts = Vec::with_capacity(seq.size_hint().unwrap_or(1).min(16));
            while let Some(part) = seq.next_element()? {
                if parts.len() == MAX_PARTS {
                    return Err(serde::de::Error::custom(format!("holds more than {MAX_PARTS} parts (the limit)")));
                }
                parts.push(part);
            }
            Ok(parts)
        }
    }

    d.deserialize_seq(Bounded(PhantomData))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_values_and_depth_without_being_fooled_by_strings() {
        let shape = json_shape(br#"{"a": [1, 2.5e3, true, null], "b": {"c": "x\"[{]}"}}"#);
        assert_eq!(shape, Shape { values: 11, depth: 2 });
        assert_eq!(json_shape(b"[[[[]]]]").depth, 4);
        assert_eq!(json_shape(b"").values, 0);
    }

    #[test]
    fn stops_counting_past_the_limits() {
        let deep = "[".repeat(100_000);
        let shape = json_shape(deep.as_bytes());
        assert_eq!(shape.depth, MAX_DEPTH + 1);
        assert!(shape.check("the request").unwrap_err().message.contains("64"));
        let wide = format!("[{}0]", "0,".repeat(MAX_VALUES + 10));
        let err = json_shape(wide.as_bytes()).check("the request").unwrap_err();
        assert!(err.message.contains("200000 JSON values"), "{}", err.message);
    }

    #[test]
    fn a_parts_list_stops_at_the_limit() {
        #[derive(Deserialize, Debug)]
        struct M {
            #[serde(deserialize_with = "bounded_parts")]
            #[allow(dead_code)]
            parts: Vec<u8>,
        }
        let ok = format!("{{\"parts\": [{}0]}}", "0,".repeat(MAX_PARTS - 1));
        assert!(serde_json::from_str::<M>(&ok).is_ok());
        let over = format!("{{\"parts\": [{}0]}}", "0,".repeat(MAX_PARTS));
        let err = serde_json::from_str::<M>(&over).unwrap_err().to_string();
        assert!(err.contains("more than 1024 parts"), "{err}");
    }
}
