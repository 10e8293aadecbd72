//! A message's wire bytes as ProtoJSON text, read with the descriptors in one pass and written
//! straight into a string: the same JSON `prost_reflect` gives for a decoded `DynamicMessage`
//! (fields by their JSON names in field-number order, fields without presence left out at their
//! default, enums by name, 64-bit integers as strings, bytes as base64, the well-known types by
//! their JSON forms), without building the message first.

use std::fmt::Write as _;

use base64::Engine as _;
use prost::encoding::decode_varint;
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};

use super::{Error, Wkt, MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS};

/// Writes the message `descriptor` whose wire form is `bytes` to `out` as ProtoJSON.
pub fn message(descriptor: &MessageDescriptor, bytes: &[u8], out: &mut String) -> Result<(), Error> {
    match Wkt::of(descriptor) {
        Wkt::Timestamp => return timestamp(bytes, out),
        Wkt::Value => return value(bytes, out),
        Wkt::Struct => return structure(bytes, out),
        Wkt::ListValue => return list_value(bytes, out),
        Wkt::None => {}
    }
    let mut fields: Vec<_> =
        fields(bytes)?.into_iter().enumerate().map(|(at, (number, raw))| (number, at, raw)).collect();
    fields.sort_by_key(|(number, ..)| *number);
    out.push('{');
    let mut first = true;
    for group in fields.chunk_by(|a, b| a.0 == b.0) {
        let Some(field) = descriptor.get_field(group[0].0) else { continue };
        if superseded(&field, group, &fields) {
            continue;
        }
        let at = out.len();
        if !first {
            out.push(',');
        }
        string(field.json_name(), out);
        out.push(':');
        let written = if field.is_map() {
            map(&field, group, out)?;
            true
        } else if field.is_list() {
            list(&field, group, out)?;
            true
        } else {
            singular(&field, group, out)?
        };
        if written {
            first = false;
        } else {
            out.truncate(at);
        }
    }
    out.push('}');
    Ok(())
}

/// Whether a later member of the field's oneof was set after it (the last one set wins).
fn superseded(field: &FieldDescriptor, group: &[Occurrence<'_>], fields: &[Occurrence<'_>]) -> bool {
    let Some(oneof) = field.containing_oneof() else { return false };
    let last = group.last().map_or(0, |(_, at, _)| *at);
    let later = oneof.fields().any(|other| {
        other.number() != field.number() && fields.iter().any(|(number, at, _)| *number == other.number() && *at > last)
    });
    later
}

/// A field's occurrence: its number, its place in the wire order, its value.
type Occurrence<'a> = (u32, usize, Raw<'a>);

/// One field's raw value on the wire.
#[derive(Clone, Copy)]
enum Raw<'a> {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    Len(&'a [u8]),
}

/// The fields of a message in wire order.
fn fields(mut buf: &[u8]) -> Result<Vec<(u32, Raw<'_>)>, Error> {
    let broken = || Error::new("the message's wire form is broken");
    let mut fields = Vec::new();
    while !buf.is_empty() {
        let key = decode_varint(&mut buf).map_err(|_| broken())?;
        let number = u32::try_from(key >> 3).map_err(|_| broken())?;
        let raw = match key & 7 {
            0 => Raw::Varint(decode_varint(&mut buf).map_err(|_| broken())?),
            1 => {
                let (bytes, rest) = buf.split_first_chunk::<8>().ok_or_else(broken)?;
                buf = rest;
                Raw::Fixed64(u64::from_le_bytes(*bytes))
            }
            5 => {
                let (bytes, rest) = buf.split_first_chunk::<4>().ok_or_else(broken)?;
                buf = rest;
                Raw::Fixed32(u32::from_le_bytes(*bytes))
            }
            2 => {
                let len = usize::try_from(decode_varint(&mut buf).map_err(|_| broken())?).map_err(|_| broken())?;
                if buf.len() < len {
                    return Err(broken());
                }
                let (bytes, rest) = buf.split_at(len);
                buf = rest;
                Raw::Len(bytes)
            }
            _ => return Err(broken()),
        };
        fields.push((number, raw));
    }
    Ok(fields)
}

/// A singular field (the last occurrence; a message's occurrences merged, as the wire format
/// says). False when it is left out: a field without presence at its default.
fn singular(field: &FieldDescriptor, group: &[Occurrence<'_>], out: &mut String) -> Result<bool, Error> {
    if let Kind::Message(descriptor) = field.kind() {
        let mut merged = Vec::new();
        let bytes = match group {
            [(_, _, Raw::Len(bytes))] => *bytes,
            _ => {
                for (_, _, raw) in group {
                    let Raw::Len(bytes) = raw else { return Err(mismatch(field)) };
                    merged.extend_from_slice(bytes);
                }
                &merged
            }
        };
        message(&descriptor, bytes, out)?;
        return Ok(true);
    }
    let Some((_, _, raw)) = group.last() else { return Ok(false) };
    if !field.supports_presence() && is_default(*raw) {
        return Ok(false);
    }
    scalar(field, &field.kind(), *raw, out)?;
    Ok(true)
}

fn is_default(raw: Raw<'_>) -> bool {
    match raw {
        Raw::Varint(v) => v == 0,
        Raw::Fixed64(v) => f64::from_bits(v) == 0.0 || v == 0,
        Raw::Fixed32(v) => f32::from_bits(v) == 0.0 || v == 0,
        Raw::Len(bytes) => bytes.is_empty(),
    }
}

/// A repeated field as an array; packed scalars unpacked.
fn list(field: &FieldDescriptor, group: &[Occurrence<'_>], out: &mut String) -> Result<(), Error> {
    let kind = field.kind();
    out.push('[');
    let mut first = true;
    let mut element = |raw: Raw<'_>, out: &mut String| {
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        match &kind {
            Kind::Message(descriptor) => {
                let Raw::Len(bytes) = raw else { return Err(mismatch(field)) };
                message(descriptor, bytes, out)
            }
            kind => scalar(field, kind, raw, out),
        }
    };
    for (_, _, raw) in group {
        match (*raw, packed_width(&kind)) {
            (Raw::Len(mut bytes), Some(width)) => {
                while !bytes.is_empty() {
                    let raw = match width {
                        0 => Raw::Varint(decode_varint(&mut bytes).map_err(|_| mismatch(field))?),
                        8 => {
                            let (v, rest) = bytes.split_first_chunk::<8>().ok_or_else(|| mismatch(field))?;
                            bytes = rest;
                            Raw::Fixed64(u64::from_le_bytes(*v))
                        }
                        _ => {
                            let (v, rest) = bytes.split_first_chunk::<4>().ok_or_else(|| mismatch(field))?;
                            bytes = rest;
                            Raw::Fixed32(u32::from_le_bytes(*v))
                        }
                    };
                    element(raw, out)?;
                }
            }
            (raw, _) => element(raw, out)?,
        }
    }
    out.push(']');
    Ok(())
}

/// The element width of a packable kind (0: varint), `None` for strings, bytes and messages.
fn packed_width(kind: &Kind) -> Option<u8> {
    match kind {
        Kind::Double | Kind::Fixed64 | Kind::Sfixed64 => Some(8),
        Kind::Float | Kind::Fixed32 | Kind::Sfixed32 => Some(4),
        Kind::String | Kind::Bytes | Kind::Message(_) => None,
        _ => Some(0),
    }
}

/// A map field as an object; each entry's key as a string, a missing value at its default.
fn map(field: &FieldDescriptor, group: &[Occurrence<'_>], out: &mut String) -> Result<(), Error> {
    let Kind::Message(entry) = field.kind() else { return Err(mismatch(field)) };
    let (key_field, value_field) = (entry.map_entry_key_field(), entry.map_entry_value_field());
    out.push('{');
    for (i, (_, _, raw)) in group.iter().enumerate() {
        let Raw::Len(bytes) = raw else { return Err(mismatch(field)) };
        let (mut key, mut value) = (None, None);
        for (number, raw) in fields(bytes)? {
            match number {
                1 => key = Some(raw),
                2 => value = Some(raw),
                _ => {}
            }
        }
        if i > 0 {
            out.push(',');
        }
        match (key, key_field.kind()) {
            (Some(Raw::Len(bytes)), Kind::String) => string(utf8(bytes, &key_field)?, out),
            (None, Kind::String) => out.push_str("\"\""),
            (key, kind) => {
                let mut text = String::new();
                scalar(&key_field, &kind, key.unwrap_or(Raw::Varint(0)), &mut text)?;
                string(text.trim_matches('"'), out);
            }
        }
        out.push(':');
        match (value, value_field.kind()) {
            (Some(Raw::Len(bytes)), Kind::Message(descriptor)) => message(&descriptor, bytes, out)?,
            (None, Kind::Message(descriptor)) => message(&descriptor, &[], out)?,
            (value, kind) => scalar(&value_field, &kind, value.unwrap_or(Raw::Varint(0)), out)?,
        }
    }
    out.push('}');
    Ok(())
}

/// A value of a scalar or enum kind.
fn scalar(field: &FieldDescriptor, kind: &Kind, raw: Raw<'_>, out: &mut String) -> Result<(), Error> {
    // Integers are written by `write!` into a string, which cannot fail.
    let _ = match (kind, raw) {
        (Kind::Bool, Raw::Varint(v)) => {
            out.push_str(if v != 0 { "true" } else { "false" });
            Ok(())
        }
        (Kind::Int32, Raw::Varint(v)) => write!(out, "{}", v as i32),
        (Kind::Sint32, Raw::Varint(v)) => write!(out, "{}", zigzag(v) as i32),
        (Kind::Uint32, Raw::Varint(v)) => write!(out, "{}", v as u32),
        (Kind::Sfixed32, Raw::Fixed32(v)) => write!(out, "{}", v as i32),
        (Kind::Fixed32, Raw::Fixed32(v)) => write!(out, "{v}"),
        (Kind::Int64, Raw::Varint(v)) => write!(out, "\"{}\"", v as i64),
        (Kind::Sint64, Raw::Varint(v)) => write!(out, "\"{}\"", zigzag(v)),
        (Kind::Uint64, Raw::Varint(v)) | (Kind::Fixed64, Raw::Fixed64(v)) => write!(out, "\"{v}\""),
        (Kind::Sfixed64, Raw::Fixed64(v)) => write!(out, "\"{}\"", v as i64),
        (Kind::Double, Raw::Fixed64(v)) => {
            float(f64::from_bits(v), out);
            Ok(())
        }
        (Kind::Float, Raw::Fixed32(v)) => {
            float(f64::from(f32::from_bits(v)), out);
            Ok(())
        }
        (Kind::String, Raw::Len(bytes)) => {
            string(utf8(bytes, field)?, out);
            Ok(())
        }
        (Kind::Bytes, Raw::Len(bytes)) => {
            out.push('"');
            base64::engine::general_purpose::STANDARD.encode_string(bytes, out);
            out.push('"');
            Ok(())
        }
        (Kind::Enum(descriptor), Raw::Varint(v)) => {
            match descriptor.get_value(v as i32) {
                Some(value) => string(value.name(), out),
                None => {
                    let _ = write!(out, "{}", v as i32);
                }
            }
            Ok(())
        }
        _ => return Err(mismatch(field)),
    };
    Ok(())
}

fn zigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

/// A double as ProtoJSON writes it: a number, or the strings for the non-finite ones.
fn float(v: f64, out: &mut String) {
    match serde_json::Number::from_f64(v) {
        Some(n) => {
            let _ = write!(out, "{n}");
        }
        None if v.is_nan() => out.push_str("\"NaN\""),
        None if v > 0.0 => out.push_str("\"Infinity\""),
        None => out.push_str("\"-Infinity\""),
    }
}

fn utf8<'a>(bytes: &'a [u8], field: &FieldDescriptor) -> Result<&'a str, Error> {
    std::str::from_utf8(bytes).map_err(|_| Error::new(format!("field {} is not valid UTF-8", field.json_name())))
}

fn mismatch(field: &FieldDescriptor) -> Error {
    Error::new(format!("field {} has the wrong wire type", field.json_name()))
}

/// `s` as a JSON string.
pub(crate) fn string(s: &str, out: &mut String) {
    out.reserve(s.len() + 2);
    out.push('"');
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        let escape = match b {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0..0x20 => "",
            _ => continue,
        };
        out.push_str(&s[start..i]);
        if escape.is_empty() {
            let _ = write!(out, "\\u{b:04x}");
        } else {
            out.push_str(escape);
        }
        start = i + 1;
    }
    out.push_str(&s[start..]);
    out.push('"');
}

/// `google.protobuf.Timestamp` as RFC 3339 in UTC.
fn timestamp(bytes: &[u8], out: &mut String) -> Result<(), Error> {
    let mut ts = prost_types::Timestamp::default();
    for (number, raw) in fields(bytes)? {
        match (number, raw) {
            (1, Raw::Varint(v)) => ts.seconds = v as i64,
            (2, Raw::Varint(v)) => ts.nanos = v as i32,
            _ => {}
        }
    }
    if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&ts.seconds) || !(0..1_000_000_000).contains(&ts.nanos)
    {
        return Err(Error::new("a timestamp is out of range"));
    }
    let _ = write!(out, "\"{ts}\"");
    Ok(())
}

/// `google.protobuf.Value` as the JSON value it holds (null when it holds none).
fn value(bytes: &[u8], out: &mut String) -> Result<(), Error> {
    let fields = fields(bytes)?;
    // One of: the last kind set wins.
    let Some((number, raw)) = fields.iter().rev().find(|(n, _)| (1..=6).contains(n)).copied() else {
        out.push_str("null");
        return Ok(());
    };
    let broken = || Error::new("a google.protobuf.Value is broken");
    match (number, raw) {
        (1, Raw::Varint(_)) => out.push_str("null"),
        (2, Raw::Fixed64(v)) => {
            let v = f64::from_bits(v);
            if !v.is_finite() {
                return Err(Error::new("a google.protobuf.Value holds a non-finite number"));
            }
            float(v, out);
        }
        (3, Raw::Len(bytes)) => string(std::str::from_utf8(bytes).map_err(|_| broken())?, out),
        (4, Raw::Varint(v)) => out.push_str(if v != 0 { "true" } else { "false" }),
        (5, Raw::Len(bytes)) => structure(bytes, out)?,
        (6, Raw::Len(bytes)) => list_value(bytes, out)?,
        _ => return Err(broken()),
    }
    Ok(())
}

/// `google.protobuf.Struct` as an object.
fn structure(bytes: &[u8], out: &mut String) -> Result<(), Error> {
    let broken = || Error::new("a google.protobuf.Struct is broken");
    out.push('{');
    let mut first = true;
    for (number, raw) in fields(bytes)? {
        let (1, Raw::Len(entry)) = (number, raw) else { continue };
        let (mut key, mut held) = ("", None);
        for (number, raw) in fields(entry)? {
            match (number, raw) {
                (1, Raw::Len(bytes)) => key = std::str::from_utf8(bytes).map_err(|_| broken())?,
                (2, Raw::Len(bytes)) => held = Some(bytes),
                _ => {}
            }
        }
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        string(key, out);
        out.push(':');
        value(held.unwrap_or_default(), out)?;
    }
    out.push('}');
    Ok(())
}

/// `google.protobuf.ListValue` as an array.
fn list_value(bytes: &[u8], out: &mut String) -> Result<(), Error> {
    out.push('[');
    let mut first = true;
    for (number, raw) in fields(bytes)? {
        let (1, Raw::Len(element)) = (number, raw) else { continue };
        if !std::mem::take(&mut first) {
            out.push(',');
        }
        value(element, out)?;
    }
    out.push(']');
    Ok(())
}
