//! A value whose serde form is ProtoJSON written as a message's wire bytes: a serde `Serializer`
//! that knows, at every point, which proto field or well-known type it is filling (from the
//! descriptors), and writes each value as it comes. A nested message is written into a buffer of
//! its own and copied in behind its length.

use base64::engine::{general_purpose::GeneralPurposeConfig, DecodePaddingMode, GeneralPurpose};
use base64::Engine as _;
use prost::encoding::{encode_key, encode_varint, WireType};
use prost_reflect::{FieldDescriptor, Kind, MessageDescriptor};
use serde::ser::{self, Impossible, Serialize};

use super::key::KeySer;
use super::{Error, Wkt, MAX_TIMESTAMP_SECONDS, MIN_TIMESTAMP_SECONDS};

/// `value` as the wire bytes of the message `descriptor`.
pub fn message<T: Serialize + ?Sized>(descriptor: &MessageDescriptor, value: &T) -> Result<Vec<u8>, Error> {
    let mut out = Vec::with_capacity(256);
    value.serialize(Ser { out: &mut out, target: Target::message(descriptor.clone()), tag: None })?;
    Ok(out)
}

/// What the value being serialized fills.
enum Target {
    /// A message: an object whose keys are its fields.
    Message(MessageDescriptor),
    Timestamp,
    Value,
    Struct,
    ListValue,
    /// One value of a scalar or enum field; `always`: written even at its default (an element of
    /// a list, a map's value).
    Scalar {
        field: FieldDescriptor,
        always: bool,
    },
    /// A repeated field: a list.
    List(FieldDescriptor),
    /// A map field: an object.
    Map(FieldDescriptor),
}

impl Target {
    fn message(descriptor: MessageDescriptor) -> Self {
        match Wkt::of(&descriptor) {
            Wkt::Timestamp => Self::Timestamp,
            Wkt::Value => Self::Value,
            Wkt::Struct => Self::Struct,
            Wkt::ListValue => Self::ListValue,
            Wkt::None => Self::Message(descriptor),
        }
    }

    fn field(field: FieldDescriptor) -> Self {
        if field.is_map() {
            Self::Map(field)
        } else if field.is_list() {
            Self::List(field)
        } else {
            Self::element(field, false)
        }
    }

    fn element(field: FieldDescriptor, always: bool) -> Self {
        match field.kind() {
            Kind::Message(descriptor) => Self::message(descriptor),
            _ => Self::Scalar { field, always },
        }
    }

    fn name(&self) -> String {
        match self {
            Self::Message(descriptor) => descriptor.full_name().to_string(),
            Self::Timestamp => "a google.protobuf.Timestamp".into(),
            Self::Value => "a google.protobuf.Value".into(),
            Self::Struct => "a google.protobuf.Struct".into(),
            Self::ListValue => "a google.protobuf.ListValue".into(),
            Self::Scalar { field, .. } | Self::List(field) | Self::Map(field) => format!("field {}", field.json_name()),
        }
    }
}

/// The serializer: writes into `out`, as field `tag` (`None`: the top-level message's fields).
struct Ser<'a> {
    out: &'a mut Vec<u8>,
    target: Target,
    tag: Option<u32>,
}

impl Ser<'_> {
    fn mismatch(&self, what: &str) -> Error {
        Error::new(format!("{what} does not fit {}", self.target.name()))
    }

    fn number(self, n: Num) -> Result<(), Error> {
        match self.target {
            Target::Scalar { field, always } => scalar_number(&field, always, n, self.out),
            Target::Value => {
                let mut value = Vec::with_capacity(9);
                encode_key(2, WireType::SixtyFourBit, &mut value);
                value.extend_from_slice(&n.to_f64().to_le_bytes());
                close(self.out, self.tag, None, value);
                Ok(())
            }
            _ => Err(self.mismatch("a number")),
        }
    }
}

/// A number as serde hands it over.
#[derive(Clone, Copy)]
enum Num {
    I(i64),
    U(u64),
    F(f64),
}

impl Num {
    fn to_i64(self) -> Option<i64> {
        match self {
            Num::I(v) => Some(v),
            Num::U(v) => i64::try_from(v).ok(),
            #[allow(clippy::cast_possible_truncation)]
            Num::F(v) => (v.fract() == 0.0 && (-9.2e18..=9.2e18).contains(&v)).then_some(v as i64),
        }
    }

    fn to_u64(self) -> Option<u64> {
        match self {
            Num::I(v) => u64::try_from(v).ok(),
            Num::U(v) => Some(v),
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            Num::F(v) => (v.fract() == 0.0 && (0.0..=1.8e19).contains(&v)).then_some(v as u64),
        }
    }

    #[allow(clippy::cast_precision_loss)]
    fn to_f64(self) -> f64 {
        match self {
            Num::I(v) => v as f64,
            Num::U(v) => v as f64,
            Num::F(v) => v,
        }
    }

    fn is_zero(self) -> bool {
        self.to_f64() == 0.0
    }

    /// From a string, as ProtoJSON allows for numbers.
    fn parse(s: &str, float: bool) -> Option<Num> {
        if float {
            return match s {
                "NaN" => Some(Num::F(f64::NAN)),
                "Infinity" => Some(Num::F(f64::INFINITY)),
                "-Infinity" => Some(Num::F(f64::NEG_INFINITY)),
                _ => s.parse().ok().map(Num::F),
            };
        }
        s.parse()
            .map(Num::I)
            .or_else(|_| s.parse().map(Num::U))
            .ok()
            .or_else(|| s.parse().ok().filter(|v: &f64| v.is_finite()).map(Num::F))
    }
}

/// A number into a scalar or enum field (by number).
fn scalar_number(field: &FieldDescriptor, always: bool, n: Num, out: &mut Vec<u8>) -> Result<(), Error> {
    if !always && !field.supports_presence() && n.is_zero() {
        return Ok(());
    }
    let tag = field.number();
    let range = || Error::new(format!("field {}: the number is out of range", field.json_name()));
    let i32_of = |n: Num| n.to_i64().and_then(|v| i32::try_from(v).ok()).ok_or_else(range);
    let u32_of = |n: Num| n.to_u64().and_then(|v| u32::try_from(v).ok()).ok_or_else(range);
    match field.kind() {
        Kind::Int32 | Kind::Enum(_) => varint(tag, i64::from(i32_of(n)?) as u64, out),
        Kind::Sint32 => {
            let v = i32_of(n)?;
            varint(tag, u64::from(((v << 1) ^ (v >> 31)) as u32), out);
        }
        Kind::Uint32 => varint(tag, u64::from(u32_of(n)?), out),
        Kind::Int64 => varint(tag, n.to_i64().ok_or_else(range)? as u64, out),
        Kind::Sint64 => {
            let v = n.to_i64().ok_or_else(range)?;
            varint(tag, ((v << 1) ^ (v >> 63)) as u64, out);
        }
        Kind::Uint64 => varint(tag, n.to_u64().ok_or_else(range)?, out),
        Kind::Sfixed32 => fixed(tag, WireType::ThirtyTwoBit, &i32_of(n)?.to_le_bytes(), out),
        Kind::Fixed32 => fixed(tag, WireType::ThirtyTwoBit, &u32_of(n)?.to_le_bytes(), out),
        Kind::Sfixed64 => fixed(tag, WireType::SixtyFourBit, &n.to_i64().ok_or_else(range)?.to_le_bytes(), out),
        Kind::Fixed64 => fixed(tag, WireType::SixtyFourBit, &n.to_u64().ok_or_else(range)?.to_le_bytes(), out),
        Kind::Double => fixed(tag, WireType::SixtyFourBit, &n.to_f64().to_le_bytes(), out),
        #[allow(clippy::cast_possible_truncation)]
        Kind::Float => fixed(tag, WireType::ThirtyTwoBit, &(n.to_f64() as f32).to_le_bytes(), out),
        Kind::Bool | Kind::String | Kind::Bytes | Kind::Message(_) => {
            return Err(Error::new(format!("a number does not fit field {}", field.json_name())))
        }
    }
    Ok(())
}

/// Base64 of either alphabet, padded or not (ProtoJSON accepts them all).
const ANY_PADDING: GeneralPurposeConfig =
    GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent);
const STANDARD: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::STANDARD, ANY_PADDING);
const URL_SAFE: GeneralPurpose = GeneralPurpose::new(&base64::alphabet::URL_SAFE, ANY_PADDING);

/// A string into a scalar or enum field: text, base64 bytes, an enum's name, a number as a string.
fn scalar_str(field: &FieldDescriptor, always: bool, s: &str, out: &mut Vec<u8>) -> Result<(), Error> {
    let skip = |empty: bool| empty && !always && !field.supports_presence();
    match field.kind() {
        Kind::String => {
            if !skip(s.is_empty()) {
                bytes(field.number(), s.as_bytes(), out);
            }
            Ok(())
        }
        Kind::Bytes => {
            let engine = if s.contains(['-', '_']) { &URL_SAFE } else { &STANDARD };
            let decoded =
                engine.decode(s).map_err(|_| Error::new(format!("field {} is not base64", field.json_name())))?;
            if !skip(decoded.is_empty()) {
                bytes(field.number(), &decoded, out);
            }
            Ok(())
        }
        Kind::Enum(descriptor) => {
            let value = descriptor
                .get_value_by_name(s)
                .ok_or_else(|| Error::new(format!("field {}: {s:?} is not one of its values", field.json_name())))?;
            scalar_number(field, always, Num::I(i64::from(value.number())), out)
        }
        Kind::Bool => match s {
            "true" | "false" => {
                if !skip(s == "false") {
                    varint(field.number(), u64::from(s == "true"), out);
                }
                Ok(())
            }
            _ => Err(Error::new(format!("field {} is not a boolean", field.json_name()))),
        },
        Kind::Message(_) => Err(Error::new(format!("a string does not fit field {}", field.json_name()))),
        kind => {
            let float = matches!(kind, Kind::Double | Kind::Float);
            let n = Num::parse(s, float)
                .ok_or_else(|| Error::new(format!("field {} is not a number", field.json_name())))?;
            scalar_number(field, always, n, out)
        }
    }
}

fn varint(tag: u32, v: u64, out: &mut Vec<u8>) {
    encode_key(tag, WireType::Varint, out);
    encode_varint(v, out);
}

fn fixed(tag: u32, wire: WireType, v: &[u8], out: &mut Vec<u8>) {
    encode_key(tag, wire, out);
    out.extend_from_slice(v);
}

fn bytes(tag: u32, v: &[u8], out: &mut Vec<u8>) {
    encode_key(tag, WireType::LengthDelimited, out);
    encode_varint(v.len() as u64, out);
    out.extend_from_slice(v);
}

/// A message's `body` into `out`: as field `tag` (inside a Value's field `inner` first), or, for
/// the top-level message, as it is.
fn close(out: &mut Vec<u8>, tag: Option<u32>, inner: Option<u32>, body: Vec<u8>) {
    let body = match inner {
        Some(inner) => {
            let mut wrapped = Vec::with_capacity(body.len() + 6);
            bytes(inner, &body, &mut wrapped);
            wrapped
        }
        None => body,
    };
    match tag {
        Some(tag) => bytes(tag, &body, out),
        None if out.is_empty() => *out = body,
        None => out.extend_from_slice(&body),
    }
}

/// `google.protobuf.Timestamp` from RFC 3339.
fn timestamp(s: &str, tag: Option<u32>, out: &mut Vec<u8>) -> Result<(), Error> {
    let ts: prost_types::Timestamp =
        s.parse().map_err(|_| Error::new(format!("{s:?} is not an RFC 3339 timestamp")))?;
    if !(MIN_TIMESTAMP_SECONDS..=MAX_TIMESTAMP_SECONDS).contains(&ts.seconds) {
        return Err(Error::new(format!("{s:?} is out of the timestamp range")));
    }
    let mut body = Vec::with_capacity(16);
    if ts.seconds != 0 {
        varint(1, ts.seconds as u64, &mut body);
    }
    if ts.nanos != 0 {
        varint(2, i64::from(ts.nanos) as u64, &mut body);
    }
    close(out, tag, None, body);
    Ok(())
}

impl<'a> ser::Serializer for Ser<'a> {
    type Ok = ();
    type Error = Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Impossible<(), Error>;
    type SerializeMap = Obj<'a>;
    type SerializeStruct = Obj<'a>;
    type SerializeStructVariant = Impossible<(), Error>;

    fn serialize_bool(self, v: bool) -> Result<(), Error> {
        match self.target {
            Target::Scalar { field, always } if field.kind() == Kind::Bool => {
                if v || always || field.supports_presence() {
                    varint(field.number(), u64::from(v), self.out);
                }
                Ok(())
            }
            Target::Value => {
                let mut value = Vec::with_capacity(2);
                varint(4, u64::from(v), &mut value);
                close(self.out, self.tag, None, value);
                Ok(())
            }
            _ => Err(self.mismatch("a boolean")),
        }
    }

    fn serialize_i8(self, v: i8) -> Result<(), Error> {
        self.number(Num::I(v.into()))
    }
    fn serialize_i16(self, v: i16) -> Result<(), Error> {
        self.number(Num::I(v.into()))
    }
    fn serialize_i32(self, v: i32) -> Result<(), Error> {
        self.number(Num::I(v.into()))
    }
    fn serialize_i64(self, v: i64) -> Result<(), Error> {
        self.number(Num::I(v))
    }
    fn serialize_u8(self, v: u8) -> Result<(), Error> {
        self.number(Num::U(v.into()))
    }
    fn serialize_u16(self, v: u16) -> Result<(), Error> {
        self.number(Num::U(v.into()))
    }
    fn serialize_u32(self, v: u32) -> Result<(), Error> {
        self.number(Num::U(v.into()))
    }
    fn serialize_u64(self, v: u64) -> Result<(), Error> {
        self.number(Num::U(v))
    }
    fn serialize_f32(self, v: f32) -> Result<(), Error> {
        self.number(Num::F(v.into()))
    }
    fn serialize_f64(self, v: f64) -> Result<(), Error> {
        self.number(Num::F(v))
    }
    fn serialize_char(self, v: char) -> Result<(), Error> {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }

    fn serialize_str(self, v: &str) -> Result<(), Error> {
        match self.target {
            Target::Scalar { field, always } => scalar_str(&field, always, v, self.out),
            Target::Timestamp => timestamp(v, self.tag, self.out),
            Target::Value => {
                let mut value = Vec::with_capacity(v.len() + 3);
                bytes(3, v.as_bytes(), &mut value);
                close(self.out, self.tag, None, value);
                Ok(())
            }
            _ => Err(self.mismatch("a string")),
        }
    }

    fn serialize_bytes(self, v: &[u8]) -> Result<(), Error> {
        match self.target {
            Target::Scalar { field, always } if field.kind() == Kind::Bytes => {
                if !v.is_empty() || always || field.supports_presence() {
                    bytes(field.number(), v, self.out);
                }
                Ok(())
            }
            _ => Err(self.mismatch("bytes")),
        }
    }

    /// JSON null: a Value's null; anything else left out (at its default).
    fn serialize_none(self) -> Result<(), Error> {
        if let Target::Value = self.target {
            let mut value = Vec::with_capacity(2);
            varint(1, 0, &mut value);
            close(self.out, self.tag, None, value);
        }
        Ok(())
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    fn serialize_unit(self) -> Result<(), Error> {
        self.serialize_none()
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<(), Error> {
        self.serialize_none()
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<(), Error> {
        self.serialize_str(variant)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<(), Error> {
        value.serialize(self)
    }

    /// Externally tagged: `{variant: value}`.
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let mut object = self.serialize_map(Some(1))?;
        ser::SerializeMap::serialize_entry(&mut object, variant, value)?;
        ser::SerializeMap::end(object)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Seq<'a>, Error> {
        let inner = match self.target {
            Target::List(field) => {
                return Ok(Seq { out: self.out, into: Sink::List(field), tag: None, inner: None, buf: Vec::new() })
            }
            Target::ListValue => None,
            Target::Value => Some(6),
            _ => return Err(self.mismatch("a list")),
        };
        Ok(Seq { out: self.out, into: Sink::ListValue, tag: self.tag, inner, buf: Vec::with_capacity(64) })
    }

    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(self, _: &'static str, len: usize) -> Result<Seq<'a>, Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Err(self.mismatch("a tuple variant"))
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Obj<'a>, Error> {
        let (into, inner) = match self.target {
            Target::Message(descriptor) => (Sink::Message(descriptor), None),
            Target::Struct => (Sink::Struct, None),
            Target::Value => (Sink::Struct, Some(5)),
            // A map's entries are fields of the message being written.
            Target::Map(field) => {
                let buf = std::mem::take(self.out);
                return Ok(Obj { out: self.out, into: Sink::Map(field), tag: None, inner: None, buf, key: None });
            }
            _ => return Err(self.mismatch("an object")),
        };
        let buf =
            if self.tag.is_none() && inner.is_none() { std::mem::take(self.out) } else { Vec::with_capacity(128) };
        Ok(Obj { out: self.out, into, tag: self.tag, inner, buf, key: None })
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Obj<'a>, Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Err(self.mismatch("a struct variant"))
    }
}

/// Where the elements or entries of a list or an object go.
enum Sink {
    /// A repeated field's elements, each as the field, straight into the message being written.
    List(FieldDescriptor),
    /// A ListValue's (or a Value's list's) elements, as Values.
    ListValue,
    /// A message's fields.
    Message(MessageDescriptor),
    /// A Struct's (or a Value's object's) entries: `{1: key, 2: Value}`.
    Struct,
    /// A map field's entries: `{1: key, 2: value}`, each as the field.
    Map(FieldDescriptor),
}

/// A list being written.
pub struct Seq<'a> {
    out: &'a mut Vec<u8>,
    into: Sink,
    /// For a ListValue: its field number, and the Value field it sits in, if any.
    tag: Option<u32>,
    inner: Option<u32>,
    buf: Vec<u8>,
}

impl ser::SerializeSeq for Seq<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match &self.into {
            Sink::List(field) => value.serialize(Ser {
                out: self.out,
                target: Target::element(field.clone(), true),
                tag: Some(field.number()),
            }),
            _ => value.serialize(Ser { out: &mut self.buf, target: Target::Value, tag: Some(1) }),
        }
    }

    fn end(self) -> Result<(), Error> {
        if !matches!(self.into, Sink::List(_)) {
            close(self.out, self.tag, self.inner, self.buf);
        }
        Ok(())
    }
}

impl ser::SerializeTuple for Seq<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Error> {
        ser::SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for Seq<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        ser::SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<(), Error> {
        ser::SerializeSeq::end(self)
    }
}

/// An object being written into `buf`, closed into `out` as field `tag` (inside `inner`).
pub struct Obj<'a> {
    out: &'a mut Vec<u8>,
    into: Sink,
    tag: Option<u32>,
    inner: Option<u32>,
    buf: Vec<u8>,
    key: Option<String>,
}

impl Obj<'_> {
    fn entry<T: Serialize + ?Sized>(&mut self, key: &str, value: &T) -> Result<(), Error> {
        match &self.into {
            Sink::Message(descriptor) => {
                let field = descriptor.get_field_by_json_name(key).or_else(|| descriptor.get_field_by_name(key));
                // Unknown names are ignored, as the ProtoJSON reader of the other side would.
                let Some(field) = field else { return Ok(()) };
                let tag = field.number();
                value.serialize(Ser { out: &mut self.buf, target: Target::field(field), tag: Some(tag) })
            }
            Sink::Struct => {
                let mut entry = Vec::with_capacity(key.len() + 16);
                bytes(1, key.as_bytes(), &mut entry);
                value.serialize(Ser { out: &mut entry, target: Target::Value, tag: Some(2) })?;
                bytes(1, &entry, &mut self.buf);
                Ok(())
            }
            Sink::Map(field) => {
                let Kind::Message(descriptor) = field.kind() else { return Err(Error::new("a map without entries")) };
                let mut entry = Vec::with_capacity(key.len() + 16);
                scalar_str(&descriptor.map_entry_key_field(), true, key, &mut entry)?;
                let target = Target::element(descriptor.map_entry_value_field(), true);
                value.serialize(Ser { out: &mut entry, target, tag: Some(2) })?;
                bytes(field.number(), &entry, &mut self.buf);
                Ok(())
            }
            Sink::List(_) | Sink::ListValue => Err(Error::new("an object in a list's place")),
        }
    }

    fn finish(self) {
        close(self.out, self.tag, self.inner, self.buf);
    }
}

impl ser::SerializeMap for Obj<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        self.key = Some(key.serialize(KeySer)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        let key = self.key.take().ok_or_else(|| Error::new("a map value without its key"))?;
        self.entry(&key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish();
        Ok(())
    }
}

impl ser::SerializeStruct for Obj<'_> {
    type Ok = ();
    type Error = Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, key: &'static str, value: &T) -> Result<(), Error> {
        self.entry(key, value)
    }

    fn end(self) -> Result<(), Error> {
        self.finish();
        Ok(())
    }
}
