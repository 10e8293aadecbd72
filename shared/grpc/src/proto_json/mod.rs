//! ProtoJSON to and from the protobuf wire format, straight through the descriptors: no
//! `DynamicMessage` in between.
//!
//! - [`read`]: a message's wire bytes as ProtoJSON text (what the JSON decoders of the other
//!   bindings read).
//! - [`write`]: anything `Serialize` whose serde form is ProtoJSON (the typed answers and events,
//!   or a `serde_json::Value`) as a message's wire bytes, serialized field by field into one buffer.
//!
//! Both follow the ProtoJSON mapping as `prost_reflect` does (the tests compare them): fields by
//! JSON name (either name accepted on the way in), unknown names ignored, fields without presence
//! left out at their default, enums by name, 64-bit integers as strings, bytes as base64, and the
//! well-known types this proto uses by their JSON forms (`Timestamp`, `Struct`, `Value`,
//! `ListValue`; `Empty` is an ordinary empty message).

mod key;
pub mod read;
#[cfg(test)]
mod tests;
pub mod write;

use prost_reflect::MessageDescriptor;

/// The range of `google.protobuf.Timestamp` (years 0001 to 9999).
const MIN_TIMESTAMP_SECONDS: i64 = -62_135_596_800;
const MAX_TIMESTAMP_SECONDS: i64 = 253_402_300_799;

/// The well-known types with a JSON form of their own.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Wkt {
    None,
    Timestamp,
    Value,
    Struct,
    ListValue,
}

impl Wkt {
    fn of(descriptor: &MessageDescriptor) -> Self {
        match descriptor.full_name() {
            "google.protobuf.Timestamp" => Self::Timestamp,
            "google.protobuf.Value" => Self::Value,
            "google.protobuf.Struct" => Self::Struct,
            "google.protobuf.ListValue" => Self::ListValue,
            _ => Self::None,
        }
    }
}

/// Why a message could not be read or written.
#[derive(Debug)]
pub struct Error(String);

impl Error {
    fn new(message: impl Into<String>) -> Self {
        Self(message.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl serde::ser::Error for Error {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        Self(msg.to_string())
    }
}
