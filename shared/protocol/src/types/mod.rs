//! A2A 1.0 data model (`lf.a2a.v1`, `a2a-v1.0.1.proto`) serialized as ProtoJSON: camelCase field names,
//! enums by name, timestamps as ISO-8601 UTC with milliseconds, default values omitted on output,
//! unknown fields ignored on input. Parsers also accept the proto (snake_case) field names, as ProtoJSON
//! requires. `validate` checks the proto's `REQUIRED` field behaviours and names the offending field.

pub mod bounds;
mod card;
mod core;
mod decode;
mod requests;
pub mod serde_helpers;
pub mod size;
mod validate;

pub use self::card::*;
pub use self::core::*;
pub use self::decode::{decode, decode_str};
pub use self::requests::*;
pub use self::validate::Validate;

/// `google.protobuf.Struct`: a JSON object.
pub type Struct = serde_json::Map<String, serde_json::Value>;

/// Makes room for `additional` more items, exactly while the vector is short (fewer than 8 items):
/// most tasks hold a message or two, an artifact, a handful of events, and a doubling vector would
/// keep room for twice that for as long as the task is held. Longer vectors grow as usual
/// (amortized).
pub fn reserve_tight<T>(items: &mut Vec<T>, additional: usize) {
    if items.len() < 8 {
        items.reserve_exact(additional);
    }
}
