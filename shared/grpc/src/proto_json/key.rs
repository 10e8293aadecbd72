//! An object's key as a string: JSON keys are strings; numbers, booleans and unit variants are
//! spelled out, anything else is refused.

use serde::ser::{self, Impossible, Serialize};

use super::Error;

pub(super) struct KeySer;

/// Serializer methods that spell their value out.
macro_rules! spelled {
    ($($name:ident: $ty:ty),*) => {$(
        fn $name(self, v: $ty) -> Result<String, Error> {
            Ok(v.to_string())
        }
    )*};
}

/// Serializer methods that refuse their value as a key.
macro_rules! refused {
    ($($name:ident($($arg:ty),*) -> $ret:ty: $what:literal),*) => {$(
        fn $name(self, $(_: $arg),*) -> Result<$ret, Error> {
            Err(Error::new(concat!($what, " as an object key")))
        }
    )*};
}

impl ser::Serializer for KeySer {
    type Ok = String;
    type Error = Error;
    type SerializeSeq = Impossible<String, Error>;
    type SerializeTuple = Impossible<String, Error>;
    type SerializeTupleStruct = Impossible<String, Error>;
    type SerializeTupleVariant = Impossible<String, Error>;
    type SerializeMap = Impossible<String, Error>;
    type SerializeStruct = Impossible<String, Error>;
    type SerializeStructVariant = Impossible<String, Error>;

    spelled!(serialize_str: &str, serialize_char: char, serialize_bool: bool, serialize_i8: i8, serialize_i16: i16,
             serialize_i32: i32, serialize_i64: i64, serialize_u8: u8, serialize_u16: u16, serialize_u32: u32,
             serialize_u64: u64);
    refused!(
        serialize_f32(f32) -> String: "a float",
        serialize_f64(f64) -> String: "a float",
        serialize_bytes(&[u8]) -> String: "bytes",
        serialize_none() -> String: "null",
        serialize_unit() -> String: "null",
        serialize_unit_struct(&'static str) -> String: "null",
        serialize_seq(Option<usize>) -> Self::SerializeSeq: "a list",
        serialize_tuple(usize) -> Self::SerializeTuple: "a list",
        serialize_tuple_struct(&'static str, usize) -> Self::SerializeTupleStruct: "a list",
        serialize_tuple_variant(&'static str, u32, &'static str, usize) -> Self::SerializeTupleVariant: "a list",
        serialize_map(Option<usize>) -> Self::SerializeMap: "an object",
        serialize_struct(&'static str, usize) -> Self::SerializeStruct: "an object",
        serialize_struct_variant(&'static str, u32, &'static str, usize) -> Self::SerializeStructVariant: "an object"
    );

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }

    fn serialize_unit_variant(self, _: &'static str, _: u32, variant: &'static str) -> Result<String, Error> {
        Ok(variant.to_string())
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(self, _: &'static str, value: &T) -> Result<String, Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<String, Error> {
        Err(Error::new("an enum as an object key"))
    }
}
